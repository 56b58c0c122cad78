#!/usr/bin/env bash
# A/B layer timing of two moehub-gpu builds on the same GPU: `run` (folded ranks) for each
# schedule, the two binaries alternating, ROUNDS rounds; prints each run's median layer time.
#   scripts/gpu/ab_run.sh BIN_A BIN_B [run options...]     (ROUNDS=3 by default;
#   SCHEDULES="ring-expert ring-token a2a" by default)
set -u
A=$1 B=$2; shift 2
ROUNDS=${ROUNDS:-3}
for s in ${SCHEDULES:-ring-expert ring-token a2a}; do
  for r in $(seq "$ROUNDS"); do
    for which in A B; do
      bin=$A; [ $which = B ] && bin=$B
      t=$("$bin" run --schedule $s "$@" 2>&1 | sed -n 's/.*median \([0-9.]*\) us.*/\1/p' | head -1)
      echo "$s round $r $which ${t:-FAILED} us"
    done
  done
done
