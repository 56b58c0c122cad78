#!/usr/bin/env python3
"""Plots one column of host/scripts/sweep.py CSVs against a varied config key.

  /usr/bin/python3 host/scripts/sweep_plot.py --x system.nvlink.bw_gbps_per_direction_per_gpu \\
      --csv "2,048 credits=out/bw-credits2048/sweep.csv" --csv "8,192 credits=out/bw-credits8192/sweep.csv" \\
      --out docs/results/img/nvlink_bw_credits.png

One panel per (model, tokens) pair of the CSVs; in each, one line per schedule and
CSV (--csv LABEL=PATH, repeatable: the label tells the CSVs apart in the legend).
--y names the column plotted (default layer_time_us); the x axis is logarithmic
when the values span more than a factor of 10 (--linear-x turns that off).
Needs matplotlib."""
import argparse
import csv
import math
import sys


def load(spec):
    label, eq, path = spec.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH (got '{spec}')")
    with open(path, newline="") as f:
        return label, list(csv.DictReader(f))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", type=load, action="append", required=True, metavar="LABEL=PATH")
    ap.add_argument("--x", required=True, help="the varied key's column (sweep.py --vary)")
    ap.add_argument("--y", default="layer_time_us")
    ap.add_argument("--out", required=True)
    ap.add_argument("--linear-x", action="store_true")
    a = ap.parse_args()
    for label, rows in a.csv:
        for col in (a.x, a.y, "schedule", "model", "tokens"):
            if rows and col not in rows[0]:
                print(f"sweep_plot: {label}: no column '{col}'", file=sys.stderr)
                return 2
        if not rows:
            print(f"sweep_plot: {label}: no rows", file=sys.stderr)
            return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(r["model"], int(r["tokens"])) for _, rows in a.csv for r in rows})
    cols = min(2, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.5 * cols, 3.8 * nrows), squeeze=False)
    styles = ["-", "--", ":", "-."]
    schedules = sorted({r["schedule"] for _, rows in a.csv for r in rows})
    colours = {s: f"C{i}" for i, s in enumerate(schedules)}
    for i, (model, tokens) in enumerate(panels):
        ax = axes[i // cols][i % cols]
        xs_all = []
        for j, (label, rows) in enumerate(a.csv):
            for s in schedules:
                pts = sorted((float(r[a.x]), float(r[a.y])) for r in rows
                             if r["schedule"] == s and r["model"] == model and int(r["tokens"]) == tokens)
                if not pts:
                    continue
                xs_all += [p[0] for p in pts]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], styles[j % len(styles)], marker="o",
                        markersize=3, color=colours[s], label=f"{s}, {label}" if len(a.csv) > 1 else s)
        if xs_all and not a.linear_x and max(xs_all) > 10 * min(xs_all) > 0:
            ax.set_xscale("log", base=2)
            ax.set_xticks(sorted(set(xs_all)))
            ax.set_xticklabels([f"{v:g}" for v in sorted(set(xs_all))])
        ax.set_title(f"{model}, {tokens:,} tokens", fontsize=10)
        ax.set_xlabel(a.x, fontsize=8)
        ax.set_ylabel(a.y, fontsize=8)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    for k in range(len(panels), nrows * cols):
        axes[k // cols][k % cols].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), fontsize=8)
    fig.tight_layout(rect=(0, 0.08 if len(labels) > 3 else 0.05, 1, 1))
    fig.savefig(a.out, dpi=110)
    print(f"sweep_plot: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
