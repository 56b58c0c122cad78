#!/usr/bin/env python3
"""Line coverage per source file from gcov alone (for GPU machines, which have no gcovr).

Runs `gcov` on every .gcda under BUILD_DIR and prints one CSV row per source file of the
project under SOURCE_ROOT whose translation unit it is (a header's lines are counted in
the file that includes it, not apart), then the total:
    file,lines,covered,percent
    scripts/gpu/gcov_summary.py BUILD_DIR SOURCE_ROOT [PREFIX ...]
PREFIX (default host/ lib/): only files under these folders of SOURCE_ROOT.
"""
import os
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    prefixes = sys.argv[3:] or ["host/", "lib/"]
    gcov = os.environ.get("GCOV", "gcov")
    rows = {}
    for d, _, files in os.walk(build):
        for f in sorted(files):
            if not f.endswith(".gcda"):
                continue
            # CMake's object of x.cpp is x.cpp.o, and its counters x.cpp.gcda
            source_name = f[: -len(".gcda")]
            out = subprocess.run([gcov, "-n", os.path.join(d, f)], cwd=d, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"gcov failed on {os.path.join(d, f)}: {out.stderr.strip()}", file=sys.stderr)
                return 1
            current = None
            for line in out.stdout.splitlines():
                m = re.match(r"File '(.*)'", line)
                if m:
                    current = os.path.abspath(os.path.join(d, m.group(1)))
                    continue
                m = re.match(r"Lines executed:([0-9.]+)% of ([0-9]+)", line)
                if m and current is not None:
                    if os.path.basename(current) == source_name:
                        rel = os.path.relpath(current, root)
                        if any(rel.startswith(p) for p in prefixes):
                            total = int(m.group(2))
                            covered = round(float(m.group(1)) * total / 100)
                            rows[rel] = (total, covered)
                    current = None
    if not rows:
        print(f"no counters for files under {' '.join(prefixes)} in {build}", file=sys.stderr)
        return 1
    print("file,lines,covered,percent")
    all_lines = all_covered = 0
    for rel, (total, covered) in sorted(rows.items(), key=lambda kv: (kv[1][1] / max(kv[1][0], 1), kv[0])):
        print(f"{rel},{total},{covered},{100.0 * covered / max(total, 1):.1f}")
        all_lines += total
        all_covered += covered
    print(f"TOTAL,{all_lines},{all_covered},{100.0 * all_covered / max(all_lines, 1):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
