#!/usr/bin/env python3
"""Fit the megatron schedule's host costs and kernel counts to Megatron-Core measurements.

Reads the CSVs written by host/scripts/megatron_moe_measure.py (one or more runs of
one machine, given by their common prefix) and fits, on the sizes named by --fit
(the others are held out for tests/workload/test_megatron_calibration.cpp):

  host.kernel_launch_us    host time per launched operation: at host-bound forward
                           sizes (GPU busy under half the layer) the layer time
                           divided by the kernels and copies the profiler counted,
                           median (backward operations cost more host time each;
                           their counts below are in units of this cost).
  host.stream_sync_us      the dispatcher's device-to-host count synchronisation
                           (its timed phase), median over host-bound sizes.
  host.collective_setup_us host time of one NCCL all_to_all_single call, median,
                           less kernel_launch_us (a collective op pays both).
  gpu.gemm.max_efficiency  the expert GEMMs (SequentialMLP: one cuBLAS GEMM per
                           expert and projection) at GPU-bound sizes, through the
                           simulator's efficiency model with the other GEMM
                           parameters of configs/systems/hgx-h200.yaml.
  MegatronProfile::unpermute_add_gbps
                           the unpermutation's scatter-add at the same GPU-bound
                           forward sizes: the expert outputs it adds (T k H 2
                           bytes; its time follows the element adds) over the
                           phase's device time, median.
  MegatronProfile          per phase, its host time at host-bound forward sizes
                           (scaled so that the phases add up to the uninstrumented
                           layer) divided by kernel_launch_us, as a line in the
                           local experts through the models (fixed, per expert);
                           the same for the forward of a training step (autograd
                           recording: train_forward) and for the backward, from
                           the forward+backward runs.

Reference figure of a size: the smallest median over every pass of every run (the
machine's host is a shared virtual CPU whose slow spells only ever add time). A
run may visit a size several times (megatron_moe_measure.py with repeated
--tokens): each visit is a pass, told apart by the CSVs' pass column; files
without that column hold one pass per size. Figures that need the phase split
take the fastest pass that has phase rows (a run may lack megatron_phases.csv),
with that pass's own layer time, so that shares and layer come from one pass.

Usage:
  python3 host/scripts/fit_megatron.py docs/results/data/megatron_h200_2026-12-01_run1 \
      docs/results/data/megatron_h200_2026-12-01_run2 [--fit 128,512,2048,8192,32768] [--json OUT]
"""
import argparse
import csv
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEAK_TFLOPS = 989.4   # configs/systems/hgx-h200.yaml gpu.dense_bf16_tflops
N_HALF, K_HALF = 96, 384  # configs/systems/hgx-h200.yaml gpu.gemm (our grouped-GEMM fit)
HBM_GBPS, MEM_EFF = 4800, 0.88  # configs/systems/hgx-h200.yaml
MODELS = {  # configs/models: hidden, expert FFN, experts, top-k, shared FFN
    "mixtral-8x7b": (4096, 14336, 8, 2, 0),
    "qwen1.5-moe-a2.7b": (2048, 1408, 60, 4, 5632),
}


def read(prefix, name, optional=False):
    path = f"{prefix}_{name}.csv"
    if not os.path.exists(path):
        if optional:
            sys.stderr.write(f"note: {path} not found; this run's passes give no phase figures\n")
            return []
        sys.stderr.write(f"error: {path} not found (expected the output of megatron_moe_measure.py)\n")
        sys.exit(2)
    with open(path) as f:
        return list(csv.DictReader(f))


def pass_of(run, r):
    """(run index, pass index) of a row; files without a pass column: one pass per size."""
    return (run, int(r.get("pass") or 0))


def passes(prefixes):
    """Per (model, impl, mode, tokens): [(median, (run, pass))] over every pass, fastest first."""
    out = {}
    for i, p in enumerate(prefixes):
        for r in read(p, "layer"):
            key = (r["model"], r["impl"], r["mode"], int(r["tokens"]))
            out.setdefault(key, []).append((float(r["layer_us_median"]), pass_of(i, r)))
    for v in out.values():
        v.sort()
    return out


def by_pass(prefixes, name, optional=False):
    """Rows per (run, pass, model, mode, tokens)."""
    d = {}
    for i, p in enumerate(prefixes):
        for r in read(p, name, optional):
            d.setdefault(pass_of(i, r) + (r["model"], r.get("mode", ""), int(r["tokens"])), []).append(r)
    return d


FAST_PROBE_US = 240.0  # the 5,000-step probe beside each call: under this the host ran at its fast level (runs 8, 9)


def interleaved(prefixes, stat):
    """The statistic of the interleaved rounds (megatron_moe_measure.py --rounds), pooled
    over the runs given: per (model, impl, mode, tokens), one synthetic pass (0, -1) whose
    layer figure is the median over every timed call of every run's rounds (stat
    "median") or over those whose two host-speed probes were both under FAST_PROBE_US
    ("fast"); its phase rows the median of each phase over the rounds' instrumented calls
    of the same level; its kernel row that of the size's first pass in the first run (the
    rounds profile nothing; the counts agree between runs). Returns (passes, kernels,
    phases) shaped as passes() and by_pass() return them."""
    calls, instr_phases, kern = {}, {}, {}
    for i, p in enumerate(prefixes):
        if not os.path.exists(f"{p}_meta.json"):
            sys.stderr.write(f"error: {p}_meta.json not found (expected the output of megatron_moe_measure.py)\n")
            sys.exit(2)
        with open(f"{p}_meta.json") as f:
            meta = json.load(f)
        if "interleaved" not in meta:
            sys.stderr.write(f"error: {p}_meta.json: no 'interleaved' entry; --stat {stat} needs a run "
                             "made with megatron_moe_measure.py --rounds\n")
            sys.exit(2)
        first = int(meta["interleaved"]["first_pass"])

        def keep(r):
            if int(r["pass"]) < first:
                return False
            return stat == "median" or (float(r["probe_before_us"]) < FAST_PROBE_US
                                        and float(r["probe_after_us"]) < FAST_PROBE_US)
        instr = set()
        for r in read(p, "iters"):
            if r["kind"] not in ("layer", "instrumented") or not keep(r):
                continue
            if r["kind"] == "layer":
                calls.setdefault((r["model"], r["impl"], r["mode"], int(r["tokens"])), []).append(
                    float(r["device_us"]))
            else:
                instr.add((r["model"], r["mode"], int(r["tokens"]), r["pass"], r["iter"]))
        if i == 0:
            for r in read(p, "kernels"):
                if int(r["pass"]) < first and int(r["repeat"]) == 0:
                    kern.setdefault((0, -1, r["model"], r["mode"], int(r["tokens"])), []).append(r)
        for r in read(p, "phase_iters"):
            if (r["model"], r["mode"], int(r["tokens"]), r["pass"], r["iter"]) in instr:
                d = instr_phases.setdefault((0, -1, r["model"], r["mode"], int(r["tokens"])), {})
                d.setdefault(r["phase"], []).append((float(r["device_us"]), float(r["host_us"])))
    allp = {key: [(statistics.median(v), (0, -1))] for key, v in calls.items()}
    phases = {k: [{"phase": name, "device_us": statistics.median(x[0] for x in v),
                   "host_us": statistics.median(x[1] for x in v), "calls": len(v)}
                  for name, v in d.items()]
              for k, d in instr_phases.items()}
    return allp, kern, phases


def gemm_time_us(m, n, k, max_eff):
    eff = max_eff * n / (n + N_HALF) * k / (k + K_HALF)
    return 2.0 * m * n * k / (PEAK_TFLOPS * 1e12 * eff) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefixes", nargs="+", help="CSV prefix of each run (…_runN)")
    ap.add_argument("--fit", default="128,512,2048,8192,32768")
    ap.add_argument("--json", help="write the fitted figures here")
    ap.add_argument("--stat", choices=("fastest-pass", "median", "fast"), default="fastest-pass",
                    help="a size's reference figure: its fastest pass (runs 1-8), or, from the "
                         "interleaved rounds of a run made with --rounds, the median of all its "
                         "calls or of its calls at the host's fast level")
    a = ap.parse_args()
    try:
        fit = {int(t) for t in a.fit.split(",")}
    except ValueError:
        sys.stderr.write(f"error: --fit {a.fit}: expected a comma list of token counts\n")
        sys.exit(2)
    if a.stat == "fastest-pass":
        allp = passes(a.prefixes)
        kern = by_pass(a.prefixes, "kernels")
        phases = by_pass(a.prefixes, "phases", optional=True)
    else:
        allp, kern, phases = interleaved(a.prefixes, a.stat)
    ref = {k: v[0] for k, v in allp.items()}  # fastest pass, or the one synthetic pass
    nccl = by_pass(a.prefixes, "nccl")

    def with_phases(key):
        """(layer median, pass) of the fastest pass of key that has phase rows."""
        model, _, mode, T = key
        return next((v, ps) for v, ps in allp[key] if ps + (model, mode, T) in phases)

    # host-bound fit points: (model, mode, T) with GPU busy under half the layer
    per_launch, hostbound = [], []
    for key, (lay, ps) in sorted(ref.items()):
        model, impl, mode, T = key
        if impl != "megatron" or T not in fit:
            continue
        k = next(r for r in kern[ps + (model, mode, T)] if r["impl"] == "megatron")
        ops = int(k["kernels"]) + int(k["memcpy"])
        if float(k["gpu_busy_us"]) < 0.5 * lay:
            if mode == "fwd":
                per_launch.append(lay / ops)
            hostbound.append((model, mode, T) + with_phases(key)[::-1])
    L = statistics.median(per_launch)

    sync = statistics.median(float(r["host_us"]) for (model, mode, T, ps, lay) in hostbound
                             for r in phases[ps + (model, mode, T)] if r["phase"] == "count_sync")
    coll = statistics.median(float(r["host_us"]) for rows in nccl.values() for r in rows
                             if r["call"] == "all_to_all_tokens")

    # launch equivalents per phase at host-bound points, per mode
    eq = {}
    for model, mode, T, ps, lay in hostbound:
        rows = phases[ps + (model, mode, T)]
        total = sum(float(r["host_us"]) for r in rows)
        for r in rows:
            if r["phase"] == "count_sync":
                continue
            n = float(r["host_us"]) * lay / total / L
            eq.setdefault((model, mode, r["phase"]), []).append(n)
    med = {k: statistics.median(v) for k, v in eq.items()}

    def line(phase, mode="fwd"):
        """n = c + d * E through the models' medians (E: local experts at EP = 1)."""
        pts = sorted((MODELS[m][2], v) for (m, mo, p), v in med.items() if p == phase and mo == mode)
        if not pts:
            return [0.0, 0.0]
        if len(pts) == 1:
            return [round(pts[0][1], 2), 0.0]
        mx = statistics.mean(e for e, _ in pts)
        my = statistics.mean(v for _, v in pts)
        sxx = sum((e - mx) ** 2 for e, _ in pts)
        d = sum((e - mx) * (v - my) for e, v in pts) / sxx
        return [round(my - d * mx, 2), round(d, 3)]

    # forward phases run with autograd recording in a training step: their host
    # time relative to the same phases without gradients
    fwd_phases = ["router", "permutation", "dispatch", "sort_chunks", "experts", "unsort_chunks",
                  "combine", "unpermutation", "shared_expert"]
    scale = []
    for model in MODELS:
        a_ = sum(med.get((model, "fwdbwd", p), 0) for p in fwd_phases)
        b_ = sum(med.get((model, "fwd", p), 0) for p in fwd_phases)
        if a_ and b_:
            scale.append(a_ / b_)

    # GEMM efficiency of the per-expert cuBLAS GEMMs at GPU-bound forward sizes (Mixtral)
    ratios = []
    for key in sorted(ref):
        model, impl, mode, T = key
        if impl != "megatron" or mode != "fwd" or T not in fit or model != "mixtral-8x7b":
            continue
        lay, ps = with_phases(key)
        H, F, E, k, _ = MODELS[model]
        rows = [r for r in phases[ps + (model, mode, T)] if r["phase"] == "experts"]
        meas = float(rows[0]["device_us"])
        kr = next(r for r in kern[ps + (model, mode, T)] if r["impl"] == "megatron")
        if float(kr["gpu_busy_us"]) < 0.8 * lay:
            continue
        m = T * k / E
        t1 = E * (gemm_time_us(m, 2 * F, H, 1.0) + gemm_time_us(m, H, F, 1.0))
        mem = E * m * 3 * F * 2 / (HBM_GBPS * 1e3 * MEM_EFF)
        ratios.append(t1 / (meas - mem))
    max_eff = round(statistics.median(ratios), 3) if ratios else None

    # the unpermutation (Megatron-Core's scatter-add of each token's k weighted expert
    # outputs) at the same GPU-bound forward sizes: the expert outputs it adds (T k H 2
    # bytes; its time follows the element adds, host/scripts/scatter_add_rate.py) over
    # the phase's device time, both models where the GPU is bound
    rates = []
    for key in sorted(ref):
        model, impl, mode, T = key
        if impl != "megatron" or mode != "fwd" or T not in fit:
            continue
        lay, ps = with_phases(key)
        kr = next(r for r in kern[ps + (model, mode, T)] if r["impl"] == "megatron")
        if float(kr["gpu_busy_us"]) < 0.8 * lay:
            continue
        H, _, _, k, _ = MODELS[model]
        rows = [r for r in phases[ps + (model, mode, T)] if r["phase"] == "unpermutation"]
        added = T * k * H * 2
        rates.append(added / float(rows[0]["device_us"]) / 1e3)  # bytes per us / 1e3 = GB/s
    unpermute_add_gbps = round(statistics.median(rates)) if rates else None

    out = {
        "fit_sizes": sorted(fit),
        "statistic": a.stat,
        "host_bound_points": [f"{m} {mo} {t}" for m, mo, t, _, _ in hostbound],
        "reference_passes": {f"{m} {mo} {t}": (f"run {ps[0] + 1} pass {ps[1]}" if ps[1] >= 0 else
                                                f"{'+'.join(os.path.basename(p) for p in a.prefixes)} rounds, {a.stat}")
                             + f": {lay:.0f} us"
                             for m, mo, t, ps, lay in hostbound},
        "kernel_launch_us": round(L, 1),
        "stream_sync_us": round(sync, 1),
        "collective_setup_us": round(max(0.0, coll - L), 1),
        "nccl_all_to_all_host_us": round(coll, 1),
        "gemm_max_efficiency": max_eff,
        "unpermute_add_gbps": unpermute_add_gbps,
        "unpermute_points": len(rates),
        "profile": {
            mode_name: {
                "router": line("router", mode), "permute": line("permutation", mode),
                "dispatch_calls": line("dispatch", mode), "sort": line("sort_chunks", mode),
                "experts": line("experts", mode), "unsort": line("unsort_chunks", mode),
                "combine_calls": line("combine", mode), "unpermute": line("unpermutation", mode),
                "shared_expert": line("shared_expert", mode),
            } for mode_name, mode in (("forward", "fwd"), ("train_forward", "fwdbwd"))
        },
        "backward": line("backward", "fwdbwd"),
        "autograd_forward_scale": round(statistics.median(scale), 2),
        "phase_launch_equivalents": {f"{m} {mo} {p}": round(v, 1) for (m, mo, p), v in sorted(med.items())},
    }
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
