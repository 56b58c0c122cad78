#!/usr/bin/env python3
"""Unit tests of synth/parse_reports.py and synth/liberty.py on fixed texts.

data/yosys_stat_apt_tiny.txt and data/sta_aau_tiny.log are reports the flow
wrote (configuration tiny); the expected values below were read off them.
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "synth"))
import liberty  # noqa: E402
import parse_reports  # noqa: E402


def data(name):
    with open(os.path.join(HERE, "data", name)) as f:
        return f.read()


class YosysStat(unittest.TestCase):
    def test_cells_and_area(self):
        s = parse_reports.parse_yosys_stat(data("yosys_stat_apt_tiny.txt"))
        self.assertEqual(s["module"], "moehub_apt")
        self.assertAlmostEqual(s["chip_area_um2"], 30.865860)
        self.assertEqual(len(s["cells"]), 26)
        self.assertEqual(s["cells"]["DFFASRHQNx1_ASAP7_75t_R"], 38)
        self.assertEqual(s["cells"]["XOR2x2_ASAP7_75t_R"], 1)
        self.assertEqual(sum(s["cells"].values()), 222)

    def test_without_liberty_area_is_an_error(self):
        with self.assertRaises(ValueError):
            parse_reports.parse_yosys_stat("=== m ===\n   Number of cells: 1\n     $_AND_ 1\n")


class StaReport(unittest.TestCase):
    def test_worst_path(self):
        r = parse_reports.parse_sta_report(data("sta_aau_tiny.log"))
        self.assertEqual(r["startpoint"], "state_q[1]_reg")
        self.assertEqual(r["endpoint"], "rsp_addr_q[31]_reg")
        self.assertAlmostEqual(r["slack_ps"], -696.604)
        self.assertAlmostEqual(r["arrival_ps"], 1344.453)
        self.assertAlmostEqual(r["required_ps"], 647.849)
        self.assertAlmostEqual(r["tns_ps"], -12787.04)
        self.assertAlmostEqual(r["wns_ps"], -696.60)
        # the path starts at the launching flop and ends at the capturing one's D
        self.assertTrue(r["path"][0]["point"].startswith("state_q[1]_reg/CLK"))
        self.assertTrue(r["path"][-1]["point"].startswith("rsp_addr_q[31]_reg/D"))
        self.assertAlmostEqual(r["path"][-1]["time_ps"], r["arrival_ps"])

    def test_met_slack(self):
        text = ("Startpoint: a_reg (rising edge-triggered flip-flop clocked by clk)\n"
                "Endpoint: b_reg (rising edge-triggered flip-flop clocked by clk)\n"
                "  10.000   10.000 ^ a_reg/QN (DFFHQNx1_ASAP7_75t_R)\n"
                "           10.000   data arrival time\n"
                "          640.000   data required time\n"
                "          630.000   slack (MET)\n")
        r = parse_reports.parse_sta_report(text)
        self.assertAlmostEqual(r["slack_ps"], 630.0)
        self.assertIsNone(r["tns_ps"])
        self.assertEqual(len(r["path"]), 1)

    def test_no_path_is_an_error(self):
        with self.assertRaises(ValueError):
            parse_reports.parse_sta_report("No paths found.\n")


LIB_A = """library (a) {
  time_unit : "1ps";
  lu_table_template (t1) {
    index_1 ("1, 2");
  }
  cell (INVx1_ASAP7_75t_R) {
    area : 0.04374;
    pin (A) { direction : input; }
  }
  cell (INVxp33_ASAP7_75t_R) {
    area : 0.04;
  }
}
"""
LIB_B = """library (b) {
  time_unit : "1ps";
  lu_table_template (t1) {
    index_1 ("1, 2");
  }
  lu_table_template (t2) {
    index_1 ("3, 4");
  }
  cell (DFFHQNx1_ASAP7_75t_R) {
    area : 0.2916;
    ff (IQN, IQNN) { next_state : "!D"; }
  }
  cell (SDFHx1_ASAP7_75t_R) {
    area : 0.3;
  }
}
"""


class LibertyMerge(unittest.TestCase):
    def setUp(self):
        import tempfile
        self.dir = tempfile.mkdtemp()
        self.paths = []
        for n, t in (("a.lib", LIB_A), ("b.lib", LIB_B)):
            p = os.path.join(self.dir, n)
            with open(p, "w") as f:
                f.write(t)
            self.paths.append(p)

    def test_merge_keeps_cells_templates_and_drops_dont_use(self):
        m = liberty.merge(self.paths, name="merged")
        self.assertIn("library (merged)", m)
        self.assertEqual(liberty.cell_areas(m), {"INVx1_ASAP7_75t_R": 0.04374, "DFFHQNx1_ASAP7_75t_R": 0.2916})
        self.assertEqual(m.count("lu_table_template (t1)"), 1)
        self.assertEqual(m.count("lu_table_template (t2)"), 1)
        self.assertEqual(m.count("{"), m.count("}"))
        self.assertTrue(m.rstrip().endswith("}"))

    def test_usable(self):
        self.assertTrue(liberty.usable("NAND2x1_ASAP7_75t_R"))
        self.assertFalse(liberty.usable("NAND2xp5_ASAP7_75t_R"))
        self.assertFalse(liberty.usable("AND2x1p5_ASAP7_75t_R"))
        self.assertFalse(liberty.usable("ICGx1_ASAP7_75t_R"))


if __name__ == "__main__":
    unittest.main()
