#!/usr/bin/env python3
"""Where the hub's critical paths would split: stage delays of the proposed pipeline cuts.

The two paths that miss the hub clock (docs/results/synthesis.md) are cut
where the RTL would take a pipeline register, and each side is timed:
  AAU: set read and tag compare in the RAT | miss handling, APT allocation and
      pointer increment. The AAU is synthesized keeping its hierarchy, so the
      RAT's outputs are pins of the netlist; OpenSTA gives the worst arrival at
      u_rat/hit_o and the worst path through it.
  RPM scheduler: per-partition tournament | round robin over the
      destinations, one-hot grant and the granted slot's age reset. The
      tournament alone is the scheduler with one destination: its arrival at
      gnt_entry_o (the winner's index); the whole path is that of the full
      scheduler.
A cut's stages: before = arrival at the cut + setup of the new register;
after = the rest of the path + clock-to-Q of the new register; the expected
fmax is 1 / the larger. Hierarchy and a different netlist around the cut
change ABC's choices, so these are estimates within some tens of ps.

Usage: split_paths.py [--config default] [--out build/synth-split]
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import flow  # noqa: E402
import liberty  # noqa: E402

# DFFASRHQNx1 (the flip-flop dfflibmap picks for the RTL's reset registers), from the paths OpenSTA reports:
# clock-to-QN about 49 ps, setup about 20 ps at these slews; read from the reports below, not assumed
_ARRIVAL_RE = re.compile(r"^\s*([-0-9.]+)\s+data arrival time", re.M)


def sta(work, lib, top, commands):
    with open(os.path.join(work, "split.tcl"), "w") as f:
        f.write("read_liberty %s\nread_verilog netlist.v\nlink_design %s\nread_sdc constraints.sdc\n%s\nexit\n"
                % (lib, top, commands))
    flow.run([os.environ.get("STA", "sta"), "-no_splash", "-exit", "split.tcl"], os.path.join(work, "split.log"), work)
    with open(os.path.join(work, "split.log")) as f:
        return f.read()


def first(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        raise SystemExit("split_paths.py: no %s in the timing report" % what)
    return float(m.group(1))


def net_arrival(path, net_re):
    """Arrival (ps) at the first net of a `-fields {nets}` path report whose name matches net_re."""
    time = None
    for line in path.splitlines():
        m = re.match(r"^\s*[-0-9.]+\s+([-0-9.]+)\s+[\^v]\s+\S+", line)
        if m:
            time = float(m.group(1))
            continue
        m = re.match(r"^\s*\d+\s+(\S+) \(net\)", line)
        if m and re.fullmatch(net_re, m.group(1)) and time is not None:
            return time
    raise SystemExit("split_paths.py: no net matching %s on the path" % net_re)


def endpoints(path):
    s = re.search(r"^\s*(\S+)", path).group(1)
    e = re.search(r"^Endpoint:\s*(\S+)", path, re.M).group(1)
    return [s, e]


def synth_hier(block, params, period_ps, lib, work):
    """flow.synth_block without -flatten: each module mapped on its own, pins kept."""
    os.makedirs(work, exist_ok=True)
    srcs = " ".join(os.path.join(flow.RTL, s) for s in flow.BLOCKS[block])
    chparams = " ".join("-set %s %d" % (k, v) for k, v in sorted(params.items()))
    with open(os.path.join(work, "abc.constr"), "w") as f:
        f.write("set_driving_cell %s\nset_load %g\n" % (flow.DRIVING_CELL, flow.LOAD_FF))
    ys = ["read_verilog -sv %s" % srcs, ("chparam %s %s" % (chparams, block)) if chparams else "",
          "hierarchy -check -top %s" % block, "synth -top %s" % block, "rename -wire -suffix _reg t:$_*DFF*",
          "rename -hide w:*$*", "dfflibmap -liberty %s" % lib,
          "abc -D %d -constr abc.constr -liberty %s" % (round(period_ps), lib), "opt_clean -purge",
          "hilomap -hicell %s %s -locell %s %s" % (flow.TIE_HI + flow.TIE_LO), "opt_clean -purge",
          "rename -top %s" % block, "uniquify", "write_verilog -noattr -noexpr -nohex -nodec netlist.v"]
    script = "\n".join(l for l in ys if l) + "\n"
    ys_path = os.path.join(work, "synth.ys")
    if os.path.exists(os.path.join(work, "netlist.v")) and os.path.exists(ys_path) and open(ys_path).read() == script:
        return  # made by this script already
    with open(ys_path, "w") as f:
        f.write(script)
    flow.run([os.environ.get("YOSYS", "yosys"), "-q", "-l", "yosys.log", "-s", "synth.ys"],
             os.path.join(work, "yosys.out"), work)
    with open(os.path.join(work, "netlist.v")) as f:
        text = f.read()
    # OpenSTA wants plain module names: name the derived modules after their base module
    names = sorted(set(re.findall(r"\\(\$paramod\S*)\s", text)))
    for i, full in enumerate(names):
        text = text.replace("\\" + full + " ", "%s_%d " % (full.split("\\")[1], i))
    with open(os.path.join(work, "netlist.v"), "w") as f:
        f.write(text)
    with open(os.path.join(work, "constraints.sdc"), "w") as f:
        f.write("create_clock -name hub_clk -period %.3f [get_ports clk_i]\n"
                "set_input_delay 0 -clock hub_clk [delete_from_list [all_inputs] [get_ports clk_i]]\n"
                "set_output_delay 0 -clock hub_clk [all_outputs]\n"
                "set_driving_cell -lib_cell %s [all_inputs]\nset_load %g [all_outputs]\n"
                "set_false_path -from [get_ports rst_ni]\n" % (period_ps, flow.DRIVING_CELL, flow.LOAD_FF))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="default")
    ap.add_argument("--out", default=os.path.join(REPO, "build", "synth-split"))
    a = ap.parse_args()
    cfg = flow.load_configs(os.path.join(HERE, "configs.json"))
    if a.config not in cfg:
        flow.fail("no configuration '%s'" % a.config)
    c = cfg[a.config]
    period_ps = 1000.0 / c["clock_ghz"]
    out = os.path.abspath(os.path.join(a.out, a.config))
    pdk = os.environ.get("MOEHUB_PDK_DIR", os.path.join(REPO, "synth", "pdk", "asap7"))
    lib = flow.merged_library(pdk, os.path.abspath(a.out))
    with open(lib) as f:
        areas = liberty.cell_areas(f.read())
    res = {"config": a.config, "clock_period_ps": round(period_ps, 3)}

    # AAU: cuts at the RAT's request (the AAU's request mux) and after its tag compare (rat_hit)
    w = os.path.join(out, "aau_hier")
    synth_hier("moehub_aau", c["blocks"]["moehub_aau"], period_ps, lib, w)
    rep = sta(w, lib, "moehub_aau", "report_checks -path_delay max -digits 3\n"
              "report_checks -path_delay max -digits 3 -through [get_pins u_rat/hit_o] -fields {nets}\n")
    parts = rep.split("Startpoint:")
    total = first(_ARRIVAL_RE.pattern, parts[1], "worst path")
    path = parts[2]
    through = first(_ARRIVAL_RE.pattern, path, "path through u_rat/hit_o")
    t_req = net_arrival(path, r"rat_(row|malloc|valid|fill)\S*")
    t_hit = net_arrival(path, r"rat_hit")
    clkq = first(r"^\s*([-0-9.]+)\s+[-0-9.]+\s+[\^v]\s+\S+/QN?\s", path, "clock-to-Q")
    setup = first(r"^\s*-?([0-9.]+)\s+[-0-9.]+\s+library setup time", path, "setup")
    res["aau"] = {"worst_arrival_ps": total, "worst_path": " -> ".join(endpoints(parts[1])),
                  "through_rat_hit_ps": through, "through_rat_hit_path": " -> ".join(endpoints(path)),
                  "arrival_at_rat_request_ps": t_req, "arrival_at_rat_hit_ps": t_hit,
                  "one_cut": {"stages_ps": [t_hit + setup, through - t_hit + clkq]},
                  "two_cuts": {"stages_ps": [t_req + setup, t_hit - t_req + clkq + setup, through - t_hit + clkq]}}
    # RPM: the tournament alone (one destination) against the whole scheduler
    rp = dict(c["blocks"]["moehub_rpm_sched"])
    one = dict(rp, Dests=1)
    w1 = os.path.join(out, "rpm_one_dest")
    r1 = flow.synth_block("moehub_rpm_sched", one, period_ps, lib, areas, w1, "flops")
    rep1 = sta(w1, lib, "moehub_rpm_sched", "report_checks -path_delay max -digits 3 -to [get_ports gnt_entry_o*]\n")
    tour = first(_ARRIVAL_RE.pattern, rep1, "path to gnt_entry_o")
    wf = os.path.join(out, "rpm_full")
    rf = flow.synth_block("moehub_rpm_sched", rp, period_ps, lib, areas, wf, "flops")
    full = period_ps - rf["worst_slack_ps"]
    res["rpm"] = {"tournament_one_dest_ps": tour, "one_dest_worst_ps": period_ps - r1["worst_slack_ps"],
                  "worst_arrival_ps": full, "worst_path": "%s -> %s" % (rf["critical_path"]["startpoint"],
                                                                       rf["critical_path"]["endpoint"]),
                  "one_cut": {"stages_ps": [tour + setup, full - tour + clkq]}}
    # the tournament's depth: one destination, 2 to 16 entries (one to four levels of the tree)
    levels = {}
    for depth in (2, 4, 8, 16):
        wd = os.path.join(out, "rpm_one_dest_depth%d" % depth)
        flow.synth_block("moehub_rpm_sched", dict(rp, Dests=1, Depth=depth), period_ps, lib, areas, wd, "flops")
        levels[depth] = first(_ARRIVAL_RE.pattern, sta(wd, lib, "moehub_rpm_sched",
                              "report_checks -path_delay max -digits 3 -to [get_ports gnt_entry_o*]\n"),
                              "path to gnt_entry_o")
    res["rpm"]["tournament_by_depth_ps"] = levels
    for k in ("aau", "rpm"):
        s = res[k]
        s["fmax_now_ghz"] = round(1000.0 / s["worst_arrival_ps"], 3)
        for cut in ("one_cut", "two_cuts"):
            if cut in s:
                s[cut]["stages_ps"] = [round(x, 1) for x in s[cut]["stages_ps"]]
                s[cut]["fmax_ghz"] = round(1000.0 / max(s[cut]["stages_ps"]), 3)
    res["clk_to_q_ps"], res["setup_ps"] = clkq, setup
    with open(os.path.join(out, "split.json"), "w") as f:
        json.dump(res, f, indent=2, sort_keys=True)
        f.write("\n")
    print(json.dumps(res, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
