#!/usr/bin/env bash
# Builds moehub-gpu on the GPU machine (preset gpu) and runs the stages named on the
# command line, logging all of them to $OUT/log.txt (or ./out-gpu): build, check, sanitize,
# build-gemm, check-wgmma, gemm-test, gemm-test-fwd, gemm, gemm-fwd, gemm-skewed, gemm-wgrad, gemm-wgrad-bf16, check-wgrad-variants, racecheck-wgrad, gemm-wgrad-variants, gemm-wgrad-bf16-schedule, gemm-wgrad-split, gemm-wgrad-order, timing-method, ncu-wgrad, ncu-wgrad-bf16, run-wgrad, memory, memory-default, memory-options, hop, run, run-pub, rank-failure, tests, sanitize-kernels, small-kernels, launch-threads, coverage. Each stage has a time limit; a failing stage does not stop
# the others. The trace of `run` comes back as $OUT/trace.tar.gz.
#   scripts/gpu/device_run.sh build check sanitize gemm
set -u
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/out-gpu}"
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0   # leave NVLink multicast off on shared machines
BIN=build/gpu/host/gpu/moehub-gpu
# hardware counters of one weight-gradient call of skewed Qwen3's gate+up (add --experts, --out)
NCU_WGRAD="ncu --profile-from-start off --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats python3 scripts/gpu/wgrad_one.py --model qwen3-30b-a3b --routing skewed"
stage() {  # stage <name> <seconds> <command...>
  local name=$1 secs=$2; shift 2
  echo "=== $name: $*" | tee -a "$OUT/summary.log"
  local t0=$(date +%s)
  timeout "$secs" "$@" > "$OUT/stage.tmp" 2>&1
  local rc=$?
  { echo "=== $name: $*"; cat "$OUT/stage.tmp"; echo "=== $name: rc=$rc"; } >> "$OUT/log.txt"
  rm -f "$OUT/stage.tmp"
  echo "=== $name: rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.log"
  grep -v "^\[" "$OUT/log.txt" | sed -n "/^=== $name: /,\$p" | tail -n 30
  return 0
}
force_wgrad() {  # force_wgrad "<schedule> <order>": the weight-gradient kernel's knobs for the stages after it
  read -r MOEHUB_WGRAD_SCHEDULE MOEHUB_WGRAD_ORDER <<< "$1"
  export MOEHUB_WGRAD_SCHEDULE MOEHUB_WGRAD_ORDER
}
date -u +"date: %Y-%m-%dT%H:%M:%SZ" | tee -a "$OUT/summary.log"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/summary.log"
for s in "$@"; do
  case "$s" in
    build)
      stage build 400 bash -c "cmake --preset gpu && cmake --build --preset gpu -j16 && g++ --version | head -1" ;;
    build-gemm)  # only what the GEMM stages run: moehub-gpu, the GPU tests, the kernels' C API for the torch script
      stage build_gemm 300 bash -c "cmake --preset gpu && cmake --build build/gpu -j16 --target moehub-gpu gpu_harness_test moehub_gemm_capi" ;;
    check)
      stage check 300 "$BIN" check ;;
    check-wgmma)  # every expert GEMM of the layer on our kernels, whatever auto would choose
      stage check_wgmma 300 "$BIN" check --gemm wgmma ;;
    check-big)
      stage check_big 300 "$BIN" check --ep 1,8,16,32 --tokens 256 --hidden 512 --ffn 256 --experts 64 --top-k 8 ;;
    sanitize)
      stage memcheck 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN" check --ep 1,2 --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2
      stage racecheck 240 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN" check --ep 2 --routing skewed --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2 ;;
    gemm-test)  # the wgmma grouped GEMMs against cuBLAS, and their instructions in the SASS
      stage gemm_test 300 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuGemm.*:GpuLayer.*'
      stage gemm_sass 60 bash -c "cuobjdump -sass build/gpu/kernels/libmoehub_grouped_gemm.a | grep -oE 'HGMMA[.A-Z0-9x]*|UTMALDG[.A-Z0-9]*|USETMAXREG[.A-Z0-9]*' | sort | uniq -c" ;;
    gemm-test-fwd)  # the forward wgmma kernel against cuBLAS alone
      stage gemm_test_fwd 120 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuGemm.WgmmaMatchesCublas' ;;
    gemm)
      stage bench_gemm 200 "$BIN" bench-gemm
      stage torch_grouped_mm 200 python3 scripts/gpu/torch_grouped_mm.py ;;
    gemm-fwd)  # the forward GEMMs in the torch process alone, both routings
      stage torch_grouped_mm_fwd 200 python3 scripts/gpu/torch_grouped_mm.py --gemms fwd
      stage torch_grouped_mm_fwd_skewed 200 python3 scripts/gpu/torch_grouped_mm.py --gemms fwd --routing skewed ;;
    gemm-skewed)  # uneven experts: rows in proportion to (e + 1)^-0.5
      stage bench_gemm_skewed 200 "$BIN" bench-gemm --routing skewed
      stage torch_grouped_mm_skewed 200 python3 scripts/gpu/torch_grouped_mm.py --routing skewed ;;
    gemm-wgrad)  # the weight-gradient GEMMs alone, both routings, in the torch process
      stage torch_wgrad 150 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad
      stage torch_wgrad_skewed 150 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed ;;
    check-wgrad-variants)  # the weight-gradient kernel's schedule and tile order forced (MOEHUB_WGRAD_*) against cuBLAS, and in the layer against float64
      for v in "pingpong stride" "pingpong-64x256 snake" "cooperative snake"; do
        force_wgrad "$v"
        stage "gemm_test_${v// /_}" 120 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuGemm.Wgrad*'
      done
      force_wgrad "pingpong stride"
      stage check_wgmma_pingpong_stride 200 "$BIN" check --gemm wgmma
      unset MOEHUB_WGRAD_SCHEDULE MOEHUB_WGRAD_ORDER
      # the groups of at least 100 (64 in the layer) rows as a call of their own: by the rules, and with both calls cooperative
      export MOEHUB_WGRAD_SPLIT_ROWS=100
      stage gemm_test_split_100 120 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuGemm.Wgrad*'
      force_wgrad "cooperative stride"
      stage gemm_test_split_100_cooperative 120 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuGemm.Wgrad*'
      unset MOEHUB_WGRAD_SCHEDULE MOEHUB_WGRAD_ORDER
      export MOEHUB_WGRAD_SPLIT_ROWS=64
      stage check_wgmma_split_64 200 "$BIN" check --gemm wgmma
      unset MOEHUB_WGRAD_SPLIT_ROWS ;;
    gemm-wgrad-split)  # fp32 C: the default (split at kSplitMinRows on H100-class memory) beside one call (split_rows=0), a split at 1,536 and 1,792 rows forced (on any card) and the cooperative tiles in snake order; skewed routing at two token counts, and even routing with 1,792-1,911 rows per expert (every group long: one call)
      V=split_rows=0,split_rows=1536,split_rows=1792,schedule=cooperative:order=snake
      M=qwen3-30b-a3b,qwen1.5-moe-a2.7b
      for t in 16384 32768; do
        stage "torch_wgrad_split_$t" 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed --tokens $t --models $M --wgrad-variants $V
      done
      stage torch_wgrad_split_even_28672 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --tokens 28672 --models $M --wgrad-variants split_rows=0 ;;
    gemm-wgrad-order)  # the cooperative tiles on long reductions (the strided order by the rule) against snake order forced, fp32 and bf16 C: skewed and even at 32,768 tokens (Qwen), even at the default 16,384 (all three models)
      V=order=snake,out=bf16,out=bf16:order=snake
      M=qwen3-30b-a3b,qwen1.5-moe-a2.7b
      stage torch_wgrad_order_skewed_32768 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed --tokens 32768 --models $M --wgrad-variants $V
      stage torch_wgrad_order_even_32768 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --tokens 32768 --models $M --wgrad-variants $V
      stage torch_wgrad_order_even_16384 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --wgrad-variants $V ;;
    timing-method)  # the timing rounds' order (fixed, shuffled) and a spin kernel hiding each launch (--busy-cycles), each way on the same cases, among them identical kernel calls in several slots (bf16: the default and two variants that change nothing; fp32 on even routing: split_rows=0)
      for m in "fixed 0" "shuffled 0" "fixed 200000" "shuffled 200000"; do
        read -r order busy <<< "$m"
        stage "torch_timing_${order}_${busy}_even" 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --round-order $order --busy-cycles $busy --wgrad-variants out=bf16,out=bf16:bf16_epilogue=tma,split_rows=0
        stage "torch_timing_${order}_${busy}_skewed" 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed --tokens 32768 --models qwen3-30b-a3b,qwen1.5-moe-a2.7b --round-order $order --busy-cycles $busy --wgrad-variants out=bf16,out=bf16:bf16_epilogue=tma
      done ;;
    gemm-wgrad-bf16)  # bf16 C: the tensor-store epilogue (default) beside the thread stores, one process per routing; the thread stores against cuBLAS
      V=out=bf16:bf16_epilogue=threads
      stage torch_wgrad_bf16 150 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --wgrad-variants $V
      stage torch_wgrad_bf16_skewed 150 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed --wgrad-variants $V
      export MOEHUB_WGRAD_BF16_EPILOGUE=threads
      stage gemm_test_bf16_threads 120 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuGemm.Wgrad*'
      stage check_wgmma_bf16_threads 200 "$BIN" check --gemm wgmma
      unset MOEHUB_WGRAD_BF16_EPILOGUE ;;
    racecheck-wgrad)  # racecheck on the layer, every GEMM on our kernels
      stage racecheck_wgmma 240 compute-sanitizer --tool racecheck --error-exitcode 9 "$BIN" check --gemm wgmma --ep 2 --routing skewed --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2 ;;
    gemm-wgrad-variants)  # the weight-gradient kernel's knobs side by side in the torch process
      V=schedule=cooperative,schedule=pingpong:order=stride,schedule=cooperative:order=snake
      stage torch_wgrad_variants 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --wgrad-variants $V
      stage torch_wgrad_variants_skewed 200 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed --wgrad-variants $V --wgrad-parts 2 ;;
    gemm-wgrad-bf16-schedule)  # bf16 C: the default rule beside ping-pong and the cooperative tiles in snake order, forced, one process per routing
      V=out=bf16:schedule=pingpong,out=bf16:schedule=cooperative:order=snake
      stage torch_wgrad_bf16_schedule 150 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --wgrad-variants $V
      stage torch_wgrad_bf16_schedule_skewed 150 python3 scripts/gpu/torch_grouped_mm.py --gemms wgrad --routing skewed --wgrad-variants $V ;;
    ncu-wgrad)  # hardware counters of one weight-gradient call: skewed Qwen3's short and long experts, gate+up
      for part in 64:128 0:64; do
        stage "ncu_wgrad_${part/:/_}" 120 $NCU_WGRAD --experts $part
      done ;;
    ncu-wgrad-bf16)  # the same halves with bf16 C, on ping-pong and on the cooperative tiles in snake order (run W26's schedule question)
      for v in "pingpong snake" "cooperative snake"; do
        force_wgrad "$v"
        for part in 64:128 0:64; do
          stage "ncu_wgrad_bf16_${MOEHUB_WGRAD_SCHEDULE}_${part/:/_}" 120 $NCU_WGRAD --experts $part --out bf16
        done
      done
      unset MOEHUB_WGRAD_SCHEDULE MOEHUB_WGRAD_ORDER ;;
    run-wgrad)  # layer time with the weight gradients on our kernel (auto) and on cuBLAS
      for g in auto auto-cublas-wgrad auto auto-cublas-wgrad; do
        stage "run_a2a_$g" 120 "$BIN" run --schedule a2a --ep 8 --tokens 8192 --gemm $g
        stage "run_ring_expert_$g" 120 "$BIN" run --schedule ring-expert --ep 8 --tokens 8192 --gemm $g
      done ;;
    memory)
      stage memory 400 "$BIN" memory --ep 8,16,32,64 ;;
    memory-default)  # EP 8: a2a, the ring's default (bf16, one expert per chunk) and the former default (fp32, whole hops)
      stage memory_default 300 "$BIN" memory --ep 8 --schedules a2a,ring-expert --ring-accum fp32,bf16 --hop-chunk-rows 0,-1 ;;
    memory-options)  # the ring's memory options beside the defaults and a2a
      stage memory_options 500 "$BIN" memory --ep 8,16,32,64 --ring-accum fp32,bf16 --hop-chunk-rows 0,1024 ;;
    hop)
      stage bench_hop 120 "$BIN" bench-hop ;;
    run)
      stage run 200 "$BIN" run --schedule ring --ep 8 --tokens 8192 --trace-dir /tmp/moehub-trace
      stage run_a2a 200 "$BIN" run --schedule a2a --ep 8 --tokens 8192
      tar -C /tmp -czf "$OUT/trace.tar.gz" moehub-trace ;;
    run-pub)
      stage run_pub_ring 200 "$BIN" run --schedule ring-expert --ep 8 --tokens 49152
      stage run_pub_adaptive 200 "$BIN" run --schedule ring --ep 8 --tokens 49152 --iters 1
      stage run_pub_a2a 200 "$BIN" run --schedule a2a --ep 8 --tokens 49152
      stage run_pub_ring_bf16_c1024 200 "$BIN" run --schedule ring-expert --ep 8 --tokens 49152 --ring-accum bf16 --hop-chunk-rows 1024 ;;
    nccl1)
      stage nccl_one_rank 120 mpirun --allow-run-as-root -np 1 "$BIN" run --transport nccl --schedule ring-expert --tokens 2048 --rendezvous /tmp ;;
    nccl)  # one rank per GPU over NCCL: as many ranks as GPUs
      n=$(nvidia-smi -L | wc -l)
      MPI="mpirun --allow-run-as-root -np $n -x NCCL_NVLS_ENABLE=0"
      stage nccl_check 300 $MPI "$BIN" check --transport nccl --tokens 96 --hidden 256 --ffn 128 --experts 32 --top-k 4
      for s in ring-expert ring-token a2a; do
        stage "nccl_run_$s" 120 $MPI "$BIN" run --transport nccl --schedule $s --tokens 16384
      done ;;
    ab)  # layer time of the build in BASE_DIR (another checkout, built with the gpu preset) against this one
      stage ab_run 300 scripts/gpu/ab_run.sh "${BASE_DIR:-../base}/$BIN" "$BIN" --ep 8 --tokens 8192 --iters 5 ;;
    ab-pub)  # the same at the published configuration (49,152 tokens per rank), ring schedules
      export SCHEDULES="ring-expert ring-token"
      stage ab_run_pub 400 scripts/gpu/ab_run.sh "${BASE_DIR:-../base}/$BIN" "$BIN" --ep 8 --tokens 49152 --iters 3
      unset SCHEDULES ;;
    rank-failure)  # a rank that fails on purpose: the other must exit non-zero within seconds
      stage rank_failure 400 scripts/gpu/rank_failure.sh "$BIN" ;;
    tests)
      stage ctest 200 ctest --test-dir build/gpu -L gpu --output-on-failure ;;
    sanitize-kernels)  # memcheck and racecheck on the layer kernels' own tests
      stage memcheck_kernels 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuKernels.*'
      stage racecheck_kernels 300 compute-sanitizer --tool racecheck --error-exitcode 9 build/gpu/tests/gpu/gpu_harness_test --gtest_filter='GpuKernels.*' ;;
    small-kernels)  # the ring layer's work around its passes at several sizes ($OUT/small_kernels.csv); with BASE_DIR, that build's beside this one's
      base=""
      [ -n "${BASE_DIR:-}" ] && base="$BASE_DIR/$BIN"
      stage small_kernels 500 bash -c "scripts/gpu/small_kernels.sh $BIN $base > '$OUT/small_kernels.csv'" ;;
    launch-threads)  # host launch rate from 1-8 threads ($OUT/launch_threads.csv), then folded ranks launched from one thread against one per rank ($OUT/launch_threads_ab.csv)
      stage launch_rate 120 bash -c "nvcc -O2 -arch=sm_90 -o /tmp/launch_threads scripts/gpu/launch_threads.cu && /tmp/launch_threads > '$OUT/launch_threads.csv'"
      stage launch_threads_ab 500 bash -c "scripts/gpu/launch_threads_ab.sh $BIN > '$OUT/launch_threads_ab.csv'" ;;
    coverage)  # line coverage of the harness's host code by the GPU tests and `check` ($OUT/gpu_coverage.csv; docs/results/coverage.md)
      B=build/gpu-coverage  # the preset's binaryDir
      stage coverage_build 500 bash -c "cmake --preset gpu-coverage > /dev/null && cmake --build $B -j16"
      find "$B" -name '*.gcda' -delete
      stage coverage_tests 300 ctest --test-dir "$B" -L gpu --output-on-failure
      stage coverage_check 300 "$B/host/gpu/moehub-gpu" check
      stage coverage_summary 120 bash -c "GCOV=\$(command -v gcov-13 || command -v gcov) python3 scripts/gpu/gcov_summary.py $B . host/ lib/ > '$OUT/gpu_coverage.csv'" ;;
    *) echo "unknown stage $s" ;;
  esac
done
cat "$OUT/summary.log"
