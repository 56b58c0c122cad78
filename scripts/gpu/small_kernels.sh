#!/usr/bin/env bash
# The ring layer's work around its passes, timed by `moehub-gpu run` at several sizes:
# the router, the pairs' permutation, the counts exchange (the gap it leaves on the GPU and
# the host's wall time in it), the router's backward, and the whole layer. One CSV row per
# run on stdout; with a second binary (another build) the two alternate size by size.
#   scripts/gpu/small_kernels.sh BIN [BIN_BASE]
# EPS (default "1 2": one rank alone, two folded on one GPU) and TOKENS (default "2048 4096
# 8192 16384 32768 49152") and SCHEDULES (default ring-expert) choose the runs; the ring is
# the one of the two-GPU measurements (docs/results/multi-gpu.md): fp32 accumulators, whole
# hops, Qwen3's shape. host_issue_us: when the host had launched everything (near the layer
# time, the host sets the pace). EXTRA: more `run` arguments for every run (say "--gemm
# streams --ffn 2048").
set -u
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN_BASE]" >&2; exit 2; }
BINS=("$1")
NAMES=(new)
if [ $# -ge 2 ]; then BINS+=("$2"); NAMES+=(base); fi
. "$(dirname "$0")/run_output.sh"
ph() { run_phase_us "$out" "$1"; }  # of the last run
echo "build,schedule,ep,tokens_per_rank,router_us,permute_us,counts_exchange_gap_us,counts_exchange_host_us,router_backward_us,layer_us,host_issue_us"
for sched in ${SCHEDULES:-ring-expert}; do
  for ep in ${EPS:-1 2}; do
    for t in ${TOKENS:-2048 4096 8192 16384 32768 49152}; do
      for i in "${!BINS[@]}"; do
        out=$("${BINS[$i]}" run --schedule "$sched" --ep "$ep" --tokens "$t" --iters 5 --ring-accum fp32 \
              --hop-chunk-rows 0 ${EXTRA:-} 2>&1) || { echo "${NAMES[$i]},$sched,$ep,$t,FAILED" ; echo "$out" | tail -5 >&2; continue; }
        echo "${NAMES[$i]},$sched,$ep,$t,$(ph router),$(ph permute),$(ph counts_exchange),$(ph counts_exchange_host_sync),$(ph router_backward),$(run_layer_us "$out"),$(run_host_issue_us "$out")"
      done
    done
  done
done
