#!/usr/bin/env python3
"""Point-to-point bandwidth and latency between the GPUs of one machine, and NCCL
all-to-all times, as CSV on stdout (one line per measurement):

  kind,src,dst,bytes,iters,time_us,gbps

kinds: ce_uni (copy engine, one direction: dst.copy_(src) across devices),
ce_bidir (both directions at once, time of the pair, gbps per direction),
nccl_uni (ncclSend/ncclRecv, one direction), nccl_pingpong (half of a round trip),
nccl_bidir (both ranks send and receive at once), a2a (all_to_all_single with `bytes`
in total per GPU, split evenly over the GPUs). Times are host wall time over `iters`
back-to-back operations after warm-up, so small sizes include launch overheads.

  python3 scripts/gpu/p2p_bench.py            # all GPUs of the machine
  python3 scripts/gpu/p2p_bench.py --a2a-only --repeat 5 --a2a-sizes 2M,4M,8M,16M,32M
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [8, 256, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
A2A_SIZES = [512 << 10, 2 << 20, 8 << 20, 32 << 20, 128 << 20, 256 << 20]


def iters_for(n):
    return 200 if n <= (64 << 10) else (50 if n <= (16 << 20) else 10)


def line(kind, src, dst, n, iters, secs):
    us = secs / iters * 1e6
    print(f"{kind},{src},{dst},{n},{iters},{us:.3f},{n / (us * 1e3):.3f}", flush=True)


def copy_engine(ngpu):
    for i in range(ngpu):
        for j in range(ngpu):
            if i == j:
                continue
            for n in SIZES:
                a = torch.randint(0, 255, (n,), dtype=torch.uint8, device=f"cuda:{i}")
                b = torch.empty(n, dtype=torch.uint8, device=f"cuda:{j}")
                it = iters_for(n)
                for _ in range(3):
                    b.copy_(a)
                torch.cuda.synchronize(i); torch.cuda.synchronize(j)
                t0 = time.perf_counter()
                for _ in range(it):
                    b.copy_(a, non_blocking=True)
                torch.cuda.synchronize(i); torch.cuda.synchronize(j)
                line("ce_uni", i, j, n, it, time.perf_counter() - t0)
    if ngpu >= 2:
        for n in SIZES[4:]:
            a0 = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda:0")
            a1 = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda:1")
            b0 = torch.empty_like(a0); b1 = torch.empty_like(a1)
            s0 = torch.cuda.Stream(device=0); s1 = torch.cuda.Stream(device=1)
            it = iters_for(n)
            torch.cuda.synchronize(0); torch.cuda.synchronize(1)
            t0 = time.perf_counter()
            for _ in range(it):
                with torch.cuda.stream(s0):
                    b1.copy_(a0, non_blocking=True)
                with torch.cuda.stream(s1):
                    b0.copy_(a1, non_blocking=True)
            torch.cuda.synchronize(0); torch.cuda.synchronize(1)
            line("ce_bidir", 0, 1, n, it, time.perf_counter() - t0)


REPEAT = 1
A2A_ONLY = False


def nccl_worker(rank, world, a2a_sizes, repeat, a2a_only):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29517", rank=rank, world_size=world)
    dev = torch.device("cuda", rank)
    peer = 1 - rank if world == 2 else (rank + 1) % world

    def timed(fn, it):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(it):
            fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    if world >= 2 and not a2a_only:
        for n in SIZES:
            buf = torch.randint(0, 255, (n,), dtype=torch.uint8, device=dev)
            rbuf = torch.empty_like(buf)
            it = iters_for(n)
            if rank in (0, 1):
                other = 1 - rank
                def uni():
                    if rank == 0:
                        dist.send(buf, other)
                    else:
                        dist.recv(rbuf, other)
                def ping():
                    if rank == 0:
                        dist.send(buf, other); dist.recv(rbuf, other)
                    else:
                        dist.recv(rbuf, other); dist.send(buf, other)
            else:
                uni = ping = lambda: None
            secs = timed(uni, it)
            if rank == 1:
                line("nccl_uni", 0, 1, n, it, secs)
            secs = timed(ping, it)
            if rank == 0:
                line("nccl_pingpong", 0, 1, n, it, secs / 2)

            def bidir():
                ops = [dist.P2POp(dist.isend, buf, (rank + 1) % world),
                       dist.P2POp(dist.irecv, rbuf, (rank - 1) % world)]
                for r in dist.batch_isend_irecv(ops):
                    r.wait()
            secs = timed(bidir, it)
            if rank == 0:
                line("nccl_bidir", rank, (rank + 1) % world, n, it, secs)
    for _ in range(repeat):
        for n in a2a_sizes:
            n -= n % world
            inp = torch.randint(0, 255, (n,), dtype=torch.uint8, device=dev)
            out = torch.empty_like(inp)
            it = iters_for(n)
            secs = timed(lambda: dist.all_to_all_single(out, inp), it)
            if rank == 0:
                line("a2a", "all", "all", n, it, secs)
    dist.destroy_process_group()


def parse_size(t):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(t[:-1]) * mult[t[-1]] if t[-1] in mult else int(t)


def main():
    global A2A_SIZES, REPEAT, A2A_ONLY
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "--a2a-only":
            A2A_ONLY = True
        elif a == "--repeat":
            REPEAT = int(args.pop(0))
        elif a == "--a2a-sizes":
            A2A_SIZES = [parse_size(t) for t in args.pop(0).split(",")]
        else:
            print(f"p2p_bench: unknown argument {a}", file=sys.stderr)
            return 2
    ngpu = torch.cuda.device_count()
    print(f"# {ngpu} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"peer access 0->1: {torch.cuda.can_device_access_peer(0, 1) if ngpu > 1 else 'n/a'}", flush=True)
    print("kind,src,dst,bytes,iters,time_us,gbps", flush=True)
    if not A2A_ONLY:
        copy_engine(ngpu)
    if ngpu >= 2:
        mp.spawn(nccl_worker, args=(ngpu, A2A_SIZES, REPEAT, A2A_ONLY), nprocs=ngpu, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
