#!/usr/bin/env python3
"""host/scripts/sweep.py on a tiny grid: the rows it writes, the varied key's
column, the overrides it passes on, and its answers to a bad --vary and to a run
that fails; then host/scripts/sweep_plot.py on its CSV (when matplotlib is there).

  tests/platform/test_sweep.py build/release/host/sim/moehub-sim
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SWEEP = os.path.join(ROOT, "host", "scripts", "sweep.py")
PLOT = os.path.join(ROOT, "host", "scripts", "sweep_plot.py")
KEY = "system.nvlink.bw_gbps_per_direction_per_gpu"


def sweep(sim, out, *args):
    return subprocess.run([sys.executable, SWEEP, "--sim", sim, "--out", out, "--tokens", "512",
                           "--granularity", "row", "--jobs", "2", *args], capture_output=True, text=True)


def main():
    sim = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bw")
        p = sweep(sim, out, "--schedules", "megatron", "ideal", "--vary", KEY + "=20,400",
                  "--set", "system.nvlink.credits_flits=4096")
        check(p.returncode == 0, "sweep failed: " + p.stderr)
        with open(os.path.join(out, "sweep.csv")) as f:
            rows = list(csv.DictReader(f))
        check(len(rows) == 4, "4 rows expected, got %d" % len(rows))
        check(all(KEY in r for r in rows), "the varied key's column is missing")
        check(sorted((r["schedule"], r[KEY]) for r in rows) ==
              [("ideal", "20"), ("ideal", "400"), ("megatron", "20"), ("megatron", "400")],
              "rows: %s" % [(r["schedule"], r[KEY]) for r in rows])
        by = {(r["schedule"], r[KEY]): float(r["layer_time_us"]) for r in rows}
        check(by[("megatron", "20")] > by[("megatron", "400")],
              "slower links must lengthen megatron's layer: %s" % by)
        check(by[("ideal", "20")] == by[("ideal", "400")], "ideal moves no data: %s" % by)
        runs = os.listdir(os.path.join(out, "runs"))
        check(len(runs) == 4, "4 results files expected: %s" % runs)
        with open(os.path.join(out, "runs", sorted(runs)[0])) as f:
            r = json.load(f)
        check(r.get("system_overrides") == ["nvlink.credits_flits=4096", "nvlink.bw_gbps_per_direction_per_gpu=20"],
              "overrides recorded: %s" % r.get("system_overrides"))
        with open(os.path.join(out, "sweep.md")) as f:
            table = f.read()
        check(KEY in table.splitlines()[0], "the table has no column for the varied key")

        try:
            import matplotlib  # noqa: F401
            png = os.path.join(tmp, "bw.png")
            p = subprocess.run([sys.executable, PLOT, "--x", KEY, "--csv", "a=" + os.path.join(out, "sweep.csv"),
                                "--out", png], capture_output=True, text=True)
            check(p.returncode == 0 and os.path.getsize(png) > 1000, "sweep_plot failed: " + p.stderr)
            p = subprocess.run([sys.executable, PLOT, "--x", "no_such_column", "--csv",
                                "a=" + os.path.join(out, "sweep.csv"), "--out", png + "2"], capture_output=True, text=True)
            check(p.returncode == 2 and "no column 'no_such_column'" in p.stderr and not os.path.exists(png + "2"),
                  "sweep_plot on a missing column: rc %d, %s" % (p.returncode, p.stderr))
        except ImportError:
            print("test_sweep: no matplotlib, sweep_plot.py not run")

        # two varied keys: their product, a column each, in the order given
        two = os.path.join(tmp, "two")
        p = sweep(sim, two, "--schedules", "ideal", "--vary", KEY + "=400,20",
                  "--vary", "system.nvlink.credits_flits=4096,2048")
        check(p.returncode == 0, "two-key sweep failed: " + p.stderr)
        with open(os.path.join(two, "sweep.csv")) as f:
            pairs = [(r[KEY], r["system.nvlink.credits_flits"]) for r in csv.DictReader(f)]
        check(pairs == [("400", "4096"), ("400", "2048"), ("20", "4096"), ("20", "2048")], "two keys: %s" % pairs)
        twice = sweep(sim, os.path.join(tmp, "twice"), "--vary", KEY + "=1,2", "--vary", KEY + "=3")
        check(twice.returncode == 2 and "a key given twice" in twice.stderr, "a key varied twice: " + twice.stderr)

        bad = sweep(sim, os.path.join(tmp, "bad"), "--vary", "nvlink.bw=1,2")
        check(bad.returncode == 2 and "expected system.KEY=V1,V2" in bad.stderr, "bad --vary: " + bad.stderr)
        failed = sweep(sim, os.path.join(tmp, "failed"), "--schedules", "ideal", "--set", "system.nvlink.credits_flits=0")
        check(failed.returncode == 1 and "--set system.nvlink.credits_flits" in failed.stderr,
              "a refused override must fail the sweep: rc %d, %s" % (failed.returncode, failed.stderr))

    for f in failures:
        print("FAIL: " + f)
    print("test_sweep: %d checks failed" % len(failures) if failures else "test_sweep: passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
