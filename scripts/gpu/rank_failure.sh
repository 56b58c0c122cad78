#!/usr/bin/env bash
# A rank that fails on purpose (hidden option --fail-rank 1 --fail-at init|layer) must
# make the other rank exit non-zero within seconds instead of hanging in NCCL. Two
# processes over the NCCL transport, started with MOEHUB_RANK (the rendezvous file and
# abort-notice path) and, when mpirun exists, under mpirun. On one GPU both processes
# share the device; NCCL may refuse that at initialisation ("Duplicate GPU"), which the
# output then shows (both ranks still have to exit non-zero in time).
#   scripts/gpu/rank_failure.sh [BIN]     exit 0 when every case ended in time, non-zero
set -u
BIN=${1:-build/gpu/host/gpu/moehub-gpu}
LIMIT_S=${LIMIT_S:-30}   # assumption: "within seconds" with room for NCCL initialisation
SHAPE="--tokens 256 --hidden 256 --ffn 128 --experts 8 --top-k 2 --iters 1"
export NCCL_NVLS_ENABLE=0
bad=0
case_env() {  # case_env <fail-at>
  local at=$1 dir; dir=$(mktemp -d)
  local t0; t0=$(date +%s%N)
  MOEHUB_RANK=0 MOEHUB_WORLD_SIZE=2 timeout 120 "$BIN" run --transport nccl --rendezvous "$dir" $SHAPE \
    --fail-rank 1 --fail-at "$at" > "$dir/rank0.log" 2>&1 &
  local p0=$!
  MOEHUB_RANK=1 MOEHUB_WORLD_SIZE=2 timeout 120 "$BIN" run --transport nccl --rendezvous "$dir" $SHAPE \
    --fail-rank 1 --fail-at "$at" > "$dir/rank1.log" 2>&1 &
  local p1=$!
  wait $p0; local s0=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  wait $p1; local s1=$?
  echo "--- env launch, rank 1 fails at $at: rank 0 exit $s0 after $ms ms, rank 1 exit $s1"
  sed 's/^/  rank0| /' "$dir/rank0.log" | tail -n 6
  sed 's/^/  rank1| /' "$dir/rank1.log" | tail -n 4
  # rank 0 must have stopped because of rank 1: its abort notice (or, at the layer, a
  # communicator NCCL refused for two ranks on one GPU, shown above)
  if [ "$s0" = 0 ] || [ "$s0" = 124 ] || [ "$s1" = 0 ] || [ "$ms" -gt $((LIMIT_S * 1000)) ]; then
    echo "  FAIL: rank 0 must exit non-zero within $LIMIT_S s"; bad=1
  elif [ "$at" = init ] && ! grep -q "another rank failed: rank 1" "$dir/rank0.log"; then
    echo "  FAIL: rank 0 did not stop on rank 1's abort notice"; bad=1
  else
    echo "  PASS"
  fi
  rm -rf "$dir"
}
case_mpi() {
  local at=$1 dir; dir=$(mktemp -d)
  local t0; t0=$(date +%s%N)
  timeout 120 mpirun --allow-run-as-root -np 2 -x NCCL_NVLS_ENABLE=0 "$BIN" run --transport nccl --rendezvous "$dir" \
    $SHAPE --fail-rank 1 --fail-at "$at" > "$dir/mpi.log" 2>&1
  local s=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  echo "--- mpirun, rank 1 fails at $at: mpirun exit $s after $ms ms"
  grep -v '^\s*$' "$dir/mpi.log" | tail -n 8 | sed 's/^/  mpi| /'
  if [ "$s" = 0 ] || [ "$s" = 124 ] || [ "$ms" -gt $((LIMIT_S * 1000)) ]; then
    echo "  FAIL: the job must end non-zero within $LIMIT_S s"; bad=1
  else
    echo "  PASS"
  fi
  rm -rf "$dir"
}
for at in init layer; do case_env $at; done
if command -v mpirun > /dev/null; then for at in init layer; do case_mpi $at; done; fi
exit $bad
