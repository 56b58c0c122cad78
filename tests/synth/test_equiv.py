#!/usr/bin/env python3
"""The generic netlist Yosys makes of the hub simulates equal to the RTL.

Usage: test_equiv.py <flow output folder> <work folder>
Takes <flow output>/tiny/moehub_top/generic.v (written by the flow run of
test_flow.py: the netlist after `synth -flatten`, before mapping to ASAP7),
renames its module, builds it with Verilator beside the RTL in
tests/synth/equiv_top.sv (RTL parameters from synth/configs.json) and drives
both with 3000 cycles of random inputs (equiv_main.cpp), comparing every
output before and after each clock edge. Gate-level simulation with the ASAP7
cell models is not available; the mapping from these generic gates to ASAP7
cells is ABC's and dfflibmap's.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RTL = [os.path.join(REPO, "rtl", f) for f in
       ("moehub_apt.sv", "moehub_rat.sv", "moehub_aau.sv", "moehub_rpm_sched.sv", "moehub_top.sv")]
FLOW_OUT = WORK = None
CYCLES = 3000


def build(netlist_text, name):
    """Build the equivalence simulator for a generic netlist text; returns the binary's path."""
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    gen = os.path.join(d, "moehub_top_generic.v")
    with open(gen, "w") as f:
        f.write(netlist_text)
    with open(os.path.join(REPO, "synth", "configs.json")) as f:
        params = json.load(f)["tiny"]["blocks"]["moehub_top"]
    cmd = ["verilator", "--cc", "--exe", "--build", "-j", "2", "-O1", "-Wno-fatal", "-Wno-lint", "-Wno-style",
           "--top-module", "equiv_top", "-Mdir", os.path.join(d, "obj"), "-o", "equiv_sim"]
    cmd += ["-G%s=%d" % kv for kv in sorted(params.items())]
    cmd += RTL + [gen, os.path.join(HERE, "equiv_top.sv"), os.path.join(HERE, "equiv_main.cpp")]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError("verilator failed:\n" + r.stdout[-4000:])
    return os.path.join(d, "obj", "equiv_sim")


def generic_netlist():
    path = os.path.join(FLOW_OUT, "tiny", "moehub_top", "generic.v")
    with open(path) as f:
        text = f.read()
    renamed, n = re.subn(r"^module moehub_top\(", "module moehub_top_generic(", text, flags=re.M)
    if n != 1:
        raise RuntimeError("%s: no 'module moehub_top(' to rename" % path)
    return renamed


class Equivalence(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = build(generic_netlist(), "generic")

    def test_generic_netlist_simulates_equal_to_rtl(self):
        for seed in ("1", "2"):
            r = subprocess.run([self.sim, str(CYCLES), seed], stdout=subprocess.PIPE, text=True)
            self.assertEqual(r.returncode, 0, r.stdout)
            m = re.match(r"equivalent: (\d+) cycles, (\d+) translated stores, (\d+) grants", r.stdout)
            self.assertIsNotNone(m, r.stdout)
            # the random run exercised both units
            self.assertGreater(int(m.group(2)), 10, r.stdout)
            self.assertGreater(int(m.group(3)), 10, r.stdout)

    def test_a_difference_is_caught(self):
        # the netlist side's first output bit inverted from cycle 100 on: the run must stop there
        r = subprocess.run([self.sim, "300", "1", "100"], stdout=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("mismatch at cycle 100 ", r.stdout)


if __name__ == "__main__":
    FLOW_OUT = os.path.abspath(sys.argv.pop(1))
    WORK = os.path.abspath(sys.argv.pop(1))
    unittest.main()
