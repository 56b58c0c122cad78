#!/usr/bin/env python3
"""The RAT's cost in silicon beside what its size costs in layer time: pick the smallest RAT under 1 %.

Joins the synthesis sweep (synth/sweep.py: rat_entries, rat_banks,
sram_area_um2, logic_area_um2, fmax_ghz, ...) with the simulator's RAT
statistics (docs/results/data/rat_sweep.csv: rat_entries, rat_banks,
evictions, restores, layer_time_us) on (rat_entries, rat_banks). A size's
time overhead is its layer time over the shortest layer time in the
simulator's file (the best any RAT size achieves there), in %. Among the
sizes under the limit (1 % by default), the pick is the one with the least
area: storage (SRAM model) plus the synthesized logic where the sweep
synthesized it, else storage alone (marked); ties go to fewer entries.

Usage: design_space.py [--synth docs/results/data/synth_rat_sweep.csv]
                       [--sim docs/results/data/rat_sweep.csv] [--limit-pct 1.0]
                       [--md FILE] [--csv FILE]
Prints the Markdown table and the pick; --md / --csv also write them.
Exit status: 0 done, 2 a missing or malformed input (the message names the
file, the line and the column), 3 no size is under the limit.
"""

import argparse
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DATA = os.path.join(REPO, "docs", "results", "data")
SIM_COLUMNS = ("rat_entries", "rat_banks", "evictions", "restores", "layer_time_us")
SYNTH_COLUMNS = ("rat_entries", "rat_banks", "sram_area_um2", "synthesized", "logic_area_um2", "fmax_ghz")


class InputError(Exception):
    pass


def read_csv(path, columns, what):
    if not os.path.exists(path):
        hint = ("it is written by the simulator's RAT sweep (columns %s); produce it, then rerun "
                "`python3 synth/design_space.py`" % ", ".join(SIM_COLUMNS)) if what == "sim" else \
               "it is written by `python3 synth/sweep.py --csv %s`" % path
        raise InputError("%s not found: %s" % (path, hint))
    with open(path, newline="") as f:
        reader = csv.DictReader(l for l in f if not l.startswith("#"))
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError("%s: missing column(s) %s (needs %s)" % (path, ", ".join(missing), ", ".join(columns)))
        rows = []
        for i, r in enumerate(reader, start=2):
            rows.append((i, r))
    if not rows:
        raise InputError("%s: no data rows" % path)
    return rows


def number(path, line, row, col, integer=False, optional=False, minimum=0.0):
    text = (row.get(col) or "").strip()
    if text == "" and optional:
        return None
    try:
        v = int(text) if integer else float(text)
    except ValueError:
        raise InputError("%s line %d: column %s must be %s >= %g (got '%s')" % (
            path, line, col, "an integer" if integer else "a number", minimum, text))
    if not (v >= minimum) or (not integer and not math.isfinite(v)):
        raise InputError("%s line %d: column %s must be >= %g (got %s)" % (path, line, col, minimum, text))
    return v


def join(synth_path, sim_path):
    sim = {}
    for line, r in read_csv(sim_path, SIM_COLUMNS, "sim"):
        key = (number(sim_path, line, r, "rat_entries", True, minimum=1),
               number(sim_path, line, r, "rat_banks", True, minimum=1))
        if key in sim:
            raise InputError("%s line %d: a second row for %d entries, %d banks" % ((sim_path, line) + key))
        sim[key] = {"evictions": number(sim_path, line, r, "evictions"),
                    "restores": number(sim_path, line, r, "restores"),
                    "layer_time_us": number(sim_path, line, r, "layer_time_us", minimum=1e-12)}
    syn = {}
    for line, r in read_csv(synth_path, SYNTH_COLUMNS, "synth"):
        key = (number(synth_path, line, r, "rat_entries", True, minimum=1),
               number(synth_path, line, r, "rat_banks", True, minimum=1))
        done = number(synth_path, line, r, "synthesized", True) == 1
        syn[key] = {"sram_area_um2": number(synth_path, line, r, "sram_area_um2"),
                    "logic_area_um2": number(synth_path, line, r, "logic_area_um2", optional=not done),
                    "fmax_ghz": number(synth_path, line, r, "fmax_ghz", optional=True)}
    best_time = min(v["layer_time_us"] for v in sim.values())
    rows = []
    for key in sorted(set(sim) | set(syn)):
        r = {"rat_entries": key[0], "rat_banks": key[1]}
        r.update(sim.get(key, {}))
        r.update(syn.get(key, {}))
        if key in sim:
            r["overhead_pct"] = 100.0 * (sim[key]["layer_time_us"] - best_time) / best_time
        if key in syn:
            logic = syn[key]["logic_area_um2"]
            r["area_um2"] = syn[key]["sram_area_um2"] + (logic or 0.0)
            r["area_is_storage_only"] = logic is None
        rows.append(r)
    return rows, best_time


def pick(rows, limit_pct):
    ok = [r for r in rows if "overhead_pct" in r and "area_um2" in r and r["overhead_pct"] < limit_pct]
    if not ok:
        return None
    return min(ok, key=lambda r: (r["area_um2"], r["rat_entries"], r["rat_banks"]))


def fmt(v, spec):
    return "" if v is None else spec % v


def markdown(rows, best_time, limit_pct, chosen, synth_path, sim_path):
    out = ["RAT size against area (%s) and layer time (%s); overhead = layer time over the shortest, %.3f us." % (
        os.path.relpath(synth_path, REPO), os.path.relpath(sim_path, REPO), best_time), "",
        "| entries | banks | evictions | restores | layer time (us) | overhead | SRAM (um^2) | logic (um^2) "
        "| area (um^2) | fmax (GHz) |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        mark = " **<-**" if r is chosen else ""
        area = fmt(r.get("area_um2"), "%.0f") + (" (storage only)" if r.get("area_is_storage_only") else "")
        out.append("| %d | %d | %s | %s | %s | %s | %s | %s | %s%s | %s |" % (
            r["rat_entries"], r["rat_banks"], fmt(r.get("evictions"), "%.0f"), fmt(r.get("restores"), "%.0f"),
            fmt(r.get("layer_time_us"), "%.3f"), fmt(r.get("overhead_pct"), "%.2f %%"),
            fmt(r.get("sram_area_um2"), "%.0f"), fmt(r.get("logic_area_um2"), "%.0f"), area, mark,
            fmt(r.get("fmax_ghz"), "%.3f")))
    out.append("")
    if chosen:
        out.append("Smallest RAT under %g %% of layer time: %d entries in %d banks, %.0f um^2 (%.4f mm^2), "
                   "%.2f %% over the shortest layer time." % (limit_pct, chosen["rat_entries"], chosen["rat_banks"],
                                                              chosen["area_um2"], chosen["area_um2"] / 1e6,
                                                              chosen["overhead_pct"]))
    else:
        out.append("No RAT size present in both files is under %g %% of layer time." % limit_pct)
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synth", default=os.path.join(DATA, "synth_rat_sweep.csv"))
    ap.add_argument("--sim", default=os.path.join(DATA, "rat_sweep.csv"))
    ap.add_argument("--limit-pct", type=float, default=1.0)
    ap.add_argument("--md")
    ap.add_argument("--csv")
    a = ap.parse_args()
    if not 0 < a.limit_pct <= 100:
        print("design_space.py: --limit-pct must be in (0, 100]", file=sys.stderr)
        return 2
    try:
        rows, best = join(os.path.abspath(a.synth), os.path.abspath(a.sim))
    except InputError as e:
        print("design_space.py: %s" % e, file=sys.stderr)
        return 2
    chosen = pick(rows, a.limit_pct)
    md = markdown(rows, best, a.limit_pct, chosen, os.path.abspath(a.synth), os.path.abspath(a.sim))
    sys.stdout.write(md)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    if a.csv:
        cols = ["rat_entries", "rat_banks", "evictions", "restores", "layer_time_us", "overhead_pct",
                "sram_area_um2", "logic_area_um2", "area_um2", "area_is_storage_only", "fmax_ghz", "chosen"]
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            for r in rows:
                w.writerow(dict({k: r.get(k, "") for k in cols}, chosen=int(r is chosen)))
    return 0 if chosen else 3


if __name__ == "__main__":
    sys.exit(main())
