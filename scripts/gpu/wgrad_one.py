#!/usr/bin/env python3
"""One call of moehub's weight-gradient kernel (beta 0, fp32 or bf16 C) on a run of a model's experts,
between cudaProfilerStart and cudaProfilerStop, for a profiler:

  ncu --profile-from-start off --clock-control none --section SpeedOfLight \\
      python3 scripts/gpu/wgrad_one.py --model qwen3-30b-a3b --routing skewed --experts 64:128

Shapes, rows per expert and random inputs as in torch_grouped_mm.py (16,384 tokens); one
warm-up call before the profiled one. --gemm gate-up ([H][2F]) or down ([F][H]); --out fp32
(default) or bf16, the type of C. MOEHUB_WGRAD_* in the environment force the kernel's
schedule and tile order as in torch_grouped_mm.py --wgrad-variants.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_grouped_mm import expert_rows, load_moehub, model_shape, moehub_wgrad_call  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="qwen3-30b-a3b")
    p.add_argument("--routing", choices=["balanced", "skewed"], default="skewed")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--experts", default="", help="FIRST:END, the experts [FIRST, END) (default: all)")
    p.add_argument("--gemm", choices=["gate-up", "down"], default="gate-up")
    p.add_argument("--out", choices=["fp32", "bf16"], default="fp32", help="the type of C")
    p.add_argument("--moehub-lib", default="")
    args = p.parse_args()
    H, F, E, k = model_shape(args.model)
    rows = expert_rows(args.tokens * k, E, args.routing)
    e0, e1 = (int(v) for v in args.experts.split(":")) if args.experts else (0, E)
    if not 0 <= e0 < e1 <= E:
        raise SystemExit(f"--experts {args.experts}: need 0 <= FIRST < END <= {E}")
    part = rows[e0:e1]
    moehub = load_moehub(args.moehub_lib)
    if not moehub:
        raise SystemExit("moehub grouped GEMM library not found (build the gpu preset)")
    m, n = (H, 2 * F) if args.gemm == "gate-up" else (F, H)
    dev = torch.device("cuda")
    a = torch.rand(sum(part), m, device=dev, dtype=torch.bfloat16) * 2 - 1
    b = torch.rand(sum(part), n, device=dev, dtype=torch.bfloat16) * 2 - 1
    c = torch.empty(e1 - e0, m, n, device=dev, dtype=torch.float32 if args.out == "fp32" else torch.bfloat16)
    run = moehub_wgrad_call(moehub[0], a, b, c, part)
    run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{args.model} {args.routing} {args.gemm} experts {e0}..{e1 - 1} ({min(part)}..{max(part)} rows, "
          f"{sum(part)} in all), m {m}, n {n}: one call profiled, "
          f"{2.0 * sum(part) * m * n / 1e9:.1f} GFLOP, C {args.out} {c.numel() * c.element_size() / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
