#!/usr/bin/env python3
"""Compares measured all-to-all times (the `a2a` rows of scripts/gpu/p2p_bench.py's CSV:
all_to_all_single with `bytes` in total per GPU, equal splits) with moehub-sim's
`a2a-uniform` schedule on a system config, and prints a Markdown table with the error.

  host/scripts/compare_a2a.py --sim build/release/host/sim/moehub-sim --system hgx-h200-x2 \
      --measured docs/results/data/h200x2_p2p_2026-11-29.csv
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--system", required=True)
    ap.add_argument("--model", default="qwen3-30b-a3b", help="only its row size (hidden x dtype) matters")
    ap.add_argument("--measured", required=True)
    ap.add_argument("--gpus", type=int, default=2, help="GPUs of the measured machine")
    ap.add_argument("--row-bytes", type=int, default=4096, help="hidden x dtype of --model")
    ap.add_argument("--granularity", default="packet")
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(l for l in open(a.measured) if not l.startswith("#")) if r["kind"] == "a2a"]
    if not rows:
        print(f"compare_a2a: no a2a rows in {a.measured}", file=sys.stderr)
        return 2
    print("| bytes per GPU | measured (us) | simulated (us) | error |")
    print("| ---: | ---: | ---: | ---: |")
    errs = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            n = int(r["bytes"])
            tokens = a.gpus * n // a.row_bytes
            res = os.path.join(tmp, "r.json")
            p = subprocess.run([a.sim, "--system", a.system, "--model", a.model, "--schedule", "a2a-uniform",
                                "--tokens", str(tokens), "--granularity", a.granularity, "--results", res,
                                "--no-timeline", "--quiet", "--out-dir", tmp], capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stderr, file=sys.stderr)
                return 1
            sim = json.load(open(res))["layer_time_us"]
            meas = float(r["time_us"])
            err = (sim - meas) / meas * 100
            errs.append(abs(err))
            print(f"| {n} | {meas:.1f} | {sim:.1f} | {err:+.1f} % |")
    print(f"\nmean absolute error {sum(errs) / len(errs):.1f} % over {len(errs)} sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
