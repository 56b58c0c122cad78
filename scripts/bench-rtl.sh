#!/usr/bin/env bash
# Wall time of moehub-sim with the RTL co-simulation (--hub-impl rtl) against
# the behavioural MoE-Hub units (--hub-impl moehub) on one job, alternating
# the two REPS times; prints the median CPU (user) and wall seconds of each
# process, their ratio, and whether both runs gave the same layer time and
# the same hub digests (--hub-digest: per-link packet order, LocalRowIDs).
#
#   scripts/bench-rtl.sh [REPS] [-- MOEHUB-SIM ARGS...]
#
# Default job: --schedule moehub with the default system, model and tokens.
# Environment: BENCH_BUILD_DIR=<dir> uses the moehub-sim of that build folder
# (default build/dev; it must be configured with Verilator found, MOEHUB_RTL).
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-3}"
shift || true
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--schedule moehub)
build="${BENCH_BUILD_DIR:-build/dev}"
cmake --build "$build" -j "$(nproc)" --target moehub-sim >/dev/null
sim="$build/host/sim/moehub-sim"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for ((r = 0; r < reps; ++r)); do
  for impl in moehub rtl; do
    /usr/bin/time -f "%U %e" -o "$work/$impl.$r.time" "$sim" "${args[@]}" --hub-impl "$impl" --quiet \
      --no-timeline --results "$work/$impl.$r.json" --hub-digest "$work/$impl.$r.digest.json"
  done
done
python3 - "$work" "$reps" "${args[*]}" <<'PY'
import json, statistics, sys
work, reps, args = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = {}
for impl in ("moehub", "rtl"):
    runs = [open(f"{work}/{impl}.{r}.time").read().split() for r in range(reps)]
    t[impl] = (statistics.median(float(u) for u, _ in runs), statistics.median(float(w) for _, w in runs))
res = {i: json.load(open(f"{work}/{i}.0.json")) for i in ("moehub", "rtl")}
dig = {i: json.load(open(f"{work}/{i}.0.digest.json")) for i in ("moehub", "rtl")}
print(f"moehub-sim {args}: {reps} runs each (median)")
print("| hub | CPU s | wall s | layer time us |")
print("| --- | --- | --- | --- |")
for i in ("moehub", "rtl"):
    print(f"| {i} | {t[i][0]:.2f} | {t[i][1]:.2f} | {res[i]['layer_time_us']:.3f} |")
print(f"rtl / moehub: CPU {t['rtl'][0] / t['moehub'][0]:.1f}x, wall {t['rtl'][1] / t['moehub'][1]:.1f}x")
def streams(d, key):
    out = [g["ingress"][key] for g in d["gpus"]]
    for g in d["gpus"]:
        out += [l[key] for l in g["egress"]]
    return out
a, b = dig["moehub"], dig["rtl"]
for key in ("content", "order", "timed"):
    same = sum(x == y for x, y in zip(streams(a, key), streams(b, key)))
    print(f"streams with the same {key}: {same} of {len(streams(a, key))}")
print("LocalRowIDs row by row:", "equal" if a["local_rows"]["digest"] == b["local_rows"]["digest"] else "differ")
PY
