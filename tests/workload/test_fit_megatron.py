#!/usr/bin/env python3
"""host/scripts/fit_megatron.py on the committed measurements: it reproduces the
committed fits from the raw CSVs (so every fitted figure in the configs traces
back to data), and bad arguments end with a clear message and exit 2."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIT = os.path.join(ROOT, "host", "scripts", "fit_megatron.py")
DATA = os.path.join(ROOT, "docs", "results", "data")


def run(*args):
    return subprocess.run([sys.executable, FIT, *args], capture_output=True, text=True)


def fit_json(*args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "fit.json")
        r = run(*args, "--json", out)
        assert r.returncode == 0, r.stderr
        with open(out) as f:
            return json.load(f)


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def main():
    run9 = os.path.join(DATA, "megatron_h200_2026-12-02_run9")
    run10 = os.path.join(DATA, "megatron_h200_2026-12-02_run10")
    for runs, stat, name in (([run9], "median", "megatron_h200_2026-12-02_run9_fit.json"),
                             ([run9], "fast", "megatron_h200_2026-12-02_run9_fit_fast.json"),
                             ([run9, run10], "median", "megatron_h200_2026-12-02_run9-10_fit.json"),
                             ([run9, run10], "fast", "megatron_h200_2026-12-02_run9-10_fit_fast.json")):
        got = fit_json(*runs, "--stat", stat)
        assert got == load(name), f"--stat {stat} no longer gives {name}"
    # pooling is not the last run's figures: the pooled launch cost lies between the runs'
    one = [fit_json(r, "--stat", "median")["kernel_launch_us"] for r in (run9, run10)]
    both = load("megatron_h200_2026-12-02_run9-10_fit.json")["kernel_launch_us"]
    assert min(one) <= both <= max(one) and both != one[1], (one, both)
    # the statistic matters: the fast level prices a launch well below the median
    assert load("megatron_h200_2026-12-02_run9_fit_fast.json")["kernel_launch_us"] < \
        0.8 * load("megatron_h200_2026-12-02_run9_fit.json")["kernel_launch_us"]
    # runs 1 and 2 (fastest passes) still give the first fit's figures
    old = load("megatron_h200_2026-12-01_fit.json")
    got = fit_json(os.path.join(DATA, "megatron_h200_2026-12-01_run1"),
                   os.path.join(DATA, "megatron_h200_2026-12-01_run2"))
    for k in ("kernel_launch_us", "stream_sync_us", "collective_setup_us", "gemm_max_efficiency",
              "profile", "backward"):
        assert got[k] == old[k], k

    # bad input: a run without interleaved rounds, a bad --fit, a missing run
    r = run(os.path.join(DATA, "megatron_h200_2026-12-01_run8"), "--stat", "median")
    assert r.returncode == 2 and "run8_meta.json" in r.stderr and "--rounds" in r.stderr, r.stderr
    r = run(run9, "--stat", "median", "--fit", "128,abc")
    assert r.returncode == 2 and "--fit 128,abc" in r.stderr, r.stderr
    r = run(os.path.join(DATA, "no_such_run"))
    assert r.returncode == 2 and "no_such_run_layer.csv not found" in r.stderr, r.stderr
    r = run(run9, "--stat", "bogus")
    assert r.returncode == 2 and "--stat" in r.stderr, r.stderr
    print("fit_megatron.py: committed fits reproduced, bad input rejected")


if __name__ == "__main__":
    main()
