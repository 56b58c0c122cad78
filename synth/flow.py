#!/usr/bin/env python3
"""Synthesis and timing of the MoE-Hub RTL blocks on ASAP7 (Yosys 0.23, OpenSTA).

For each configuration of synth/configs.json, each block in it (the units,
moehub_top, the whole hub, and moehub_dam, synthesized on its own) and each
storage estimate (flops: every array in flip-flops; sram: the RAT's bank
arrays and the DAM's group-counter array as SRAM macros, for the blocks that
hold one):
  1. merge the ASAP7 standard-cell liberty groups into one file (once);
  2. Yosys: read the RTL, set the parameters, synth -flatten (sram: stop
     before the fine pass, map the inferred memories to the blackbox of
     sram_stub.v with sram_techmap.v, go on), write the generic netlist,
     dfflibmap, abc -D <clock period> -liberty, tie cells, stat -liberty,
     write the netlist (sram: each macro instance named after its size and a
     liberty of those cells written from sram_model.py);
  3. OpenSTA: read the netlist with an SDC at the hub clock (register to
     register, inputs driven by BUFx2 and arriving at the clock edge, outputs
     loaded with 3.898 fF and due at the next edge, reset a false path) and
     report the worst path;
  4. write <out>/<config>.json and <out>/<config>.md: area by block (logic,
     SRAM, total) and by cell type, worst slack, critical path, maximum
     frequency. A run of some blocks or storages keeps the others of an
     earlier <config>.json at the same clock.

Usage: flow.py [--config NAME]... [--block NAME]... [--storage flops|sram]... [--clock-ghz F] [--out DIR]
Environment: MOEHUB_PDK_DIR (default <repo>/synth/pdk/asap7, the copy kept in the repository), YOSYS, STA.
Exit status: 0 done, 1 a tool failed, 2 bad arguments or configuration.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import liberty  # noqa: E402
import parse_reports  # noqa: E402
import sram_model  # noqa: E402

RTL = os.path.join(REPO, "rtl")
SRAM_STUB = os.path.join(HERE, "sram_stub.v")
SRAM_TECHMAP = os.path.join(HERE, "sram_techmap.v")
# Storage estimates: "flops" maps every array to flip-flops (Yosys memory_map);
# "sram" keeps the RAT's per-bank arrays (and the DAM's group-counter array) as
# SRAM macro stubs, sized and timed by sram_model.py (two ports: the RAT reads
# and writes a set word in one cycle, the DAM a counter word).
STORAGE = ("flops", "sram")
SRAM_PORTS = 2
SRAM_TECH = "asap7"
# Sources of each block, leaves first.
BLOCKS = {
    "moehub_apt": ["moehub_apt.sv"],
    "moehub_rat": ["moehub_rat.sv"],
    "moehub_aau": ["moehub_apt.sv", "moehub_rat.sv", "moehub_aau.sv"],
    "moehub_rpm_sched": ["moehub_rpm_sched.sv"],
    "moehub_top": ["moehub_apt.sv", "moehub_rat.sv", "moehub_aau.sv", "moehub_rpm_sched.sv", "moehub_top.sv"],
    # the Data Availability Manager, a block of its own (not inside moehub_top)
    "moehub_dam": ["moehub_dam.sv"],
}
# Libraries mapped to, in merge order (the first one's header is kept).
LIBS = [
    "asap7sc7p5t_SIMPLE_RVT_TT_nldm_211120.lib.gz",
    "asap7sc7p5t_INVBUF_RVT_TT_nldm_220122.lib.gz",
    "asap7sc7p5t_AO_RVT_TT_nldm_211120.lib.gz",
    "asap7sc7p5t_OA_RVT_TT_nldm_211120.lib.gz",
    "asap7sc7p5t_SEQ_RVT_TT_nldm_220123.lib.gz",
]
# ORFS flow/platforms/asap7 settings
DRIVING_CELL = "BUFx2_ASAP7_75t_R"
LOAD_FF = 3.898
TIE_HI = ("TIEHIx1_ASAP7_75t_R", "H")
TIE_LO = ("TIELOx1_ASAP7_75t_R", "L")


def fail(msg, status=2):
    print("flow.py: " + msg, file=sys.stderr)
    sys.exit(status)


def run(cmd, log, cwd):
    t0 = time.monotonic()
    with open(log, "w") as f:
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        fail("%s failed (status %d), see %s" % (cmd[0], r.returncode, log), 1)
    return time.monotonic() - t0


def tool_version(cmd):
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    except OSError:
        return "unknown"
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    return lines[0] if lines else "unknown"


def merged_library(pdk, out):
    path = os.path.join(out, "lib", "asap7_merged.lib")
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    srcs = [os.path.join(pdk, "lib", n) for n in LIBS]
    for s in srcs:
        if not os.path.exists(s):
            fail("liberty file %s not found (set MOEHUB_PDK_DIR to the asap7 folder)" % s)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(liberty.merge(srcs))
    os.replace(tmp, path)
    return path


def load_configs(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (path, e))
    configs = {k: v for k, v in data.items() if not k.startswith("_")}
    for name, c in configs.items():
        ghz = c.get("clock_ghz")
        if not isinstance(ghz, (int, float)) or not 0.01 <= ghz <= 10:
            fail("%s: %s.clock_ghz must be a number in [0.01, 10]" % (path, name))
        for b, params in c.get("blocks", {}).items():
            if b not in BLOCKS:
                fail("%s: %s.blocks.%s is not a block (one of %s)" % (path, name, b, ", ".join(BLOCKS)))
            for k, v in params.items():
                if not isinstance(v, int) or v < 1:
                    fail("%s: %s.blocks.%s.%s must be a positive integer" % (path, name, b, k))
    return configs


def has_storage(block):
    """Does the block hold arrays that the SRAM estimate replaces (the RAT's banks, the DAM's counters)?"""
    return "moehub_rat.sv" in BLOCKS[block] or "moehub_dam.sv" in BLOCKS[block]


_NUM = r"(\d+'[bd][0-9]+|\d+)"
_STUB_RE = re.compile(r"moehub_sram_macro\s*#\(\s*\.ABITS\(%s\),\s*\.WIDTH\(%s\),\s*\.WORDS\(%s\)\s*\)"
                      % (_NUM, _NUM, _NUM))


def _verilog_int(text):
    if "'" not in text:
        return int(text)
    base = text.split("'")[1]
    return int(base[1:], 2 if base[0] == "b" else 10)


def name_macros(netlist_text):
    """Netlist with each moehub_sram_macro instance renamed after its size, and [(words, width, abits)]."""
    found = []

    def sub(m):
        abits, width, words = (_verilog_int(m.group(i)) for i in (1, 2, 3))
        found.append((words, width, abits))
        return sram_model.stub_name(words, width)
    text = _STUB_RE.sub(sub, netlist_text)
    if "moehub_sram_macro" in text:
        raise ValueError("a moehub_sram_macro instance the flow could not name (parameters not ABITS, WIDTH, WORDS?)")
    return text, found


def macros_in(netlist_text):
    """[(words, width, abits)] of the named macro instances of a netlist (abits as the RAT's set index)."""
    return [(int(w), int(b), max(1, (int(w) - 1).bit_length()))
            for w, b in re.findall(r"^\s*moehub_sram_(\d+)x(\d+)\s", netlist_text, re.M)]


def synth_block(block, params, period_ps, lib, areas, work, storage="flops", retime=False):
    """Synthesize and time one block; with retime, reuse the netlist of an earlier run in `work` and only
    redo the macro liberty and the timing."""
    os.makedirs(work, exist_ok=True)
    srcs = " ".join(os.path.join(RTL, s) for s in BLOCKS[block])
    chparams = " ".join("-set %s %d" % (k, v) for k, v in sorted(params.items()))
    with open(os.path.join(work, "abc.constr"), "w") as f:
        f.write("set_driving_cell %s\nset_load %g\n" % (DRIVING_CELL, LOAD_FF))
    if storage == "sram":
        # stop before the fine pass maps memories to flip-flops, put the stubs in, then go on
        generic = ["synth -top %s -flatten -run :fine" % block,
                   "techmap -map %s" % SRAM_TECHMAP,
                   "synth -top %s -flatten -run fine:" % block]
    else:
        generic = ["synth -top %s -flatten" % block]
    ys = [
        ("read_verilog -lib %s" % SRAM_STUB) if storage == "sram" else "",
        "read_verilog -sv %s" % srcs,
        ("chparam %s %s" % (chparams, block)) if chparams else "",
        "hierarchy -check -top %s" % block,
    ] + generic + [
        # the generic netlist (Yosys gates, before mapping to ASAP7): what tests/synth simulates against the RTL
        "write_verilog -noattr generic.v",
        # name each flip-flop after the register it holds, for readable paths
        "rename -wire -suffix _reg t:$_*DFF*",
        "dfflibmap -liberty %s" % lib,
        "abc -D %d -constr abc.constr -liberty %s" % (round(period_ps), lib),
        "opt_clean -purge",
        "hilomap -singleton -hicell %s %s -locell %s %s" % (TIE_HI + TIE_LO),
        "opt_clean -purge",
        "tee -o stat.txt stat -liberty %s" % lib,
        "write_verilog -noattr -noexpr -nohex -nodec netlist.v",
    ]
    with open(os.path.join(work, "synth.ys"), "w") as f:
        f.write("\n".join(l for l in ys if l) + "\n")
    yosys = os.environ.get("YOSYS", "yosys")
    reuse = retime and all(os.path.exists(os.path.join(work, f)) for f in ("netlist.v", "stat.txt"))
    if reuse:
        t_synth = None
    else:
        t_synth = run([yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], os.path.join(work, "yosys.out"), work)
    with open(os.path.join(work, "stat.txt")) as f:
        stat = parse_reports.parse_yosys_stat(f.read())
    macros = []
    libs = [lib]
    if storage == "sram":
        with open(os.path.join(work, "netlist.v")) as f:
            text = f.read()
        if reuse:
            found = macros_in(text)
        else:
            text, found = name_macros(text)
            with open(os.path.join(work, "netlist.v"), "w") as f:
                f.write(text)
        stat["cells"].pop("moehub_sram_macro", None)
        with open(os.path.join(work, "sram_macros.lib"), "w") as f:
            f.write(sram_model.stub_liberty(found, SRAM_TECH, SRAM_PORTS))
        libs.append(os.path.join(work, "sram_macros.lib"))
        kinds = {}
        for words, width, abits in found:
            kinds.setdefault((words, width), 0)
            kinds[(words, width)] += 1
        for (words, width), n in sorted(kinds.items()):
            m = sram_model.model(words, width, SRAM_PORTS, SRAM_TECH)
            macros.append({"cell": sram_model.stub_name(words, width), "words": words, "width": width,
                           "count": n, "ports": SRAM_PORTS, "area_um2_each": round(m["total_um2"], 4),
                           "array_read_ps": round(m["array_read_ps"], 2), "mux": m["mux"], "rows": m["rows"],
                           "cols": m["cols"], "array_efficiency": round(m["array_efficiency"], 4)})

    with open(os.path.join(work, "constraints.sdc"), "w") as f:
        f.write(
            "# hub clock %.6g ps\n"
            "create_clock -name hub_clk -period %.3f [get_ports clk_i]\n"
            "set_input_delay 0 -clock hub_clk [delete_from_list [all_inputs] [get_ports clk_i]]\n"
            "set_output_delay 0 -clock hub_clk [all_outputs]\n"
            "set_driving_cell -lib_cell %s [all_inputs]\n"
            "set_load %g [all_outputs]\n"
            "set_false_path -from [get_ports rst_ni]\n" % (period_ps, period_ps, DRIVING_CELL, LOAD_FF))
    with open(os.path.join(work, "sta.tcl"), "w") as f:
        f.write(
            "%s"
            "read_verilog netlist.v\n"
            "link_design %s\n"
            "read_sdc constraints.sdc\n"
            "report_checks -path_delay max -digits 3\n"
            "report_tns\n"
            "report_wns\n"
            "exit\n" % ("".join("read_liberty %s\n" % l for l in libs), block))
    sta = os.environ.get("STA", "sta")
    t_sta = run([sta, "-no_splash", "-exit", "sta.tcl"], os.path.join(work, "sta.log"), work)
    with open(os.path.join(work, "sta.log")) as f:
        sta_text = f.read()
    if "are different sizes" in sta_text:
        fail("%s: OpenSTA dropped timing arcs of a macro (see %s)" % (block, os.path.join(work, "sta.log")), 1)
    timing = parse_reports.parse_sta_report(sta_text)

    by_type = {}
    for cell, n in stat["cells"].items():
        a = areas.get(cell)
        by_type[cell] = {"count": n, "area_um2": round(n * a, 6) if a is not None else None}
    missing = [c for c, v in by_type.items() if v["area_um2"] is None]
    if missing:
        fail("%s: cells without a liberty area: %s" % (block, ", ".join(missing)), 1)
    listed = sum(v["area_um2"] or 0 for v in by_type.values())
    if abs(listed - stat["chip_area_um2"]) > 1e-3 * max(1.0, stat["chip_area_um2"]):
        fail("%s: cell areas add up to %.3f um^2, stat says %.3f" % (block, listed, stat["chip_area_um2"]), 1)
    seq = sum(v["area_um2"] or 0 for c, v in by_type.items() if c.startswith(("DFF", "DHL", "DLL", "SDF", "ASYNC")))
    arrival = period_ps - timing["slack_ps"]
    macro_area = sum(m["count"] * m["area_um2_each"] for m in macros)
    return {
        "block": block,
        "storage": storage,
        "parameters": params,
        "area_um2": round(stat["chip_area_um2"] + macro_area, 6),
        "logic_area_um2": stat["chip_area_um2"],
        "sram_area_um2": round(macro_area, 6),
        "sram_macros": macros,
        "sequential_area_um2": round(seq, 6),
        "cell_count": sum(stat["cells"].values()),
        "cells": by_type,
        "clock_period_ps": round(period_ps, 3),
        "worst_slack_ps": timing["slack_ps"],
        "tns_ps": timing.get("tns_ps"),
        "critical_path": {
            "startpoint": timing["startpoint"],
            "endpoint": timing["endpoint"],
            "data_arrival_ps": timing["arrival_ps"],
            "required_ps": timing["required_ps"],
            "cells": [p["point"] for p in timing["path"]],
        },
        "fmax_ghz": round(1000.0 / arrival, 4) if arrival > 0 else None,
        "synth_seconds": round(t_synth, 1) if t_synth is not None else None,
        "sta_seconds": round(t_sta, 1),
    }


def previous_seconds(path, block, storage):
    try:
        with open(path) as f:
            for b in json.load(f).get("blocks", []):
                if b["block"] == block and b.get("storage") == storage:
                    return b.get("synth_seconds")
    except (OSError, ValueError):
        pass
    return None


def merge_previous(path, res, order):
    """The blocks of res, plus those of an earlier result at `path` for the same clock that this run did not
    redo (a run of some blocks adds to the configuration's report), in configuration order."""
    blocks = {(b["block"], b["storage"]): b for b in res["blocks"]}
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = None
    if old and old.get("clock_period_ps") == res["clock_period_ps"]:
        for b in old.get("blocks", []):
            if "storage" in b:
                blocks.setdefault((b["block"], b["storage"]), b)
    return [blocks[k] for k in sorted(blocks, key=lambda k: (order.index(k[0]) if k[0] in order else len(order),
                                                              STORAGE.index(k[1])))]


def write_results(out, name, cfg, res):
    """<out>/<name>.json and .md: this run's blocks merged with an earlier result's others."""
    merged = dict(res, blocks=merge_previous(os.path.join(out, name + ".json"), res, list(cfg["blocks"])))
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(merged, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, name + ".md"), "w") as f:
        f.write(markdown(name, cfg, merged))


def markdown(name, cfg, res):
    lines = [
        "# Synthesis of configuration `%s`" % name,
        "",
        cfg.get("description", ""),
        "",
        "ASAP7 (RVT, TT, 0.7 V, 25 C), %s, %s; hub clock %.3g GHz (%.1f ps); %s." % (
            res["tools"]["yosys"], res["tools"]["sta"], res["clock_ghz"], res["clock_period_ps"], res["date"]),
        "Storage `flops`: every array in flip-flops; `sram`: the RAT's bank arrays (the DAM's counter array) as %d-port SRAM macros "
        "of synth/sram_model.py (%s bit cell), the rest synthesized." % (SRAM_PORTS, SRAM_TECH),
        "",
        "| block | storage | parameters | cells | logic (um^2) | SRAM (um^2) | total (um^2) | flip-flops (um^2) "
        "| worst slack (ps) | fmax (GHz) | critical path |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for b in res["blocks"]:
        p = ", ".join("%s=%d" % kv for kv in sorted(b["parameters"].items())) or "defaults"
        cp = b["critical_path"]
        lines.append("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %.1f | %s | %s -> %s |" % (
            b["block"], b["storage"], p, b["cell_count"], b["logic_area_um2"], b["sram_area_um2"], b["area_um2"],
            b["sequential_area_um2"], b["worst_slack_ps"],
            "%.3f" % b["fmax_ghz"] if b["fmax_ghz"] else "-", cp["startpoint"], cp["endpoint"]))
    macros = [(b["block"], m) for b in res["blocks"] for m in b["sram_macros"]]
    if macros:
        lines += ["", "SRAM macros (model):", "",
                  "| block | macro | count | organisation (rows x cols, mux) | area each (um^2) | array efficiency "
                  "| read (ps) |", "| --- | --- | ---: | --- | ---: | ---: | ---: |"]
        for blk, m in macros:
            lines.append("| %s | %s | %d | %d x %d, %d:1 | %.1f | %.2f | %.1f |" % (
                blk, m["cell"], m["count"], m["rows"], m["cols"], m["mux"], m["area_um2_each"],
                m["array_efficiency"], m["array_read_ps"]))
    for b in res["blocks"]:
        if b["block"] != "moehub_top":
            continue
        lines += ["", "Area by cell type, `moehub_top` (storage `%s`):" % b["storage"], "",
                  "| cell | count | area (um^2) |", "| --- | ---: | ---: |"]
        for c, v in sorted(b["cells"].items(), key=lambda kv: (-kv[1]["area_um2"], kv[0])):
            lines.append("| %s | %d | %.3f |" % (c, v["count"], v["area_um2"]))
    lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", help="configuration name (repeatable; default: all)")
    ap.add_argument("--block", action="append", help="block name (repeatable; default: all in the configuration)")
    ap.add_argument("--clock-ghz", type=float, help="hub clock, overrides the configuration's clock_ghz")
    ap.add_argument("--retime", action="store_true",
                    help="reuse the netlists of an earlier run in --out: only the macro liberty and the timing again")
    ap.add_argument("--storage", action="append", choices=STORAGE,
                    help="storage estimate (repeatable; default both; sram only for blocks with a RAT or the DAM)")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "synth"), help="output folder")
    ap.add_argument("--configs", default=os.path.join(HERE, "configs.json"), help="configuration file")
    a = ap.parse_args()
    if a.clock_ghz is not None and not 0.01 <= a.clock_ghz <= 10:
        fail("--clock-ghz must be in [0.01, 10]")
    configs = load_configs(a.configs)
    storages = a.storage or list(STORAGE)
    names = a.config or list(configs)
    for n in names:
        if n not in configs:
            fail("%s: no configuration '%s' (have %s)" % (a.configs, n, ", ".join(configs)))
    for tool in (os.environ.get("YOSYS", "yosys"), os.environ.get("STA", "sta")):
        if not shutil.which(tool):
            fail("%s not found (scripts/install-deps.sh installs yosys and opensta)" % tool)
    pdk = os.environ.get("MOEHUB_PDK_DIR", os.path.join(REPO, "synth", "pdk", "asap7"))
    out = os.path.abspath(a.out)
    lib = merged_library(pdk, out)
    with open(lib) as f:
        areas = liberty.cell_areas(f.read())
    tools = {"yosys": tool_version([os.environ.get("YOSYS", "yosys"), "-V"]),
             "sta": "OpenSTA " + tool_version([os.environ.get("STA", "sta"), "-version"])}
    for n in names:
        cfg = configs[n]
        ghz = a.clock_ghz if a.clock_ghz is not None else cfg["clock_ghz"]
        period_ps = 1000.0 / ghz
        blocks = a.block or list(cfg["blocks"])
        res = {"config": n, "clock_ghz": ghz, "clock_period_ps": round(period_ps, 3), "tools": tools,
               "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "pdk": "ASAP7 RVT TT 0.7 V 25 C (asap7sc7p5t SIMPLE, INVBUF, AO, OA, SEQ)", "blocks": []}
        for b in blocks:
            if b not in cfg["blocks"]:
                fail("configuration '%s' has no block '%s'" % (n, b))
            for st in storages:
                if st == "sram" and not has_storage(b):
                    continue
                print("flow.py: %s / %s / %s ..." % (n, b, st), flush=True)
                work = os.path.join(out, n, b if st == "flops" else b + "-sram")
                r = synth_block(b, cfg["blocks"][b], period_ps, lib, areas, work, st, a.retime)
                if r["synth_seconds"] is None:  # retimed: the synthesis time of the run that made the netlist
                    r["synth_seconds"] = previous_seconds(os.path.join(out, n + ".json"), b, st)
                print("flow.py: %s / %s / %s: %.2f um^2 (SRAM %.2f), slack %.1f ps, fmax %s GHz" % (
                    n, b, st, r["area_um2"], r["sram_area_um2"], r["worst_slack_ps"], r["fmax_ghz"]), flush=True)
                res["blocks"].append(r)
                write_results(out, n, cfg, res)  # after every block: a long run leaves what it has done
        print("flow.py: wrote %s and %s" % (os.path.join(out, n + ".json"), os.path.join(out, n + ".md")))


if __name__ == "__main__":
    main()
