#!/usr/bin/env python3
"""Expert-GEMM throughput of torch._grouped_mm on the shapes moehub-gpu bench-gemm uses,
and of moehub's grouped GEMM kernel (libmoehub_gemm_capi.so, loaded with ctypes) in the
same process, on the same tensors and stream.

Same shapes: tokens * top_k rows split evenly over the experts (the remainder one row
each to the first experts), bf16 inputs, bf16 output; gate+up as one grouped product
with N = 2F (the same FLOPs as moehub's two F-wide groups per expert), down with N = H.
Timed with CUDA events, the four cases of a model round-robin (one call of each per
round, 20 rounds after 5 warm-up rounds, median per case: the GPU's clock drift is
shared by all cases; each round in a new seeded order, and a spin kernel before each
case so that its launch is not timed: --round-order, --busy-cycles), random inputs
(never zeros). Also a dense torch.mm of the same FLOPs. Prints one line per shape.
With the moehub library (found under build/*/kernels or given by --moehub-lib) two more
cases join the same rounds: the kernel on torch's own
tensors (B stored [E][N][K]) and on the layer's layout (B stored [E][K][N]); each of its
outputs is checked against torch._grouped_mm's (largest difference relative to the
largest value).

Weight gradients (--gemms wgrad, on by default): dWgu_e = X_e^T dGU_e ([H][2F]) and
dWd_e = A_e^T dY_e ([F][H]) per expert, reduced over each expert's rows. torch's grouped
call for them is torch._grouped_mm with two 2-D operands, mat_a = X^T (a [H][rows] view
of X) and mat_b = dGU, offs along the rows (the reduction); it returns [E][H][2F] in bf16
(and in fp32 where out_dtype=torch.float32 is accepted; the script says which). Beside it:
a loop of torch.mm per expert into a preallocated [E][H][2F] bf16 tensor, a dense torch.mm
of the same FLOPs (X^T dGU over all rows), and moehub's weight-gradient kernel on the same
tensors into bf16 and into fp32 (beta 0), its outputs checked against torch's.
"""
import argparse
import ctypes
import glob
import math
import os
import random
import statistics
import sys

import torch

DEFAULT_MODELS = "mixtral-8x7b,qwen3-30b-a3b,qwen1.5-moe-a2.7b"
MODELS_DIR = os.environ.get(
    "MOEHUB_MODELS_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "configs", "models"))


def model_shape(name):
    """(hidden, ffn, experts, top_k) from configs/models/<name>.yaml, as moehub-gpu bench-gemm reads them."""
    path = os.path.join(MODELS_DIR, name + ".yaml")
    kv = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.split("#", 1)[0].partition(":")
            if sep:
                kv[key.strip()] = value.strip()
    try:
        return tuple(int(kv[k]) for k in ("hidden_size", "expert_ffn_size", "num_experts", "top_k"))
    except (KeyError, ValueError) as e:
        raise SystemExit(f"{path}: hidden_size, expert_ffn_size, num_experts and top_k must be integers ({e})")


def expert_rows(total, experts, routing):
    """Rows per expert: even split, or in proportion to (e + 1)^-0.5 (moehub-gpu bench-gemm
    --routing skewed computes the same rows)."""
    if routing == "balanced":
        return [total // experts + (1 if i < total % experts else 0) for i in range(experts)]
    w = [math.pow(e + 1, -0.5) for e in range(experts)]
    s = 0.0
    for x in w:
        s += x
    rows = [int(math.floor(total * x / s)) for x in w]
    for i in range(total - sum(rows)):
        rows[i % experts] += 1
    return rows


# How round_robin_us orders the cases of a round and whether the GPU is kept busy while a
# case is launched (set from the command line: --round-order, --busy-cycles). On an H100
# (docs/results/gpu-h200.md, run W29, three calls), identical kernel calls in several slots
# of one process read 0.4-0.8 % apart on average with these defaults, 1.0-1.3 % in a fixed
# order without the spin (up to 4.3 %).
ROUND_ORDER = "shuffled"
BUSY_CYCLES = 200000  # about 100-120 us at the H100's and H200's 1.7-1.98 GHz: longer than a launch


def round_robin_us(fns, warm=5, reps=20):
    """Median time (us) of each of fns over `reps` rounds after `warm` warm-up rounds, one
    call of each per round, CUDA events around each call. ROUND_ORDER "fixed" calls them in
    list order every round, so each case always follows the same one; "shuffled" draws a
    new order for every round (seeded: the same orders in every run), so that no case's
    time carries what its predecessor leaves behind (the GPU's clocks and power state).
    BUSY_CYCLES > 0 puts a spin kernel of that many GPU cycles before the start event, so
    the host's launch of the case happens while the GPU is busy and is not timed."""
    times = [[] for _ in fns]
    order = list(range(len(fns)))
    rng = random.Random(20261207)
    for r in range(warm + reps):
        if ROUND_ORDER == "shuffled":
            rng.shuffle(order)
        for i in order:
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            if BUSY_CYCLES > 0:
                torch.cuda._sleep(BUSY_CYCLES)
            a.record()
            fns[i]()
            b.record()
            b.synchronize()
            if r >= warm:
                times[i].append(a.elapsed_time(b) * 1e3)
    return [statistics.median(t) for t in times]


def load_moehub(path):
    if not path:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        found = sorted(glob.glob(os.path.join(root, "build", "*", "kernels", "libmoehub_gemm_capi.so")))
        path = found[0] if found else None
    if not path:
        return None
    lib = ctypes.CDLL(path)
    lib.moehub_grouped_gemm_bf16.restype = ctypes.c_int
    lib.moehub_grouped_gemm_bf16.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                                             ctypes.c_longlong, ctypes.c_int, ctypes.POINTER(ctypes.c_longlong),
                                             ctypes.c_int, ctypes.c_void_p]
    lib.moehub_grouped_gemm_unsupported.restype = ctypes.c_int
    lib.moehub_grouped_gemm_unsupported.argtypes = lib.moehub_grouped_gemm_bf16.argtypes[:8] + [ctypes.c_char_p,
                                                                                              ctypes.c_int]
    if hasattr(lib, "moehub_grouped_gemm_wgrad"):
        lib.moehub_grouped_gemm_wgrad.restype = ctypes.c_int
        lib.moehub_grouped_gemm_wgrad.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong,
                                                  ctypes.c_longlong, ctypes.c_int, ctypes.c_float,
                                                  ctypes.POINTER(ctypes.c_longlong), ctypes.c_int, ctypes.c_void_p]
        lib.moehub_grouped_gemm_wgrad_unsupported.restype = ctypes.c_int
        lib.moehub_grouped_gemm_wgrad_unsupported.argtypes = lib.moehub_grouped_gemm_wgrad.argtypes[:9] + [
            ctypes.c_char_p, ctypes.c_int]
    return lib, path


def moehub_call(lib, a, b, c, n, k, b_nk, rows):
    """A closure that enqueues moehub's grouped GEMM on torch's current stream."""
    arr = (ctypes.c_longlong * len(rows))(*rows)
    args = (a.data_ptr(), b.data_ptr(), c.data_ptr(), n, k, 1 if b_nk else 0, arr, len(rows))
    why = ctypes.create_string_buffer(256)
    if lib.moehub_grouped_gemm_unsupported(*args, why, 256):
        raise RuntimeError("moehub grouped GEMM refused the call: " + why.value.decode())

    def run():
        err = lib.moehub_grouped_gemm_bf16(*args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if err:
            raise RuntimeError(f"moehub grouped GEMM launch failed: cudaError {err}")
    return run


def moehub_wgrad_call(lib, a, b, c, rows):
    """A closure that enqueues moehub's weight-gradient grouped GEMM C_e = A_e^T B_e
    (beta 0) on torch's current stream; a: [rows][m], b: [rows][n], c: [E][m][n]."""
    arr = (ctypes.c_longlong * len(rows))(*rows)
    args = (a.data_ptr(), b.data_ptr(), c.data_ptr(), a.shape[1], b.shape[1], 1 if c.dtype == torch.float32 else 0,
            0.0, arr, len(rows))
    why = ctypes.create_string_buffer(256)
    if lib.moehub_grouped_gemm_wgrad_unsupported(*args, why, 256):
        raise RuntimeError("moehub weight-gradient GEMM refused the call: " + why.value.decode())

    def run():
        err = lib.moehub_grouped_gemm_wgrad(*args, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if err:
            raise RuntimeError(f"moehub weight-gradient GEMM launch failed: cudaError {err}")
    return run


def torch_wgrad_call(a, b, offs, out_dtype):
    """torch._grouped_mm(a^T, b, offs) with the reduction along offs; returns the closure,
    or None when torch refuses out_dtype."""
    fn = lambda: torch._grouped_mm(a.t(), b, offs=offs, out_dtype=out_dtype)
    try:
        fn()
        torch.cuda.synchronize()
    except (RuntimeError, TypeError, ValueError) as e:
        print(f"  torch._grouped_mm(X^T, dY, offs, out_dtype={out_dtype}) refused: {str(e).splitlines()[0]}")
        return None
    return fn


def torch_loop_call(a, b, rows, out):
    """One torch.mm per expert into out[e] (bf16): the per-expert equivalent."""
    bounds = []
    s = 0
    for r in rows:
        bounds.append((s, s + r))
        s += r

    def run():
        for e, (lo, hi) in enumerate(bounds):
            torch.mm(a[lo:hi].t(), b[lo:hi], out=out[e])
    return run


WGRAD_KNOBS = ("schedule", "order", "bf16_epilogue", "split_rows")


def with_env(env, fn):
    """fn with the environment variables of env set for its calls."""
    def run():
        os.environ.update(env)
        try:
            fn()
        finally:
            for key in env:
                os.environ.pop(key, None)
    return run


def parse_wgrad_variant(variant):
    """A variant of the weight-gradient kernel, NAME=VALUE[:NAME=VALUE...] with NAME one of
    WGRAD_KNOBS (the kernel reads MOEHUB_WGRAD_<NAME> at every call; docs/gpu.md lists the
    values) or out=fp32|bf16 (the type of C, fp32 by default): (type of C, environment)."""
    out, env = "fp32", {}
    for field in variant.split(":"):
        name, sep, value = field.partition("=")
        if sep and name == "out":
            if value not in ("fp32", "bf16"):
                raise SystemExit(f"--wgrad-variants: '{field}': out must be fp32 or bf16")
            out = value
        elif sep and name in WGRAD_KNOBS:
            env["MOEHUB_WGRAD_" + name.upper()] = value
        else:
            raise SystemExit(f"--wgrad-variants: '{field}' is not NAME=VALUE with NAME one of "
                             f"{', '.join(WGRAD_KNOBS + ('out',))}")
    return out, env


def bench_wgrad(name, H, F, E, rows, moehub, dev, variants=(), parts=0):
    """Weight-gradient GEMMs of one model, all cases in the same rounds. variants: more
    cases of moehub's kernel with forced knobs (parse_wgrad_variant), into fp32 unless a
    variant says out=bf16;
    parts: also time moehub's kernel (fp32) and the dense torch.mm on `parts` runs of
    consecutive experts alone (skewed routing: the long experts first)."""
    total = sum(rows)
    offs = torch.tensor(rows, dtype=torch.int32, device=dev).cumsum(0).to(torch.int32)
    x = torch.rand(total, H, device=dev, dtype=torch.bfloat16) * 2 - 1
    dgu = torch.rand(total, 2 * F, device=dev, dtype=torch.bfloat16) * 2 - 1
    act = torch.rand(total, F, device=dev, dtype=torch.bfloat16) * 2 - 1
    dy = torch.rand(total, H, device=dev, dtype=torch.bfloat16) * 2 - 1
    flops_gu = 2.0 * total * 2 * F * H
    flops_dn = 2.0 * total * F * H
    labels, cases = [], []
    for dt, tag in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
        gu_fn, dn_fn = torch_wgrad_call(x, dgu, offs, dt), torch_wgrad_call(act, dy, offs, dt)
        if gu_fn and dn_fn:
            labels.append(f"torch._grouped_mm {tag}")
            cases += [gu_fn, dn_fn]
    loop_gu = torch.empty(E, H, 2 * F, device=dev, dtype=torch.bfloat16)
    loop_dn = torch.empty(E, F, H, device=dev, dtype=torch.bfloat16)
    labels.append("torch.mm loop bf16")
    cases += [torch_loop_call(x, dgu, rows, loop_gu), torch_loop_call(act, dy, rows, loop_dn)]
    labels.append("torch.mm dense bf16")
    cases += [lambda: torch.mm(x.t(), dgu), lambda: torch.mm(act.t(), dy)]
    outs = {}
    part_flops = {}  # label -> (gate+up, down) FLOPs of the cases on a run of experts
    if moehub and hasattr(moehub[0], "moehub_grouped_gemm_wgrad"):
        lib = moehub[0]
        try:
            more_labels, more_cases = [], []
            for dt, tag in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
                c_gu = torch.empty(E, H, 2 * F, device=dev, dtype=dt)
                c_dn = torch.empty(E, F, H, device=dev, dtype=dt)
                outs[tag] = (c_gu, c_dn)
                more_labels.append(f"moehub wgmma {tag}")
                more_cases += [moehub_wgrad_call(lib, x, dgu, c_gu, rows), moehub_wgrad_call(lib, act, dy, c_dn, rows)]
            labels += more_labels
            cases += more_cases
            var_labels, var_cases = [], []
            for v in variants:
                vt, venv = parse_wgrad_variant(v)
                vdt = torch.float32 if vt == "fp32" else torch.bfloat16
                c_gu = torch.empty(E, H, 2 * F, device=dev, dtype=vdt)
                c_dn = torch.empty(E, F, H, device=dev, dtype=vdt)
                outs["variant " + v] = (c_gu, c_dn, vt)
                var_labels.append(f"moehub {vt} {v}")
                var_cases += [with_env(venv, moehub_wgrad_call(lib, x, dgu, c_gu, rows)),
                              with_env(venv, moehub_wgrad_call(lib, act, dy, c_dn, rows))]
            labels += var_labels
            cases += var_cases
            part_labels, part_cases = [], []
            bounds = [0]
            for i in range(parts):
                bounds.append(E * (i + 1) // parts)
            for i in range(parts):
                e0, e1 = bounds[i], bounds[i + 1]
                r0, r1 = sum(rows[:e0]), sum(rows[:e1])
                prows = rows[e0:e1]
                c_gu = torch.empty(e1 - e0, H, 2 * F, device=dev, dtype=torch.float32)
                c_dn = torch.empty(e1 - e0, F, H, device=dev, dtype=torch.float32)
                xs, gs, as_, ys = x[r0:r1], dgu[r0:r1], act[r0:r1], dy[r0:r1]
                tag = f"experts {e0}..{e1 - 1} ({min(prows)}..{max(prows)} rows)"
                part_flops[f"part dense {tag}"] = part_flops[f"part moehub fp32 {tag}"] = (
                    2.0 * (r1 - r0) * 2 * F * H, 2.0 * (r1 - r0) * F * H)
                part_labels += [f"part dense {tag}", f"part moehub fp32 {tag}"]
                part_cases += [lambda xs=xs, gs=gs: torch.mm(xs.t(), gs), lambda as_=as_, ys=ys: torch.mm(as_.t(), ys),
                               moehub_wgrad_call(lib, xs, gs, c_gu, prows), moehub_wgrad_call(lib, as_, ys, c_dn, prows)]
            labels += part_labels
            cases += part_cases
        except (RuntimeError, OSError) as e:
            print(f"{name:18s} moehub weight-gradient GEMM not timed: {e}")
            outs = {}
    if outs:
        for fn in cases[labels.index("moehub wgmma bf16") * 2:]:
            fn()
        ref_gu = torch._grouped_mm(x.t(), dgu, offs=offs, out_dtype=torch.bfloat16)
        ref_dn = torch._grouped_mm(act.t(), dy, offs=offs, out_dtype=torch.bfloat16)
        # float64 of two experts (the largest and the smallest) for the fp32 output
        lo_e, hi_e = rows.index(min(rows)), rows.index(max(rows))
        starts = [0]
        for r in rows:
            starts.append(starts[-1] + r)
        f64 = []
        for e in (lo_e, hi_e):
            a64 = x[starts[e]:starts[e + 1]].double()
            b64 = dgu[starts[e]:starts[e + 1]].double()
            f64.append(rel_diff(outs["fp32"][0][e], a64.t() @ b64))
        torch.cuda.synchronize()
        print(f"{name:18s} wgrad moehub vs torch._grouped_mm (bf16 out), max |diff| / max |ref|: gate+up "
              f"{rel_diff(outs['bf16'][0], ref_gu):.2e}, down {rel_diff(outs['bf16'][1], ref_dn):.2e}; "
              f"moehub fp32 vs float64, gate+up experts {lo_e} ({rows[lo_e]} rows) / {hi_e} ({rows[hi_e]} rows): "
              f"{f64[0]:.2e} / {f64[1]:.2e}")
        for v in variants:
            gu, dn, vt = outs["variant " + v]
            print(f"{name:18s} wgrad moehub {v} vs the default {vt} output, max |diff| / max |ref|: gate+up "
                  f"{rel_diff(gu, outs[vt][0]):.2e}, down {rel_diff(dn, outs[vt][1]):.2e}")
    try:
        t = round_robin_us(cases)
    except RuntimeError as e:
        print(f"{name:18s} wgrad failed: {e}")
        return
    for i, label in enumerate(labels):
        t_gu, t_dn = t[2 * i], t[2 * i + 1]
        f_gu, f_dn = part_flops.get(label, (flops_gu, flops_dn))
        print(f"{name:18s} wgrad {label:22s}  gate+up {t_gu:9.1f} us {f_gu / t_gu * 1e-6:7.1f} TFLOP/s | "
              f"down {t_dn:9.1f} us {f_dn / t_dn * 1e-6:7.1f} TFLOP/s")
    sys.stdout.flush()


def rel_diff(x, ref):
    return ((x.float() - ref.float()).abs().max() / ref.float().abs().max()).item()


def main():
    global ROUND_ORDER, BUSY_CYCLES
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--models", default=DEFAULT_MODELS, help="names of configs/models/*.yaml")
    p.add_argument("--moehub-lib", default="", help="path of libmoehub_gemm_capi.so (default: build/*/kernels)")
    p.add_argument("--routing", choices=["balanced", "skewed"], default="balanced")
    p.add_argument("--gemms", default="fwd,wgrad", help="fwd (forward GEMMs), wgrad (weight gradients) or both")
    p.add_argument("--wgrad-variants", default="",
                   help="comma-separated variants of the weight-gradient kernel to time beside the default, each "
                        "NAME=VALUE[:NAME=VALUE...] with NAME one of " + ", ".join(WGRAD_KNOBS) +
                        " or out (fp32, the default, or bf16: the type of C), e.g. schedule=pingpong:order=stride "
                        "or out=bf16:bf16_epilogue=threads")
    p.add_argument("--wgrad-parts", type=int, default=0,
                   help="also time the weight gradients of this many runs of consecutive experts alone")
    p.add_argument("--round-order", choices=["fixed", "shuffled"], default=ROUND_ORDER,
                   help="the cases' order in each timing round: the same every round, or drawn anew (seeded)")
    p.add_argument("--busy-cycles", type=int, default=BUSY_CYCLES,
                   help="GPU cycles of a spin kernel before each timed case, so that its launch is not timed (0: none)")
    args = p.parse_args()
    if args.busy_cycles < 0:
        p.error(f"--busy-cycles must be >= 0 (got {args.busy_cycles})")
    ROUND_ORDER, BUSY_CYCLES = args.round_order, args.busy_cycles
    gemms = set(args.gemms.split(","))
    if not hasattr(torch, "_grouped_mm"):
        print("torch._grouped_mm is not available in torch", torch.__version__)
        return 1
    dev = torch.device("cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, tokens {args.tokens}, {args.routing} routing, "
          f"rounds in {ROUND_ORDER} order, busy cycles {BUSY_CYCLES}")
    try:
        moehub = load_moehub(args.moehub_lib)
    except OSError as e:
        print("moehub grouped GEMM library could not be loaded:", e)
        moehub = None
    print("moehub grouped GEMM:", moehub[1] if moehub else "library not found (build the gpu preset), not timed")
    for name in args.models.split(","):
        H, F, E, k = model_shape(name)
        total = args.tokens * k
        rows = expert_rows(total, E, args.routing)
        print(f"{name:18s} rows per expert: {min(rows)}..{max(rows)} ({args.routing})")
        if "wgrad" in gemms:
            variants = [v for v in args.wgrad_variants.split(",") if v]
            bench_wgrad(name, H, F, E, rows, moehub, dev, variants, args.wgrad_parts)
        if "fwd" not in gemms:
            continue
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
        cases = [lambda: torch._grouped_mm(x, w_gu, offs=offs, out_dtype=torch.bfloat16),
                 lambda: torch._grouped_mm(a, w_dn, offs=offs, out_dtype=torch.bfloat16),
                 lambda: torch.mm(x, wd1),
                 lambda: torch.mm(a, wd2)]
        labels = ["torch._grouped_mm", "torch.mm dense"]
        if moehub:
            try:
                lib = moehub[0]
                # the layer's layout: B stored [E][K][N]
                w_gu_kn = ((torch.rand(E, H, 2 * F, device=dev, dtype=torch.bfloat16) * 2 - 1) * 0.02)
                w_dn_kn = ((torch.rand(E, F, H, device=dev, dtype=torch.bfloat16) * 2 - 1) * 0.02)
                y_gu = torch.empty(total, 2 * F, device=dev, dtype=torch.bfloat16)
                y_dn = torch.empty(total, H, device=dev, dtype=torch.bfloat16)
                y_gu2 = torch.empty_like(y_gu)
                y_dn2 = torch.empty_like(y_dn)
                # torch's tensors: w_gu is a [E][K][N] view of [E][N][K] storage (data_ptr is the storage's start)
                assert w_gu.transpose(-2, -1).is_contiguous() and w_dn.transpose(-2, -1).is_contiguous()
                cases += [moehub_call(lib, x, w_gu, y_gu, 2 * F, H, True, rows),
                          moehub_call(lib, a, w_dn, y_dn, H, F, True, rows),
                          moehub_call(lib, x, w_gu_kn, y_gu2, 2 * F, H, False, rows),
                          moehub_call(lib, a, w_dn_kn, y_dn2, H, F, False, rows)]
                labels += ["moehub wgmma B[n][k]", "moehub wgmma B[k][n]"]
                # the layer's layout again with the thread-store epilogue (the kernel reads
                # MOEHUB_GEMM_EPILOGUE at every call), side by side with the default
                y_gu3 = torch.empty_like(y_gu)
                y_dn3 = torch.empty_like(y_dn)
                cases += [with_env({"MOEHUB_GEMM_EPILOGUE": "threads"},
                                   moehub_call(lib, x, w_gu_kn, y_gu3, 2 * F, H, False, rows)),
                          with_env({"MOEHUB_GEMM_EPILOGUE": "threads"},
                                   moehub_call(lib, a, w_dn_kn, y_dn3, H, F, False, rows))]
                labels += ["moehub B[k][n] threads"]
                # the kernel against torch._grouped_mm on the same inputs
                cases[4]()
                cases[5]()
                ref_gu = torch._grouped_mm(x, w_gu, offs=offs, out_dtype=torch.bfloat16)
                ref_dn = torch._grouped_mm(a, w_dn, offs=offs, out_dtype=torch.bfloat16)
                # the same values in the layout torch prefers
                ref_gu2 = torch._grouped_mm(x, w_gu_kn.transpose(-2, -1).contiguous().transpose(-2, -1), offs=offs,
                                            out_dtype=torch.bfloat16)
                ref_dn2 = torch._grouped_mm(a, w_dn_kn.transpose(-2, -1).contiguous().transpose(-2, -1), offs=offs,
                                            out_dtype=torch.bfloat16)
                cases[6]()
                cases[7]()
                cases[8]()
                cases[9]()
                torch.cuda.synchronize()
                print(f"{name:18s} moehub B[k][n], thread-store epilogue vs the default, max |diff| / max |ref|: "
                      f"gate+up {rel_diff(y_gu3, y_gu2):.2e}, down {rel_diff(y_dn3, y_dn2):.2e}")
                print(f"{name:18s} moehub vs torch._grouped_mm outputs, max |diff| / max |ref|: gate+up "
                      f"{rel_diff(y_gu, ref_gu):.2e} / {rel_diff(y_gu2, ref_gu2):.2e}, down "
                      f"{rel_diff(y_dn, ref_dn):.2e} / {rel_diff(y_dn2, ref_dn2):.2e} (B [n][k] / [k][n])")
            except (RuntimeError, OSError) as e:
                print(f"{name:18s} moehub grouped GEMM not timed: {e}")
                cases, labels = cases[:4], labels[:2]
        try:
            t = round_robin_us(cases)
        except RuntimeError as e:
            print(f"{name:18s} failed: {e}")
            continue
        for i, label in enumerate(labels):
            t_gu, t_dn = t[2 * i], t[2 * i + 1]
            print(f"{name:18s} {label:22s}  gate+up {t_gu:9.1f} us {flops_gu / t_gu * 1e-6:7.1f} TFLOP/s | "
                  f"down {t_dn:9.1f} us {flops_dn / t_dn * 1e-6:7.1f} TFLOP/s")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
