#!/usr/bin/env bash
# One call on a machine with several GPUs: build moehub-gpu (preset gpu), measure
# point-to-point bandwidth/latency and NCCL all-to-all (p2p_bench.py), then run the
# three schedules one rank per GPU over NCCL for the published configuration
# (H 2048, F 768, E 128, top-8) at two sequence lengths and a wider-expert variant.
# Everything is logged under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/out-multi}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
N=$(nvidia-smi -L | wc -l)
{ date -u +"date: %Y-%m-%dT%H:%M:%SZ"; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi nvlink -s 2>&1 | head -40; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s)
timeout 170 bash -c "cmake --preset gpu > '$OUT/build.log' 2>&1 && cmake --build --preset gpu -j$(nproc) --target moehub-gpu >> '$OUT/build.log' 2>&1"
echo "build rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
t0=$(date +%s)
timeout 100 python3 scripts/gpu/p2p_bench.py > "$OUT/p2p.csv" 2> "$OUT/p2p.err"
echo "p2p rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
BIN=build/gpu/host/gpu/moehub-gpu
run() {  # run <tag> <args...>
  local tag=$1; shift
  timeout 40 mpirun --allow-run-as-root -np "$N" -x NCCL_NVLS_ENABLE=0 "$BIN" run --transport nccl "$@" > "$OUT/run_$tag.txt" 2>&1
  echo "run $tag rc=$?: $(grep -h 'median\|peak device' "$OUT/run_$tag.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
}
for t in 16384 49152; do
  for s in a2a ring-expert ring-token; do run "${s}_t$t" --schedule "$s" --tokens "$t"; done
done
for s in a2a ring-expert ring-token; do run "${s}_f2048_t16384" --schedule "$s" --tokens 16384 --ffn 2048; done
