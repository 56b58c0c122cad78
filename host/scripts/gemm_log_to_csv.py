#!/usr/bin/env python3
"""Turns the GEMM timings of a scripts/gpu/device_run.sh log (stages gemm, gemm-fwd, gemm-skewed,
gemm-wgrad, gemm-wgrad-variants, gemm-wgrad-bf16: moehub-gpu bench-gemm and scripts/gpu/torch_grouped_mm.py) into one CSV row per
(program, routing, model, case, GEMM): TFLOP/s and microseconds as printed, nothing
recomputed.

  python3 host/scripts/gemm_log_to_csv.py docs/results/data/gpu-h200-wgrad-run4.txt > out.csv
"""
import csv
import re
import sys

STAGES = {
    "bench_gemm": ("bench-gemm", "balanced"),
    "bench_gemm_skewed": ("bench-gemm", "skewed"),
    "torch_grouped_mm": ("torch_grouped_mm.py", "balanced"),
    "torch_grouped_mm_skewed": ("torch_grouped_mm.py", "skewed"),
    "torch_grouped_mm_fwd": ("torch_grouped_mm.py", "balanced"),
    "torch_grouped_mm_fwd_skewed": ("torch_grouped_mm.py", "skewed"),
    "torch_wgrad": ("torch_grouped_mm.py", "balanced"),
    "torch_wgrad_skewed": ("torch_grouped_mm.py", "skewed"),
    "torch_wgrad_variants": ("torch_grouped_mm.py", "balanced"),
    "torch_wgrad_variants_skewed": ("torch_grouped_mm.py", "skewed"),
    "torch_wgrad_bf16": ("torch_grouped_mm.py", "balanced"),
    "torch_wgrad_bf16_skewed": ("torch_grouped_mm.py", "skewed"),
    "torch_wgrad_bf16_schedules_balanced": ("torch_grouped_mm.py", "balanced"),
    "torch_wgrad_bf16_schedules_skewed": ("torch_grouped_mm.py", "skewed"),
}
LINE = re.compile(r"^(\S+)\s+(.+?)\s+gate\+up\s+([\d.]+) us\s+([\d.]+) TFLOP/s \| down\s+([\d.]+) us\s+([\d.]+) TFLOP/s")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["program", "routing", "model", "case", "gemm", "us", "tflops"])
    stage = None
    with open(sys.argv[1]) as f:
        for line in f:
            m = re.match(r"^=== (\w+): ", line)
            if m:
                stage = m.group(1) if m.group(1) in STAGES else None
                continue
            m = LINE.match(line)
            if not (stage and m):
                continue
            program, routing = STAGES[stage]
            case = " ".join(m.group(2).split())
            out.writerow([program, routing, m.group(1), case, "gate_up", m.group(3), m.group(4)])
            out.writerow([program, routing, m.group(1), case, "down", m.group(5), m.group(6)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
