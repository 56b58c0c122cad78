#!/usr/bin/env python3
"""Per-iteration layer times of a Megatron-Core measurement against the clock.

Reads the megatron_iters.csv of a run of host/scripts/megatron_moe_measure.py
(the per-iteration records; runs with repeated, interleaved sizes show whether a
slow stretch belongs to a size or to a time) and writes one PNG: per model
(rows) and mode (columns), the device time of every timed layer call (the
uninstrumented pass) against the seconds since the run started, coloured by the
total token count, each pass labelled with its size (up to 40 passes per panel).

Usage:
  /usr/bin/python3 host/scripts/megatron_iters_plot.py \
      docs/results/data/megatron_h200_2026-12-01_run3_iters.csv --out docs/results/img/megatron_iters_run3.png
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


MAX_LABELLED_PASSES = 40


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="a megatron_iters.csv (per-iteration records)")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--title", default="", help="figure title")
    a = ap.parse_args()
    if not os.path.exists(a.csv):
        sys.stderr.write(f"error: {a.csv} not found\n")
        sys.exit(2)
    with open(a.csv) as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "layer" and r["impl"] == "megatron"]
    if not rows:
        sys.stderr.write(f"error: {a.csv}: no rows of kind 'layer' (expected megatron_moe_measure.py output)\n")
        sys.exit(2)
    models = sorted({r["model"] for r in rows})
    modes = [m for m in ("fwd", "fwdbwd") if any(r["mode"] == m for r in rows)]
    sizes = sorted({int(r["tokens"]) for r in rows})
    cmap = plt.get_cmap("viridis")
    color = {t: cmap(i / max(1, len(sizes) - 1)) for i, t in enumerate(sizes)}
    fig, axes = plt.subplots(len(models), len(modes), figsize=(6.5 * len(modes), 3.6 * len(models)),
                             squeeze=False)
    for i, model in enumerate(models):
        for j, mode in enumerate(modes):
            ax = axes[i][j]
            sel = [r for r in rows if r["model"] == model and r["mode"] == mode]
            for t in sizes:
                pts = [(float(r["t_s"]), float(r["device_us"]) / 1e3) for r in sel if int(r["tokens"]) == t]
                if pts:
                    ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=6, color=color[t], label=str(t))
            passes = sorted({int(r["pass"]) for r in sel})
            # a label per pass; runs of interleaved rounds (hundreds of short
            # passes) are told apart by colour alone
            for p in passes if len(passes) <= MAX_LABELLED_PASSES else []:
                pr = [r for r in sel if int(r["pass"]) == p]
                x0 = float(pr[0]["t_s"])
                y = max(float(r["device_us"]) for r in pr) / 1e3
                ax.annotate(pr[0]["tokens"], (x0, y), fontsize=6, xytext=(0, 3), textcoords="offset points")
            ax.set_title(f"{model} {'forward' if mode == 'fwd' else 'forward+backward'}", fontsize=9)
            ax.set_xlabel("seconds since the run started")
            ax.set_ylabel("layer time per call (ms)")
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0 and j == len(modes) - 1:
                ax.legend(title="tokens", fontsize=6, title_fontsize=7, markerscale=2, loc="upper left",
                          bbox_to_anchor=(1.01, 1.0))
    if a.title:
        fig.suptitle(a.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, dpi=90)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
