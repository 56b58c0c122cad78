#!/usr/bin/env python3
"""Time Megatron-Core's unpermutation kernels alone on one GPU, per model and size.

Megatron-Core's MoEAlltoAllTokenDispatcher.combine_postprocess (commit d98e8a6, the one
docs/results/megatron-h200.md measured) calls unpermute() without probabilities: a
torch.zeros of the output, then output.scatter_add_(0, sorted_indices expanded, tokens).
This script builds the same tensors (a random top-k routing, sorted_indices as
Megatron-Core's permute() builds them, bf16 expert outputs) and times, with CUDA events,
median over --iters:

  hot    the expert outputs written by a copy just before (as the unsort that precedes the
         phase writes them), then zeros + scatter_add_
  cold   a 1 GiB scrub written just before instead (the L2 holds none of the inputs), then
         zeros + scatter_add_
  scatter_hot  scatter_add_ alone, inputs hot

Rates are GB/s of all the bytes the megatron schedule counts for the phase (T k H 2 of
expert outputs and T k 4 of gate weights read, T H 2 of tokens written); the schedule's
MegatronProfile::unpermute_add_gbps counts the T k H 2 alone, since the times show the
scatter-add following its element adds. Writes a CSV (--csv) and prints a table.
"""
import argparse
import csv
import statistics
import sys

MODELS = {  # configs/models: hidden, experts, top-k
    "mixtral-8x7b": (4096, 8, 2),
    "qwen1.5-moe-a2.7b": (2048, 60, 4),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+",
                    default=[128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    if a.iters < 3 or min(a.tokens) < 1:
        ap.error("--iters must be at least 3 and every --tokens at least 1")
    import torch
    if not torch.cuda.is_available():
        sys.exit("scatter_add_rate: no CUDA device")
    dev = torch.device("cuda")
    torch.manual_seed(1)
    scrub = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    rows = []
    for model in a.models:
        H, E, k = MODELS[model]
        for T in a.tokens:
            logits = torch.randn(T, E, device=dev)
            top = logits.topk(k, dim=1).indices
            routing_map = torch.zeros(T, E, dtype=torch.bool, device=dev).scatter_(1, top, True)
            # as Megatron-Core's permute(): token indices in expert-major order
            token_indices = torch.arange(T, device=dev).unsqueeze(0).expand(E, -1)
            sorted_indices = token_indices.masked_select(routing_map.T.contiguous())
            src = torch.randn(T * k, H, dtype=torch.bfloat16, device=dev)
            tokens = torch.empty_like(src)
            index = sorted_indices.unsqueeze(1).expand(-1, H)

            def phase():
                out = torch.zeros(T, H, dtype=tokens.dtype, device=dev)
                out.scatter_add_(0, index, tokens)
                return out

            # correctness against an index_add in float32
            tokens.copy_(src)
            ref = torch.zeros(T, H, dtype=torch.float32, device=dev).index_add_(0, sorted_indices, src.float())
            err = ((phase().float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                sys.exit(f"scatter_add_rate: {model} {T}: relative error {err:.3g}")
            times = {"hot": [], "cold": [], "scatter_hot": []}
            for it in range(a.iters + 3):
                for variant in times:
                    if variant == "cold":
                        scrub.fill_(it & 0xFF)
                    else:
                        tokens.copy_(src)
                    if variant == "scatter_hot":
                        out = torch.zeros(T, H, dtype=tokens.dtype, device=dev)
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    if variant == "scatter_hot":
                        out.scatter_add_(0, index, tokens)
                    else:
                        phase()
                    e1.record()
                    e1.synchronize()
                    if it >= 3:
                        times[variant].append(e0.elapsed_time(e1) * 1e3)
            counted = T * k * H * 2 + T * H * 2 + T * k * 4
            row = {"model": model, "tokens": T, "counted_bytes": counted, "rel_err": f"{err:.2e}"}
            for variant, t in times.items():
                med = statistics.median(t)
                row[f"{variant}_us"] = f"{med:.2f}"
                row[f"{variant}_gbps"] = f"{counted / med / 1e3:.0f}"
            rows.append(row)
            print(" ".join(f"{key}={val}" for key, val in row.items()), flush=True)
    with open(a.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__}")


if __name__ == "__main__":
    main()
