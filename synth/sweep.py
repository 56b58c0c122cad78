#!/usr/bin/env python3
"""Area and timing of the RAT against its size: entries x banks, storage as SRAM macros.

For every RAT of `--entries` entries in `--banks` banks (`--ways` ways, the
widths of configuration hub16: 4-bit MallocID, 16-bit RowID and LocalRowID)
whose sets per bank are a power of two:
  storage: one SRAM macro per bank (sets words x ways*36 bits, 2 ports), area
      and read time from synth/sram_model.py, for every size;
  logic: moehub_rat synthesized by the flow (flow.py, storage "sram": the bank
      arrays are macro stubs, the valid and dirty bits, FIFO pointers, tag
      compare and victim choice are cells) and timed by OpenSTA with the
      macros' read time, only up to `--synth-max-entries` entries (the valid
      and dirty bits are flip-flops, 2 per entry: large tables take long).
Writes one CSV row per size (columns below; empty where not synthesized).

Usage: sweep.py [--entries 256,512,...] [--banks 1,2,4,8,16] [--ways 4]
                [--synth-max-entries 1024] [--clock-ghz 1.5] [--out DIR] [--csv FILE]
                [--reuse EARLIER.csv] [--retime]
Exit status: 0 done, 1 a tool failed, 2 bad arguments.
"""

import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import flow  # noqa: E402
import liberty  # noqa: E402
import sram_model  # noqa: E402

# widths of configuration hub16 (synth/configs.json)
WIDTHS = {"MallocIdWidth": 4, "RowIdWidth": 16, "LocalRowIdWidth": 16}
COLUMNS = ["rat_entries", "rat_banks", "ways", "sets_per_bank", "storage_bits", "macro_words", "macro_width",
           "macro_mux", "sram_area_um2", "sram_read_ps", "sram_array_efficiency", "synthesized",
           "logic_area_um2", "flipflop_area_um2", "total_area_um2", "worst_slack_ps", "fmax_ghz",
           "critical_path", "synth_seconds"]


def ints(text, name):
    try:
        v = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        flow.fail("%s must be a comma-separated list of integers (got '%s')" % (name, text))
    if not v or any(x < 1 for x in v):
        flow.fail("%s must list positive integers (got '%s')" % (name, text))
    return v


def points(entries, banks, ways):
    for e in entries:
        for b in banks:
            if e % (b * ways):
                continue
            sets = e // (b * ways)
            if sets & (sets - 1) or b & (b - 1):
                continue
            yield e, b, sets


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", default="256,512,1024,2048,4096,8192")
    ap.add_argument("--banks", default="1,2,4,8,16")
    ap.add_argument("--ways", type=int, default=4)
    ap.add_argument("--synth-max-entries", type=int, default=1024,
                    help="synthesize the logic only up to this many entries (0: none)")
    ap.add_argument("--clock-ghz", type=float, default=1.5, help="hub clock (configs: hub.clock_ghz = 1.5)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "synth-sweep"))
    ap.add_argument("--csv", default=None, help="CSV to write (default <out>/synth_rat_sweep.csv)")
    ap.add_argument("--reuse", help="an earlier sweep CSV: its synthesized sizes are taken from it, not run again")
    ap.add_argument("--retime", action="store_true",
                    help="reuse the netlists in --out of sizes synthesized before: only macro liberty and timing again")
    a = ap.parse_args()
    entries, banks = ints(a.entries, "--entries"), ints(a.banks, "--banks")
    if a.ways < 1 or a.ways & (a.ways - 1):
        flow.fail("--ways must be a power of two (got %d)" % a.ways)
    if not 0.01 <= a.clock_ghz <= 10:
        flow.fail("--clock-ghz must be in [0.01, 10]")
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    csv_path = a.csv or os.path.join(out, "synth_rat_sweep.csv")
    period_ps = 1000.0 / a.clock_ghz
    todo = list(points(entries, banks, a.ways))
    if not todo:
        flow.fail("no RAT size with power-of-two sets per bank in --entries x --banks")
    width = a.ways * sum(WIDTHS.values())
    earlier = {}
    if a.reuse:
        try:
            with open(a.reuse, newline="") as f:
                for r in csv.DictReader(f):
                    if r.get("synthesized") == "1" and int(r["ways"]) == a.ways:
                        earlier[(int(r["rat_entries"]), int(r["rat_banks"]))] = r
        except (OSError, KeyError, ValueError) as e:
            flow.fail("--reuse %s: %s" % (a.reuse, e))
    lib = areas = None
    if (a.synth_max_entries > 0 and any(e <= a.synth_max_entries for e, _, _ in todo)) or (a.retime and earlier):
        pdk = os.environ.get("MOEHUB_PDK_DIR", os.path.join(REPO, "synth", "pdk", "asap7"))
        lib = flow.merged_library(pdk, out)
        with open(lib) as f:
            areas = liberty.cell_areas(f.read())
    rows = []
    for e, b, sets in todo:
        m = sram_model.model(sets, width, flow.SRAM_PORTS, flow.SRAM_TECH)
        row = {"rat_entries": e, "rat_banks": b, "ways": a.ways, "sets_per_bank": sets, "storage_bits": e * width // a.ways,
               "macro_words": sets, "macro_width": width, "macro_mux": m["mux"],
               "sram_area_um2": round(b * m["total_um2"], 3), "sram_read_ps": round(m["array_read_ps"], 2),
               "sram_array_efficiency": round(m["array_efficiency"], 4), "synthesized": 0}
        if (e, b) in earlier and not a.retime:
            old = earlier[(e, b)]
            if abs(float(old["sram_area_um2"]) - row["sram_area_um2"]) > 1e-3 * row["sram_area_um2"]:
                flow.fail("--reuse: %d entries, %d banks has another SRAM area there (%s um^2): an older model?"
                          % (e, b, old["sram_area_um2"]))
            row.update({k: old[k] for k in COLUMNS[COLUMNS.index("synthesized"):]})
            row["synthesized"] = 1
        elif lib and (e <= a.synth_max_entries or (e, b) in earlier):
            params = dict(WIDTHS, Entries=e, Banks=b, Ways=a.ways)
            print("sweep.py: %d entries, %d banks: synthesizing ..." % (e, b), flush=True)
            r = flow.synth_block("moehub_rat", params, period_ps, lib, areas,
                                 os.path.join(out, "rat_e%d_b%d" % (e, b)), "sram", a.retime)
            if r["synth_seconds"] is None:  # retimed: the synthesis time of the run that made the netlist
                r["synth_seconds"] = float(earlier[(e, b)]["synth_seconds"]) if (e, b) in earlier else None
            if abs(r["sram_area_um2"] - row["sram_area_um2"]) > 1e-3 * row["sram_area_um2"]:
                flow.fail("%d entries, %d banks: the netlist's macros (%.3f um^2) are not the %d banks of %d x %d "
                          "expected (%.3f um^2)" % (e, b, r["sram_area_um2"], b, sets, width, row["sram_area_um2"]), 1)
            cp = r["critical_path"]
            row.update({"synthesized": 1, "logic_area_um2": round(r["logic_area_um2"], 3),
                        "flipflop_area_um2": round(r["sequential_area_um2"], 3),
                        "total_area_um2": round(r["area_um2"], 3), "worst_slack_ps": r["worst_slack_ps"],
                        "fmax_ghz": r["fmax_ghz"], "critical_path": "%s -> %s" % (cp["startpoint"], cp["endpoint"]),
                        "synth_seconds": r["synth_seconds"]})
            print("sweep.py: %d entries, %d banks: logic %.1f um^2, SRAM %.1f um^2, fmax %s GHz" % (
                e, b, r["logic_area_um2"], r["sram_area_um2"], r["fmax_ghz"]), flush=True)
        rows.append(row)
        # written after every point, so a long sweep leaves what it has done
        with open(csv_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            for r in rows:
                w.writerow(r)
    print("sweep.py: wrote %s (%d sizes, %d synthesized)" % (csv_path, len(rows), sum(r["synthesized"] for r in rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
