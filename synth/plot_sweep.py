#!/usr/bin/env python3
"""Plot of the RAT sweep (synth/sweep.py's CSV): area and timing against the number of entries.

Left: storage area (SRAM model, one macro per bank) per bank count, lines;
storage plus synthesized logic, markers, where the sweep synthesized it.
Right: the SRAM macros' read time (lines) and the worst register-to-register
path of the synthesized RAT (markers), beside the hub clock's period.

Usage: plot_sweep.py [--csv docs/results/data/synth_rat_sweep.csv] [--out docs/results/synth_rat_sweep.png]
                     [--clock-ghz 1.5]
Needs matplotlib (Debian: python3-matplotlib, for /usr/bin/python3).
"""

import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default=os.path.join(REPO, "docs", "results", "data", "synth_rat_sweep.csv"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "results", "synth_rat_sweep.png"))
    ap.add_argument("--clock-ghz", type=float, default=1.5)
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_sweep.py: matplotlib is not installed (apt-get install python3-matplotlib, "
              "then run this with /usr/bin/python3)", file=sys.stderr)
        return 2
    try:
        with open(a.csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print("plot_sweep.py: %s (synth/sweep.py writes it)" % e, file=sys.stderr)
        return 2
    if not rows:
        print("plot_sweep.py: %s has no rows" % a.csv, file=sys.stderr)
        return 2
    banks = sorted({int(r["rat_banks"]) for r in rows})
    fig, (ax_a, ax_t) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, b in enumerate(banks):
        sel = sorted((r for r in rows if int(r["rat_banks"]) == b), key=lambda r: int(r["rat_entries"]))
        col = colors[i % len(colors)]
        x = [int(r["rat_entries"]) for r in sel]
        ax_a.plot(x, [float(r["sram_area_um2"]) for r in sel], "-", color=col, label="%d bank%s" % (b, "s" * (b > 1)))
        syn = [r for r in sel if r["synthesized"] == "1"]
        ax_a.plot([int(r["rat_entries"]) for r in syn], [float(r["total_area_um2"]) for r in syn], "o",
                  color=col, fillstyle="none")
        ax_t.plot(x, [float(r["sram_read_ps"]) for r in sel], "-", color=col, label="%d bank%s" % (b, "s" * (b > 1)))
        ax_t.plot([int(r["rat_entries"]) for r in syn], [1000.0 / float(r["fmax_ghz"]) for r in syn], "o",
                  color=col, fillstyle="none")
    for ax in (ax_a, ax_t):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("RAT entries (4 ways, 36-bit entries)")
        ax.grid(True, which="both", alpha=0.3)
    ax_a.set_yscale("log")
    ax_a.set_ylabel("area (um^2), ASAP7")
    ax_a.set_title("lines: SRAM storage (model); o: + synthesized logic", fontsize=9)
    period = 1000.0 / a.clock_ghz
    ax_t.axhline(period, color="k", linestyle="--", linewidth=1)
    ax_t.text(x[0], period * 1.02, "%.3g GHz hub clock" % a.clock_ghz, fontsize=8)
    ax_t.set_ylabel("ps")
    ax_t.set_title("lines: SRAM array read (model); o: worst path of the RAT", fontsize=9)
    ax_a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print("plot_sweep.py: wrote %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
