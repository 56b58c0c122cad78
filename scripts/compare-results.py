#!/usr/bin/env python3
"""Shows that two builds of moehub-sim give the same results: runs a fixed list of
shipped jobs with both binaries and compares what they write byte for byte.

    scripts/compare-results.py --old OLD_BIN --new NEW_BIN [--jobs all|tiny] [-j N]

For every job it compares the results JSON (all of it but the top-level "host"
object, the peak memory and wall time of the run, which differ from run to run:
systemc/platform/simulate.cpp adds it, and nothing else in the file depends on the
host), the timeline JSON (whole file, for the jobs that write one) and the exit
status. It prints one line per job, "identical" or "different" with the first
differing key path or byte, and exits with status 1 on any difference, 2 on bad
arguments. scripts/compare-results.sh builds an older revision and runs this.

The job list ("all"): every schedule at packet and row granularity on the default
system (dgx-h800, mixtral-8x7b) at a small token count without the timeline, two
jobs with the timeline, and a few other systems, models, routings and overrides.
"tiny" is two of them, for the script's own test.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOKENS = "512"  # small: the whole list runs in minutes; a schedule's code paths do not depend on the count

# every schedule of moehub-sim (host/sim --schedule); the moehub* ones need the MoE-Hub units in the hubs
SCHEDULES = ["megatron", "megatron-train", "ideal", "a2a-uniform", "ring-expert", "ring-token", "fastermoe",
             "tutel", "comet", "ccfuser", "moehub", "moehub-base", "moehub-pkt", "moehub-dep"]


def schedule_args(schedule):
    args = ["--schedule", schedule]
    if schedule.startswith("moehub"):
        args += ["--hub-impl", "moehub"]
    return args


def all_jobs():
    """(name, arguments, writes a timeline) of every job of the full list."""
    jobs = []
    for s in SCHEDULES:
        for g in ("packet", "row"):
            jobs.append((f"{s}-{g}", schedule_args(s) + ["--granularity", g, "--tokens", TOKENS], False))
    jobs += [
        ("megatron-packet-timeline", ["--schedule", "megatron", "--tokens", TOKENS], True),
        ("moehub-packet-timeline", schedule_args("moehub") + ["--tokens", TOKENS], True),
        ("dgx-h100-megatron", ["--system", "dgx-h100", "--schedule", "megatron", "--tokens", TOKENS], False),
        ("hgx-h200-megatron", ["--system", "hgx-h200", "--schedule", "megatron", "--tokens", TOKENS], False),
        ("hgx-h200-x2-ring-expert", ["--system", "hgx-h200-x2", "--schedule", "ring-expert",
                                     "--tokens", TOKENS], False),
        ("h200-megatron-train", ["--system", "h200-megatron", "--schedule", "megatron-train",
                                 "--tokens", TOKENS], False),
        ("qwen1.5-moehub", ["--model", "qwen1.5-moe-a2.7b"] + schedule_args("moehub") + ["--tokens", TOKENS], False),
        ("qwen3-30b-ring-token", ["--model", "qwen3-30b-a3b", "--schedule", "ring-token", "--tokens", TOKENS], False),
        ("deepseek-v3-comet", ["--model", "deepseek-v3", "--schedule", "comet", "--tokens", TOKENS], False),
        ("zipf-megatron", ["--schedule", "megatron", "--distribution", "zipf", "--zipf-s", "1.2", "--seed", "7",
                           "--tokens", TOKENS], False),
        ("a2a-uniform-repeat", ["--schedule", "a2a-uniform", "--repeat", "3", "--tokens", TOKENS], False),
        ("megatron-window-own", ["--schedule", "megatron", "--set", "system.sim.response_window_ns=100",
                                 "--set", "system.nvlink.response_channel=own", "--tokens", TOKENS], False),
    ]
    return jobs


def tiny_jobs():
    """Two short jobs, one of them with the timeline (the script's own test)."""
    return [("megatron-row", ["--schedule", "megatron", "--granularity", "row", "--tokens", "64"], False),
            ("ideal-packet-timeline", ["--schedule", "ideal", "--tokens", "64"], True)]


def run(binary, args, timeline, out):
    """Runs one job into the folder out; returns (exit status, results text or None, timeline bytes or None)."""
    os.makedirs(out, exist_ok=True)
    cmd = [binary, *args, "--quiet", "--out-dir", out]
    if not timeline:
        cmd.append("--no-timeline")
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = timeline_bytes = None
    if os.path.exists(f"{out}/results.json"):
        with open(f"{out}/results.json", "rb") as f:
            results = f.read()
    if timeline and os.path.exists(f"{out}/timeline.json"):
        with open(f"{out}/timeline.json", "rb") as f:
            timeline_bytes = f.read()
    return p.returncode, results, timeline_bytes, p.stderr.decode(errors="replace").strip()


def without_host(raw):
    """The parsed results with the top-level "host" object (peak memory, wall time) left out:
    only to name the first differing key once the bytes differ (compare_job)."""
    doc = json.loads(raw)
    doc.pop("host", None)
    return doc


def first_difference(a, b, path=""):
    """The key path of the first place where two JSON values differ (None when equal)."""
    if type(a) is not type(b):
        return path or "."
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path or '.'} (keys {list(a)[:8]} vs {list(b)[:8]})"
        for k in a:
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def strip_host_bytes(raw):
    """The results file's bytes with the top-level "host" member cut out as written.

    moehub-sim writes the results with nlohmann::json dump(2): "host" is the last
    top-level key, written as '  "host": {...}' before the closing brace. Cutting
    it out of the bytes (rather than re-serialising) keeps the byte comparison of
    everything else exact."""
    m = re.search(rb',\n  "host": \{[^{}]*\}\n\}\n?$', raw)
    if not m:
        return None
    return raw[:m.start()] + b"\n}\n"


def compare_job(old_out, new_out, timeline):
    """'identical' or a description of the first difference between two runs of one job."""
    (rc_a, res_a, tl_a, err_a), (rc_b, res_b, tl_b, err_b) = old_out, new_out
    if rc_a != rc_b:
        return f"exit status {rc_a} vs {rc_b} ({(err_a or err_b)[:200]})"
    if (res_a is None) != (res_b is None):
        return "results.json written by only one"
    if res_a is not None:
        cut_a, cut_b = strip_host_bytes(res_a), strip_host_bytes(res_b)
        if cut_a is None or cut_b is None:
            return "results.json: no trailing \"host\" object where moehub-sim writes it"
        if cut_a != cut_b:
            try:
                where = first_difference(without_host(res_a), without_host(res_b))
            except json.JSONDecodeError as e:
                where = f"not JSON ({e})"
            return f"results.json differs at {where or 'formatting only (same values)'}"
    if timeline:
        if tl_a is None or tl_b is None:
            return "timeline.json missing" if tl_a is None and tl_b is None else "timeline.json written by only one"
        if tl_a != tl_b:
            i = next((k for k, (x, y) in enumerate(zip(tl_a, tl_b)) if x != y), min(len(tl_a), len(tl_b)))
            return f"timeline.json differs from byte {i} (sizes {len(tl_a)} and {len(tl_b)})"
    return "identical"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", required=True, help="the reference moehub-sim binary")
    ap.add_argument("--new", required=True, help="the moehub-sim binary to compare with it")
    ap.add_argument("--jobs", default="all", help="job list: all (default) or tiny")
    ap.add_argument("-j", "--parallel", type=int, default=1, help="jobs run at once, 1..16 (default 1)")
    ap.add_argument("--work-dir", help="keep the runs' outputs here (default: a temporary folder, removed)")
    a = ap.parse_args()
    for key in ("old", "new"):
        b = getattr(a, key)
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            print(f"compare-results: error: --{key} '{b}': not an executable file", file=sys.stderr)
            return 2
    lists = {"all": all_jobs, "tiny": tiny_jobs}
    if a.jobs not in lists:
        print(f"compare-results: error: --jobs '{a.jobs}': must be one of {', '.join(lists)}", file=sys.stderr)
        return 2
    if not 1 <= a.parallel <= 16:
        print(f"compare-results: error: --parallel {a.parallel}: must be in 1..16", file=sys.stderr)
        return 2
    jobs = lists[a.jobs]()
    if a.jobs == "all":
        # the list covers every schedule the old binary has
        h = subprocess.run([a.old, "--help"], capture_output=True, text=True).stdout
        m = re.search(r"dispatch schedule: ([^\n]*)", h)
        missing = sorted(set(m.group(1).replace(" ", "").split(",")) - set(SCHEDULES)) if m else []
        if missing:
            print(f"compare-results: error: the job list lacks schedule(s) {', '.join(missing)} of {a.old}: "
                  "add them to SCHEDULES", file=sys.stderr)
            return 2
    work = a.work_dir or tempfile.mkdtemp(prefix="compare-results-")
    try:
        def one(job):
            name, args, timeline = job
            old = run(a.old, args, timeline, f"{work}/old/{name}")
            new = run(a.new, args, timeline, f"{work}/new/{name}")
            return name, compare_job(old, new, timeline), old[0]
        differ = 0
        with concurrent.futures.ThreadPoolExecutor(a.parallel) as pool:
            for name, verdict, rc in pool.map(one, jobs):
                status = "" if rc == 0 else f" (both exit {rc})" if verdict == "identical" else ""
                print(f"{name:28s} {'identical' if verdict == 'identical' else 'different: ' + verdict}{status}",
                      flush=True)
                differ += verdict != "identical"
        print(f"{len(jobs)} jobs, {len(jobs) - differ} identical, {differ} different")
        return 1 if differ else 0
    finally:
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
