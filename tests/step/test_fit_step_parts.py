#!/usr/bin/env python3
"""host/scripts/fit_step_parts.py on the committed H100 attention timings: the forward +
backward model predicts every held-out shape within 10 %; a file without the columns, a
missing file and a bad --check give exit 2 with the file or flag named."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIT = os.path.join(REPO, "host", "scripts", "fit_step_parts.py")
DATA = os.path.join(REPO, "docs", "results", "data", "h100-step-parts-2026-12-08", "attention.csv")
failures = []
checks = 0


def run(*args):
    return subprocess.run([sys.executable, FIT, *args], capture_output=True, text=True)


def expect(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)


p = run(DATA, "--check", "fwdbwd")
expect(p.returncode == 0, f"fwd+bwd held out within 10 %: exit {p.returncode}\n{p.stdout}{p.stderr}")
expect("worst held-out error of fwdbwd" in p.stdout, "the held-out error is printed")
# the limit is enforced: at 1 % the same fit fails
p = run(DATA, "--check", "fwdbwd", "--max-error", "0.01")
expect(p.returncode == 1, f"a 1 % limit fails the fit: exit {p.returncode}")
with tempfile.TemporaryDirectory() as d:
    bad = os.path.join(d, "bad.csv")
    with open(bad, "w") as f:
        f.write("layout,seq\nx,1\n")
    p = run(bad)
    expect(p.returncode == 2 and "bad.csv" in p.stderr and "missing columns" in p.stderr,
           f"missing columns: exit {p.returncode}, {p.stderr!r}")
    p = run(os.path.join(d, "none.csv"))
    expect(p.returncode == 2 and "none.csv" in p.stderr, f"missing file: exit {p.returncode}, {p.stderr!r}")
p = run(DATA, "--check", "bwd")
expect(p.returncode == 2 and "--check" in p.stderr, f"bad --check: exit {p.returncode}, {p.stderr!r}")
for f in failures:
    print("FAIL:", f)
print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
