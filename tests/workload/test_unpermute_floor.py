#!/usr/bin/env python3
"""host/scripts/unpermute_floor.py on the committed runs 9 and 10: it gives the floors and
rates docs/results/megatron-h200.md quotes ("Qwen's misses, examined"), and bad input ends
with a clear message and exit 2."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "host", "scripts", "unpermute_floor.py")
DATA = os.path.join(ROOT, "docs", "results", "data")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    runs = [os.path.join(DATA, f"megatron_h200_2026-12-02_run{n}") for n in (9, 10)]
    r = run(*runs)
    assert r.returncode == 0, r.stderr
    fits = {}
    for line in r.stdout.splitlines()[1:]:
        model, mode, floor, rate = line.split()[:4]
        fits[(model, mode)] = (int(floor), int(rate))
    # the doc's table
    assert fits[("qwen1.5-moe-a2.7b", "fwd")] == (144, 705), fits
    assert fits[("qwen1.5-moe-a2.7b", "fwdbwd")] == (158, 713), fits
    assert fits[("mixtral-8x7b", "fwd")] == (-28, 640), fits
    assert fits[("mixtral-8x7b", "fwdbwd")] == (-7, 643), fits

    r = run(os.path.join(DATA, "no_such_run"))
    assert r.returncode == 2 and "no_such_run_phases.csv" in r.stderr, r.stderr
    r = run(*runs, "--tokens", "4096", "4096")
    assert r.returncode == 2 and "--tokens" in r.stderr, r.stderr
    print("unpermute_floor.py: the documented fits reproduced, bad input rejected")


if __name__ == "__main__":
    main()
