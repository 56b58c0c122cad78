#!/usr/bin/env python3
"""Synthesis and timing of the MoE-Hub RTL blocks on ASAP7 (Yosys 0.23, OpenSTA).

For each configuration of synth/configs.json and each block in it:
  1. merge the ASAP7 standard-cell liberty groups into one file (once);
  2. Yosys: read the RTL, set the parameters, synth -flatten, dfflibmap,
     abc -D <clock period> -liberty, tie cells, stat -liberty, write the netlist;
  3. OpenSTA: read the netlist with an SDC at the hub clock (register to
     register, inputs driven by BUFx2 and arriving at the clock edge, outputs
     loaded with 3.898 fF and due at the next edge, reset a false path) and
     report the worst path;
  4. write <out>/<config>.json and <out>/<config>.md: area by block and by
     cell type, worst slack, critical path, maximum frequency.

Usage: flow.py [--config NAME]... [--block NAME]... [--clock-ghz F] [--out DIR]
Environment: MOEHUB_PDK_DIR (default <repo>/../shared/pdk/asap7), YOSYS, STA.
Exit status: 0 done, 1 a tool failed, 2 bad arguments or configuration.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import liberty  # noqa: E402
import parse_reports  # noqa: E402

RTL = os.path.join(REPO, "rtl")
# Sources of each block, leaves first.
BLOCKS = {
    "moehub_apt": ["moehub_apt.sv"],
    "moehub_rat": ["moehub_rat.sv"],
    "moehub_aau": ["moehub_apt.sv", "moehub_rat.sv", "moehub_aau.sv"],
    "moehub_rpm_sched": ["moehub_rpm_sched.sv"],
    "moehub_top": ["moehub_apt.sv", "moehub_rat.sv", "moehub_aau.sv", "moehub_rpm_sched.sv", "moehub_top.sv"],
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


def synth_block(block, params, period_ps, lib, areas, work):
    os.makedirs(work, exist_ok=True)
    srcs = " ".join(os.path.join(RTL, s) for s in BLOCKS[block])
    chparams = " ".join("-set %s %d" % (k, v) for k, v in sorted(params.items()))
    with open(os.path.join(work, "abc.constr"), "w") as f:
        f.write("set_driving_cell %s\nset_load %g\n" % (DRIVING_CELL, LOAD_FF))
    ys = [
        "read_verilog -sv %s" % srcs,
        ("chparam %s %s" % (chparams, block)) if chparams else "",
        "hierarchy -check -top %s" % block,
        "synth -top %s -flatten" % block,
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
    t_synth = run([yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], os.path.join(work, "yosys.out"), work)
    with open(os.path.join(work, "stat.txt")) as f:
        stat = parse_reports.parse_yosys_stat(f.read())

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
            "read_liberty %s\n"
            "read_verilog netlist.v\n"
            "link_design %s\n"
            "read_sdc constraints.sdc\n"
            "report_checks -path_delay max -digits 3\n"
            "report_tns\n"
            "report_wns\n"
            "exit\n" % (lib, block))
    sta = os.environ.get("STA", "sta")
    t_sta = run([sta, "-no_splash", "-exit", "sta.tcl"], os.path.join(work, "sta.log"), work)
    with open(os.path.join(work, "sta.log")) as f:
        timing = parse_reports.parse_sta_report(f.read())

    by_type = {}
    for cell, n in stat["cells"].items():
        a = areas.get(cell)
        by_type[cell] = {"count": n, "area_um2": round(n * a, 6) if a is not None else None}
    listed = sum(v["area_um2"] or 0 for v in by_type.values())
    if abs(listed - stat["chip_area_um2"]) > 1e-3 * max(1.0, stat["chip_area_um2"]):
        fail("%s: cell areas add up to %.3f um^2, stat says %.3f" % (block, listed, stat["chip_area_um2"]), 1)
    seq = sum(v["area_um2"] or 0 for c, v in by_type.items() if c.startswith(("DFF", "DHL", "DLL", "SDF", "ASYNC")))
    arrival = period_ps - timing["slack_ps"]
    return {
        "block": block,
        "parameters": params,
        "area_um2": stat["chip_area_um2"],
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
        "synth_seconds": round(t_synth, 1),
        "sta_seconds": round(t_sta, 1),
    }


def markdown(name, cfg, res):
    lines = [
        "# Synthesis of configuration `%s`" % name,
        "",
        cfg.get("description", ""),
        "",
        "ASAP7 (RVT, TT, 0.7 V, 25 C), %s, %s; hub clock %.3g GHz (%.1f ps); %s." % (
            res["tools"]["yosys"], res["tools"]["sta"], cfg["clock_ghz"], res["clock_period_ps"], res["date"]),
        "",
        "| block | parameters | cells | area (um^2) | of which flip-flops (um^2) | worst slack (ps) | fmax (GHz) | critical path |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for b in res["blocks"]:
        p = ", ".join("%s=%d" % kv for kv in sorted(b["parameters"].items())) or "defaults"
        cp = b["critical_path"]
        lines.append("| %s | %s | %d | %.2f | %.2f | %.1f | %s | %s -> %s |" % (
            b["block"], p, b["cell_count"], b["area_um2"], b["sequential_area_um2"], b["worst_slack_ps"],
            "%.3f" % b["fmax_ghz"] if b["fmax_ghz"] else "-", cp["startpoint"], cp["endpoint"]))
    lines += ["", "Area by cell type (all blocks of this configuration):", "",
              "| cell | count | area (um^2) |", "| --- | ---: | ---: |"]
    total = {}
    for b in res["blocks"]:
        for c, v in b["cells"].items():
            t = total.setdefault(c, [0, 0.0])
            t[0] += v["count"]
            t[1] += v["area_um2"] or 0.0
    for c, (n, a) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        lines.append("| %s | %d | %.3f |" % (c, n, a))
    lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", help="configuration name (repeatable; default: all)")
    ap.add_argument("--block", action="append", help="block name (repeatable; default: all in the configuration)")
    ap.add_argument("--clock-ghz", type=float, help="hub clock, overrides the configuration's clock_ghz")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "synth"), help="output folder")
    ap.add_argument("--configs", default=os.path.join(HERE, "configs.json"), help="configuration file")
    a = ap.parse_args()
    if a.clock_ghz is not None and not 0.01 <= a.clock_ghz <= 10:
        fail("--clock-ghz must be in [0.01, 10]")
    configs = load_configs(a.configs)
    names = a.config or list(configs)
    for n in names:
        if n not in configs:
            fail("%s: no configuration '%s' (have %s)" % (a.configs, n, ", ".join(configs)))
    for tool in (os.environ.get("YOSYS", "yosys"), os.environ.get("STA", "sta")):
        if not shutil.which(tool):
            fail("%s not found (scripts/install-hw-deps.sh installs yosys and opensta)" % tool)
    pdk = os.environ.get("MOEHUB_PDK_DIR", os.path.join(REPO, "..", "shared", "pdk", "asap7"))
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
            print("flow.py: %s / %s ..." % (n, b), flush=True)
            r = synth_block(b, cfg["blocks"][b], period_ps, lib, areas, os.path.join(out, n, b))
            print("flow.py: %s / %s: %.2f um^2, slack %.1f ps, fmax %s GHz" % (
                n, b, r["area_um2"], r["worst_slack_ps"], r["fmax_ghz"]), flush=True)
            res["blocks"].append(r)
        with open(os.path.join(out, n + ".json"), "w") as f:
            json.dump(res, f, indent=2, sort_keys=True)
            f.write("\n")
        with open(os.path.join(out, n + ".md"), "w") as f:
            f.write(markdown(n, cfg, res))
        print("flow.py: wrote %s and %s" % (os.path.join(out, n + ".json"), os.path.join(out, n + ".md")))


if __name__ == "__main__":
    main()
