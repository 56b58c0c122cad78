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
# (default build/release, the release preset; it must be configured with
# Verilator found, MOEHUB_RTL, as the presets are once install-deps.sh ran).
# BENCH_OLD_BUILD_DIR=<dir> also runs that (already built) folder's moehub-sim
# with --hub-impl rtl in each round, as a row "rtl (old)": an older build
# measured side by side with the current one.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  reps="$1"
  shift
fi
if ! [[ "$reps" =~ ^[1-9][0-9]*$ ]]; then
  echo "bench-rtl.sh: REPS must be a positive integer (got '$reps')" >&2
  exit 2
fi
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--schedule moehub)
build="${BENCH_BUILD_DIR:-build/release}"
cmake --build "$build" -j "$(nproc)" --target moehub-sim >/dev/null
sim="$build/host/sim/moehub-sim"
old="${BENCH_OLD_BUILD_DIR:-}"
impls=(moehub rtl)
[ -n "$old" ] && impls+=(rtl-old)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for ((r = 0; r < reps; ++r)); do
  for impl in "${impls[@]}"; do
    bin="$sim" hub="$impl"
    [ "$impl" = rtl-old ] && bin="$old/host/sim/moehub-sim" hub=rtl
    /usr/bin/time -f "%U %e" -o "$work/$impl.$r.time" "$bin" "${args[@]}" --hub-impl "$hub" --quiet \
      --no-timeline --results "$work/$impl.$r.json" --hub-digest "$work/$impl.$r.digest.json"
  done
done
python3 - "$work" "$reps" "${args[*]}" "${impls[*]}" <<'PY'
import json, statistics, sys
work, reps, args, impls = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
t = {}
for impl in impls:
    runs = [open(f"{work}/{impl}.{r}.time").read().split() for r in range(reps)]
    t[impl] = (statistics.median(float(u) for u, _ in runs), statistics.median(float(w) for _, w in runs))
res = {i: json.load(open(f"{work}/{i}.0.json")) for i in impls}
dig = {i: json.load(open(f"{work}/{i}.0.digest.json")) for i in impls}
print(f"moehub-sim {args}: {reps} runs each (median)")
print("| hub | CPU s | wall s | layer time us |")
print("| --- | --- | --- | --- |")
for i in impls:
    print(f"| {i} | {t[i][0]:.2f} | {t[i][1]:.2f} | {res[i]['layer_time_us']:.3f} |")
for i in impls[1:]:
    print(f"{i} / moehub: CPU {t[i][0] / t['moehub'][0]:.1f}x, wall {t[i][1] / t['moehub'][1]:.1f}x")
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
strip = lambda r: {k: v for k, v in r.items() if k != "host"}
print("results.json of rtl and moehub apart from host:", "equal" if strip(res["rtl"]) == strip(res["moehub"]) else "differ")
PY
