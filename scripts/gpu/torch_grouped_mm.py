#!/usr/bin/env python3
"""Expert-GEMM throughput of torch._grouped_mm on the shapes moehub-gpu bench-gemm uses.

Same shapes: tokens * top_k rows split evenly over the experts (the remainder one row
each to the first experts), bf16 inputs, bf16 output; gate+up as one grouped product
with N = 2F (the same FLOPs as moehub's two F-wide groups per expert), down with N = H.
Timed with CUDA events, the four cases of a model round-robin (one call of each per
round, 20 rounds after 5 warm-up rounds, median per case: the GPU's clock drift is
shared by all cases), random inputs (never zeros). Also a dense torch.mm of the same
FLOPs. Prints one line per shape.
"""
import argparse
import statistics
import sys

import torch

MODELS = {  # hidden, ffn, experts, top_k (public model configs)
    "mixtral-8x7b": (4096, 14336, 8, 2),
    "qwen3-30b-a3b": (2048, 768, 128, 8),
    "qwen1.5-moe-a2.7b": (2048, 1408, 60, 4),
}


def round_robin_us(fns, warm=5, reps=20):
    times = [[] for _ in fns]
    for r in range(warm + reps):
        for i, fn in enumerate(fns):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            if r >= warm:
                times[i].append(a.elapsed_time(b) * 1e3)
    return [statistics.median(t) for t in times]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--models", default=",".join(MODELS))
    args = p.parse_args()
    if not hasattr(torch, "_grouped_mm"):
        print("torch._grouped_mm is not available in torch", torch.__version__)
        return 1
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, tokens {args.tokens}")
    for name in args.models.split(","):
        H, F, E, k = MODELS[name]
        total = args.tokens * k
        rows = [total // E + (1 if i < total % E else 0) for i in range(E)]
        offs = torch.tensor(rows, dtype=torch.int32, device=dev).cumsum(0).to(torch.int32)
        x = (torch.rand(total, H, device=dev, dtype=torch.bfloat16) * 2 - 1)
        a = (torch.rand(total, F, device=dev, dtype=torch.bfloat16) * 2 - 1)
        # weights stored [E][N][K] and viewed as [E][K][N]: the layout _grouped_mm prefers for mat_b
        w_gu = ((torch.rand(E, 2 * F, H, device=dev, dtype=torch.bfloat16) * 2 - 1) * 0.02).transpose(-2, -1)
        w_dn = ((torch.rand(E, H, F, device=dev, dtype=torch.bfloat16) * 2 - 1) * 0.02).transpose(-2, -1)
        flops_gu = 2.0 * total * 2 * F * H
        flops_dn = 2.0 * total * F * H
        wd1 = (torch.rand(H, 2 * F, device=dev, dtype=torch.bfloat16) * 2 - 1) * 0.02
        wd2 = (torch.rand(F, H, device=dev, dtype=torch.bfloat16) * 2 - 1) * 0.02
        try:
            t_gu, t_dn, t1, t2 = round_robin_us([
                lambda: torch._grouped_mm(x, w_gu, offs=offs, out_dtype=torch.bfloat16),
                lambda: torch._grouped_mm(a, w_dn, offs=offs, out_dtype=torch.bfloat16),
                lambda: torch.mm(x, wd1),
                lambda: torch.mm(a, wd2)])
        except RuntimeError as e:
            print(f"{name:18s} torch._grouped_mm failed: {e}")
            continue
        print(f"{name:18s} torch._grouped_mm       gate+up {t_gu:9.1f} us {flops_gu / t_gu * 1e-6:7.1f} TFLOP/s | "
              f"down {t_dn:9.1f} us {flops_dn / t_dn * 1e-6:7.1f} TFLOP/s")
        print(f"{name:18s} torch.mm dense          gate+up {t1:9.1f} us {flops_gu / t1 * 1e-6:7.1f} TFLOP/s | "
              f"down {t2:9.1f} us {flops_dn / t2 * 1e-6:7.1f} TFLOP/s")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
