#!/usr/bin/env python3
"""Fits the attention cost model of the training step to the timings of
scripts/gpu/measure_step_parts.py and checks it on shapes the fit did not see.

Model (one per pass, forward or forward + backward, and per mask, causal or not):

    t_ms = t0_ms + FLOPs / (R * s / (s + s_half) * d / (d + d_half) * n / (n + n_half))

FLOPs as FlashAttention counts them: 4 b hq s^2 d forward, halved under a causal mask,
3.5x that for forward + backward. R is the asymptotic rate; s_half and d_half the
sequence length and head dimension at which the rate is half of it (short sequences
and narrow heads leave the tensor cores idle), n = b hq ceil(s / 128) the number of
128-row query tiles a call has and n_half the count at which the chip is half busy (too few
tiles leave SMs idle); t0_ms a fixed cost per call. Given s_half, d_half and n_half the model
is linear in (t0_ms, 1/R): a grid over the three and a least-squares fit of relative error
at each point.

Held out: the fit uses the models' own head layouts and the narrow-head one (head dim 64,
the only rows that fix d_half) at sequence lengths 1024, 4096 and 16384; every other row
(the sequence lengths 2048, 8192 and 32768 of every layout, and every row of the 64-head
layout, which is no model's) is predicted and compared.

  host/scripts/fit_step_parts.py docs/results/data/h100-step-parts-2026-12-08/attention.csv [--max-error 0.10] [--check fwdbwd]

Prints the fitted parameters and the held-out error (mean and worst relative error per
pass and mask); exit 1 if the worst held-out error of a pass named by --check exceeds
--max-error, 2 for a bad file or argument.
"""
import argparse
import csv
import math
import sys

FIT_SEQS = {1024, 4096, 16384}
FIT_LAYOUTS = {"qwen3-30b-a3b", "mixtral-8x7b", "qwen2-57b-a14b", "qwen1.5-moe-a2.7b", "h16-kv2-d64"}
NEEDED = ("layout", "batch", "seq", "heads_q", "head_dim", "causal", "fwd_ms", "fwdbwd_ms")


def fail(msg):
    print("fit_step_parts.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rd = csv.DictReader(f)
            missing = [k for k in NEEDED if k not in (rd.fieldnames or [])]
            if missing:
                fail(f"{path}: missing columns {', '.join(missing)}")
            rows = []
            for i, r in enumerate(rd, start=2):
                try:
                    row = {"layout": r["layout"], "b": int(r["batch"]), "s": int(r["seq"]), "hq": int(r["heads_q"]),
                           "d": int(r["head_dim"]), "causal": int(r["causal"]), "fwd": float(r["fwd_ms"]),
                           "fwdbwd": float(r["fwdbwd_ms"])}
                except ValueError as e:
                    fail(f"{path}:{i}: {e}")
                if row["b"] <= 0 or row["s"] <= 0 or row["hq"] <= 0 or row["d"] <= 0 or row["causal"] not in (0, 1) \
                        or row["fwd"] <= 0 or row["fwdbwd"] <= 0:
                    fail(f"{path}:{i}: sizes and times must be positive, causal 0 or 1")
                rows.append(row)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    if not rows:
        fail(f"{path}: no rows")
    return rows


def flops(r, part):
    f = 4.0 * r["b"] * r["hq"] * r["s"] ** 2 * r["d"] * (0.5 if r["causal"] else 1.0)
    return f * (3.5 if part == "fwdbwd" else 1.0)


def tiles(r):
    return r["b"] * r["hq"] * -(-r["s"] // 128)


def efficiency(r, s_half, d_half, n_half):
    n = tiles(r)
    return r["s"] / (r["s"] + s_half) * r["d"] / (r["d"] + d_half) * n / (n + n_half)


def predict(p, r, part):
    t0, rate, s_half, d_half, n_half = p
    return t0 + flops(r, part) / (rate * efficiency(r, s_half, d_half, n_half)) / 1e9  # TFLOP/s -> ms


def fit(rows, part):
    """Least squares of relative error over a grid of (s_half, d_half, n_half)."""
    best = None
    for s_half, d_half, n_half in ((a, b, c) for a in range(0, 2049, 32) for b in range(0, 129, 4)
                                   for c in range(0, 4097, 256)):
        if True:
            # t/y = t0 * (1/y) + u * (x/y) with x = FLOPs / eff / 1e9, u = 1/rate: minimise sum (t/y - 1)^2
            a11 = a12 = a22 = b1 = b2 = 0.0
            for r in rows:
                y = r[part]
                x = flops(r, part) / efficiency(r, s_half, d_half, n_half) / 1e9
                c1, c2 = 1.0 / y, x / y
                a11 += c1 * c1
                a12 += c1 * c2
                a22 += c2 * c2
                b1 += c1
                b2 += c2
            det = a11 * a22 - a12 * a12
            if det <= 0:
                continue
            t0 = (b1 * a22 - b2 * a12) / det
            u = (a11 * b2 - a12 * b1) / det
            if u <= 0 or t0 < 0:
                continue
            p = (t0, 1.0 / u, s_half, d_half, n_half)
            err = sum((predict(p, r, part) / r[part] - 1.0) ** 2 for r in rows)
            if best is None or err < best[0]:
                best = (err, p)
    if best is None:
        fail("no fit with a positive rate and fixed cost")
    return best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="attention.csv of measure_step_parts.py")
    ap.add_argument("--max-error", type=float, default=0.10, help="largest allowed held-out relative error")
    ap.add_argument("--check", default="fwd,fwdbwd",
                    help="passes whose held-out error must stay within --max-error (fwd, fwdbwd; comma-separated)")
    a = ap.parse_args()
    if not 0 < a.max_error < 1:
        fail("--max-error must lie in (0, 1)")
    checked = [c for c in a.check.split(",") if c]
    if not checked or any(c not in ("fwd", "fwdbwd") for c in checked):
        fail(f"--check: expected fwd, fwdbwd or both (got '{a.check}')")
    rows = read_rows(a.csv)
    worst_all = 0.0
    print("pass    mask    t0_ms   R_TFLOPs  s_half  d_half  n_half | fit rows: mean  worst | held out: rows  mean  worst")
    for part in ("fwd", "fwdbwd"):
        for causal in (1, 0):
            sel = [r for r in rows if r["causal"] == causal]
            train = [r for r in sel if r["layout"] in FIT_LAYOUTS and r["s"] in FIT_SEQS]
            test = [r for r in sel if r not in train]
            if len(train) < 3 or not test:
                fail(f"{a.csv}: too few rows to fit and check {part}, causal={causal}")
            p = fit(train, part)
            e_tr = [abs(predict(p, r, part) / r[part] - 1.0) for r in train]
            e_te = [abs(predict(p, r, part) / r[part] - 1.0) for r in test]
            if part in checked:
                worst_all = max(worst_all, max(e_te))
            print(f"{part:7s} {'causal' if causal else 'full':7s} {p[0]:6.3f} {p[1]:9.1f} {p[2]:7d} {p[3]:7d} {p[4]:7d} |"
                  f"           {100 * sum(e_tr) / len(e_tr):4.1f}% {100 * max(e_tr):5.1f}% |"
                  f"           {len(test):4d} {100 * sum(e_te) / len(e_te):4.1f}% {100 * max(e_te):5.1f}%")
    print(f"worst held-out error of {', '.join(checked)}: {100 * worst_all:.1f}% (limit {100 * a.max_error:.0f}%)")
    return 0 if worst_all <= a.max_error else 1


if __name__ == "__main__":
    sys.exit(main())
