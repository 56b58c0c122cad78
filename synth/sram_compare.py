#!/usr/bin/env python3
"""Area and access time of the FakeRAM2.0 ASAP7 macros, beside flip-flop storage.

Reads every fakeram7_<words>x<bits>.lib of the PDK's sram folder (area in
um^2; times in ns: the clock-to-output delay of rd_out and the clock's
min_period), fits area = a * bits + b by least squares, and, given a
synthesis result JSON of the flow, prints the RAT's storage bits and what
they cost as flip-flop logic there and as FakeRAM area. FakeRAM's own
generator calls its values "not realistic": the comparison gives shape and
order of magnitude only.

Usage: sram_compare.py [--pdk DIR] [--synth build/synth/default.json]
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def read_macro(path):
    text = open(path).read()
    m = re.search(r"fakeram7_(\d+)x(\d+)", os.path.basename(path))
    words, bits = int(m.group(1)), int(m.group(2))
    area = float(re.search(r"^\s*area\s*:\s*([0-9.]+)", text, re.M).group(1))
    period = float(re.search(r"min_period\s*:\s*([0-9.]+)", text).group(1))
    # rd_out's rising_edge arc: the largest value of its cell_rise table
    rd = text[text.find("pin(rd_out)"):] if "pin(rd_out)" in text else text[text.find("bus(rd_out)"):]
    rise = re.search(r"cell_rise\([^)]*\)\s*\{.*?values\s*\((.*?)\)", rd, re.S)
    delay = max(float(v) for v in re.findall(r"[0-9.]+", rise.group(1).split("index")[0])) if rise else None
    return {"macro": os.path.basename(path)[:-4], "words": words, "bits": bits, "capacity_bits": words * bits,
            "area_um2": area, "clk_to_rd_out_ns": delay, "min_period_ns": period}


def fit(points):
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    a = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return a, (sy - a * sx) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdk", default=os.environ.get("MOEHUB_PDK_DIR", os.path.join(REPO, "synth", "pdk", "asap7")))
    ap.add_argument("--synth", help="a flow result JSON (e.g. build/synth/default.json)")
    a = ap.parse_args()
    folder = os.path.join(a.pdk, "sram")
    try:
        files = sorted(f for f in os.listdir(folder) if f.startswith("fakeram7_") and f.endswith(".lib"))
    except OSError as e:
        print("sram_compare.py: %s" % e, file=sys.stderr)
        return 2
    macros = [read_macro(os.path.join(folder, f)) for f in files]
    print("| macro | capacity (bits) | area (um^2) | um^2 per bit | clk -> rd_out (ns) | min period (ns) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for m in sorted(macros, key=lambda m: m["capacity_bits"]):
        print("| %s | %d | %.3f | %.5f | %s | %.3f |" % (m["macro"], m["capacity_bits"], m["area_um2"],
              m["area_um2"] / m["capacity_bits"], m["clk_to_rd_out_ns"], m["min_period_ns"]))
    slope, icpt = fit([(m["capacity_bits"], m["area_um2"]) for m in macros])
    print("\nleast-squares fit: area_um2 = %.6f * bits %+.3f" % (slope, icpt))
    if a.synth:
        res = json.load(open(a.synth))
        for b in res["blocks"]:
            if b["block"] != "moehub_rat":
                continue
            p = b["parameters"]
            entries = p.get("Entries", 64)
            width = p.get("MallocIdWidth", 2) + p.get("RowIdWidth", 16) + p.get("LocalRowIdWidth", 16)
            bits = entries * width
            print("\nRAT of %s: %d entries x %d bits = %d bits of tag/data storage" % (res["config"], entries, width, bits))
            print("  as synthesized (flip-flops and their muxes, whole block): %.1f um^2, %.4f um^2 per stored bit"
                  % (b["area_um2"], b["area_um2"] / bits))
            print("  as FakeRAM by the fit: %.1f um^2" % (slope * bits + icpt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
