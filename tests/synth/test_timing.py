#!/usr/bin/env python3
"""The timing gate (synth/check_timing.py): the blocks that close the hub clock today
(the APT and the RAT in flip-flops at `tiny`) are synthesized and must meet it; a
planted result with one negative slack must fail the gate; a bad file or block gives
exit 2.

Usage: test_timing.py <output folder>   (needs yosys, sta and the ASAP7 PDK)"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SYNTH = os.path.join(HERE, "..", "..", "synth")
failures = []
checks = 0


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


def gate(*args):
    return subprocess.run([sys.executable, os.path.join(SYNTH, "check_timing.py"), *args], capture_output=True, text=True)


out = os.path.abspath(sys.argv[1])
r = subprocess.run([os.path.join(SYNTH, "run_synth.sh"), "--config", "tiny", "--block", "moehub_apt", "--block",
                    "moehub_rat", "--storage", "flops", "--out", out], capture_output=True, text=True)
expect(r.returncode == 0, f"the flow ran: exit {r.returncode}\n{r.stderr[-2000:]}")
result = os.path.join(out, "tiny.json")
if r.returncode == 0:
    p = gate(result, "--block", "moehub_apt", "--block", "moehub_rat:flops")
    expect(p.returncode == 0, f"APT and RAT (flops) meet 1.5 GHz at tiny: exit {p.returncode}\n{p.stdout}{p.stderr}")
    with open(result) as f:
        doc = json.load(f)
    doc["blocks"][0]["worst_slack_ps"] = -0.5  # planted: one block half a picosecond short
    planted = os.path.join(out, "planted.json")
    with open(planted, "w") as f:
        json.dump(doc, f)
    p = gate(planted)
    expect(p.returncode == 1 and "MISSED" in p.stdout, f"a negative slack fails the gate: exit {p.returncode}\n{p.stdout}")
    p = gate(result, "--block", "moehub_nope")
    expect(p.returncode == 2 and "moehub_nope" in p.stderr, f"an unknown block: exit {p.returncode} {p.stderr!r}")
p = gate(os.path.join(out, "none.json"))
expect(p.returncode == 2 and "none.json" in p.stderr, f"a missing file: exit {p.returncode} {p.stderr!r}")
for f in failures:
    print("FAIL:", f)
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
