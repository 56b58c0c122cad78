#!/usr/bin/env python3
"""Compares measured ring layers (moehub-gpu run over NCCL, EP 2: the `layer` and `hop`
rows of a CSV such as docs/results/data/h200x2_ring_2026-11-29.csv) with moehub-sim's
`ring-expert` and `ring-token` schedules on a system config, and prints two Markdown
tables: the layer times with their error, and rank 0's per-hop compute and transfer.

  host/scripts/compare_ring.py --sim build/release/host/sim/moehub-sim --system hgx-h200-x2 \\
      --measured docs/results/data/h200x2_ring_2026-11-29.csv

The simulated ring runs with the measured ring's element sizes and hop chunks (--accum-bytes,
--grad-bytes, --chunk-rows: fp32 and whole hops, moehub-gpu's defaults on the day of the
measurement). Per hop: compute is the sum of the hop's kernels on GPU 0's compute stream
(waits excluded), transfer the hop's ring exchange on its copy stream.
"""
import argparse
import csv
import json
import os
import sys
import tempfile

import simrun


def run_sim(a, schedule, ffn, tokens_per_rank, out):
    cmd = [a.sim, "--system", a.system, "--model", a.model, "--schedule", schedule,
           "--tokens", str(tokens_per_rank * a.gpus), "--granularity", a.granularity,
           "--set", f"model.expert_ffn_size={ffn}",
           "--set", f"schedule.ring_accum_bytes={a.accum_bytes}",
           "--set", f"schedule.ring_grad_bytes={a.grad_bytes}",
           "--set", f"schedule.ring_chunk_rows={a.chunk_rows}",
           "--no-timeline", "--quiet", "--out-dir", out]
    return simrun.run_results(cmd, out, "compare_ring")


def hops(results, gpu=0):
    """{(pass, hop): [compute_us, transfer_us]} of one GPU, from its phases."""
    h = {}
    for p in results["gpus"][gpu]["phases"]:
        words = p["name"].split()
        if len(words) < 4 or words[0] not in ("fwd", "bwd") or words[1] != "hop":
            continue
        key = (words[0], int(words[2]))
        e = h.setdefault(key, [0.0, None])
        d = p["end_us"] - p["start_us"]
        if words[3] == "transfer":
            e[1] = (e[1] or 0.0) + d
        elif p["kind"] != "dependency_wait":
            e[0] += d
    return h


def check_rows(rows):
    """The first bad value of the measurement rows, as a message; None if all are good."""
    def number(r, col, integer, least, allow_empty=False):
        v = r[col] or ""
        if allow_empty and v == "":
            return
        try:
            x = int(v) if integer else float(v)
        except ValueError:
            raise ValueError(f"column {col}: expected {'an integer' if integer else 'a number'} (got '{v}')")
        if not (least <= x < float("inf")):  # also refuses nan
            raise ValueError(f"column {col}: must be >= {least} and finite (got '{v}')")

    for n, r in enumerate(rows, start=1):
        try:
            if r["kind"] not in ("layer", "hop"):
                raise ValueError(f"column kind: must be layer or hop (got '{r['kind']}')")
            if r["schedule"] not in ("ring-expert", "ring-token"):
                raise ValueError(f"column schedule: must be ring-expert or ring-token (got '{r['schedule']}')")
            number(r, "ffn", True, 1)
            number(r, "tokens_per_rank", True, 1)
            if r["kind"] == "layer":
                number(r, "layer_ms", False, 0)
                if float(r["layer_ms"]) == 0:
                    raise ValueError(f"column layer_ms: must be > 0 (got '{r['layer_ms']}')")
            else:
                if r["pass"] not in ("fwd", "bwd"):
                    raise ValueError(f"column pass: must be fwd or bwd (got '{r['pass']}')")
                number(r, "hop", True, 0)
                number(r, "compute_us", False, 0, allow_empty=True)
                number(r, "transfer_us", False, 0, allow_empty=True)
        except ValueError as e:
            return f"data row {n}: {e}"
    return None


def fmt(x, digits=0):
    return "-" if x is None else f"{x:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--system", required=True)
    ap.add_argument("--model", default="qwen3-30b-a3b", help="expert_ffn_size is set from each row's ffn")
    ap.add_argument("--measured", required=True)
    ap.add_argument("--gpus", type=int, default=2, help="GPUs of the measured machine (EP)")
    ap.add_argument("--granularity", default="row", help="row: within 2 %% of packet level for bulk transfers")
    ap.add_argument("--accum-bytes", type=int, default=4, help="the measured ring's accumulators (fp32: 4)")
    ap.add_argument("--grad-bytes", type=int, default=4, help="its weight-gradient partitions (fp32: 4)")
    ap.add_argument("--chunk-rows", type=int, default=0, help="its hop chunks (0: one chunk per hop)")
    ap.add_argument("--json", help="also write the layer comparison to this file")
    a = ap.parse_args()
    try:
        with open(a.measured) as f:
            rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    except OSError as e:
        print(f"compare_ring: {e}", file=sys.stderr)
        return 2
    need = {"kind", "ffn", "tokens_per_rank", "schedule", "pass", "hop", "layer_ms", "compute_us", "transfer_us"}
    if not rows or not need <= set(rows[0]):
        print(f"compare_ring: {a.measured}: expected the columns {sorted(need)}", file=sys.stderr)
        return 2
    bad = check_rows(rows)
    if bad:
        print(f"compare_ring: {a.measured}: {bad}", file=sys.stderr)
        return 2
    cases = sorted({(int(r["ffn"]), int(r["tokens_per_rank"]), r["schedule"]) for r in rows})
    sims = {}
    with tempfile.TemporaryDirectory() as tmp:
        for ffn, t, s in cases:
            sims[(ffn, t, s)] = run_sim(a, s, ffn, t, os.path.join(tmp, f"{s}-{ffn}-{t}"))

    print("| F | tokens per rank | schedule | measured (ms) | simulated (ms) | error |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    errs, layers = [], []
    for r in rows:
        if r["kind"] != "layer":
            continue
        key = (int(r["ffn"]), int(r["tokens_per_rank"]), r["schedule"])
        m = float(r["layer_ms"])
        s = sims[key]["layer_time_us"] / 1000.0
        errs.append(abs(s / m - 1))
        layers.append({"ffn": key[0], "tokens_per_rank": key[1], "schedule": key[2], "measured_ms": m,
                       "simulated_ms": s, "error": s / m - 1})
        print(f"| {key[0]} | {key[1]:,} | {key[2]} | {m:.2f} | {s:.2f} | {100 * (s / m - 1):+.1f} % |")
    if errs:
        print(f"\nmean absolute error {100 * sum(errs) / len(errs):.1f} % over {len(errs)} layers\n")

    hop_rows = [r for r in rows if r["kind"] == "hop"]
    sim_hops = {key: hops(res) for key, res in sims.items()}
    for ffn, t in sorted({(int(r["ffn"]), int(r["tokens_per_rank"])) for r in hop_rows}):
        scheds = sorted({r["schedule"] for r in hop_rows if int(r["ffn"]) == ffn and int(r["tokens_per_rank"]) == t})
        print(f"Per hop, F {ffn}, {t:,} tokens per rank, rank 0 (measured / simulated, us):\n")
        print("| hop | " + " | ".join(f"{s} compute | {s} transfer" for s in scheds) + " |")
        print("| --- |" + " --- | --- |" * len(scheds))
        keys = sorted({(r["pass"], int(r["hop"])) for r in hop_rows if int(r["ffn"]) == ffn},
                      key=lambda k: (k[0] != "fwd", k[1]))
        for k in keys:
            cells = []
            for s in scheds:
                meas = next((r for r in hop_rows if (int(r["ffn"]), int(r["tokens_per_rank"]), r["schedule"], r["pass"],
                                                     int(r["hop"])) == (ffn, t, s) + k), None)
                sim = sim_hops[(ffn, t, s)].get(k, [0.0, None])
                if meas is None:
                    cells += ["", ""]
                    continue
                mc = float(meas["compute_us"]) if meas["compute_us"] else None
                mt = float(meas["transfer_us"]) if meas["transfer_us"] else None
                sc = sim[0] if sim[0] > 0 else None
                cells.append("" if mc is None and sc is None else f"{fmt(mc)} / {fmt(sc)}")
                cells.append(f"{fmt(mt)} / {fmt(sim[1])}")
            print(f"| {k[0]} {k[1]} | " + " | ".join(cells) + " |")
        print()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"system": a.system, "model": a.model, "layers": layers}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
