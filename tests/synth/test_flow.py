#!/usr/bin/env python3
"""Runs the synthesis flow on the smallest configuration and checks its output.

Usage: test_flow.py <output folder>   (needs yosys, sta and the ASAP7 PDK)
Runs the RAT and the whole hub (moehub_top) of configuration `tiny`, with
flip-flop and with SRAM storage (the other blocks are inside moehub_top; the
full set is `cmake --build <dir> --target synth`), and checks: positive area
equal to the sum of its cells (plus the SRAM macros), a netlist, a critical
path that starts and ends at a point of the design, fmax consistent with the
slack; with SRAM storage, one macro per RAT bank, sized and priced by
synth/sram_model.py. Leaves the output folder for test_equiv.py.
"""

import json
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FLOW = os.path.join(HERE, "..", "..", "synth", "run_synth.sh")
sys.path.insert(0, os.path.join(HERE, "..", "..", "synth"))
import sram_model  # noqa: E402
OUT = None


class FlowTiny(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = subprocess.run([FLOW, "--config", "tiny", "--block", "moehub_rat", "--block", "moehub_top", "--out", OUT])
        if r.returncode != 0:
            raise RuntimeError("flow failed with status %d" % r.returncode)
        with open(os.path.join(OUT, "tiny.json")) as f:
            cls.res = json.load(f)

    def test_every_block(self):
        names = [(b["block"], b["storage"]) for b in self.res["blocks"]]
        self.assertEqual(names, [("moehub_rat", "flops"), ("moehub_rat", "sram"),
                                 ("moehub_top", "flops"), ("moehub_top", "sram")])

    def test_area(self):
        for b in self.res["blocks"]:
            self.assertGreater(b["area_um2"], 0, b["block"])
            cells = sum(c["area_um2"] for c in b["cells"].values())
            self.assertAlmostEqual(cells, b["logic_area_um2"], delta=1e-3 * b["logic_area_um2"])
            self.assertAlmostEqual(b["logic_area_um2"] + b["sram_area_um2"], b["area_um2"], places=3)
            self.assertGreater(b["sequential_area_um2"], 0, b["block"])
            self.assertLess(b["sequential_area_um2"], b["logic_area_um2"], b["block"])
            folder = b["block"] if b["storage"] == "flops" else b["block"] + "-sram"
            self.assertTrue(os.path.getsize(os.path.join(OUT, "tiny", folder, "netlist.v")) > 0)

    def test_sram_storage(self):
        by = {(b["block"], b["storage"]): b for b in self.res["blocks"]}
        for blk, banks, entries in (("moehub_rat", "Banks", "Entries"), ("moehub_top", "RatBanks", "RatEntries")):
            flops, sram = by[(blk, "flops")], by[(blk, "sram")]
            self.assertEqual(flops["sram_macros"], [])
            self.assertEqual(flops["sram_area_um2"], 0)
            p = sram["parameters"]
            ways = p.get("Ways", p.get("RatWays"))
            malloc = p["MallocIdWidth"] if "MallocIdWidth" in p else max(1, (p["Regions"] - 1).bit_length())
            width = ways * (malloc + p["RowIdWidth"] + p["LocalRowIdWidth"])
            words = p[entries] // (p[banks] * ways)
            self.assertEqual(len(sram["sram_macros"]), 1, blk)
            m = sram["sram_macros"][0]
            self.assertEqual((m["words"], m["width"], m["count"]), (words, width, p[banks]), blk)
            model = sram_model.area(words, width, 2)["total_um2"]
            self.assertAlmostEqual(m["area_um2_each"], model, places=3)
            self.assertAlmostEqual(sram["sram_area_um2"], p[banks] * m["area_um2_each"], places=3)
            # the storage left the logic: fewer flip-flops than with flip-flop storage
            self.assertLess(sram["sequential_area_um2"], flops["sequential_area_um2"], blk)
            net = open(os.path.join(OUT, "tiny", blk + "-sram", "netlist.v")).read()
            self.assertEqual(net.count(m["cell"] + " "), p[banks], blk)

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
