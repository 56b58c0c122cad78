#!/usr/bin/env python3
"""Unit tests of synth/design_space.py on fixed inputs: the join, the pick under 1 % of layer time,
and the errors for a missing or malformed input."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "synth", "design_space.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "synth"))
import design_space as ds  # noqa: E402

SYNTH = """rat_entries,rat_banks,sram_area_um2,synthesized,logic_area_um2,fmax_ghz
256,16,4000,1,500,1.2
512,16,5000,1,800,1.1
1024,16,6000,0,,
1024,4,3000,0,,
2048,16,9000,0,,
"""
# layer time: shortest 100 us (2048 entries); 512 entries is 0.5 % over, 1024/4 banks 0.9 %, 256 is 5 % over
SIM = """rat_entries,rat_banks,evictions,restores,layer_time_us
256,16,900,300,105.0
512,16,400,120,100.5
1024,16,100,20,100.2
1024,4,150,30,100.9
2048,16,0,0,100.0
"""


def write(d, name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


class DesignSpace(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.synth = write(self.d, "synth.csv", SYNTH)
        self.sim = write(self.d, "sim.csv", SIM)

    def test_join_and_pick(self):
        rows, best = ds.join(self.synth, self.sim)
        self.assertEqual(best, 100.0)
        by = {(r["rat_entries"], r["rat_banks"]): r for r in rows}
        self.assertAlmostEqual(by[(256, 16)]["overhead_pct"], 5.0)
        self.assertAlmostEqual(by[(512, 16)]["area_um2"], 5800.0)
        self.assertTrue(by[(1024, 4)]["area_is_storage_only"])
        # under 1 %: 512/16 (5800), 1024/16 (6000), 1024/4 (3000), 2048/16 (9000); least area: 1024/4
        chosen = ds.pick(rows, 1.0)
        self.assertEqual((chosen["rat_entries"], chosen["rat_banks"]), (1024, 4))
        chosen = ds.pick(rows, 0.6)
        self.assertEqual((chosen["rat_entries"], chosen["rat_banks"]), (512, 16))
        # the shortest layer time is always under any limit
        chosen = ds.pick(rows, 1e-9)
        self.assertEqual((chosen["rat_entries"], chosen["rat_banks"]), (2048, 16))
        # unless the synthesis sweep lacks that size
        self.assertIsNone(ds.pick([r for r in rows if r["rat_entries"] != 2048], 1e-9))

    def test_cli_writes_the_table(self):
        md = os.path.join(self.d, "out.md")
        r = subprocess.run([sys.executable, SCRIPT, "--synth", self.synth, "--sim", self.sim, "--md", md],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1024 entries in 4 banks", r.stdout)
        with open(md) as f:
            self.assertIn("| 1024 | 4 |", f.read())

    def test_missing_simulator_file(self):
        r = subprocess.run([sys.executable, SCRIPT, "--synth", self.synth, "--sim", os.path.join(self.d, "no.csv")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no.csv not found", r.stderr)
        self.assertIn("layer_time_us", r.stderr)

    def test_malformed_input(self):
        bad = write(self.d, "bad.csv", SIM.replace("100.5", "fast"))
        with self.assertRaises(ds.InputError) as e:
            ds.join(self.synth, bad)
        self.assertIn("line 3: column layer_time_us", str(e.exception))
        nocol = write(self.d, "nocol.csv", SIM.replace("restores", "restored"))
        with self.assertRaises(ds.InputError) as e:
            ds.join(self.synth, nocol)
        self.assertIn("missing column(s) restores", str(e.exception))
        neg = write(self.d, "neg.csv", SIM.replace("900,", "-1,"))
        with self.assertRaises(ds.InputError) as e:
            ds.join(self.synth, neg)
        self.assertIn("column evictions must be >= 0", str(e.exception))


if __name__ == "__main__":
    unittest.main()
