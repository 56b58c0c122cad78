#!/usr/bin/env bash
# Repeats the NCCL all-to-all measurement over a finer size grid (to check the
# calibration points of configs/systems/hgx-h200-x2.yaml), and checks that the
# GPU-only build passes with warnings as errors on the machine's compiler.
set -u
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/out-a2a}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
timeout 120 python3 scripts/gpu/p2p_bench.py --a2a-only --repeat 3 \
  --a2a-sizes 512K,1M,2M,4M,8M,12M,16M,24M,32M,64M,128M,256M > "$OUT/a2a.csv" 2> "$OUT/a2a.err"
echo "a2a rc=$?"
t0=$(date +%s)
timeout 150 bash -c "cmake -S . -B /tmp/bw -DMOEHUB_GPU_ONLY=ON -DMOEHUB_CUDA=ON -DCMAKE_BUILD_TYPE=Release > '$OUT/werror.log' 2>&1 && cmake --build /tmp/bw -j$(nproc) >> '$OUT/werror.log' 2>&1"
echo "werror build rc=$? in $(( $(date +%s) - t0 )) s ($(g++ --version | head -1))"
grep -E "error|warning" "$OUT/werror.log" | head -20
