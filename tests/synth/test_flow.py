#!/usr/bin/env python3
"""Runs the synthesis flow on the smallest configuration and checks its output.

Usage: test_flow.py <output folder>   (needs yosys, sta and the ASAP7 PDK)
Checks that every block of configuration `tiny` was synthesized and timed:
positive area equal to the sum of its cells, a netlist, a critical path that
starts and ends at a point of the design, fmax consistent with the slack.
"""

import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FLOW = os.path.join(HERE, "..", "..", "synth", "run_synth.sh")
OUT = None


class FlowTiny(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = subprocess.run([FLOW, "--config", "tiny", "--out", OUT])
        if r.returncode != 0:
            raise RuntimeError("flow failed with status %d" % r.returncode)
        with open(os.path.join(OUT, "tiny.json")) as f:
            cls.res = json.load(f)

    def test_every_block(self):
        names = [b["block"] for b in self.res["blocks"]]
        self.assertEqual(names, ["moehub_apt", "moehub_rat", "moehub_aau", "moehub_rpm_sched", "moehub_top"])

    def test_area(self):
        for b in self.res["blocks"]:
            self.assertGreater(b["area_um2"], 0, b["block"])
            cells = sum(c["area_um2"] for c in b["cells"].values())
            self.assertAlmostEqual(cells, b["area_um2"], delta=1e-3 * b["area_um2"])
            self.assertGreater(b["sequential_area_um2"], 0, b["block"])
            self.assertLess(b["sequential_area_um2"], b["area_um2"], b["block"])
            self.assertTrue(os.path.getsize(os.path.join(OUT, "tiny", b["block"], "netlist.v")) > 0)

    def test_timing(self):
        self.assertAlmostEqual(self.res["clock_period_ps"], 1000 / 1.5, places=2)
        for b in self.res["blocks"]:
            self.assertTrue(math.isfinite(b["worst_slack_ps"]))
            arrival = b["clock_period_ps"] - b["worst_slack_ps"]
            self.assertAlmostEqual(b["fmax_ghz"], 1000 / arrival, places=3)
            self.assertGreaterEqual(len(b["critical_path"]["cells"]), 2)

    def test_markdown(self):
        with open(os.path.join(OUT, "tiny.md")) as f:
            md = f.read()
        for b in self.res["blocks"]:
            self.assertIn("| %s |" % b["block"], md)


if __name__ == "__main__":
    OUT = os.path.abspath(sys.argv.pop(1))
    unittest.main()
