#!/usr/bin/env python3
"""One table of the hub per configuration, beside the published MoE-Hub total of 0.49 mm^2.

Reads the flow's <in>/<config>.json files (synth/run_synth.sh) and writes
  <out>/synth_<config>.json   the flow's result for the configuration, as it is
  <out>/synth_summary.json    one row per configuration (below)
and prints the Markdown table of the rows. A row: the configuration's sizes
(RAT entries, banks and ways; APT regions; RPM peers and entries per peer;
RowID, LocalRowID, offset, address and timer widths) and, for the whole hub
(moehub_top), the area with the RAT in flip-flops and with the RAT's banks as
SRAM macros (synth/sram_model.py), the worst slack and fmax of each, and each
area as a share of the 0.49 mm^2.

Usage: report.py [--in build/synth] [--out docs/results/data] [--config NAME]...
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# MoE-Hub (ISCA 2026), section VI-E "Hardware Overhead": all hardware support, TSMC 7 nm
PAPER_TOTAL_MM2 = 0.49


def row(res):
    top = {b["storage"]: b for b in res["blocks"] if b["block"] == "moehub_top"}
    if "flops" not in top and "sram" not in top:
        return None
    p = (top.get("flops") or top.get("sram"))["parameters"]
    d = {"config": res["config"], "clock_ghz": res["clock_ghz"],
         "rat_entries": p.get("RatEntries", 64), "rat_banks": p.get("RatBanks", 4), "rat_ways": p.get("RatWays", 4),
         "apt_regions": p.get("Regions", 4), "rpm_peers": p.get("RpmDests", 8), "rpm_depth": p.get("RpmDepth", 8),
         "row_id_bits": p.get("RowIdWidth", 16), "local_row_id_bits": p.get("LocalRowIdWidth", 16),
         "offset_bits": p.get("OffsetWidth", 16), "addr_bits": p.get("AddrWidth", 48),
         "rpm_timer_bits": p.get("RpmTimerWidth", 8)}
    for st, b in top.items():
        d[st] = {"area_um2": b["area_um2"], "logic_area_um2": b["logic_area_um2"],
                 "sram_area_um2": b["sram_area_um2"], "worst_slack_ps": b["worst_slack_ps"],
                 "fmax_ghz": b["fmax_ghz"],
                 "critical_path": "%s -> %s" % (b["critical_path"]["startpoint"], b["critical_path"]["endpoint"]),
                 "share_of_paper_total_pct": round(100.0 * b["area_um2"] / (PAPER_TOTAL_MM2 * 1e6), 4)}
    return d


def markdown(rows):
    out = ["| config | RAT entries x banks (ways) | APT regions | RPM peers x depth | RowID / LocalRowID / offset / "
           "address / timer bits | hub, RAT in flip-flops (um^2) | fmax (GHz) | hub, RAT as SRAM (um^2: logic + SRAM) "
           "| fmax (GHz) | share of 0.49 mm^2 (flip-flops / SRAM) |",
           "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        f, s = r.get("flops"), r.get("sram")
        out.append("| %s | %d x %d (%d) | %d | %d x %d | %d / %d / %d / %d / %d | %s | %s | %s | %s | %s / %s |" % (
            r["config"], r["rat_entries"], r["rat_banks"], r["rat_ways"], r["apt_regions"], r["rpm_peers"],
            r["rpm_depth"], r["row_id_bits"], r["local_row_id_bits"], r["offset_bits"], r["addr_bits"],
            r["rpm_timer_bits"],
            "%.0f" % f["area_um2"] if f else "not run", "%.3f" % f["fmax_ghz"] if f else "-",
            "%.0f (%.0f + %.0f)" % (s["area_um2"], s["logic_area_um2"], s["sram_area_um2"]) if s else "not run",
            "%.3f" % s["fmax_ghz"] if s else "-",
            "%.2f %%" % f["share_of_paper_total_pct"] if f else "-",
            "%.2f %%" % s["share_of_paper_total_pct"] if s else "-"))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in", dest="inp", default=os.path.join(REPO, "build", "synth"))
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "results", "data"))
    ap.add_argument("--config", action="append")
    a = ap.parse_args()
    names = a.config or sorted(f[:-5] for f in os.listdir(a.inp) if f.endswith(".json"))
    rows = []
    for n in names:
        path = os.path.join(a.inp, n + ".json")
        try:
            with open(path) as f:
                res = json.load(f)
        except (OSError, ValueError) as e:
            print("report.py: %s: %s" % (path, e), file=sys.stderr)
            return 2
        with open(os.path.join(a.out, "synth_%s.json" % n), "w") as f:
            json.dump(res, f, indent=2, sort_keys=True)
            f.write("\n")
        r = row(res)
        if r:
            rows.append(r)
    with open(os.path.join(a.out, "synth_summary.json"), "w") as f:
        json.dump({"paper_total_mm2": PAPER_TOTAL_MM2,
                   "paper_source": "MoE-Hub (arXiv 2605.05888, ISCA 2026), section VI-E: all hardware support, "
                                   "TSMC 7 nm", "configs": rows}, f, indent=2, sort_keys=True)
        f.write("\n")
    sys.stdout.write(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
