#!/usr/bin/env python3
"""Compares measured all-to-all times (the `a2a` rows of scripts/gpu/p2p_bench.py's CSV:
all_to_all_single with `bytes` in total per GPU, equal splits; the median of repeated
rows of one size) with moehub-sim's
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
    ap.add_argument("--granularity", default="row", help="row: within a few percent of packet level, much faster")
    ap.add_argument("--repeat", type=int, default=10,
                    help="calls in the back-to-back column (the host launches the next call while the GPUs "
                         "run the current one, as the measurement's timing loop does)")
    a = ap.parse_args()
    rows = [r for r in csv.DictReader(l for l in open(a.measured) if not l.startswith("#")) if r["kind"] == "a2a"]
    # repeated measurements of one size: keep the median
    by_size = {}
    for r in rows:
        by_size.setdefault(int(r["bytes"]), []).append(float(r["time_us"]))
    rows = [{"bytes": n, "time_us": sorted(v)[len(v) // 2], "samples": len(v), "all": sorted(v)}
            for n, v in sorted(by_size.items())]
    if not rows:
        print(f"compare_a2a: no a2a rows in {a.measured}", file=sys.stderr)
        return 2
    print("| bytes per GPU | measured (us, median) | samples (us) | simulated, one call (us) | error | "
          f"simulated, {a.repeat} back to back, per call (us) | error |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    errs, errs_b2b = [], []

    def simulate(tokens, repeat, tmp):
        res = os.path.join(tmp, "r.json")
        p = subprocess.run([a.sim, "--system", a.system, "--model", a.model, "--schedule", "a2a-uniform",
                            "--tokens", str(tokens), "--granularity", a.granularity, "--repeat", str(repeat),
                            "--results", res, "--no-timeline", "--quiet", "--out-dir", tmp],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return json.load(open(res))["layer_time_us"] / repeat

    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            n = int(r["bytes"])
            tokens = a.gpus * n // a.row_bytes
            meas = float(r["time_us"])
            one = simulate(tokens, 1, tmp)
            b2b = simulate(tokens, a.repeat, tmp)
            e1, e2 = (one - meas) / meas * 100, (b2b - meas) / meas * 100
            errs.append(abs(e1))
            errs_b2b.append(abs(e2))
            samples = ", ".join(f"{x:.1f}" for x in r["all"])
            print(f"| {n} | {meas:.1f} | {samples} | {one:.1f} | {e1:+.1f} % | {b2b:.1f} | {e2:+.1f} % |")
    print(f"\nmean absolute error: one call {sum(errs) / len(errs):.1f} %, back to back "
          f"{sum(errs_b2b) / len(errs_b2b):.1f} %, over {len(errs)} sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
