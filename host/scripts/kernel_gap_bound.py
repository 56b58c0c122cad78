#!/usr/bin/env python3
"""Bounds what the simulator leaves out by starting a kernel the moment its stream may run it:
a GPU spends about a microsecond between two kernels of one stream (0.79 us for empty kernels
and 1.08-1.52 us for copies of 4 KiB to 1 MiB, as one CUDA graph on an H100:
scripts/gpu/kernel_gap.cu, docs/results/simulator.md "Kernel gaps"). A kernel that started
after a host launch gap already waited for the host, which covers that time, so the bound
counts only the kernels that started without one (back to back, or after a dependency), each
at --gap-us, and divides the busiest GPU's sum by the layer time.

  host/scripts/kernel_gap_bound.py --sim build/release/host/sim/moehub-sim \\
      --schedules megatron ideal comet ring-expert ring-token moehub [--max-percent 2]

Prints a Markdown table; exits 1 when a schedule's bound exceeds --max-percent, 2 on bad
arguments.
"""
import argparse
import os
import sys
import tempfile

import simrun

KERNEL_KINDS = ("memory", "gemm", "all_to_all", "row_stores")


def bound(results, gap_us):
    """(kernels, kernels not after a host launch gap, busiest GPU's bound in us)."""
    worst = (0, 0, 0.0)
    for g in results["gpus"]:
        by_stream = {}
        for p in g["phases"]:
            by_stream.setdefault(p["stream"], []).append(p)
        kernels = exposed = 0
        for ops in by_stream.values():
            ops.sort(key=lambda p: (p["start_us"], p["end_us"]))
            prev = None
            for p in ops:
                if p["kind"] in KERNEL_KINDS:
                    kernels += 1
                    after_host = prev is not None and prev["kind"] == "launch_gap" and prev["end_us"] - prev["start_us"] >= gap_us
                    if not after_host:
                        exposed += 1
                prev = p
        if exposed * gap_us > worst[2]:
            worst = (kernels, exposed, exposed * gap_us)
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sim", required=True)
    ap.add_argument("--schedules", nargs="+", default=["megatron", "ideal", "comet", "ring-expert", "ring-token", "moehub"])
    ap.add_argument("--gap-us", type=float, default=1.1)
    ap.add_argument("--max-percent", type=float, default=None)
    ap.add_argument("--sim-args", default="", help="more moehub-sim arguments for every run, one string")
    a = ap.parse_args()
    if not (a.gap_us > 0 and a.gap_us <= 100):
        print(f"kernel_gap_bound: --gap-us must be in (0, 100] (got {a.gap_us})", file=sys.stderr)
        sys.exit(2)
    if a.max_percent is not None and not (a.max_percent >= 0 and a.max_percent <= 100):
        print(f"kernel_gap_bound: --max-percent must be in [0, 100] (got {a.max_percent})", file=sys.stderr)
        sys.exit(2)
    over = []
    print(f"| schedule | layer (us) | kernels, busiest GPU | started without a host gap | bound at {a.gap_us} us each |")
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for s in a.schedules:
            out = os.path.join(tmp, s)
            cmd = [a.sim, "--schedule", s, "--granularity", "row", "--no-timeline", "--quiet", "--out-dir", out]
            r = simrun.run_results(cmd + a.sim_args.split(), out, "kernel_gap_bound")
            kernels, exposed, us = bound(r, a.gap_us)
            pct = 100.0 * us / r["layer_time_us"]
            print(f"| {s} | {r['layer_time_us']:,.1f} | {kernels} | {exposed} | {us:,.1f} us, {pct:.2f} % |")
            if a.max_percent is not None and pct > a.max_percent:
                over.append(f"{s}: {pct:.2f} % > {a.max_percent} %")
    if over:
        print("kernel_gap_bound: above the bound: " + "; ".join(over), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
