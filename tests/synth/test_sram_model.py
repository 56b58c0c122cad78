#!/usr/bin/env python3
"""Unit tests of synth/sram_model.py on fixed inputs, and of the flow's macro naming.

The expected figures are worked out by hand from the coefficients (the
arithmetic of the model), not read off its output; the liberty-derived
coefficients are checked against the PDK when it is there.
"""

import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "synth"))
import flow  # noqa: E402
import sram_model as sm  # noqa: E402

PDK = os.environ.get("MOEHUB_PDK_DIR", os.path.join(HERE, "..", "..", "synth", "pdk", "asap7"))


class Organisation(unittest.TestCase):
    def test_square_array(self):
        # 256 x 32: mux 2 gives 128 rows x 0.108 = 13.8 um by 64 cols x 0.270 = 17.3 um, the squarest
        self.assertEqual(sm.organise(256, 32), (2, 128, 64))
        # a wide, shallow bank (16 sets x 4 ways x 34 bits) cannot fold: one row per word
        self.assertEqual(sm.organise(16, 136), (1, 16, 136))
        self.assertEqual(sm.organise(256, 16, mux=4), (4, 64, 64))

    def test_bad_size(self):
        with self.assertRaises(ValueError):
            sm.organise(0, 8)
        with self.assertRaises(ValueError):
            sm.area(16, 8, ports=3)


class Area(unittest.TestCase):
    def test_components_by_hand(self):
        a = sm.area(16, 136, ports=1)
        cell = sm.BITCELLS["asap7"]["area_um2"]
        self.assertAlmostEqual(a["array_um2"], 16 * 136 * cell)
        # 16 rows: AND2 + BUFx4 each, predecode 2 groups of 2**2 NAND2
        self.assertAlmostEqual(a["row_um2"], 16 * (0.08748 + 0.10206) + 2 * 4 * 0.08748)
        self.assertAlmostEqual(a["column_um2"], 136 * 1.5 * 0.04374)
        self.assertAlmostEqual(a["io_um2"], 136 * (2 * 0.2187 + 2 * 0.04374 + 0.2916))
        self.assertAlmostEqual(a["control_um2"], 4 * 0.2916 + 12 * 0.10206)
        self.assertAlmostEqual(a["total_um2"], sum(a[k] for k in ("array_um2", "row_um2", "column_um2",
                                                                  "io_um2", "control_um2")))
        self.assertAlmostEqual(a["array_efficiency"], a["array_um2"] / a["total_um2"])

    def test_two_ports_cost_more_than_one(self):
        one, two = sm.area(64, 136, 1), sm.area(64, 136, 2)
        self.assertAlmostEqual(two["array_um2"], 2.0 * one["array_um2"])
        self.assertAlmostEqual(two["io_um2"], 2 * one["io_um2"])
        self.assertGreater(two["total_um2"], one["total_um2"])

    def test_efficiency_grows_with_size(self):
        small, large = sm.area(16, 32), sm.area(4096, 32)
        self.assertLess(small["array_efficiency"], large["array_efficiency"])
        self.assertGreater(large["array_efficiency"], 0.8)

    def test_n7_cell_is_smaller(self):
        self.assertLess(sm.area(256, 32, tech="n7")["array_um2"], sm.area(256, 32)["array_um2"])


class AccessTime(unittest.TestCase):
    def test_bitline_by_hand(self):
        t = sm.access(256, 32)   # 128 rows
        c_fin = 0.619928 / 6
        c_bl = 128 * (2 * c_fin + 0.108 * 0.184542)
        i_read = 28.1 * 2 * 0.5
        self.assertAlmostEqual(t["bitline_ps"], c_bl * 0.1 / i_read * 1e3, places=6)
        self.assertAlmostEqual(t["clk_to_q_ps"], t["array_read_ps"] + 62.06)
        self.assertAlmostEqual(t["array_read_ps"], t["decode_ps"] + t["wordline_ps"] + t["bitline_ps"]
                               + t["sense_out_ps"])
        self.assertAlmostEqual(t["sense_out_ps"], 19.60 * (2 + math.log2(2) + 1))

    def test_slower_when_deeper(self):
        self.assertLess(sm.access(64, 32)["array_read_ps"], sm.access(1024, 32)["array_read_ps"])
        self.assertLess(sm.access(1024, 32)["array_read_ps"], sm.access(8192, 32)["array_read_ps"])


class Liberty(unittest.TestCase):
    def test_stub_liberty(self):
        text = sm.stub_liberty([(16, 136, 4), (16, 136, 4), (2, 34, 1)])
        self.assertEqual(text.count("cell (moehub_sram_16x136)"), 1)
        self.assertEqual(text.count("cell (moehub_sram_2x34)"), 1)
        self.assertEqual(text.count("{"), text.count("}"))
        self.assertIn("area : %.4f;" % sm.area(16, 136, 2)["total_um2"], text)
        self.assertIn('cell_rise (scalar) { values ("%.3f"); }' % sm.access(16, 136, 2)["array_read_ps"], text)
        # the read arc names every address bit (OpenSTA drops arcs between buses of different widths)
        self.assertIn('related_pin : "rd_addr[0] rd_addr[1] rd_addr[2] rd_addr[3]";', text)
        self.assertIn('related_pin : "rd_addr[0]";', text)

    def test_table_lookup(self):
        table = ([0.0, 10.0], [0.0, 2.0], [[1.0, 3.0], [5.0, 7.0]])
        self.assertAlmostEqual(sm.lookup(table, 5.0, 1.0), 4.0)
        self.assertAlmostEqual(sm.lookup(table, 20.0, 2.0), 11.0)   # extrapolated

    def test_fakeram_reader(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "fakeram7_64x21.lib"), "w") as f:
            f.write("cell(fakeram7_64x21) {\n    area : 56.376;\n    bus(rd_out)   {\n"
                    "        timing() {\n            cell_rise(t) {\n                index_1 (\"0.009, 0.227\");\n"
                    "                values ( \\\n              \"0.218, 0.218\", \\\n"
                    "              \"0.218, 0.218\" \\\n                )\n            }\n")
        with open(os.path.join(d, "other.lib"), "w") as f:
            f.write("library (x) {}\n")
        r = sm.read_fakeram(d)
        self.assertEqual(len(r), 1)
        self.assertEqual((r[0]["words"], r[0]["width"]), (64, 21))
        self.assertAlmostEqual(r[0]["area_um2"], 56.376)
        self.assertAlmostEqual(r[0]["clk_to_q_ps"], 218.0)

    def test_compare_deviation(self):
        row = sm.compare([{"macro": "m", "words": 256, "width": 32, "area_um2": 300.0, "clk_to_q_ps": 200.0}])[0]
        self.assertAlmostEqual(row["area_dev_pct"], 100 * (sm.area(256, 32)["total_um2"] - 300.0) / 300.0)

    @unittest.skipUnless(os.path.isdir(os.path.join(PDK, "lib")), "ASAP7 PDK not found")
    def test_coefficients_match_the_liberty(self):
        d = sm.derive_from_liberty(PDK)
        for k, v in d.items():
            self.assertAlmostEqual(sm.c(k), v, delta=0.01 * v, msg=k)


class MacroNaming(unittest.TestCase):
    def test_macros_in_a_named_netlist(self):
        text = "  moehub_sram_16x136 \\gen_bank[0].mem_q  (\n  moehub_sram_1x34 u (\n"
        self.assertEqual(flow.macros_in(text), [(16, 136, 4), (1, 34, 1)])

    def test_name_macros(self):
        text = ("  moehub_sram_macro #(\n    .ABITS(32'b00000000000000000000000000000100),\n"
                "    .WIDTH(32'd136),\n    .WORDS(16)\n  ) \\gen_bank[0].mem_q  (\n    .clk(clk_i)\n  );\n")
        out, found = flow.name_macros(text)
        self.assertEqual(found, [(16, 136, 4)])
        self.assertIn("moehub_sram_16x136 \\gen_bank[0].mem_q", out)
        self.assertNotIn("#(", out)

    def test_unknown_parameters_are_an_error(self):
        with self.assertRaises(ValueError):
            flow.name_macros("moehub_sram_macro #(.DEPTH(4)) u (.clk(c));\n")


if __name__ == "__main__":
    unittest.main()
