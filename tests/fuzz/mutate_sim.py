#!/usr/bin/env python3
"""Mutation fuzzing of the whole moehub-sim: configs, traces and command lines.

Each case starts from a small valid input (a 2-GPU system, a 4-expert model,
a 2-rank routing trace, a short command line), applies one to three random
mutations, runs moehub-sim on it with a timeout, and checks the outcome:

- the exit status is 0 (success), 2 (bad input) or 3 with the simulated-time
  limit passed; 1 (internal error), 3 for failed self-checks (an input the
  simulator accepts must be simulated correctly), a signal or a timeout is a
  failure;
- stderr holds no AddressSanitizer, LeakSanitizer or UndefinedBehaviorSanitizer
  report (build moehub-sim with -DMOEHUB_SANITIZE=ON for those);
- exit 0 leaves a results.json that parses; exit 2, and exit 3 for a passed
  time limit, leave no results.json (nothing partial).

Every case is reproducible from (--seed, kind, index); a failing case's input,
command and stderr are kept under WORK_DIR/failures/. Standard library only.

  tests/fuzz/mutate_sim.py --sim build/asan/host/sim/moehub-sim \\
      --configs 10000 --traces 10000 --cli 0 --timeout 60 --work-dir /tmp/fuzz
"""

import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SEEDS = os.path.join(HERE, "corpus", "sim")
SCHEDULES = ["megatron", "megatron-train", "ideal", "a2a-uniform", "ring-expert", "ring-token", "fastermoe",
             "tutel", "comet", "ccfuser", "moehub", "moehub-base", "moehub-pkt", "moehub-dep"]
SANITIZER_MARKS = ["ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "UndefinedBehaviorSanitizer", "==ERROR:"]
TIME_LIMIT_MARK = "simulated-time limit"

# The base run: tiny enough that one case takes well under a second.
BASE_ARGS = ["--tokens", "16", "--granularity", "row", "--no-timeline", "--quiet"]
TRACE_RANKS, TRACE_EXPERTS, TRACE_TOP_K, TRACE_TOKENS = 2, 4, 2, 8

INTERESTING_NUMBERS = [
    "0", "-0", "-1", "1", "2", "3", "7", "127", "128", "129", "1.5", "0.5", "-0.5", "1e308", "-1e308",
    "1e-308", "4.9e-324", "1e300", "1e-12", "1e12", "1e18", "1e19", "nan", ".nan", "inf", ".inf",
    "-.inf", "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967296",
    "9223372036854775807", "9223372036854775808", "18446744073709551616", "99999999999999999999999",
    "0x10", "0o17", "1_000", "+5", "+-5", "1e", "1.2.3", "", "~", "null", "true", "\"128\"", "'1'",
    "[1]", "{a: 1}", "&a 1", "*a", "!!int 3", "!!float 3", "0.0000001", "1e-7", "1e9", "1000000001",
]
YAML_SNIPPETS = ["{", "}", "[", "]", ":", ": ", "- ", "&a ", "*a", "!!binary ", "<<: *a", "---\n",
                 "...\n", "\t", "%YAML 1.2\n", "\"", "'", "#", "|\n", ">\n", "? ", "\x00", "\xff",
                 "[" * 200 + "]" * 200, "{a: " * 100 + "}" * 100]


def parse_doc_ranges():
    """(kind, key) -> (lo, hi) from docs/configs.md's range column: boundary values."""
    out = {}
    kind = None
    try:
        with open(os.path.join(ROOT, "docs", "configs.md"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("## System config"):
                    kind = "system"
                elif line.startswith("## Model config"):
                    kind = "model"
                elif line.startswith("## "):
                    kind = None
                m = re.match(r"\| `([\w.]+)` \| (int|number) \| in [\[(]([^,]+), ([^\])]+)[\])]", line)
                if kind and m:
                    out[(kind, m.group(1))] = (float(m.group(3)), float(m.group(4)))
    except OSError:
        pass
    return out


DOC_RANGES = parse_doc_ranges()


def fmt_number(v):
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def number_candidates(rng, kind, key, old):
    """Replacement values for a numeric key: interesting, boundary and scaled."""
    choice = rng.random()
    if choice < 0.35:
        return rng.choice(INTERESTING_NUMBERS)
    if choice < 0.7 and (kind, key) in DOC_RANGES:
        lo, hi = DOC_RANGES[(kind, key)]
        eps = rng.choice([1e-9, 1e-3, 0.5])
        return fmt_number(rng.choice([lo, hi, lo - eps * max(1, abs(lo)), hi + eps * max(1, abs(hi)),
                                      lo + (hi - lo) * rng.random(), hi * (1 - eps) if hi else lo]))
    try:
        v = float(old)
    except ValueError:
        v = 1.0
    scaled = v * 10.0 ** rng.randint(-12, 12) * rng.choice([1, -1, 2, 0.5, 3])
    if math.isfinite(scaled):
        return fmt_number(scaled) if "." not in old and "e" not in old else repr(scaled)
    return "1e308"


# ---------------------------------------------------------------- configs

LINE_RE = re.compile(r"^(\s*)([A-Za-z_][\w]*):(\s*)([^#\n]*?)(\s*(#.*)?)$")


def dotted_keys(lines):
    """The dotted key of each line (None for non-key lines), from indentation."""
    stack = []
    keys = []
    for line in lines:
        m = LINE_RE.match(line)
        if not m:
            keys.append(None)
            continue
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group(2)))
        keys.append(".".join(k for _, k in stack))
    return keys


def mutate_yaml(rng, text, kind):
    lines = text.split("\n")
    keys = dotted_keys(lines)
    op = rng.random()
    numeric = [i for i, line in enumerate(lines)
               if (m := LINE_RE.match(line)) and re.match(r"^[-+0-9.]", m.group(4) or "")]
    if op < 0.6 and numeric:
        i = rng.choice(numeric)
        m = LINE_RE.match(lines[i])
        lines[i] = m.group(1) + m.group(2) + ":" + (m.group(3) or " ") + \
            number_candidates(rng, kind, keys[i], m.group(4)) + (m.group(5) or "")
    elif op < 0.68 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
    elif op < 0.72:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif op < 0.76 and len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op < 0.8:
        i = rng.randrange(len(lines))
        lines[i] = " " * rng.choice([0, 1, 2, 3, 4, 8]) + lines[i].lstrip()
    elif op < 0.84:
        i = rng.randrange(len(lines))
        m = LINE_RE.match(lines[i])
        if m:
            lines[i] = m.group(1) + m.group(2) + ":" + rng.choice(["", " ", " []", " {}", " ~", " \"\"",
                                                                   " - 1", " !!str 5", " |\n  5"])
    else:
        data = "\n".join(lines)
        pos = rng.randrange(len(data) + 1)
        sub = rng.random()
        if sub < 0.4:
            data = data[:pos] + rng.choice(YAML_SNIPPETS) + data[pos:]
        elif sub < 0.7 and data:
            data = data[:pos] + chr(rng.randrange(1, 256)) + data[pos + 1:]
        elif sub < 0.85:
            data = data[:pos]
        else:
            data = data[:pos] + data[pos + rng.randint(1, 40):]
        return data
    return "\n".join(lines)


# ---------------------------------------------------------------- traces

def npy_bytes(descr, shape, values, fmt, fortran=False, version=(1, 0)):
    shape_txt = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    hdr = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (descr, fortran, shape_txt)
    pad = (64 - (10 + len(hdr) + 1) % 64) % 64
    hdr = (hdr + " " * pad + "\n").encode("latin-1")
    data = struct.pack("<%d%s" % (len(values), fmt), *values) if values else b""
    return b"\x93NUMPY" + bytes(version) + struct.pack("<H", len(hdr)) + hdr + data


def trace_files(ranks=TRACE_RANKS, experts=TRACE_EXPERTS, top_k=TRACE_TOP_K, tokens=TRACE_TOKENS):
    """A valid trace as {relative path: bytes}."""
    files = {}
    routing = []
    for r in range(ranks):
        ids = [(t + r + j) % experts for t in range(tokens) for j in range(top_k)]
        weights = [1.0 / top_k] * (tokens * top_k)
        files["routing/rank%d_topk_ids.npy" % r] = npy_bytes("<i4", [tokens, top_k], ids, "i")
        files["routing/rank%d_topk_weights.npy" % r] = npy_bytes("<f4", [tokens, top_k], weights, "f")
        routing.append({"rank": r, "tokens": tokens, "topk_ids": "routing/rank%d_topk_ids.npy" % r,
                        "topk_weights": "routing/rank%d_topk_weights.npy" % r})
    manifest = {"format": "moehub-trace", "version": 1, "producer": "mutate_sim", "device": "none",
                "date": "2026-11-29T00:00:00Z", "ranks": ranks, "hidden": 256, "ffn": 512,
                "experts": experts, "top_k": top_k, "extra": {"mode": "seed"},
                "files": {"routing": routing, "gemm": "gemm_timings.csv", "hops": "hop_timings.csv",
                          "memory": "memory.csv"}}
    files["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    files["gemm_timings.csv"] = b"m,n,k,groups,impl,time_us,tflops\n16,512,256,4,grouped,12.5,0.01\n"
    files["hop_timings.csv"] = b"rank,pass,mode,hop,compute_us,comm_us,hop_us\n0,fwd,ring-expert,0,1,2,3\n"
    files["memory.csv"] = b"rank,t_us,bytes_in_use,peak_bytes\n0,0,1024,2048\n"
    return files


JSON_VALUES = [0, -1, 1, 2, 3, 4, 8, 2 ** 31 - 1, 2 ** 31, 2 ** 40, 2 ** 40 + 1, 2 ** 63, 2 ** 64, -2 ** 63,
               1.5, 1e300, -1e300, float("nan"), "", "x", "../manifest.json", "/etc/hostname",
               "routing/../routing/rank0_topk_ids.npy", "routing", "a" * 5000, None, True, [], {}, [1, 2],
               {"rank": 0}]


def mutate_json_value(rng, obj):
    """Replaces, deletes or adds one member somewhere inside obj."""
    paths = []

    def walk(o, path):
        paths.append(path)
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, path + [k])
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, path + [i])

    walk(obj, [])
    path = rng.choice(paths[1:])
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    op = rng.random()
    if op < 0.7:
        parent[path[-1]] = rng.choice(JSON_VALUES)
    elif op < 0.85:
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
    elif isinstance(parent, dict):
        parent[rng.choice(["unknown", "ranks", "format", "files", "tokens"])] = rng.choice(JSON_VALUES)
    else:
        parent.append(rng.choice(JSON_VALUES))


def mutate_bytes(rng, data):
    if not data:
        return bytes([rng.randrange(256)])
    b = bytearray(data)
    op = rng.random()
    pos = rng.randrange(len(b))
    if op < 0.4:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op < 0.6:
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    elif op < 0.8:
        del b[pos:]
    else:
        del b[pos:pos + rng.randint(1, 32)]
    return bytes(b)


def mutate_npy(rng, data, path):
    is_ids = "ids" in path
    op = rng.random()
    if op < 0.35:
        # a valid header with odd values: ids out of range, repeated, weights not summing to 1
        tokens = TRACE_TOKENS
        if is_ids:
            pool = [-1, TRACE_EXPERTS, 2 ** 31 - 1, -2 ** 31, 0, 1]
            vals = [(t + j) % TRACE_EXPERTS for t in range(tokens) for j in range(TRACE_TOP_K)]
            for _ in range(rng.randint(1, 3)):
                vals[rng.randrange(len(vals))] = rng.choice(pool)
            return npy_bytes("<i4", [tokens, TRACE_TOP_K], vals, "i")
        vals = [0.5] * (tokens * TRACE_TOP_K)
        for _ in range(rng.randint(1, 3)):
            vals[rng.randrange(len(vals))] = rng.choice([float("nan"), float("inf"), -1.0, 2.0, 0.0, 1e-40, 3.4e38])
        return npy_bytes("<f4", [tokens, TRACE_TOP_K], vals, "f")
    if op < 0.6:
        # a header that lies about the data
        shape = rng.choice([[], [0], [TRACE_TOKENS], [TRACE_TOKENS, TRACE_TOP_K, 1], [2 ** 31, TRACE_TOP_K],
                            [TRACE_TOKENS * 1000, TRACE_TOP_K], [-1, TRACE_TOP_K], [2 ** 62, 4],
                            [TRACE_TOKENS, 0], [0, TRACE_TOP_K]])
        descr = rng.choice(["<i4", "<f4", "<f8", ">i4", "|u1", "<i8", "<U3", "O"])
        n = 1
        for d in shape:
            n *= max(d, 0)
        n = min(n, 64)
        fortran = rng.random() < 0.2
        version = rng.choice([(1, 0), (1, 0), (2, 0), (3, 0), (0, 9)])
        return npy_bytes(descr, shape, [0] * n, "i", fortran, version)
    return mutate_bytes(rng, data)


def as_bytes(v):
    return v if isinstance(v, bytes) else b""


def mutate_trace(rng, files):
    # a file removed or replaced by a folder by an earlier mutation comes back
    # as empty bytes when a later one edits it
    files = {k: v for k, v in files.items()}
    op = rng.random()
    if op < 0.35:
        try:
            obj = json.loads(as_bytes(files["manifest.json"]))
            mutate_json_value(rng, obj)
            files["manifest.json"] = json.dumps(obj, allow_nan=True).encode()
        except (ValueError, KeyError, IndexError, TypeError):
            files["manifest.json"] = mutate_bytes(rng, as_bytes(files["manifest.json"]))
    elif op < 0.45:
        files["manifest.json"] = mutate_bytes(rng, as_bytes(files["manifest.json"]))
    elif op < 0.8:
        path = rng.choice(sorted(p for p in files if p.endswith(".npy")))
        files[path] = mutate_npy(rng, as_bytes(files[path]), path)
    elif op < 0.9:
        path = rng.choice(["gemm_timings.csv", "hop_timings.csv", "memory.csv"])
        extra = rng.choice([b"1,2,3\n", b"x,y,z,w,v,u,t\n", b"-1,-1,-1,-1,x,-1,-1\n", b"\n\n", b"\r\n",
                            b"1,2,3,4,5,nan,inf\n", b"0,bwd,a2a,-5,1e400,0,0\n", b"9,fwd,ring-token,99,0,0,0\n"])
        data = as_bytes(files[path])
        files[path] = mutate_bytes(rng, data) if rng.random() < 0.5 else data + extra
    else:
        victim = rng.choice(sorted(files))
        files[victim] = rng.choice([None, "dir"])  # removed, or a folder in its place
    return files


def write_trace_dir(directory, files):
    for rel, data in files.items():
        path = os.path.join(directory, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if data is None:
            continue
        if data == "dir":
            os.makedirs(path, exist_ok=True)
            continue
        with open(path, "wb") as f:
            f.write(data)


# ---------------------------------------------------------------- command lines

CLI_FLAGS = ["--system", "--model", "--schedule", "--tokens", "--seed", "--distribution", "--imbalance-std",
             "--zipf-s", "--routing-trace", "--granularity", "--comm-sms", "--repeat", "--max-sim-time",
             "--results", "--timeline", "--out-dir", "--set"]
CLI_VALUES = ["0", "1", "-1", "2", "16", "1000", "1001", "1e3", "1e308", "nan", "inf", "-inf", "", " ",
              "abc", "2147483648", "9223372036854775808", "18446744073709551615", "-0", "0.0001", "1e-300",
              "normal", "zipf", "packet", "row", "megatron", "ring-token", "ideal", "dgx-h800", "no-such",
              "/nonexistent/x.yaml", "/", ".", "-", "--", "--tokens", "x" * 300, "16777217", "33554432",
              # --set overrides: valid, out of range, unknown, maps, malformed
              "system.num_gpus=3", "system.nvlink.credits_flits=9", "system.nvlink.credits_flits=0",
              "model.top_k=99", "model.num_experts=1", "system.nvlink=1", "system.no.such=1", "model.top_k=",
              "system.gpu.gemm.k_half=[1]", "system.hub.implementation=moehub", "system.sim.granularity=row",
              "model.name=x=y", "system..x=1", "system.num_gpus=1e3", "schedule.poll.poll_interval_ns=100",
              "schedule.poll.poll_sm_ns=0", "schedule.ring_grad_bytes=3", "schedule.x=1",
              "schedule.baseline.tutel_pipeline_degree=8", "schedule.baseline.comet_comm_sms=1000",
              "ring-expert", "schedule.ring_chunk_rows=-1", "schedule.ring_chunk_rows=3",
              "schedule.ring_chunk_rows=-2", "schedule.ring_accum_bytes=2"]


def mutate_cli(rng, args, out_dir):
    args = list(args)
    op = rng.random()
    if op < 0.55:
        flag = rng.choice(CLI_FLAGS)
        value = rng.choice(CLI_VALUES)
        if flag in ("--results", "--timeline", "--out-dir") and rng.random() < 0.5:
            value = os.path.join(out_dir, rng.choice(["r.json", "sub/r.json", ""]))
        if flag in args and args.index(flag) + 1 < len(args):
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    elif op < 0.7 and args:
        i = rng.randrange(len(args))
        del args[i]
    elif op < 0.8:
        args.append(rng.choice(["--no-such-flag", "-x", "--tokens", "--help-all", "--version", "positional"]))
    elif op < 0.9:
        i = rng.randrange(len(args) + 1)
        args.insert(i, rng.choice(CLI_FLAGS + ["--no-timeline", "--quiet"]))
    else:
        i = rng.randrange(len(args))
        args[i] = args[i] + rng.choice(["=1", "=", "x", "0"])
    return args


# ---------------------------------------------------------------- running

class Case:
    def __init__(self, kind, index, seed):
        self.kind, self.index = kind, index
        self.rng = random.Random("%d/%s/%d" % (seed, kind, index))


SANITIZER_EXIT = 23  # exit status of a sanitizer report (ASAN_OPTIONS/UBSAN_OPTIONS exitcode)


def suspended_thread_leaks_only(err):
    """Whether err is a LeakSanitizer report, and only that, of objects
    allocated inside SystemC threads, after a run stopped at its time limit.
    Such threads stay suspended and cannot be unwound: what lives on their
    stacks is never freed (docs/results/fuzzing.md)."""
    if TIME_LIMIT_MARK not in err or "ERROR: LeakSanitizer" not in err:
        return False
    if "ERROR: AddressSanitizer" in err or "runtime error:" in err:
        return False
    blocks = re.split(r"\n(?=(?:Direct|Indirect) leak of )", err)
    leaks = [b for b in blocks if re.match(r"(?:Direct|Indirect) leak of ", b)]
    return bool(leaks) and all("sc_thread_cor_fn" in b for b in leaks)


def output_paths(cmd_args, work):
    """The results and timeline files a run of cmd_args writes, resolved as
    moehub-sim resolves them: relative to its working directory `work`, under
    the last --out-dir (default "out") unless --results / --timeline name them."""
    def last(flag):
        value = None
        for i, a in enumerate(cmd_args):
            if a == flag and i + 1 < len(cmd_args):
                value = cmd_args[i + 1]
            elif a.startswith(flag + "=") and len(a) > len(flag) + 1:  # --flag=VALUE
                value = a[len(flag) + 1:]
        return value
    out = os.path.join(work, last("--out-dir") or "out")
    results, timeline = last("--results"), last("--timeline")
    return (os.path.normpath(os.path.join(work, results) if results else os.path.join(out, "results.json")),
            os.path.normpath(os.path.join(work, timeline) if timeline else os.path.join(out, "timeline.json")))


def file_times(paths):
    """{path: modification time} of those of `paths` that are files."""
    times = {}
    for p in paths:
        try:
            if os.path.isfile(p):
                times[p] = os.stat(p).st_mtime_ns
        except OSError:
            pass
    return times


def snapshot(work, cmd_args):
    """The files a run may write or leave behind, with their times: everything
    under its working directory and its two output paths (which may lie outside)."""
    paths = set(output_paths(cmd_args, work))
    for base, _, names in os.walk(work):
        paths.update(os.path.join(base, n) for n in names)
    return file_times(paths)


def changed(before, after):
    """Files of `after` that are new or were modified since `before`."""
    return sorted(p for p, t in after.items() if before.get(p) != t)


def check_outcome(rc, err, work, before, cmd_args):
    """None when the outcome is acceptable, else why not. `before` is the
    snapshot() of the run's working directory `work` taken before it ran;
    outputs may also lie outside `work` (an absolute --out-dir)."""
    known_leaks = rc == SANITIZER_EXIT and suspended_thread_leaks_only(err)
    if known_leaks:
        rc = 3
    if rc is None:
        return "timeout"
    if rc < 0:
        return "killed by signal %d" % -rc
    if rc not in (0, 2, 3):
        return "exit status %d" % rc
    if rc == 3 and TIME_LIMIT_MARK not in err:
        return "exit 3: self-checks failed"
    for mark in SANITIZER_MARKS:
        if mark in err and not known_leaks:
            return "sanitizer report (%s)" % mark
    results, _ = output_paths(cmd_args, work)
    written = changed(before, snapshot(work, cmd_args))
    if rc == 0:
        help_or_version = any(a.startswith("--help") or a in ("-h", "--version") for a in cmd_args)
        if not help_or_version:
            if results not in written:
                return "exit 0 without results.json"
            try:
                with open(results, encoding="utf-8") as f:
                    json.load(f)
            except (ValueError, OSError, UnicodeDecodeError) as e:
                return "%s does not parse: %s" % (os.path.basename(results), e)
    if (rc == 2 or (rc == 3 and TIME_LIMIT_MARK in err)) and written:
        return "exit %d left %s behind" % (rc, ", ".join(os.path.basename(p) for p in written))
    return None


def run_case(args, case):
    rng = case.rng
    work = tempfile.mkdtemp(prefix="case-", dir=args.work_dir)
    out_dir = os.path.join(work, "out")
    os.makedirs(out_dir)
    # copies: a mutated command line may name a config as its --results
    system = shutil.copy(os.path.join(SEEDS, "system-2gpu.yaml"), os.path.join(work, "base-system.yaml"))
    model = shutil.copy(os.path.join(SEEDS, "model-4experts.yaml"), os.path.join(work, "base-model.yaml"))
    schedule = rng.choice(SCHEDULES)
    cmd_args = ["--system", system, "--model", model, "--schedule", schedule] + BASE_ARGS
    cmd_args[cmd_args.index("--granularity") + 1] = args.granularity
    if schedule.startswith("moehub"):
        cmd_args += ["--hub-impl", "moehub"]  # the MoE-Hub schedules need the MoE-Hub units in the hub
    inputs = []
    if case.kind == "config":
        which = "system" if rng.random() < 0.7 else "model"
        src = system if which == "system" else model
        with open(src, encoding="utf-8") as f:
            text = f.read()
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            text = mutate_yaml(rng, text, which)
        path = os.path.join(work, which + ".yaml")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        cmd_args[cmd_args.index("--" + which) + 1] = path
        inputs.append(path)
    elif case.kind == "trace":
        files = trace_files()
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            files = mutate_trace(rng, files)
        tdir = os.path.join(work, "trace")
        write_trace_dir(tdir, files)
        cmd_args += ["--routing-trace", tdir]
        inputs.append(tdir)
    else:
        for _ in range(rng.choice([1, 1, 2, 3])):
            cmd_args = mutate_cli(rng, cmd_args, out_dir)
    if "--out-dir" not in cmd_args:
        cmd_args += ["--out-dir", out_dir]
    cmd = [args.sim] + cmd_args
    env = dict(os.environ)
    # options given by the caller first; these (later ones win) make every
    # report exit with SANITIZER_EXIT instead of aborting
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=1") + \
        ":abort_on_error=0:exitcode=%d" % SANITIZER_EXIT
    env.setdefault("LSAN_OPTIONS", "use_stacks=0")  # as the asan test preset: CMakePresets.json
    env["UBSAN_OPTIONS"] = env.get("UBSAN_OPTIONS", "print_stacktrace=1") + \
        ":halt_on_error=1:abort_on_error=0:exitcode=%d" % SANITIZER_EXIT
    before = snapshot(work, cmd_args)
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=args.timeout)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
    if rc == SANITIZER_EXIT and TIME_LIMIT_MARK in err and "ERROR: LeakSanitizer" in err:
        # again with full allocation stacks, to tell leaks of suspended SystemC
        # threads apart (the fast unwinder stops in libstdc++)
        env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"] + ":fast_unwind_on_malloc=0"
        try:
            p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=args.timeout)
            rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, err = None, (e.stderr or b"").decode("utf-8", "replace")
    elapsed = time.monotonic() - start
    problem = check_outcome(rc, err, work, before, cmd_args)
    for path in changed(before, file_times(output_paths(cmd_args, work))):
        # outputs outside the case's folder (an absolute --out-dir) go with it
        if not path.startswith(work + os.sep) and path not in before:
            os.remove(path)
    if problem:
        keep = os.path.join(args.work_dir, "failures", "%s-%05d" % (case.kind, case.index))
        shutil.rmtree(keep, ignore_errors=True)
        os.makedirs(keep)
        for path in inputs:
            if os.path.isdir(path):
                shutil.copytree(path, os.path.join(keep, os.path.basename(path)))
            else:
                shutil.copy(path, keep)
        with open(os.path.join(keep, "README.txt"), "w", encoding="utf-8") as f:
            f.write("problem: %s\ncommand (inputs copied here):\n%s\n\nstderr:\n%s\n" % (
                problem, " ".join(repr(a) if (not a or " " in a) else a for a in cmd), err[-20000:]))
    shutil.rmtree(work, ignore_errors=True)
    return case.kind, rc, problem, elapsed, err.strip().splitlines()[-1:] if err.strip() else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim", required=True, help="the moehub-sim binary (a sanitizer build finds more)")
    ap.add_argument("--configs", type=int, default=100, help="mutated system/model configs to run")
    ap.add_argument("--traces", type=int, default=100, help="mutated routing traces to run")
    ap.add_argument("--cli", type=int, default=50, help="mutated command lines to run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="index of the first case of each kind")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per run before it counts as a hang")
    ap.add_argument("--granularity", choices=["row", "packet"], default="row",
                    help="of the base run: row (fast) or packet (the reference path through the hubs' egress)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--work-dir", default=None, help="scratch folder; failures are kept in WORK_DIR/failures")
    args = ap.parse_args()
    args.sim = os.path.abspath(args.sim)
    if args.work_dir is None:
        args.work_dir = tempfile.mkdtemp(prefix="moehub-fuzz-")
    os.makedirs(args.work_dir, exist_ok=True)
    args.work_dir = os.path.abspath(args.work_dir)
    shutil.rmtree(os.path.join(args.work_dir, "failures"), ignore_errors=True)

    cases = [Case(kind, i, args.seed) for kind, n in (("config", args.configs), ("trace", args.traces),
                                                      ("cli", args.cli))
             for i in range(args.start, args.start + n)]
    counts = {}
    failures = []
    slowest, slowest_case = 0.0, ""
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = zip(cases, pool.map(lambda c: run_case(args, c), cases))
        for done, (case, (kind, rc, problem, elapsed, last)) in enumerate(results, 1):
            key = (kind, "timeout" if rc is None else rc)
            if rc == SANITIZER_EXIT and not problem:
                key = (kind, "3 (time limit; leaks of suspended SystemC threads)")
            elif rc == 3:
                key = (kind, "3 (time limit)" if last and TIME_LIMIT_MARK in last[0] else "3 (self-checks)")
            counts[key] = counts.get(key, 0) + 1
            if elapsed > slowest:
                # named so that it can be run again alone: --start INDEX and a count of 1 of its kind
                slowest, slowest_case = elapsed, "%s %d, exit %s" % (kind, case.index, key[1])
            if problem:
                failures.append((kind, problem, last))
                print("FAIL %s: %s %s" % (kind, problem, last), flush=True)
            if done % 500 == 0:
                print("... %d/%d cases, %d failures, %.0f s" % (done, len(cases), len(failures),
                                                             time.monotonic() - t0), flush=True)
    wall = time.monotonic() - t0
    print("mutate_sim: %d cases in %.1f s (slowest %.2f s: %s), seed %d, sim %s" % (
        len(cases), wall, slowest, slowest_case or "none", args.seed, args.sim))
    for kind in ("config", "trace", "cli"):
        row = {k[1]: v for k, v in counts.items() if k[0] == kind}
        if row:
            print("  %-6s %s" % (kind, ", ".join("exit %s: %d" % (k, row[k]) for k in sorted(row, key=str))))
    print("  failures: %d%s" % (len(failures), " (inputs in %s/failures)" % args.work_dir if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
