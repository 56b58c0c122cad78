#!/usr/bin/env bash
# Folded ranks launched from one host thread against one thread per rank (`run
# --launch-threads 1` and `0`), the two alternating run by run: layer time and when the
# host was done launching (near the layer time, the host sets the pace). One CSV row per
# run on stdout.
#   scripts/gpu/launch_threads_ab.sh BIN
# SCHEDULES (default "ring ring-expert ring-token a2a", each with run's default options:
# bf16 accumulators, one expert per chunk), EPS (default 8), TOKENS (default "4096 8192"),
# ROUNDS (default 3), EXTRA (more `run` arguments) choose the runs.
set -u
[ $# -eq 1 ] || { echo "usage: $0 BIN" >&2; exit 2; }
BIN=$1
. "$(dirname "$0")/run_output.sh"
echo "launch_threads,round,schedule,ep,tokens_per_rank,layer_us,host_issue_us"
for sched in ${SCHEDULES:-ring ring-expert ring-token a2a}; do
  for ep in ${EPS:-8}; do
    for t in ${TOKENS:-4096 8192}; do
      for round in $(seq 1 "${ROUNDS:-3}"); do
        for lt in 1 0; do
          out=$("$BIN" run --schedule "$sched" --ep "$ep" --tokens "$t" --iters 3 --launch-threads "$lt" ${EXTRA:-} 2>&1) ||
            { echo "$lt,$round,$sched,$ep,$t,FAILED"; echo "$out" | tail -5 >&2; continue; }
          echo "$lt,$round,$sched,$ep,$t,$(run_layer_us "$out"),$(run_host_issue_us "$out")"
        done
      done
    done
  done
done
