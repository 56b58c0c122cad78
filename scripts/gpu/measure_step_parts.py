#!/usr/bin/env python3
"""Times the parts of a transformer training step around the MoE layer on one GPU, for the
step model's cost fits (host/scripts/fit_step_parts.py):

  attention  FlashAttention-style attention through PyTorch's scaled_dot_product_attention:
             forward, and forward + backward, bf16, causal or not, grouped-query (GQA) heads,
             over a grid of sequence lengths and head layouts (the models' own and others);
             the backend PyTorch ran is recorded (flash, cudnn or efficient).
  gemm       dense torch.matmul of the projections, [tokens x in] @ [in x out], bf16, the
             forward product and the two backward ones (dX = dY W^T, dW = X^T dY).
  launch     a chain of small kernels (x.add_(1.0) on 4 KiB) launched eagerly one by one and
             the same chain captured in a CUDA graph and replayed: time per kernel of each.
  train      a small MoE transformer (a few layers, attention + top-k MoE MLP written with
             torch ops) trained for a few steps with AdamW: step time (CUDA events) and peak
             memory (torch.cuda.max_memory_allocated), with the model's sizes printed.

Timing: CUDA events around each case, warm-up calls first, the median of the timed calls;
the cases of one part run in a new seeded order each round so that no case always follows
the same neighbour. Inputs are random normal (never zeros). Output: one CSV per part in
--out (attention.csv, gemm.csv, launch.csv, train.csv) and a short table on stdout.

  python3 scripts/gpu/measure_step_parts.py --out $OUT [--parts attention,gemm,launch,train] [--quick]
"""
import argparse
import csv
import math
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# Attention layouts (query heads, KV heads, head dim) of the shipped models; sources:
# the models' published configuration files (configs/models/*.yaml comments,
# ../shared reference table 'Public facts for configs').
MODEL_HEADS = {
    "qwen3-30b-a3b": (32, 4, 128),
    "mixtral-8x7b": (32, 8, 128),
    "qwen2-57b-a14b": (28, 4, 128),
    "qwen1.5-moe-a2.7b": (16, 16, 128),
}
# Projection shapes (in, out) per model: QKV = hidden -> (hq + 2 hkv) * d, O = hq * d -> hidden.
MODEL_HIDDEN = {"qwen3-30b-a3b": 2048, "mixtral-8x7b": 4096, "qwen2-57b-a14b": 3584, "qwen1.5-moe-a2.7b": 2048}


def events_time_ms(fn, warmup, iters):
    """Median of `iters` timed calls of fn() in ms, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), times


def round_robin(cases, warmup, rounds, seed):
    """cases: {name: fn}. Each round runs every case once, in a new seeded order; returns
    {name: (median ms, spread = (max - min) / median over rounds)}."""
    for fn in cases.values():
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    rng = random.Random(seed)
    samples = {k: [] for k in cases}
    names = list(cases)
    for _ in range(rounds):
        rng.shuffle(names)
        for k in names:
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            cases[k]()
            b.record()
            b.synchronize()
            samples[k].append(a.elapsed_time(b))
    out = {}
    for k, s in samples.items():
        m = statistics.median(s)
        out[k] = (m, (max(s) - min(s)) / m if m > 0 else 0.0)
    return out


def sdpa_backend_name(q, k, v, causal):
    """Which fused backend runs this call: tries flash, then cudnn, then efficient, each alone."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        try:
            with sdpa_kernel([be]):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            torch.cuda.synchronize()
            return name, be
        except RuntimeError:
            continue
    return "math", None


def attention_part(args, writer):
    from torch.nn.attention import sdpa_kernel
    layouts = dict(MODEL_HEADS)
    layouts.update({"h64-kv8-d128": (64, 8, 128), "h16-kv2-d64": (16, 2, 64)})
    seqs = [1024, 2048, 4096, 8192, 16384, 32768] if not args.quick else [1024, 4096]
    rows = []
    for lname, (hq, hkv, d) in layouts.items():
        for s in seqs:
            for causal in (True, False):
                # batch so that a call has at least 16K tokens (fills the chip), at most 8
                b = max(1, min(8, 16384 // s))
                q = torch.randn(b, hq, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                dout = torch.randn(b, hq, s, d, device="cuda", dtype=torch.bfloat16)
                bname, be = sdpa_backend_name(q, k, v, causal)
                ctx = sdpa_kernel([be]) if be is not None else None

                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)

                def fwdbwd():
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
                    o.backward(dout)
                    q.grad = k.grad = v.grad = None

                if ctx is not None:
                    ctx.__enter__()
                try:
                    res = round_robin({"fwd": fwd, "fwdbwd": fwdbwd}, 3, args.rounds, hash((lname, s, causal)) & 0xffff)
                finally:
                    if ctx is not None:
                        ctx.__exit__(None, None, None)
                # FLOPs as FlashAttention counts them: 4 b hq s^2 d forward (two products),
                # halved under a causal mask; backward 2.5x the forward
                fl = 4.0 * b * hq * s * s * d * (0.5 if causal else 1.0)
                fwd_ms, fwd_sp = res["fwd"]
                fb_ms, fb_sp = res["fwdbwd"]
                row = {"layout": lname, "batch": b, "seq": s, "heads_q": hq, "heads_kv": hkv, "head_dim": d,
                       "causal": int(causal), "backend": bname, "fwd_ms": round(fwd_ms, 4),
                       "fwdbwd_ms": round(fb_ms, 4), "bwd_ms": round(fb_ms - fwd_ms, 4),
                       "fwd_tflops": round(fl / fwd_ms / 1e9, 1),
                       "fwdbwd_tflops": round(3.5 * fl / fb_ms / 1e9, 1),
                       "spread_fwd": round(fwd_sp, 4), "spread_fwdbwd": round(fb_sp, 4)}
                writer.writerow(row)
                rows.append(row)
                del q, k, v, dout
    torch.cuda.empty_cache()
    print("attention (ms, median of %d rounds): layout seq causal backend fwd fwd+bwd TFLOP/s(fwd, fwd+bwd)" % args.rounds)
    for r in rows:
        print("  %-18s %6d %d %-9s %9.3f %9.3f %6.1f %6.1f" % (r["layout"], r["seq"], r["causal"], r["backend"],
                                                                r["fwd_ms"], r["fwdbwd_ms"], r["fwd_tflops"],
                                                                r["fwdbwd_tflops"]))


def gemm_part(args, writer):
    tokens_list = [2048, 8192, 32768] if not args.quick else [4096]
    rows = []
    for model, hidden in MODEL_HIDDEN.items():
        hq, hkv, d = MODEL_HEADS[model]
        for proj, (kin, nout) in (("qkv", (hidden, (hq + 2 * hkv) * d)), ("o", (hq * d, hidden))):
            for t in tokens_list:
                x = torch.randn(t, kin, device="cuda", dtype=torch.bfloat16)
                w = torch.randn(kin, nout, device="cuda", dtype=torch.bfloat16)
                dy = torch.randn(t, nout, device="cuda", dtype=torch.bfloat16)
                cases = {"fwd": lambda: torch.matmul(x, w), "dgrad": lambda: torch.matmul(dy, w.t()),
                         "wgrad": lambda: torch.matmul(x.t(), dy)}
                res = round_robin(cases, 3, args.rounds, hash((model, proj, t)) & 0xffff)
                fl = 2.0 * t * kin * nout
                for kind, (ms, sp) in res.items():
                    row = {"model": model, "proj": proj, "tokens": t, "k": kin, "n": nout, "kind": kind,
                           "ms": round(ms, 4), "tflops": round(fl / ms / 1e9, 1), "spread": round(sp, 4)}
                    writer.writerow(row)
                    rows.append(row)
                del x, w, dy
    print("gemm (ms): model proj tokens kind ms TFLOP/s")
    for r in rows:
        print("  %-18s %-3s %6d %-5s %8.4f %6.1f" % (r["model"], r["proj"], r["tokens"], r["kind"], r["ms"], r["tflops"]))


def launch_part(args, writer):
    x = torch.randn(1024, device="cuda")
    rows = []
    for n in (50, 200, 1000):
        def eager():
            for _ in range(n):
                x.add_(1.0)
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            eager()  # warm-up on the side stream before capture
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            eager()

        def replay():
            g.replay()

        # host time too: a launch-bound chain's device span is set by the host
        res = round_robin({"eager": eager, "graph": replay}, 3, args.rounds, n)
        t0 = time.perf_counter()
        for _ in range(5):
            eager()
        torch.cuda.synchronize()
        host_eager_us = (time.perf_counter() - t0) / 5 / n * 1e6
        for kind, (ms, sp) in res.items():
            row = {"kernels": n, "kind": kind, "total_ms": round(ms, 4), "us_per_kernel": round(ms * 1e3 / n, 3),
                   "host_us_per_kernel_eager": round(host_eager_us, 3), "spread": round(sp, 4)}
            writer.writerow(row)
            rows.append(row)
    print("launch: kernels kind us/kernel (device span between events)")
    for r in rows:
        print("  %5d %-6s %8.3f" % (r["kernels"], r["kind"], r["us_per_kernel"]))


class MoeBlock(torch.nn.Module):
    """One transformer layer: RMSNorm, GQA attention (SDPA, causal), RMSNorm, top-k MoE MLP
    (SwiGLU experts, tokens gathered per expert with index_select / index_add_)."""

    def __init__(self, hidden, hq, hkv, d, experts, top_k, ffn):
        super().__init__()
        self.hq, self.hkv, self.d, self.top_k = hq, hkv, d, top_k
        self.n1 = torch.nn.RMSNorm(hidden)
        self.n2 = torch.nn.RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, (hq + 2 * hkv) * d, bias=False)
        self.o = torch.nn.Linear(hq * d, hidden, bias=False)
        self.router = torch.nn.Linear(hidden, experts, bias=False)
        self.w_gu = torch.nn.Parameter(torch.randn(experts, hidden, 2 * ffn) * hidden ** -0.5)
        self.w_d = torch.nn.Parameter(torch.randn(experts, ffn, hidden) * ffn ** -0.5)

    def forward(self, x):
        b, s, h = x.shape
        y = self.qkv(self.n1(x)).view(b, s, self.hq + 2 * self.hkv, self.d).transpose(1, 2)
        q, k, v = y.split([self.hq, self.hkv, self.hkv], dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, self.hq * self.d))
        t = self.n2(x).view(b * s, h)
        w, e = torch.topk(torch.softmax(self.router(t).float(), dim=-1), self.top_k, dim=-1)
        out = torch.zeros_like(t)
        flat_e = e.view(-1)
        flat_tok = torch.arange(b * s, device=x.device).repeat_interleave(self.top_k)
        flat_w = w.view(-1).to(t.dtype)
        for ex in range(self.w_gu.shape[0]):
            sel = (flat_e == ex).nonzero(as_tuple=True)[0]
            tok = flat_tok.index_select(0, sel)
            xin = t.index_select(0, tok)
            g, u = (xin @ self.w_gu[ex]).chunk(2, dim=-1)
            yo = (F.silu(g) * u) @ self.w_d[ex]
            out.index_add_(0, tok, yo * flat_w.index_select(0, sel).unsqueeze(1))
        return x + out.view(b, s, h)


def train_part(args, writer):
    # a small model of Qwen3's head layout at a reduced width (our own choice of sizes)
    cfgs = [dict(layers=4, hidden=1024, hq=16, hkv=4, d=64, experts=8, top_k=2, ffn=1024, seq=4096, batch=2),
            dict(layers=2, hidden=2048, hq=32, hkv=4, d=64, experts=16, top_k=4, ffn=768, seq=8192, batch=1)]
    if args.quick:
        cfgs = cfgs[:1]
    rows = []
    for ci, c in enumerate(cfgs):
        torch.manual_seed(ci)
        layers = torch.nn.ModuleList([MoeBlock(c["hidden"], c["hq"], c["hkv"], c["d"], c["experts"], c["top_k"], c["ffn"])
                                      for _ in range(c["layers"])]).cuda().to(torch.bfloat16)
        params = sum(p.numel() for p in layers.parameters())
        opt = torch.optim.AdamW(layers.parameters(), lr=1e-4)
        x0 = torch.randn(c["batch"], c["seq"], c["hidden"], device="cuda", dtype=torch.bfloat16)

        def step():
            x = x0
            for blk in layers:
                x = blk(x)
            loss = x.float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        step()  # creates the optimizer states
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        ms, _ = events_time_ms(step, 2, 5)
        peak = torch.cuda.max_memory_allocated()
        row = dict(c)
        row.update({"params": params, "step_ms": round(ms, 3), "allocated_before_step_bytes": base,
                    "peak_bytes": peak, "peak_over_base_bytes": peak - base})
        writer.writerow(row)
        rows.append(row)
        del layers, opt, x0
        torch.cuda.empty_cache()
    print("train: layers hidden seq batch params step_ms peak_GiB base_GiB")
    for r in rows:
        print("  %d %5d %5d %d %11d %9.3f %7.3f %7.3f" % (r["layers"], r["hidden"], r["seq"], r["batch"], r["params"],
                                                         r["step_ms"], r["peak_bytes"] / 2**30,
                                                         r["allocated_before_step_bytes"] / 2**30))


PARTS = {"attention": attention_part, "gemm": gemm_part, "launch": launch_part, "train": train_part}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the CSV files")
    ap.add_argument("--parts", default="attention,gemm,launch,train")
    ap.add_argument("--rounds", type=int, default=10, help="timed rounds per case (median)")
    ap.add_argument("--quick", action="store_true", help="a few shapes of each part (a smoke run)")
    a = ap.parse_args()
    parts = [p for p in a.parts.split(",") if p]
    for p in parts:
        if p not in PARTS:
            sys.exit(f"measure_step_parts.py: --parts: unknown part '{p}' (known: {', '.join(PARTS)})")
    if a.rounds < 1:
        sys.exit("measure_step_parts.py: --rounds must be at least 1")
    if not torch.cuda.is_available():
        sys.exit("measure_step_parts.py: no CUDA device")
    os.makedirs(a.out, exist_ok=True)
    p = torch.cuda.get_device_properties(0)
    print(f"device: {p.name}, {p.multi_processor_count} SMs, {p.total_memory / 2**30:.1f} GiB; torch {torch.__version__}")
    for name in parts:
        path = os.path.join(a.out, name + ".csv")
        with open(path, "w", newline="") as f:
            w = None

            class Lazy:
                def writerow(self, row):
                    nonlocal w
                    if w is None:
                        w = csv.DictWriter(f, fieldnames=list(row))
                        w.writeheader()
                    w.writerow(row)
            t0 = time.time()
            PARTS[name](a, Lazy())
            print(f"{name}: {time.time() - t0:.1f} s -> {path}")


if __name__ == "__main__":
    main()
