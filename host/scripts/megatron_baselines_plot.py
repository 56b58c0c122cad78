#!/usr/bin/env python3
"""Plots and tables of the software-baseline sweep (host/scripts/sweep.py output).

Reads a sweep.csv with the schedules megatron, fastermoe, tutel, comet, ccfuser,
ideal and, when present, moehub (any schedule whose name starts with "moehub"
is taken as the MoE-Hub reference; the first in sorted order if several), and
writes into --out:

  baselines_layer_time.png   per-layer time against total tokens, one panel per model
  baselines_speedup.png      average speedup of the reference over each baseline,
                             beside ideal's and the MoE-Hub paper's averages
  baselines_speedup_tokens.png
                             the reference's speedup over each baseline against
                             total tokens, one panel per model
  baselines_tables.md        the same figures as Markdown tables
  baselines_scaling.png      with --scaling-csv (a sweep over systems of 2..N GPUs
                             at one token count): layer time against GPUs per model
  baselines_scaling_efficiency.png
                             the same as throughput relative to the fewest GPUs,
                             beside linear scaling (the paper's Fig. 17 view); the
                             tables add the reference's speedup over each baseline
                             per GPU count and the scaling efficiency

The reference is MoE-Hub when the sweep has it, otherwise `ideal` (an upper
bound: the paper puts MoE-Hub at 96.8 % of ideal). Averages are arithmetic
means over every (model, tokens) point, as the paper's are over its runs.

Usage:
  /usr/bin/python3 host/scripts/megatron_baselines_plot.py --csv out/sweep/sweep.csv --out docs/results/img
"""
import argparse
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BASELINES = ["megatron", "fastermoe", "tutel", "comet", "ccfuser"]
# MoE-Hub paper (arXiv 2605.05888), section VI-A: speedups of MoE-Hub on the MoE
# layer over Megatron-TE, FasterMoE, Tutel, Comet and CCFuser
PAPER = {"megatron": 2.195, "fastermoe": 3.082, "tutel": 2.014, "comet": 1.400, "ccfuser": 1.542}
# the same paper, Mixtral-8x7B over Megatron-TE: 128-2048 and 4096-32768 tokens
PAPER_MIXTRAL = {"small": 4.70, "large": 2.14}


def load(path):
    if not os.path.exists(path):
        sys.stderr.write(f"error: {path} not found\n")
        sys.exit(2)
    with open(path) as f:
        rows = list(csv.DictReader(f))
    t = {}
    for r in rows:
        t[(r["system"], r["model"], r["schedule"], int(r["tokens"]))] = float(r["layer_time_us"])
    return t


def mean(v):
    return sum(v) / len(v) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--system", default="dgx-h800")
    ap.add_argument("--scaling-csv", help="sweep over systems of different GPU counts (one token count)")
    a = ap.parse_args()
    t = load(a.csv)
    os.makedirs(a.out, exist_ok=True)
    models = sorted({k[1] for k in t if k[0] == a.system})
    scheds = sorted({k[2] for k in t if k[0] == a.system})
    hub = sorted(s for s in scheds if s.startswith("moehub"))
    ref = hub[0] if hub else "ideal"
    tokens = sorted({k[3] for k in t if k[0] == a.system})

    # layer time against tokens
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    order = [s for s in BASELINES if s in scheds] + sorted(s for s in scheds if s.startswith("moehub")) + \
        (["ideal"] if "ideal" in scheds else [])
    for ax, m in zip(axes[0], models):
        for s in order:
            xs = [n for n in tokens if (a.system, m, s, n) in t]
            ax.plot(xs, [t[(a.system, m, s, n)] / 1e3 for n in xs], marker="o", ms=3, label=s)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("total tokens")
        ax.set_ylabel("MoE layer time (ms)")
        ax.set_title(f"{m}, {a.system}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "baselines_layer_time.png"), dpi=110)

    # speedups of the reference over each baseline
    sp = {}
    for b in BASELINES:
        v = [t[(a.system, m, b, n)] / t[(a.system, m, ref, n)] for m in models for n in tokens
             if (a.system, m, b, n) in t and (a.system, m, ref, n) in t]
        sp[b] = mean(v)
    spi = {b: mean([t[(a.system, m, b, n)] / t[(a.system, m, "ideal", n)] for m in models for n in tokens
                    if (a.system, m, b, n) in t and (a.system, m, "ideal", n) in t]) for b in BASELINES}
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(BASELINES))
    if ref != "ideal":
        ax.bar([x - 0.27 for x in xs], [sp[b] for b in BASELINES], width=0.27, label=f"{ref} over baseline (this model)")
        ax.bar(list(xs), [spi[b] for b in BASELINES], width=0.27, label="ideal over baseline (this model)")
        ax.bar([x + 0.27 for x in xs], [PAPER[b] for b in BASELINES], width=0.27, label="MoE-Hub over baseline (paper)")
    else:
        ax.bar([x - 0.2 for x in xs], [sp[b] for b in BASELINES], width=0.4, label=f"{ref} over baseline (this model)")
        ax.bar([x + 0.2 for x in xs], [PAPER[b] for b in BASELINES], width=0.4, label="MoE-Hub over baseline (paper)")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(BASELINES)
    ax.set_ylabel("average speedup on the MoE layer")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "baselines_speedup.png"), dpi=110)

    # speedup of the reference over each baseline against tokens, one panel per model
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    for ax, m in zip(axes[0], models):
        for b in BASELINES:
            xs = [n for n in tokens if (a.system, m, b, n) in t and (a.system, m, ref, n) in t]
            ax.plot(xs, [t[(a.system, m, b, n)] / t[(a.system, m, ref, n)] for n in xs], marker="o", ms=3,
                    label=f"over {b}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("total tokens")
        ax.set_ylabel(f"speedup of {ref} (baseline time / {ref} time)")
        ax.set_title(f"{m}, {a.system}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "baselines_speedup_tokens.png"), dpi=110)

    lines = [f"Reference: `{ref}`; system `{a.system}`.", "",
             "| model | tokens | " + " | ".join(f"{s} (us)" for s in order) + " |",
             "| --- | ---: |" + " ---: |" * len(order)]
    for m in models:
        for n in tokens:
            cells = [f"{t[(a.system, m, s, n)]:.0f}" if (a.system, m, s, n) in t else "" for s in order]
            lines.append(f"| {m} | {n} | " + " | ".join(cells) + " |")
    lines += ["", f"Speedups are baseline time / {ref} time (or / ideal time), arithmetic means over the sizes.", "",
              f"| baseline | {ref} over baseline, mean | ideal over baseline, mean | MoE-Hub over baseline, paper |"
              + "".join(f" {ref} over baseline, {m} |" for m in models),
              "| --- | ---: | ---: | ---: |" + " ---: |" * len(models)]
    for b in BASELINES:
        vi = [t[(a.system, m, b, n)] / t[(a.system, m, "ideal", n)] for m in models for n in tokens
              if (a.system, m, b, n) in t and (a.system, m, "ideal", n) in t]
        per = []
        for m in models:
            v = [t[(a.system, m, b, n)] / t[(a.system, m, ref, n)] for n in tokens
                 if (a.system, m, b, n) in t and (a.system, m, ref, n) in t]
            per.append(f" {mean(v):.3f} |")
        lines.append(f"| {b} | {sp[b]:.3f} | {mean(vi):.3f} | {PAPER[b]:.3f} |" + "".join(per))
    if ref != "ideal":
        fr = [t[(a.system, m, "ideal", n)] / t[(a.system, m, ref, n)] for m in models for n in tokens
              if (a.system, m, "ideal", n) in t and (a.system, m, ref, n) in t]
        if fr:
            lines += ["", f"{ref} reaches {100 * mean(fr):.1f} % of ideal on average (ideal / {ref}; "
                      f"range {100 * min(fr):.1f} to {100 * max(fr):.1f} %; the paper: 96.8 %)."]
    mix = "mixtral-8x7b"
    small = [t[(a.system, mix, "megatron", n)] / t[(a.system, mix, ref, n)] for n in tokens
             if n <= 2048 and (a.system, mix, "megatron", n) in t and (a.system, mix, ref, n) in t]
    large = [t[(a.system, mix, "megatron", n)] / t[(a.system, mix, ref, n)] for n in tokens
             if n >= 4096 and (a.system, mix, "megatron", n) in t and (a.system, mix, ref, n) in t]
    lines += ["", f"| Mixtral-8x7B, megatron time / {ref} time | this model | paper (MoE-Hub over Megatron-TE) |",
              "| --- | ---: | ---: |",
              f"| 128-2,048 tokens | {mean(small):.2f} | {PAPER_MIXTRAL['small']:.2f} |",
              f"| 4,096-32,768 tokens | {mean(large):.2f} | {PAPER_MIXTRAL['large']:.2f} |"]
    if a.scaling_csv:
        lines += ["", *scaling(a.scaling_csv, a.out)]
    with open(os.path.join(a.out, "baselines_tables.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def scaling(path, out):
    """Layer time against GPU count (the system's num_gpus, from each run's results)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    runs = os.path.join(os.path.dirname(path), "runs")
    t = {}
    for r in rows:
        tag = f"{r['system'].replace('/', '_')}_{r['model']}_{r['schedule']}_t{r['tokens']}_std{r['imbalance_std']}_s{r['seed']}_{r['granularity']}"
        with open(os.path.join(runs, tag + ".json")) as f:
            gpus = json.load(f)["num_gpus"]
        t[(r["model"], r["schedule"], gpus)] = float(r["layer_time_us"])
    models = sorted({k[0] for k in t})
    scheds = [s for s in BASELINES + sorted({k[1] for k in t if k[1].startswith("moehub")}) + ["ideal"]
              if any(k[1] == s for k in t)]
    gpus = sorted({k[2] for k in t})
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    for ax, m in zip(axes[0], models):
        for s in scheds:
            xs = [g for g in gpus if (m, s, g) in t]
            ax.plot(xs, [t[(m, s, g)] / 1e3 for g in xs], marker="o", ms=3, label=s)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("GPUs")
        ax.set_ylabel("MoE layer time (ms)")
        ax.set_title(m)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "baselines_scaling.png"), dpi=110)
    lines = ["| model | GPUs | " + " | ".join(f"{s} (us)" for s in scheds) + " |",
             "| --- | ---: |" + " ---: |" * len(scheds)]
    for m in models:
        for g in gpus:
            lines.append(f"| {m} | {g} | " + " | ".join(f"{t[(m, s, g)]:.0f}" if (m, s, g) in t else ""
                                                       for s in scheds) + " |")
    # speedup of the reference over each baseline per GPU count
    hub = sorted(s for s in scheds if s.startswith("moehub"))
    ref = hub[0] if hub else "ideal"
    base = [s for s in BASELINES if s in scheds]
    lines += ["", f"Speedup of {ref} over each baseline (baseline time / {ref} time):", "",
              "| model | GPUs | " + " | ".join(base) + " |", "| --- | ---: |" + " ---: |" * len(base)]
    for m in models:
        for g in gpus:
            lines.append(f"| {m} | {g} | " + " | ".join(
                f"{t[(m, b, g)] / t[(m, ref, g)]:.2f}" if (m, b, g) in t and (m, ref, g) in t else ""
                for b in base) + " |")
    # scaling efficiency: throughput relative to the fewest GPUs over the linear ideal
    g0 = gpus[0]
    lines += ["", f"Scaling efficiency: (time on {g0} GPUs / time on G GPUs) / (G / {g0}); 1.0 is linear:", "",
              "| model | GPUs | " + " | ".join(scheds) + " |", "| --- | ---: |" + " ---: |" * len(scheds)]
    for m in models:
        for g in gpus:
            lines.append(f"| {m} | {g} | " + " | ".join(
                f"{t[(m, s, g0)] / t[(m, s, g)] / (g / g0):.2f}" if (m, s, g0) in t and (m, s, g) in t else ""
                for s in scheds) + " |")
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4), squeeze=False)
    for ax, m in zip(axes[0], models):
        for s in scheds:
            xs = [g for g in gpus if (m, s, g) in t and (m, s, g0) in t]
            ax.plot(xs, [t[(m, s, g0)] / t[(m, s, g)] for g in xs], marker="o", ms=3, label=s)
        ax.plot(gpus, [g / g0 for g in gpus], "k--", lw=1, label="linear")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(f"throughput relative to {g0} GPUs")
        ax.set_title(m)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "baselines_scaling_efficiency.png"), dpi=110)
    return lines


if __name__ == "__main__":
    main()
