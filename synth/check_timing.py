#!/usr/bin/env python3
"""Fails on negative slack: reads a flow result (<out>/<config>.json of synth/flow.py)
and checks that every block in it, or every block named, met the clock it was
synthesized at (worst slack >= 0 ps).

  synth/check_timing.py build/synth/tiny.json [--block NAME[:STORAGE]]...
  synth/run_synth.sh --config default --out build/synth && synth/check_timing.py build/synth/default.json

Prints one line per block and storage checked (slack, fmax, met or missed) and exits
1 if any missed, 2 for a bad file or a block that is not in it."""
import argparse
import json
import sys


def fail(msg):
    print("check_timing.py: " + msg, file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result", help="<config>.json written by synth/flow.py")
    ap.add_argument("--block", action="append", default=[],
                    help="NAME or NAME:STORAGE (flops, sram) to check (repeatable; default: every block)")
    a = ap.parse_args()
    try:
        with open(a.result) as f:
            doc = json.load(f)
        blocks = doc["blocks"]
        period = float(doc["clock_period_ps"])
        rows = [(b["block"], b["storage"], float(b["worst_slack_ps"]), b["fmax_ghz"]) for b in blocks]
    except OSError as e:
        fail(f"{a.result}: {e.strerror}")
    except (ValueError, KeyError, TypeError) as e:
        fail(f"{a.result}: not a synth/flow.py result ({e})")
    wanted = []
    for spec in a.block:
        name, _, storage = spec.partition(":")
        if storage and storage not in ("flops", "sram"):
            fail(f"--block {spec}: storage must be flops or sram")
        match = [r for r in rows if r[0] == name and (not storage or r[1] == storage)]
        if not match:
            fail(f"{a.result}: no block '{spec}' (have {', '.join(sorted({r[0] + ':' + r[1] for r in rows}))})")
        wanted += match
    checked = wanted or rows
    missed = 0
    for name, storage, slack, fmax in checked:
        ok = slack >= 0
        missed += not ok
        print(f"{name:18s} {storage:5s} slack {slack:9.1f} ps  fmax {fmax} GHz  {'met' if ok else 'MISSED'}")
    print(f"{len(checked) - missed} of {len(checked)} met the clock ({1000.0 / period:.3f} GHz, {period:.1f} ps)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
