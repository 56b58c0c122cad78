#!/usr/bin/env python3
"""Runs moehub-sim over a grid of settings as independent processes (a local
worker pool) and writes one CSV row per run plus a Markdown table.

  host/scripts/sweep.py --sim build/release/host/sim/moehub-sim --out out/sweep \
      --models mixtral-8x7b --tokens 128 512 2048 8192 32768 --schedules megatron ideal

Config keys: --set TARGET.KEY=VALUE (repeatable) passes moehub-sim's --set to every
run; --vary TARGET.KEY=V1,V2,... adds one key's values as a dimension of the grid (a
CSV column named after the key, a column of the table; repeat it for more keys: their
product), e.g. the NVLink bandwidth:

  host/scripts/sweep.py --sim build/release/host/sim/moehub-sim --out out/bw \
      --schedules megatron moehub ideal --granularity row \
      --vary system.nvlink.bw_gbps_per_direction_per_gpu=100,200,400,800

Each run's full results JSON is kept in OUT/runs/. Exit status is non-zero if
any run fails (its stderr is printed)."""
import argparse
import concurrent.futures as cf
import csv
import itertools
import json
import os
import subprocess
import sys


def run_tag(system, model, schedule, tokens, std, seed, granularity, varied=()):
    """The name of a run's results file in OUT/runs/; a system given as a path to
    a YAML file contributes its path with each '/' written as '_'; each varied key
    (KEY, VALUE) adds _KEY=VALUE."""
    tag = f"{system.replace('/', '_')}_{model}_{schedule}_t{tokens}_std{std}_s{seed}_{granularity}"
    for key, value in varied:
        tag += f"_{key}={value}".replace("/", "_")
    return tag


def parse_vary(text):
    """--vary TARGET.KEY=V1,V2,... as (KEY, [V1, V2, ...])."""
    key, eq, values = text.partition("=")
    vals = [v for v in values.split(",") if v]
    if not eq or not key.startswith(("system.", "model.", "schedule.")) or not vals:
        raise argparse.ArgumentTypeError(
            f"expected system.KEY=V1,V2,..., model.KEY=V1,V2,... or schedule.KEY=V1,V2,... (got '{text}')")
    return key, vals


def run_one(sim, out, model, system, schedule, tokens, std, seed, granularity, sets=(), varied=()):
    tag = run_tag(system, model, schedule, tokens, std, seed, granularity, varied)
    results = os.path.join(out, "runs", tag + ".json")
    cmd = [sim, "--system", system, "--model", model, "--schedule", schedule, "--tokens", str(tokens),
           "--imbalance-std", str(std), "--seed", str(seed), "--granularity", granularity,
           "--results", results, "--no-timeline", "--quiet", "--out-dir", out]
    for s in sets:
        cmd += ["--set", s]
    for key, value in varied:
        cmd += ["--set", f"{key}={value}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return tag, None, p.stderr
    with open(results) as f:
        r = json.load(f)
    row = {"system": system, "model": model, "schedule": schedule, "tokens": tokens, "imbalance_std": std,
           "seed": seed, "granularity": granularity, "measured_load_std": round(r["measured_load_std"], 5),
           "layer_time_us": round(r["layer_time_us"], 3)}
    for key, value in varied:
        row[key] = value
    if "routing_to_gemm1" in r:
        row["routing_to_gemm1_us"] = round(r["routing_to_gemm1"]["mean_us"], 3)
        if "end_mean_us" in r["routing_to_gemm1"]:
            row["routing_to_gemm1_end_us"] = round(r["routing_to_gemm1"]["end_mean_us"], 3)
    for k, v in r["breakdown_us"].items():
        row["us_" + k] = round(v, 3)
    return tag, row, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--systems", nargs="+", default=["dgx-h800"])
    ap.add_argument("--models", nargs="+", default=["mixtral-8x7b"])
    ap.add_argument("--schedules", nargs="+", default=["megatron", "ideal"])
    ap.add_argument("--tokens", nargs="+", type=int, default=[8192])
    ap.add_argument("--imbalance-std", nargs="+", type=float, default=[0.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[1])
    ap.add_argument("--granularity", default="packet", choices=["packet", "row"])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--set", action="append", default=[], metavar="TARGET.KEY=VALUE",
                    help="moehub-sim --set for every run (repeatable)")
    ap.add_argument("--vary", type=parse_vary, action="append", default=[], metavar="TARGET.KEY=V1,V2,...",
                    help="one config key's values as a dimension of the grid (repeatable)")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    vkeys = [k for k, _ in a.vary]
    if len(set(vkeys)) != len(vkeys):
        ap.error("--vary: a key given twice")
    varied = list(itertools.product(*[[(k, v) for v in vals] for k, vals in a.vary]))
    grid = list(itertools.product(a.models, a.systems, a.schedules, a.tokens, a.imbalance_std, a.seeds, varied))
    rows, failed = [], 0
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = [pool.submit(run_one, a.sim, a.out, m, s, sch, t, std, seed, a.granularity, a.set, v)
                for (m, s, sch, t, std, seed, v) in grid]
        for f in cf.as_completed(futs):
            tag, row, err = f.result()
            if row is None:
                failed += 1
                print(f"sweep: {tag} failed:\n{err}", file=sys.stderr)
            else:
                rows.append(row)
    keys = ["system", "model", "schedule", "tokens", "imbalance_std", "seed", "granularity"]
    # varied values sort in the order given, not as text
    order = {k: {v: i for i, v in enumerate(vals)} for k, vals in a.vary}
    keys += vkeys
    rows.sort(key=lambda r: tuple(order[k][r[k]] if k in order else r[k] for k in keys))
    fields = sorted({k for r in rows for k in r}, key=lambda k: (k not in keys, k))
    with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    # Markdown: layer time per schedule side by side, ratio to ideal when present
    by = {}
    for r in rows:
        key = (r["system"], r["model"], r["tokens"], r["imbalance_std"], r["seed"])
        key += tuple(order[k][r[k]] for k in vkeys)
        by.setdefault(key, {})[r["schedule"]] = r
    scheds = a.schedules
    head = ["system", "model", "tokens", "std", "seed"] + vkeys
    lines = ["| " + " | ".join(head) + " | " + " | ".join(f"{s} (us)" for s in scheds) +
             (" | megatron / ideal |" if {"megatron", "ideal"} <= set(scheds) else " |"),
             "|" + " --- |" * (len(head) + len(scheds) + ({"megatron", "ideal"} <= set(scheds)))]
    for key in sorted(by):
        d = by[key]
        cells = [f"{d[s]['layer_time_us']:.1f}" if s in d else "-" for s in scheds]
        ratio = ""
        if "megatron" in d and "ideal" in d:
            ratio = f" {d['megatron']['layer_time_us'] / d['ideal']['layer_time_us']:.3f} |"
        shown = key[:5] + tuple(a.vary[i][1][key[5 + i]] for i in range(len(vkeys)))
        lines.append("| " + " | ".join(str(x) for x in shown) + " | " + " | ".join(cells) + " |" + ratio)
    with open(os.path.join(a.out, "sweep.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
