#!/usr/bin/env python3
"""Test of scripts/compare-results.py: two copies of one moehub-sim are identical on
its tiny job list, and a planted difference in the results, in the timeline or in the
exit status is reported (with exit status 1), while one in the results' "host" object
(wall time) is not.

    tests/repo/test_compare_results.py MOEHUB_SIM

A planted difference comes from a wrapper that runs the real binary and then edits
what it wrote.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "compare-results.py")

WRAPPER = r'''#!{python}
# moehub-sim with a planted difference: {plant}
import re, subprocess, sys
args = sys.argv[1:]
rc = subprocess.run([{sim!r}, *args]).returncode
out = args[args.index("--out-dir") + 1]
plant = {plant!r}
if plant == "exit":
    sys.exit(3)
if plant in ("results", "host"):
    # edited as bytes, so that nothing but the planted value changes
    with open(out + "/results.json") as f:
        text = f.read()
    if plant == "results":
        text = re.sub(r'("layer_time_us": )([0-9.e+-]+)', lambda m: m.group(1) + repr(float(m.group(2)) + 1.0),
                      text, count=1)
    else:
        text = re.sub(r'("wall_seconds": )[0-9.e+-]+', r'\g<1>12345.0', text, count=1)
    with open(out + "/results.json", "w") as f:
        f.write(text)
if plant == "timeline" and "--no-timeline" not in args:
    with open(out + "/timeline.json", "rb") as f:
        data = bytearray(f.read())
    i = data.rindex(b'"dur":') + 6
    data[i:i + 1] = b"9" if data[i:i + 1] != b"9" else b"8"
    with open(out + "/timeline.json", "wb") as f:
        f.write(bytes(data))
sys.exit(rc)
'''

failures = []


def check(what, ok, output):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)
        print(output)


def compare(old, new):
    p = subprocess.run([sys.executable, SCRIPT, "--old", old, "--new", new, "--jobs", "tiny"],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    sim = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="test-compare-results-")
    try:
        a, b = f"{tmp}/a/moehub-sim", f"{tmp}/b/moehub-sim"
        for copy in (a, b):
            os.makedirs(os.path.dirname(copy))
            shutil.copy2(sim, copy)

        rc, out = compare(a, b)
        check("two copies of one binary: every job identical, exit 0",
              rc == 0 and "2 jobs, 2 identical, 0 different" in out and
              re.search(r"^megatron-row +identical$", out, re.M) and
              re.search(r"^ideal-packet-timeline +identical$", out, re.M), out)

        def planted(plant):
            w = f"{tmp}/planted-{plant}"
            # the wrapper's first line names the interpreter (a #! line has a length limit: no long paths)
            with open(w, "w") as f:
                f.write(WRAPPER.format(python=sys.executable, sim=b, plant=plant))
            os.chmod(w, os.stat(w).st_mode | stat.S_IXUSR)
            return compare(a, w)

        rc, out = planted("results")
        check("a planted change of layer_time_us: both jobs different at that key, exit 1",
              rc == 1 and "2 jobs, 0 identical, 2 different" in out and
              out.count("results.json differs at .layer_time_us:") == 2, out)

        rc, out = planted("timeline")
        check("a planted byte in the timeline: that job different, the other identical, exit 1",
              rc == 1 and re.search(r"^ideal-packet-timeline +different: timeline.json differs from byte \d+", out, re.M)
              and re.search(r"^megatron-row +identical$", out, re.M), out)

        rc, out = planted("exit")
        check("a planted exit status: both jobs different, exit 1",
              rc == 1 and out.count("different: exit status 0 vs 3") == 2, out)

        rc, out = planted("host")
        check("a changed wall time in \"host\" alone: identical, exit 0",
              rc == 0 and "2 jobs, 2 identical, 0 different" in out, out)

        rc, out = compare(a, f"{tmp}/none")
        check("a missing binary: exit 2 naming the option",
              rc == 2 and "--new" in out and "not an executable file" in out, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
