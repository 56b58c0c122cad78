#!/usr/bin/env python3
"""Measure Megatron-Core's MoE layer (all-to-all token dispatcher) on this machine.

Builds megatron.core.transformer.moe.MoELayer from a Megatron-LM source tree given
by --megatron (nothing of it is copied here), with the model shapes of
configs/models, and times it for a range of total token counts, forward and
forward+backward:

  layer    CUDA events around one layer call, after warm-up; median of --iters.
  phases   a second, instrumented pass: every step of the dispatcher
           (MoEAlltoAllTokenDispatcher's dispatch_preprocess, token_dispatch,
           dispatch_postprocess, combine_preprocess, token_combine,
           combine_postprocess), the router, the experts and the shared expert
           are wrapped with CUDA events and host timers; the dispatcher's
           device-to-host synchronisation (_maybe_dtoh_and_synchronize at its sync
           point) is timed on its own and taken out of the phase around it.
  kernels  torch.profiler over one layer call: kernels, memory copies and
           memsets launched, the span from first to last GPU activity and the
           GPU idle time inside it (gaps between activities).
  ideal    the same GPU running only the essential operators: router GEMM,
           softmax and top-k, the expert GEMMs with their activation on rows
           already grouped per expert, and the weighted sum (no permutation, no
           synchronisation); `ideal-grouped` the same with one grouped GEMM per
           projection (torch._grouped_mm) where this PyTorch has it.
  nccl     per-call cost of the collectives the dispatcher issues with EP > 1
           (all_to_all_single of token rows, all_gather of the per-expert
           counts) and of its device-to-host count copy with synchronisation,
           on the ranks this run has.

Sizes may repeat in --tokens (e.g. 128,256,512,256,128): each entry is one
pass, run in the order given, so that a cost bound to a size (slow at every
visit) and one bound to a time (slow in some passes, at whatever size) separate.
With --rounds R the passes are followed by R interleaved rounds: each visits every
(model, size) once, in an order shuffled per round, for a few calls per mode, so
that every size's calls spread over the whole run and sample the host's speed
levels alike (run 9 of docs/results/megatron-h200.md; fit_megatron.py --stat median
reads them).
Every row carries its pass (position in --tokens), its repeat (which visit of
that size, from 0) and t_start_s (seconds since the start of the run). Per
iteration, megatron_iters.csv holds each timed call of the layer pass and of the
instrumented pass (device and host time, the main thread's CPU time, its context
switches and minor page faults, garbage collections and cudaMalloc calls during
the call: a host that was descheduled shows host time without CPU time; a
process doing more work shows both), and megatron_phase_iters.csv each phase of
each instrumented iteration. Before each pass and mode a host-speed probe (rows of
kind probe_launch and probe_python in megatron_iters.csv) times a fixed number of
one-element launches and a fixed pure-Python loop, so that a pass's host time can
be read against the host's speed at that moment; every timed call also carries
the time of a short fixed Python loop just before and just after it
(probe_before_us, probe_after_us), read outside its timed window.

With one GPU the layer runs at EP = 1 (one rank over NCCL): Megatron-Core then
bypasses its all-to-alls (world size 1) and keeps everything else; the nccl rows
give the per-collective costs on that rank. Without Transformer Engine the
experts are Megatron-Core's SequentialMLP (one ColumnParallelLinear and one
RowParallelLinear per expert, looped on the host); the output names the class.

Usage (one rank):
  python3 host/scripts/megatron_moe_measure.py --megatron PATH/TO/Megatron-LM \
      --models mixtral-8x7b,qwen1.5-moe-a2.7b [--warmup 3 --iters 10 --rounds 30] --out OUTDIR
Writes OUTDIR/megatron_layer.csv, megatron_phases.csv, megatron_kernels.csv,
megatron_nccl.csv, megatron_iters.csv, megatron_phase_iters.csv and
megatron_meta.json (rank 0); with several ranks (torchrun), each
other rank r writes its own megatron_<name>_rank<r>.csv beside them.
"""
import argparse
import csv
import datetime
import json
import gc
import os
import resource
import statistics
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--megatron", required=True, help="root of a Megatron-LM source tree (holds megatron/core)")
    ap.add_argument("--models", default="mixtral-8x7b,qwen1.5-moe-a2.7b", help="comma list of configs/models stems")
    ap.add_argument("--tokens", default="128,256,512,1024,2048,4096,8192,16384,32768",
                    help="comma list of total token counts, one pass each in this order; a size may repeat")
    ap.add_argument("--modes", default="fwd,fwdbwd", help="fwd and/or fwdbwd")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--load-balancing", default="aux_loss",
                    help="moe_router_load_balancing_type (Megatron-Core's default: aux_loss)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip-profile", action="store_true")
    ap.add_argument("--rounds", type=int, default=0,
                    help="after the passes, this many interleaved rounds: each visits every (model, size) "
                         "once, in an order shuffled per round, with --round-warmup and --round-iters calls "
                         "per mode (layer and instrumented), so that every size samples the host's speed "
                         "levels in the same proportion")
    ap.add_argument("--round-warmup", type=int, default=1)
    ap.add_argument("--round-iters", type=int, default=2)
    a = ap.parse_args()
    for name in ("warmup", "iters", "rounds", "round_warmup", "round_iters"):
        lo = 1 if name in ("iters", "round_iters") else 0
        if getattr(a, name) < lo:
            ap.error(f"--{name.replace('_', '-')} {getattr(a, name)}: must be at least {lo}")
    return a


def load_model(stem):
    path = os.path.join(ROOT, "configs", "models", stem + ".yaml")
    with open(path) as f:
        return yaml.safe_load(f)


def import_megatron(root):
    if not os.path.isdir(os.path.join(root, "megatron", "core")):
        sys.stderr.write(f"error: --megatron {root}: no megatron/core below it\n")
        sys.exit(2)
    sys.path.insert(0, root)
    import megatron.core  # noqa: F401  (fails loudly if a dependency is missing)


class PhaseTimer:
    """CUDA-event and host timers around named calls, with nesting taken out."""

    def __init__(self, torch):
        self.torch = torch
        self.enabled = False
        self.records = []  # (name, depth, ev0, ev1, host0, host1, parent index)
        self.stack = []

    def wrap(self, obj, attr, name, only_if=None):
        orig = getattr(obj, attr)
        timer = self

        def wrapped(*a, **kw):
            if not timer.enabled or (only_if is not None and not only_if(*a, **kw)):
                return orig(*a, **kw)
            ev0 = timer.torch.cuda.Event(enable_timing=True)
            ev1 = timer.torch.cuda.Event(enable_timing=True)
            h0 = time.perf_counter()
            ev0.record()
            idx = len(timer.records)
            parent = timer.stack[-1] if timer.stack else -1
            timer.records.append([name, ev0, ev1, h0, 0.0, parent])
            timer.stack.append(idx)
            try:
                return orig(*a, **kw)
            finally:
                timer.stack.pop()
                ev1.record()
                timer.records[idx][4] = time.perf_counter()

        setattr(obj, attr, wrapped)

    def start(self):
        self.records = []
        self.stack = []
        self.enabled = True

    def collect(self):
        """Exclusive device and host time per phase name (us) of the last pass."""
        self.enabled = False
        self.torch.cuda.synchronize()
        dev = [r[1].elapsed_time(r[2]) * 1e3 for r in self.records]
        host = [(r[4] - r[3]) * 1e6 for r in self.records]
        excl_dev, excl_host = list(dev), list(host)
        for i, r in enumerate(self.records):
            p = r[5]
            if p >= 0:
                excl_dev[p] -= dev[i]
                excl_host[p] -= host[i]
        out = {}
        for i, r in enumerate(self.records):
            d = out.setdefault(r[0], [0.0, 0.0, 0])
            d[0] += excl_dev[i]
            d[1] += excl_host[i]
            d[2] += 1
        return out


def build_layer(torch, m, args):
    import torch.nn.functional as F
    from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec
    from megatron.core.transformer.transformer_config import TransformerConfig

    kw = dict(
        num_layers=1,
        hidden_size=m["hidden_size"],
        num_attention_heads=32,
        ffn_hidden_size=m["expert_ffn_size"],
        moe_ffn_hidden_size=m["expert_ffn_size"],
        num_moe_experts=m["num_experts"],
        moe_router_topk=m["top_k"],
        moe_token_dispatcher_type="alltoall",
        moe_grouped_gemm=False,
        moe_router_load_balancing_type=args.load_balancing,
        moe_aux_loss_coeff=0.01 if args.load_balancing != "none" else 0.0,
        gated_linear_unit=True,
        activation_func=F.silu,
        add_bias_linear=False,
        bias_activation_fusion=False,
        bf16=True,
        params_dtype=torch.bfloat16,
        expert_model_parallel_size=torch.distributed.get_world_size(),
    )
    if m.get("shared_expert_ffn_size", 0) > 0:
        kw["moe_shared_expert_intermediate_size"] = m["shared_expert_ffn_size"]
        kw["moe_shared_expert_gate"] = True  # Qwen1.5-MoE gates its shared expert
    config = TransformerConfig(**kw)
    spec = get_moe_module_spec(use_te=False, num_experts=m["num_experts"], moe_grouped_gemm=False)
    layer = spec(config=config).cuda()
    layer.train()
    return layer


def instrument(layer, timer):
    d = layer.token_dispatcher
    timer.wrap(layer.router, "forward", "router")
    timer.wrap(d, "dispatch_preprocess", "permutation")
    timer.wrap(d, "token_dispatch", "dispatch")
    timer.wrap(d, "dispatch_postprocess", "sort_chunks")
    timer.wrap(d, "_maybe_dtoh_and_synchronize", "count_sync",
               only_if=lambda point, *a, **k: point == d.cuda_sync_point)
    timer.wrap(layer.experts, "forward", "experts")
    timer.wrap(d, "combine_preprocess", "unsort_chunks")
    timer.wrap(d, "token_combine", "combine")
    timer.wrap(d, "combine_postprocess", "unpermutation")
    if getattr(layer, "shared_experts", None) is not None:
        timer.wrap(layer, "shared_experts_compute", "shared_expert")
    if not getattr(BACKWARD, "wrapped", False):
        timer.wrap(BACKWARD, "run", "backward")
        BACKWARD.wrapped = True


class Backward:
    """The backward call as a method, so that the phase timer can wrap it."""

    def run(self, out, g):
        out.backward(g)


BACKWARD = Backward()


def run_once(torch, layer, x, g, mode):
    out, _ = layer(x)
    if mode == "fwdbwd":
        BACKWARD.run(out, g)
    return out


T0 = time.perf_counter()  # start of the run; t_s and t_start_s count from here


# The CPUs this process may run on; when it is pinned (taskset) the steal time
# of those CPUs is recorded on its own, beside the steal of all CPUs.
AFFINITY = sorted(os.sched_getaffinity(0))
PINNED = len(AFFINITY) < (os.cpu_count() or 1)
USER_HZ = os.sysconf("SC_CLK_TCK")


def steal_ticks():
    """Steal time (clock ticks) of all CPUs and of this process's CPUs, from
    /proc/stat (the eighth value of a cpu line): time a virtual CPU was ready but
    the hypervisor ran something else. (0, 0) where /proc/stat has no such field."""
    total, own = 0, 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                if not line.startswith("cpu"):
                    break
                parts = line.split()
                if len(parts) < 9:
                    continue
                st = int(parts[8])
                if parts[0] == "cpu":
                    total = st
                elif int(parts[0][3:]) in AFFINITY:
                    own += st
    except (OSError, ValueError):
        pass
    return total, own


def probe(torch):
    """Host-side counters, read outside the timed window: the main thread's CPU
    time (s), its involuntary and voluntary context switches and minor page
    faults, the garbage collections so far, the caching allocator's cudaMalloc
    calls so far, and the steal ticks of all CPUs and of this process's CPUs."""
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    st_all, st_own = steal_ticks()
    return (ru.ru_utime + ru.ru_stime, ru.ru_nivcsw, ru.ru_nvcsw, ru.ru_minflt,
            sum(st["collections"] for st in gc.get_stats()),
            torch.cuda.memory_stats().get("segment.all.allocated", 0), st_all, st_own, speed_probe())


CALL_PROBE_STEPS = 5000  # loop steps of the host-speed probe read beside every timed call


def speed_probe(steps=CALL_PROBE_STEPS):
    """Host time (us) of `steps` steps of a fixed pure-Python loop: the host's
    speed at this moment (two levels about 1.7x apart on the lent H200
    machine, run 7)."""
    acc = 0
    h0 = time.perf_counter()
    for i in range(steps):
        acc += i & 7
    return (time.perf_counter() - h0) * 1e6


def probe_diff(a, b):
    ms = 1e3 / USER_HZ
    return ([f"{(b[0] - a[0]) * 1e6:.1f}"] + [b[i] - a[i] for i in range(1, 6)]
            + [f"{(b[6] - a[6]) * ms:.0f}", f"{(b[7] - a[7]) * ms:.0f}" if PINNED else ""]
            + [f"{a[8]:.1f}", f"{b[8]:.1f}"])


ITER_FIELDS = ["cpu_us", "nivcsw", "nvcsw", "minflt", "gc_collections", "cuda_mallocs",
               "steal_ms_all", "steal_ms_own", "probe_before_us", "probe_after_us"]


PROBE_LAUNCHES = 400   # launches of the host-speed probe
PROBE_PY_STEPS = 20000  # loop steps of its pure-Python part


def host_probe(torch):
    """The host's speed now, by two fixed workloads with the GPU idle: the host
    time (us) of one launch of a one-element add (PROBE_LAUNCHES of them, the
    stream drained first), and of PROBE_PY_STEPS steps of a pure-Python loop.
    A pass's layer host time over the probe's separates a host that runs slower
    for a while from work that grew."""
    a = torch.ones(1, device="cuda")
    b = torch.empty_like(a)
    torch.cuda.synchronize()
    h0 = time.perf_counter()
    for _ in range(PROBE_LAUNCHES):
        torch.add(a, 1.0, out=b)
    h1 = time.perf_counter()
    torch.cuda.synchronize()
    return (h1 - h0) * 1e6 / PROBE_LAUNCHES, speed_probe(PROBE_PY_STEPS)


def time_layer(torch, fn, warmup, iters, record=None):
    """Median, min, max of the device time and median host time (us) of iters calls
    after warmup ones; record, if given, gets one row per call: iteration, t_s,
    device_us, host_us and the probe's differences over the call."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times, host = [], []
    for i in range(iters):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        p0 = probe(torch) if record is not None else None
        h0 = time.perf_counter()
        e0.record()
        fn()
        e1.record()
        h1 = time.perf_counter()
        p1 = probe(torch) if record is not None else None
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3)
        host.append((h1 - h0) * 1e6)
        if record is not None:
            record.append([i, f"{h0 - T0:.4f}", f"{times[-1]:.2f}", f"{host[-1]:.2f}"] + probe_diff(p0, p1))
    return statistics.median(times), min(times), max(times), statistics.median(host)


def profile_kernels(torch, fn):
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels, memcpy, memset = 0, 0, 0
    spans = []
    for ev in prof.events():
        if ev.device_type is None or str(ev.device_type) != "DeviceType.CUDA":
            continue
        name = ev.name.lower()
        if "memcpy" in name:
            memcpy += 1
        elif "memset" in name:
            memset += 1
        else:
            kernels += 1
        spans.append((ev.time_range.start, ev.time_range.end))
    spans.sort()
    busy, idle, gaps_over_5us = 0.0, 0.0, 0
    if spans:
        cur_s, cur_e = spans[0]
        for s, e in spans[1:]:
            if s > cur_e:
                busy += cur_e - cur_s
                idle += s - cur_e
                if s - cur_e > 5.0:
                    gaps_over_5us += 1
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        span = spans[-1][1] - spans[0][0]
    else:
        span = 0.0
    return dict(kernels=kernels, memcpy=memcpy, memset=memset, gpu_span_us=span,
                gpu_busy_us=busy, gpu_idle_us=idle, idle_gaps_over_5us=gaps_over_5us)


def ideal_fn(torch, m, T):
    """Router GEMM, softmax/top-k, per-expert GEMMs with SwiGLU on pre-grouped rows, weighted sum."""
    import torch.nn.functional as F
    H, Fw, E, k = m["hidden_size"], m["expert_ffn_size"], m["num_experts"], m["top_k"]
    dt = torch.bfloat16
    x = torch.randn(T, H, device="cuda", dtype=dt)
    wg = torch.randn(E, H, device="cuda", dtype=dt) * 0.02
    w1 = [torch.randn(2 * Fw, H, device="cuda", dtype=dt) * 0.02 for _ in range(E)]
    w2 = [torch.randn(H, Fw, device="cuda", dtype=dt) * 0.02 for _ in range(E)]
    rows = T * k
    counts = [rows // E + (1 if e < rows % E else 0) for e in range(E)]
    grouped = torch.randn(rows, H, device="cuda", dtype=dt)
    probs = torch.rand(T, k, device="cuda", dtype=torch.float32)
    Fs = m.get("shared_expert_ffn_size", 0)
    ws1 = torch.randn(2 * Fs, H, device="cuda", dtype=dt) * 0.02 if Fs else None
    ws2 = torch.randn(H, Fs, device="cuda", dtype=dt) * 0.02 if Fs else None

    def fn():
        logits = F.linear(x, wg).float()
        p = torch.softmax(logits, dim=-1)
        torch.topk(p, k, dim=-1)
        outs = []
        for e, part in enumerate(torch.split(grouped, counts)):
            h = F.linear(part, w1[e])
            a, b = h.chunk(2, dim=-1)
            outs.append(F.linear(F.silu(a) * b, w2[e]))
        y = torch.cat(outs).view(T, k, H)
        out = (y.float() * probs.unsqueeze(-1)).sum(1).to(dt)
        if Fs:
            h = F.linear(x, ws1)
            a, b = h.chunk(2, dim=-1)
            out = out + F.linear(F.silu(a) * b, ws2)
        return out
    return fn


def ideal_grouped_fn(torch, m, T):
    """As ideal_fn with one grouped GEMM per projection (torch._grouped_mm), or None."""
    import torch.nn.functional as F
    gmm = getattr(torch, "_grouped_mm", None)
    if gmm is None:
        return None
    H, Fw, E, k = m["hidden_size"], m["expert_ffn_size"], m["num_experts"], m["top_k"]
    dt = torch.bfloat16
    x = torch.randn(T, H, device="cuda", dtype=dt)
    wg = torch.randn(E, H, device="cuda", dtype=dt) * 0.02
    w1 = torch.randn(E, H, 2 * Fw, device="cuda", dtype=dt) * 0.02
    w2 = torch.randn(E, Fw, H, device="cuda", dtype=dt) * 0.02
    rows = T * k
    counts = [rows // E + (1 if e < rows % E else 0) for e in range(E)]
    offs = torch.tensor(counts, device="cuda", dtype=torch.int32).cumsum(0).to(torch.int32)
    grouped = torch.randn(rows, H, device="cuda", dtype=dt)
    probs = torch.rand(T, k, device="cuda", dtype=torch.float32)

    def fn():
        logits = F.linear(x, wg).float()
        p = torch.softmax(logits, dim=-1)
        torch.topk(p, k, dim=-1)
        h = gmm(grouped, w1, offs=offs)
        a, b = h.chunk(2, dim=-1)
        y = gmm((F.silu(a) * b).contiguous(), w2, offs=offs).view(T, k, H)
        return (y.float() * probs.unsqueeze(-1)).sum(1).to(dt)
    try:
        fn()
        torch.cuda.synchronize()
    except Exception as e:  # shape or dtype not supported by this build
        print(f"ideal-grouped unavailable: {e}", flush=True)
        return None
    return fn


def nccl_costs(torch, m, T, iters):
    """Per-call host and device time of the dispatcher's collectives on this group."""
    import torch.distributed as dist
    W = dist.get_world_size()
    H, E, k = m["hidden_size"], m["num_experts"], m["top_k"]
    rows = T * k
    inp = torch.randn(rows, H, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(inp)
    split = [rows // W] * W
    split[-1] += rows - sum(split)
    counts = torch.ones(E, device="cuda", dtype=torch.int64)
    gathered = torch.empty(E * W, device="cuda", dtype=torch.int64)
    side = torch.cuda.Stream()
    res = {}

    def a2a():
        dist.all_to_all_single(out, inp, output_split_sizes=split, input_split_sizes=split)

    def ag():
        dist.all_gather_into_tensor(gathered, counts)

    def d2h():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            c = counts.to("cpu", non_blocking=True)
        ev = side.record_event()
        ev.synchronize()
        return c

    for name, fn in (("all_to_all_tokens", a2a), ("all_gather_counts", ag), ("d2h_count_sync", d2h)):
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        host, dev = [], []
        for _ in range(iters):
            torch.cuda.synchronize()
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            h0 = time.perf_counter()
            e0.record()
            fn()
            e1.record()
            host.append((time.perf_counter() - h0) * 1e6)
            e1.synchronize()
            dev.append(e0.elapsed_time(e1) * 1e3)
        res[name] = (statistics.median(host), statistics.median(dev), rows * H * 2 if name == "all_to_all_tokens" else E * 8)
    return res


def visit(torch, wr, timer, stem, layer, mode, x, g, T, pas, warmup, iters, n_instr, profile, rank0):
    """One visit of (model, size, mode): the host-speed probe, `iters` timed layer calls
    after `warmup`, `n_instr` instrumented calls and, if `profile`, the profiled call;
    rows into the layer, iters, phases, phase_iters and kernels CSVs."""
    pass_i, repeat = pas[0], pas[1]

    def fn():
        if mode == "fwd":
            with torch.no_grad():
                return run_once(torch, layer, x, g, mode)
        return run_once(torch, layer, x, g, mode)
    rec = []
    # the host-speed probe before the visit's timed calls (rows of kind
    # probe_launch / probe_python: host_us per launch / for the loop)
    pl, pp = host_probe(torch)
    t_probe = f"{time.perf_counter() - T0:.4f}"
    wr["iters"].writerow([stem, "megatron", mode, T, pass_i, repeat, "probe_launch", 0, t_probe, "",
                          f"{pl:.3f}"] + [""] * len(ITER_FIELDS))
    wr["iters"].writerow([stem, "megatron", mode, T, pass_i, repeat, "probe_python", 0, t_probe, "",
                          f"{pp:.1f}"] + [""] * len(ITER_FIELDS))
    med, lo, hi, hmed = time_layer(torch, fn, warmup, iters, rec)
    wr["layer"].writerow([stem, "megatron", mode, T, f"{med:.2f}", f"{lo:.2f}", f"{hi:.2f}",
                          f"{hmed:.2f}"] + pas)
    for row in rec:
        wr["iters"].writerow([stem, "megatron", mode, T, pass_i, repeat, "layer"] + row)
    # instrumented calls: median over them of each phase
    per = {}
    for it in range(n_instr):
        torch.cuda.synchronize()
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        p0 = probe(torch)
        timer.start()
        h0 = time.perf_counter()
        e0.record()
        fn()
        e1.record()
        h1 = time.perf_counter()
        p1 = probe(torch)
        for name, (dv, hv, calls) in timer.collect().items():
            per.setdefault(name, []).append((dv, hv, calls))
            wr["phase_iters"].writerow([stem, mode, T, pass_i, repeat, it, name, f"{dv:.2f}",
                                        f"{hv:.2f}", calls])
        wr["iters"].writerow([stem, "megatron", mode, T, pass_i, repeat, "instrumented", it,
                              f"{h0 - T0:.4f}", f"{e0.elapsed_time(e1) * 1e3:.2f}",
                              f"{(h1 - h0) * 1e6:.2f}"] + probe_diff(p0, p1))
    for name, vals in per.items():
        wr["phases"].writerow([stem, mode, T, name,
                               f"{statistics.median(v[0] for v in vals):.2f}",
                               f"{statistics.median(v[1] for v in vals):.2f}", vals[0][2]] + pas)
    if profile:
        k = profile_kernels(torch, fn)
        wr["kernels"].writerow([stem, "megatron", mode, T] + [
            f"{v:.2f}" if isinstance(v, float) else v for v in k.values()] + pas)
    if rank0:
        print(f"{stem} megatron {mode} T={T} pass {pass_i}: {med:.1f} us", flush=True)


def interleaved_rounds(torch, args, wr, files, timer, layers, tokens, modes, W, rank0, meta):
    """--rounds R after the passes: R rounds, each visiting every (model, size) once in
    an order shuffled per round (the same seed on every rank), with --round-warmup and
    --round-iters calls per mode. The host's speed moves between levels over seconds
    (runs 3-8); visits spread this way give every size the same share of each level,
    so a statistic over all of a size's calls (its median) compares across sizes.
    Each visit is a pass of its own (numbered on from the passes of --tokens); no
    profile, ideal or NCCL rows (the passes before gave them)."""
    import random
    sizes = sorted(set(tokens))
    inputs = {}
    for stem, layer in layers.items():
        m = load_model(stem)
        for T in sizes:
            x = torch.randn(T // W, 1, m["hidden_size"], device="cuda", dtype=torch.bfloat16,
                            requires_grad=True)
            inputs[(stem, T)] = (x, torch.randn_like(x))
    visits = sorted(inputs)
    first = len(tokens)
    meta["interleaved"] = dict(rounds=args.rounds, first_pass=first, warmup=args.round_warmup,
                               iters=args.round_iters, visits_per_round=len(visits))
    seen = {}
    for r in range(args.rounds):
        order = list(visits)
        random.Random(1000 + r).shuffle(order)
        for j, (stem, T) in enumerate(order):
            repeat = seen.get((stem, T), tokens.count(T))  # visits of the size so far, passes included
            seen[(stem, T)] = repeat + 1
            pas = [first + r * len(visits) + j, repeat, f"{time.perf_counter() - T0:.3f}"]
            x, g = inputs[(stem, T)]
            for mode in modes:
                visit(torch, wr, timer, stem, layers[stem], mode, x, g, T, pas, args.round_warmup,
                      args.round_iters, args.round_iters, False, rank0)
        for f in files.values():
            f.flush()


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    import_megatron(args.megatron)
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29531")
        rank = int(os.environ.get("RANK", "0"))
        world = int(os.environ.get("WORLD_SIZE", "1"))
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl", rank=rank, world_size=world)
    from megatron.core import parallel_state, tensor_parallel
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1,
                                             expert_model_parallel_size=dist.get_world_size())
    tensor_parallel.model_parallel_cuda_manual_seed(1234)
    rank0 = dist.get_rank() == 0

    try:
        import transformer_engine  # noqa: F401
        have_te = True
    except Exception:
        have_te = False
    meta = dict(date_utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                device=torch.cuda.get_device_name(), torch=torch.__version__,
                cuda=torch.version.cuda, nccl=".".join(map(str, torch.cuda.nccl.version())),
                world_size=dist.get_world_size(), transformer_engine=have_te,
                load_balancing=args.load_balancing, warmup=args.warmup, iters=args.iters,
                megatron_root=os.path.abspath(args.megatron), cpu_affinity=AFFINITY,
                pinned=PINNED)
    # The commit of the Megatron-LM tree: from git only where --megatron is the
    # top of its own checkout (a copy inside another repository would report
    # that repository's commit), else from a MEGATRON_COMMIT file beside it.
    meta["megatron_commit"] = "unknown"
    try:
        import subprocess
        top = subprocess.run(["git", "-C", args.megatron, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True).stdout.strip()
        if top and os.path.realpath(top) == os.path.realpath(args.megatron):
            meta["megatron_commit"] = subprocess.run(["git", "-C", args.megatron, "rev-parse", "HEAD"],
                                                     capture_output=True, text=True).stdout.strip()
    except Exception:
        pass
    if os.path.exists(os.path.join(args.megatron, "MEGATRON_COMMIT")):
        meta["megatron_commit"] = open(os.path.join(args.megatron, "MEGATRON_COMMIT")).read().strip()

    tokens = [int(t) for t in args.tokens.split(",")]
    modes = args.modes.split(",")
    W = dist.get_world_size()
    # Rank 0 writes the plain names the fit reads; every other rank its own files
    # (megatron_<name>_rank<r>.csv), so two ranks never write into one file.
    suffix = "" if rank0 else f"_rank{dist.get_rank()}"
    files = {n: open(os.path.join(args.out, f"megatron_{n}{suffix}.csv"), "w", newline="")
             for n in ("layer", "phases", "kernels", "nccl", "iters", "phase_iters")}
    wr = {n: csv.writer(f) for n, f in files.items()}
    # pass: position of the size in --tokens; repeat: which visit of that size
    # (from 0); t_start_s: seconds from the start of the run to the pass's start.
    # Files of runs without repeated sizes lack these columns: one pass per size.
    pas = ["pass", "repeat", "t_start_s"]
    wr["layer"].writerow(["model", "impl", "mode", "tokens", "layer_us_median", "layer_us_min",
                          "layer_us_max", "host_us_median"] + pas)
    wr["phases"].writerow(["model", "mode", "tokens", "phase", "device_us", "host_us", "calls"] + pas)
    wr["kernels"].writerow(["model", "impl", "mode", "tokens", "kernels", "memcpy", "memset",
                            "gpu_span_us", "gpu_busy_us", "gpu_idle_us", "idle_gaps_over_5us"] + pas)
    wr["nccl"].writerow(["model", "tokens", "world_size", "call", "host_us", "device_us", "bytes"] + pas)
    wr["iters"].writerow(["model", "impl", "mode", "tokens", "pass", "repeat", "kind", "iter", "t_s",
                          "device_us", "host_us"] + ITER_FIELDS)
    wr["phase_iters"].writerow(["model", "mode", "tokens", "pass", "repeat", "iter", "phase", "device_us",
                                "host_us", "calls"])
    meta["tokens_order"] = tokens
    if rank0:  # written again at the end with the classes; a cut-short run keeps this one
        with open(os.path.join(args.out, "megatron_meta.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)

    timer = PhaseTimer(torch)
    layers = {}
    for stem in args.models.split(","):
        m = load_model(stem)
        layer = build_layer(torch, m, args)
        meta.setdefault("experts_class", {})[stem] = type(layer.experts).__name__
        meta.setdefault("dispatcher_class", {})[stem] = type(layer.token_dispatcher).__name__
        instrument(layer, timer)
        seen = {}
        for pass_i, T in enumerate(tokens):
            repeat = seen.get(T, 0)
            seen[T] = repeat + 1
            t_start = f"{time.perf_counter() - T0:.3f}"
            pas = [pass_i, repeat, t_start]
            t_local = T // W
            x = torch.randn(t_local, 1, m["hidden_size"], device="cuda", dtype=torch.bfloat16,
                            requires_grad=True)
            g = torch.randn_like(x)
            for mode in modes:
                visit(torch, wr, timer, stem, layer, mode, x, g, T, pas, args.warmup, args.iters,
                      max(3, args.iters // 2), not args.skip_profile, rank0)
            # ideal counterpart (forward only: its backward is the same GEMMs' transposes)
            fn_i = ideal_fn(torch, m, t_local)
            with torch.no_grad():
                med, lo, hi, hmed = time_layer(torch, fn_i, args.warmup, args.iters)
                wr["layer"].writerow([stem, "ideal", "fwd", T, f"{med:.2f}", f"{lo:.2f}", f"{hi:.2f}",
                                      f"{hmed:.2f}"] + pas)
                if not args.skip_profile:
                    k = profile_kernels(torch, fn_i)
                    wr["kernels"].writerow([stem, "ideal", "fwd", T] + [
                        f"{v:.2f}" if isinstance(v, float) else v for v in k.values()] + pas)
            if rank0:
                print(f"{stem} ideal fwd T={T}: {med:.1f} us", flush=True)
            fn_g = ideal_grouped_fn(torch, m, t_local)
            if fn_g is not None:
                with torch.no_grad():
                    med, lo, hi, hmed = time_layer(torch, fn_g, args.warmup, args.iters)
                    wr["layer"].writerow([stem, "ideal-grouped", "fwd", T, f"{med:.2f}", f"{lo:.2f}",
                                          f"{hi:.2f}", f"{hmed:.2f}"] + pas)
                    if not args.skip_profile:
                        k = profile_kernels(torch, fn_g)
                        wr["kernels"].writerow([stem, "ideal-grouped", "fwd", T] + [
                            f"{v:.2f}" if isinstance(v, float) else v for v in k.values()] + pas)
                if rank0:
                    print(f"{stem} ideal-grouped fwd T={T}: {med:.1f} us", flush=True)
            for name, (h, d, nbytes) in nccl_costs(torch, m, t_local, args.iters).items():
                wr["nccl"].writerow([stem, T, W, name, f"{h:.2f}", f"{d:.2f}", nbytes] + pas)
            for f in files.values():
                f.flush()
            del x, g, fn_i
        if args.rounds > 0:
            layers[stem] = layer  # kept for the interleaved rounds
        del layer
        torch.cuda.empty_cache()
    if args.rounds > 0:
        interleaved_rounds(torch, args, wr, files, timer, layers, tokens, modes, W, rank0, meta)
    for f in files.values():
        f.close()
    if rank0:
        with open(os.path.join(args.out, "megatron_meta.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        print(json.dumps(meta, sort_keys=True))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
