#!/usr/bin/env python3
"""Area and access time of an SRAM macro from first principles, for the RAT's banks.

A macro of `words` x `width` bits with `ports` ports (1: single port; 2: one
read and one write port, what the RAT's read-modify-write of a set word in
one cycle needs, and the paper's dual-ported banks) is modelled as

  organisation: column multiplexing m in {1, 2, 4, 8, 16} (m words share a
      row), rows = ceil(words / m), columns = width * m; m is the one that
      makes the cell array closest to square (ties: the smaller m).
  area = cell array + row periphery + column periphery + I/O + control, with
      cell array   rows * columns * bit cell area * port factor
      row          rows * ports * (decoder AND + wordline driver)
                   + predecoders (two groups of 2**ceil(a/2) NAND2 per port)
      column       columns * ports * (precharge/equalise + column mux)
      I/O          width * ports * (sense amplifier + write driver
                   + data-in flip-flop + output latch)
      control      ports * (address flip-flops + clock and timing generator)
    The periphery is counted as the ASAP7 standard cells that would build it
    (areas from the PDK's liberty files). Real macros pitch-match custom
    periphery to the rows and columns and add routing, straps and well taps;
    the comparison with the ASAP7 SRAM macros (compare()) says by how much.
  access time (clock edge to data out) =
      address flip-flop clock-to-Q
    + decoder and wordline driver: FO4 * (log4(path effort) + parasitic
      stages), path effort = NAND-tree logical effort * branching (rows) *
      electrical effort (wordline load / address input)
    + wordline RC: 0.38 * r * c * L**2 (distributed line, Elmore), L = columns
      * cell width on M2
    + bitline: C_bitline * sense swing / read current
    + sense amplifier and output: 2 FO4 + 1 FO4 per column-mux level + 1 FO4
  The read through the array alone (address valid to data out, no input
  flip-flop) is what `array_read_ps` gives: the delay of the blackbox stub
  the flow puts in place of the RAT's combinational-read storage.

Every coefficient is in COEFFS with its unit and source. The figures at the
top of the access-time formula (FO4, clock-to-Q, setup) are computed from the
PDK's liberty tables by derive_from_liberty() and checked by the tests.

Usage:
  sram_model.py --words 16 --width 136 [--ports 2] [--tech asap7|n7] [--json]
  sram_model.py --compare [--pdk DIR] [--csv out.csv]
      the model beside the FakeRAM2.0 macros of the PDK (sram/fakeram7_*.lib)
      and beside the ASAP7 SRAM macros of data/asap7_sram_0p0_macros.csv
  sram_model.py --derive [--pdk DIR]   FO4, clock-to-Q, setup from the liberty files
"""

import argparse
import csv
import gzip
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

_LIB_INVBUF = "asap7sc7p5t_INVBUF_RVT_TT_nldm_220122.lib.gz"
_LIB_SIMPLE = "asap7sc7p5t_SIMPLE_RVT_TT_nldm_211120.lib.gz"
_LIB_SEQ = "asap7sc7p5t_SEQ_RVT_TT_nldm_220123.lib.gz"
_SRC_AREA = "cell area in the ASAP7 RVT TT liberty (synth/pdk/asap7/lib/%s)"

# Bit cells: area and dimensions (width along the wordline, height along the bitline).
BITCELLS = {
    "asap7": {
        "area_um2": 0.02916,
        "width_um": 0.270,
        "height_um": 0.108,
        "source": "ASAP7 6T SRAM cell (1-2-2 fins) of the ASAP7 SRAM macros (The-OpenROAD-Project/"
                  "asap7_sram_0p0, 'srambank_*_6t122', Vashishtha et al., 'Robust 7-nm SRAM design on a "
                  "predictive PDK', ISCAS 2017): 2 gate pitches (2 x 54 nm) by 10 fin pitches (10 x 27 nm, "
                  "ASAP7 pitches from Clark et al., Microelectronics J. 53, 2016); it matches the macros' "
                  "LEF, whose height grows by 1.08 um (4 columns x 0.270 um) per data bit",
    },
    "n7": {
        "area_um2": 0.027,
        "width_um": 0.2598,
        "height_um": 0.1039,
        "source": "TSMC N7 high-density 6T cell, 0.027 um^2 (Chang et al., 'A 7nm 256Mb SRAM in high-k "
                  "metal-gate FinFET technology with write-assist circuitry for low-VMIN applications', "
                  "ISSCC 2017, paper 12.1); dimensions: assumption, the ASAP7 cell's 2.5:1 aspect ratio",
    },
}

# name: (value, unit, source)
COEFFS = {
    "dual_port_cell_factor": (2.0, "x bit cell area",
                              "assumption: a 1R1W (8T) or dual-ported cell adds two access transistors, a "
                              "second wordline and a second bitline pair; taken as twice the 6T cell, no "
                              "7 nm source found. A single-port figure is reported beside it"),
    "and2_um2": (0.08748, "um^2", _SRC_AREA % _LIB_SIMPLE + ", AND2x2 (row decoder final gate)"),
    "nand2_um2": (0.08748, "um^2", _SRC_AREA % _LIB_SIMPLE + ", NAND2x1 (predecoder gate)"),
    "bufx4_um2": (0.10206, "um^2", _SRC_AREA % _LIB_INVBUF + ", BUFx4 (wordline driver)"),
    "inv_um2": (0.04374, "um^2", _SRC_AREA % _LIB_INVBUF + ", INVx1"),
    "latch_um2": (0.2187, "um^2", _SRC_AREA % _LIB_SEQ + ", DHLx1 (latch-type sense amplifier; output latch)"),
    "dff_um2": (0.2916, "um^2", _SRC_AREA % _LIB_SEQ + ", DFFHQNx1 (address and data-in flip-flops)"),
    "precharge_inv_equiv": (1.5, "INVx1 areas per column",
                            "assumption: precharge and equalise (3 PMOS) and a 2-transistor column-mux pass "
                            "gate, 5 small devices sharing diffusion with the column, counted as 1.5 inverters"),
    "write_driver_inv_equiv": (2.0, "INVx1 areas per bit",
                               "assumption: a write driver is two inverters driving the bitline pair"),
    "timing_gen_bufx4": (12, "BUFx4 areas per port",
                         "assumption: clock buffer, wordline enable, sense enable (replica delay) and "
                         "precharge control, about a dozen buffers"),
    "fo4_ps": (19.60, "ps",
               "FO4 of INVx1 (RVT TT 0.7 V 25 C): mean of rise and fall delay at 4 x its input capacitance "
               "and its own output slew, computed from the INVBUF liberty by derive_from_liberty()"),
    "inv_cin_ff": (0.619928, "fF", "input capacitance of INVx1, pin A, INVBUF liberty"),
    "dff_clk_q_ps": (62.06, "ps",
                     "DFFHQNx1 clock-to-QN at 20 ps clock slew and 4 x INVx1 load, mean of rise and fall, "
                     "SEQ liberty, computed by derive_from_liberty()"),
    "dff_setup_ps": (9.99, "ps",
                     "DFFHQNx1 setup of D (rise and fall, larger) at 20 ps slews, SEQ liberty, "
                     "computed by derive_from_liberty()"),
    "fins_in_invx1": (6, "fins",
                      "assumption: the 7.5-track ASAP7 INVx1 has 3 fins in each of its two devices "
                      "(Clark et al. 2016 describe 3-fin devices in the 7.5-track cells)"),
    "access_fins": (2, "fins", "the 6T-122 cell's pass gates have 2 fins (cell name: pull-up 1, pass gate 2, "
                               "pull-down 2)"),
    "drain_to_gate_cap": (1.0, "x gate capacitance per fin",
                          "assumption: drain junction and contact capacitance of a fin about its gate "
                          "capacitance (the usual first-order rule, Rabaey et al., Digital Integrated "
                          "Circuits, 2nd ed., ch. 5)"),
    "wire_r_ohm_per_um": (29.7126, "ohm/um", "ASAP7 M2 resistance, OpenROAD-flow-scripts "
                                             "flow/platforms/asap7/setRC.tcl (2.97126E-02 kohm/um)"),
    "wire_c_ff_per_um": (0.184542, "fF/um", "ASAP7 M2 capacitance, OpenROAD-flow-scripts "
                                            "flow/platforms/asap7/setRC.tcl"),
    "nmos_ieff_ua_per_fin": (28.1, "uA",
                             "effective NMOS drive current per fin: INVx1 fall_transition slope at its two largest "
                             "loads (10-90 %% of 0.7 V over dT/dC) divided by its 3 NMOS fins, INVBUF liberty, "
                             "computed by derive_from_liberty()"),
    "read_stack_factor": (0.5, "x one pass gate's current",
                          "assumption: the read current flows through the pass gate and the pull-down in "
                          "series, two devices of equal fins, about half the current of one (first-order "
                          "stack rule)"),
    "sense_swing_v": (0.1, "V", "assumption: bitline differential a latch sense amplifier resolves with "
                                "margin for its offset (typical 50 to 100 mV)"),
    "nand_logical_effort": (4.0 / 3.0, "", "logical effort of a NAND2 (Sutherland, Sproull and Harris, "
                                           "Logical Effort, 1999)"),
    "parasitic_stages": (1, "FO4", "assumption: the extra parasitic delay of the decoder's NAND stages over "
                                   "the inverters an FO4 counts (p = 2 against 1, Logical Effort)"),
}

MUX_CHOICES = (1, 2, 4, 8, 16)


def c(name):
    return COEFFS[name][0]


def organise(words, width, tech="asap7", mux=None):
    """(mux, rows, cols): the column multiplexing that makes the cell array closest to square
    (or the given one)."""
    if words < 1 or width < 1:
        raise ValueError("words and width must be positive (got %d x %d)" % (words, width))
    if mux is not None:
        return mux, -(-words // mux), width * mux
    cell = BITCELLS[tech]
    best = None
    for m in MUX_CHOICES:
        if m > words:
            break
        rows = -(-words // m)
        cols = width * m
        skew = abs(math.log((rows * cell["height_um"]) / (cols * cell["width_um"])))
        if best is None or skew < best[0] - 1e-12:
            best = (skew, m, rows, cols)
    return best[1], best[2], best[3]


def area(words, width, ports=1, tech="asap7", mux=None):
    """Area breakdown in um^2 of a words x width macro with `ports` ports."""
    if ports not in (1, 2):
        raise ValueError("ports must be 1 or 2 (got %r)" % ports)
    m, rows, cols = organise(words, width, tech, mux)
    cell = BITCELLS[tech]
    abits = max(1, math.ceil(math.log2(words))) if words > 1 else 1
    port_f = c("dual_port_cell_factor") if ports == 2 else 1.0
    array = rows * cols * cell["area_um2"] * port_f
    rbits = math.ceil(math.log2(rows)) if rows > 1 else 0
    predec = 2 * (2 ** math.ceil(rbits / 2)) * c("nand2_um2") if rows > 2 else 0.0
    row = ports * (rows * (c("and2_um2") + c("bufx4_um2")) + predec)
    column = ports * cols * c("precharge_inv_equiv") * c("inv_um2")
    io = ports * width * (2 * c("latch_um2") + c("write_driver_inv_equiv") * c("inv_um2") + c("dff_um2"))
    control = ports * (abits * c("dff_um2") + c("timing_gen_bufx4") * c("bufx4_um2"))
    total = array + row + column + io + control
    return {"words": words, "width": width, "ports": ports, "tech": tech, "mux": m, "rows": rows,
            "cols": cols, "bits": words * width, "array_um2": array, "row_um2": row, "column_um2": column,
            "io_um2": io, "control_um2": control, "total_um2": total, "array_efficiency": array / total}


def access(words, width, ports=1, tech="asap7", mux=None):
    """Access-time breakdown in ps: clock edge to data out, and the array read alone."""
    m, rows, cols = organise(words, width, tech, mux)
    cell = BITCELLS[tech]
    fo4 = c("fo4_ps")
    c_fin = c("inv_cin_ff") / c("fins_in_invx1")
    c_access = c("access_fins") * c_fin
    # wordline: two pass gates per cell (per port) plus the wire across the cell
    c_wl = cols * (2 * c_access + cell["width_um"] * c("wire_c_ff_per_um"))
    rbits = math.ceil(math.log2(rows)) if rows > 1 else 0
    # path effort from an address input to one wordline: the AND of rbits inputs as a tree of NAND2
    # (depth log2(rbits)), each address line (true or complement) branching to rows / 2 gates, and the
    # wordline load over the address input (Logical Effort, ch. 11 "decoders")
    depth = math.ceil(math.log2(rbits)) if rbits > 1 else 0
    effort = (c("nand_logical_effort") ** depth) * max(rows / 2.0, 1.0) * c_wl / c("inv_cin_ff")
    t_dec = fo4 * (math.log(max(effort, 1.0), 4) + c("parasitic_stages"))
    l_wl = cols * cell["width_um"]
    t_wl = 0.38 * c("wire_r_ohm_per_um") * c("wire_c_ff_per_um") * l_wl * l_wl * 1e-3  # ohm * fF = 1e-3 ps
    c_bl = rows * (c("drain_to_gate_cap") * c_access + cell["height_um"] * c("wire_c_ff_per_um"))
    i_read = c("nmos_ieff_ua_per_fin") * c("access_fins") * c("read_stack_factor")
    t_bl = c_bl * c("sense_swing_v") / i_read * 1e3  # fF * V / uA = ns -> ps
    t_out = fo4 * (2 + math.log2(m) + 1)
    array_ps = t_dec + t_wl + t_bl + t_out
    return {"decode_ps": t_dec, "wordline_ps": t_wl, "bitline_ps": t_bl, "sense_out_ps": t_out,
            "array_read_ps": array_ps, "clk_to_q_ps": c("dff_clk_q_ps") + array_ps,
            "setup_ps": c("dff_setup_ps"), "ports": ports, "mux": m, "rows": rows, "cols": cols}


def model(words, width, ports=1, tech="asap7", mux=None):
    r = area(words, width, ports, tech, mux)
    r.update({k: v for k, v in access(words, width, ports, tech, mux).items() if k.endswith("_ps")})
    return r


# ---- liberty of the blackbox stub that replaces a storage array in the netlist ----

def stub_name(words, width):
    return "moehub_sram_%dx%d" % (words, width)


def stub_liberty(macros, tech="asap7", ports=2):
    """Liberty text (ps, fF, um^2) of the stub cells for [(words, width, abits)]: a combinational read
    arc rd_addr -> rd_data of array_read_ps, and setup/hold of the write pins to clk."""
    out = ["library (moehub_sram_stubs) {",
           '  delay_model : table_lookup;', '  time_unit : "1ps";', '  voltage_unit : "1V";',
           '  current_unit : "1mA";', '  capacitive_load_unit (1,ff);', '  pulling_resistance_unit : "1kohm";',
           '  nom_process : 1;', '  nom_temperature : 25;', '  nom_voltage : 0.7;',
           '  input_threshold_pct_rise : 50;', '  input_threshold_pct_fall : 50;',
           '  output_threshold_pct_rise : 50;', '  output_threshold_pct_fall : 50;',
           '  slew_lower_threshold_pct_rise : 10;', '  slew_upper_threshold_pct_rise : 90;',
           '  slew_lower_threshold_pct_fall : 10;', '  slew_upper_threshold_pct_fall : 90;']
    seen = set()
    for words, width, abits in macros:
        if (words, width) in seen:
            continue
        seen.add((words, width))
        n = stub_name(words, width)
        a = area(words, width, ports, tech)["total_um2"]
        t = access(words, width, ports, tech)
        for bus, w in (("A", abits), ("D", width)):
            out += ["  type (%s_%s) {" % (n, bus), "    base_type : array;", "    data_type : bit;",
                    "    bit_width : %d;" % w, "    bit_from : %d;" % (w - 1), "    bit_to : 0;",
                    "    downto : true;", "  }"]
        cin = c("inv_cin_ff")

        def constraint(kind, value):
            return ["      timing () {", '        related_pin : "clk";', "        timing_type : %s;" % kind,
                    "        rise_constraint (scalar) { values (\"%.3f\"); }" % value,
                    "        fall_constraint (scalar) { values (\"%.3f\"); }" % value, "      }"]

        out += ["  cell (%s) {" % n, "    area : %.4f;" % a, "    interface_timing : true;",
                "    pin (clk) {", "      direction : input;", "      clock : true;",
                "      capacitance : %.4f;" % (4 * cin), "    }"]
        for pin, bus in (("wr_addr", "A"), ("wr_data", "D"), ("wr_mask", "D")):
            out += ["    bus (%s) {" % pin, "      bus_type : %s_%s;" % (n, bus), "      direction : input;",
                    "      capacitance : %.4f;" % cin]
            out += constraint("setup_rising", t["setup_ps"]) + constraint("hold_rising", 0.0)
            out += ["    }"]
        out += ["    bus (rd_addr) {", "      bus_type : %s_A;" % n, "      direction : input;",
                "      capacitance : %.4f;" % cin, "    }",
                "    bus (rd_data) {", "      bus_type : %s_D;" % n, "      direction : output;",
                # every address bit by name: OpenSTA makes no arcs between buses of different widths
                "      timing () {", '        related_pin : "%s";' % " ".join("rd_addr[%d]" % i for i in range(abits)),
                "        timing_type : combinational;",
                "        cell_rise (scalar) { values (\"%.3f\"); }" % t["array_read_ps"],
                "        cell_fall (scalar) { values (\"%.3f\"); }" % t["array_read_ps"],
                "        rise_transition (scalar) { values (\"%.3f\"); }" % c("fo4_ps"),
                "        fall_transition (scalar) { values (\"%.3f\"); }" % c("fo4_ps"),
                "      }", "    }", "  }"]
    out.append("}")
    return "\n".join(out) + "\n"


# ---- the PDK's own figures: liberty tables and the macros to compare with ----

def _table(text, name):
    """(index_1, index_2, values) of the first `name` table group in text."""
    m = re.search(name + r"\s*\([^)]*\)\s*\{(.*?)\}", text, re.S)
    if not m:
        raise ValueError("no %s table" % name)
    body = m.group(1)
    idx = [[float(x) for x in g.split(",")] for g in re.findall(r'index_\d\s*\(\s*"([^"]*)"', body)]
    vals = [[float(x) for x in row.split(",")]
            for row in re.findall(r'"([^"]*)"', body[body.find("values"):])]
    return idx[0], idx[1], vals


def _interp(axis, x):
    for i in range(len(axis) - 1):
        if x <= axis[i + 1] or i == len(axis) - 2:
            return i, (x - axis[i]) / (axis[i + 1] - axis[i])
    return 0, 0.0


def lookup(table, x1, x2):
    """Bilinear interpolation (extrapolation at the edges) of an NLDM table."""
    i1, i2, v = table
    a, fa = _interp(i1, x1)
    b, fb = _interp(i2, x2)
    top = v[a][b] * (1 - fb) + v[a][b + 1] * fb
    bot = v[a + 1][b] * (1 - fb) + v[a + 1][b + 1] * fb
    return top * (1 - fa) + bot * fa


def _cell(text, name):
    i = text.find("cell (%s)" % name)
    if i < 0:
        raise ValueError("cell %s not in the liberty text" % name)
    j = text.find("\n  cell (", i + 10)
    return text[i:j if j > 0 else len(text)]


def _pin(cell, pin):
    i = re.search(r"pin \(%s\)\s*\{" % pin, cell)
    if not i:
        raise ValueError("pin %s not found" % pin)
    return cell[i.start():]


def derive_from_liberty(pdk):
    """FO4, INVx1 input capacitance, DFF clock-to-Q and setup, computed from the ASAP7 liberty files."""
    with gzip.open(os.path.join(pdk, "lib", _LIB_INVBUF), "rt") as f:
        text = f.read()
    header = text[:text.find("cell (")]
    inv = _cell(text, "INVx1_ASAP7_75t_R")
    cin = float(re.search(r"capacitance\s*:\s*([0-9.]+)", _pin(inv, "A")).group(1))
    y = _pin(inv, "Y")
    rise, fall = _table(y, "cell_rise"), _table(y, "cell_fall")
    rtr, ftr = _table(y, "rise_transition"), _table(y, "fall_transition")
    slew = 20.0
    for _ in range(20):  # the input slew of a stage in a chain of equal stages is its own output slew
        slew = 0.5 * (lookup(rtr, slew, 4 * cin) + lookup(ftr, slew, 4 * cin))
    fo4 = 0.5 * (lookup(rise, slew, 4 * cin) + lookup(fall, slew, 4 * cin))
    with gzip.open(os.path.join(pdk, "lib", _LIB_SEQ), "rt") as f:
        dff = _cell(f.read(), "DFFHQNx1_ASAP7_75t_R")
    qn = _pin(dff, "QN")
    clk_q = 0.5 * (lookup(_table(qn, "cell_rise"), 20.0, 4 * cin) + lookup(_table(qn, "cell_fall"), 20.0, 4 * cin))
    d = _pin(dff, "D")
    s = d[d.find("setup_rising"):]
    setup = max(lookup(_table(s, "rise_constraint"), 20.0, 20.0), lookup(_table(s, "fall_constraint"), 20.0, 20.0))
    # effective pull-down current: output swing between the slew thresholds over the slope of the fall
    # transition with the load, at the two largest loads and the smallest input slew
    i1, i2, v = _table(y, "fall_transition")
    lo = float(re.search(r"slew_lower_threshold_pct_fall\s*:\s*([0-9.]+)", header).group(1))
    hi = float(re.search(r"slew_upper_threshold_pct_fall\s*:\s*([0-9.]+)", header).group(1))
    vdd = float(re.search(r"nom_voltage\s*:\s*([0-9.]+)", header).group(1))
    slope_ps_per_ff = (v[0][-1] - v[0][-2]) / (i2[-1] - i2[-2])
    ieff_ua = (hi - lo) / 100.0 * vdd / slope_ps_per_ff * 1e3  # V / (ps/fF) = mA
    return {"fo4_ps": fo4, "inv_cin_ff": cin, "dff_clk_q_ps": clk_q, "dff_setup_ps": setup,
            "nmos_ieff_ua_per_fin": ieff_ua / 3.0}


def read_fakeram(folder):
    """[{macro, words, width, area_um2, clk_to_q_ps}] of the fakeram7_<words>x<width>.lib files."""
    out = []
    for f in sorted(os.listdir(folder)):
        m = re.match(r"fakeram7_(\d+)x(\d+)\.lib$", f)
        if not m:
            continue
        with open(os.path.join(folder, f)) as fh:
            text = fh.read()
        a = float(re.search(r"^\s*area\s*:\s*([0-9.]+)", text, re.M).group(1))
        rd = text[text.find("bus(rd_out)"):]
        rise = re.search(r"cell_rise\([^)]*\)\s*\{.*?values\s*\((.*?)\)", rd, re.S)
        vals = [float(v) for v in re.findall(r"[0-9.]+", rise.group(1))]
        out.append({"macro": f[:-4], "words": int(m.group(1)), "width": int(m.group(2)), "area_um2": a,
                    "clk_to_q_ps": 1000.0 * min(vals)})  # the library's time unit is 1 ns
    return out


def read_asap7_sram(path):
    """Rows of data/asap7_sram_0p0_macros.csv (figures read off the ASAP7 SRAM macros' LEF and liberty)."""
    with open(path) as f:
        rows = [r for r in csv.DictReader(l for l in f if not l.startswith("#"))]
    return [{"macro": r["macro"], "words": int(r["words"]), "width": int(r["width"]),
             "area_um2": float(r["area_um2"]), "clk_to_q_ps": float(r["clk_to_q_ps"]), "mux": 4}
            for r in rows]  # their organisation: 4 columns per bit


def compare(macros, tech="asap7", ports=1):
    """Model beside each macro: area and clock-to-output, and the model's deviation in %."""
    out = []
    for mac in macros:
        mod = model(mac["words"], mac["width"], ports, tech, mac.get("mux"))
        out.append(dict(mac, model_area_um2=mod["total_um2"], model_clk_to_q_ps=mod["clk_to_q_ps"],
                        area_dev_pct=100.0 * (mod["total_um2"] - mac["area_um2"]) / mac["area_um2"],
                        time_dev_pct=100.0 * (mod["clk_to_q_ps"] - mac["clk_to_q_ps"]) / mac["clk_to_q_ps"]))
    return out


def _fail(msg):
    print("sram_model.py: " + msg, file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", type=int)
    ap.add_argument("--width", type=int)
    ap.add_argument("--ports", type=int, default=1)
    ap.add_argument("--tech", default="asap7", choices=sorted(BITCELLS))
    ap.add_argument("--json", action="store_true", help="print the model as JSON")
    ap.add_argument("--compare", action="store_true", help="the model beside FakeRAM and the ASAP7 SRAM macros")
    ap.add_argument("--derive", action="store_true", help="FO4, clock-to-Q and setup from the liberty files")
    ap.add_argument("--coeffs", action="store_true", help="print the coefficients and their sources (Markdown)")
    ap.add_argument("--csv", help="with --compare: also write the comparison as CSV")
    ap.add_argument("--pdk", default=os.environ.get("MOEHUB_PDK_DIR", os.path.join(REPO, "synth", "pdk", "asap7")))
    a = ap.parse_args()
    if a.coeffs:
        print("| coefficient | value | unit | source |\n| --- | ---: | --- | --- |")
        for k, cell in sorted(BITCELLS.items()):
            print("| bit cell `%s` | %g um^2 (%g x %g um) | um^2 | %s |" % (
                k, cell["area_um2"], cell["width_um"], cell["height_um"], cell["source"]))
        for k, (v, unit, src) in COEFFS.items():
            print("| `%s` | %.4g | %s | %s |" % (k, v, unit, src))
        return 0
    if a.derive:
        d = derive_from_liberty(a.pdk)
        for k, v in d.items():
            print("%-22s %10.4f   (COEFFS: %g)" % (k, v, c(k)))
        return 0
    if a.compare:
        sets = []
        try:
            sets.append(("FakeRAM2.0 (PDK sram/)", read_fakeram(os.path.join(a.pdk, "sram"))))
        except OSError as e:
            _fail("%s (set --pdk or MOEHUB_PDK_DIR)" % e)
        sets.append(("ASAP7 SRAM macros (asap7_sram_0p0)",
                     read_asap7_sram(os.path.join(HERE, "data", "asap7_sram_0p0_macros.csv"))))
        rows = []
        for label, macros in sets:
            print("\n%s against the model (%s cell, single port%s):\n" % (
                label, a.tech, ", the macros' 4:1 column mux" if "asap7_sram" in label else ""))
            print("| macro | words x bits | area (um^2) | model (um^2) | area diff | clk->out (ps) | model (ps) | time diff |")
            print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for r in compare(macros, a.tech, 1):
                print("| %s | %d x %d | %.1f | %.1f | %+.0f %% | %.0f | %.0f | %+.0f %% |" % (
                    r["macro"], r["words"], r["width"], r["area_um2"], r["model_area_um2"], r["area_dev_pct"],
                    r["clk_to_q_ps"], r["model_clk_to_q_ps"], r["time_dev_pct"]))
                rows.append(dict(r, set=label))
        if a.csv:
            with open(a.csv, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=["set", "macro", "words", "width", "area_um2", "model_area_um2",
                                                  "area_dev_pct", "clk_to_q_ps", "model_clk_to_q_ps", "time_dev_pct"])
                w.writeheader()
                for r in rows:
                    w.writerow({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items() if k in w.fieldnames})
        return 0
    if a.words is None or a.width is None:
        _fail("--words and --width are required (or --compare / --derive)")
    if not 1 <= a.words <= 1 << 20 or not 1 <= a.width <= 4096:
        _fail("--words must be in [1, 1048576] and --width in [1, 4096]")
    if a.ports not in (1, 2):
        _fail("--ports must be 1 or 2")
    r = model(a.words, a.width, a.ports, a.tech)
    if a.json:
        print(json.dumps(r, indent=2, sort_keys=True))
    else:
        for k in sorted(r):
            print("%-18s %s" % (k, ("%.3f" % r[k]) if isinstance(r[k], float) else r[k]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
