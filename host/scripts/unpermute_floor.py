#!/usr/bin/env python3
"""Fit the unpermutation's measured device time as a floor plus a rate.

For each model and mode of a Megatron-Core measurement (the phases CSVs written by
host/scripts/megatron_moe_measure.py, one or more runs given by their common prefix),
takes the median device time of the "unpermutation" phase per token count and fits
device_us = floor_us + bytes / rate by least squares over --tokens. The bytes are the
ones the megatron schedule counts for the phase (T k H 2 of expert outputs and T k 4 of
gate weights read, T H 2 of tokens written). Prints the floor, the rate and each point
against the fit (docs/results/megatron-h200.md, "Qwen's misses, examined").
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict

MODELS = {  # configs/models: hidden, top-k
    "mixtral-8x7b": (4096, 2),
    "qwen1.5-moe-a2.7b": (2048, 4),
}


def fail(message):
    print(f"unpermute_floor: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefixes", nargs="+", help="run prefixes, e.g. docs/results/data/megatron_h200_2026-12-02_run9")
    ap.add_argument("--tokens", type=int, nargs="+", default=[4096, 8192, 16384, 32768],
                    help="token counts to fit over (at least two)")
    a = ap.parse_args()
    if len(set(a.tokens)) < 2:
        fail("--tokens needs at least two different token counts")
    times = defaultdict(list)
    for prefix in a.prefixes:
        path = prefix + "_phases.csv"
        try:
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    if r["phase"] == "unpermutation":
                        times[(r["model"], r["mode"], int(r["tokens"]))].append(float(r["device_us"]))
        except (OSError, KeyError, ValueError) as e:
            fail(f"{path}: {e}")
    print("model mode floor_us rate_gbps points (tokens: measured/fitted us (the fit's error))")
    for model, (H, k) in MODELS.items():
        for mode in ("fwd", "fwdbwd"):
            pts = [(T, T * k * H * 2 + T * H * 2 + T * k * 4, statistics.median(times[(model, mode, T)]))
                   for T in a.tokens if times.get((model, mode, T))]
            if len(pts) < 2:
                continue
            xs = [b / 1e3 for _, b, _ in pts]  # kB, so that the slope is us per kB = 1 / (GB/s)
            ys = [t for _, _, t in pts]
            mx, my = statistics.fmean(xs), statistics.fmean(ys)
            slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
            floor = my - slope * mx
            fitted = " ".join(f"{T}: {y:.0f}/{floor + slope * x:.0f} ({(floor + slope * x - y) / y * 100:+.1f} %)"
                              for (T, _, _), x, y in zip(pts, xs, ys))
            print(f"{model} {mode} {floor:.0f} {1 / slope:.0f} {fitted}")


if __name__ == "__main__":
    main()
