#!/usr/bin/env bash
# Times two builds of moehub-sim side by side in one run on one machine: the
# working tree's and an older revision's (built from a clean copy of that
# revision under build/bench-old/<rev>). Each job runs alternately on the old
# and the new build, REPS times; the table gives the median wall time of the
# simulation (as moehub-sim reports it), the layer time, and the simulated
# NVLink packets per wall-clock second: data packets, and all packets (data
# plus write responses, counted on the GPU-to-switch ports).
#
#   scripts/bench-compare.sh OLD_REV [REPS]
#
# Environment: BENCH_BUILD_DIR=<dir> times the moehub-sim of an existing
# build folder of the working tree (configured for Release) instead of the
# release preset's; BENCH_JOBS=<names> (comma-separated: megatron-packet,
# megatron-row, ring-expert, megatron-window, megatron-own, moehub-packet) runs only those jobs (the old
# build's packet-level ring-expert run alone takes several minutes). The
# megatron-window job runs the old build on its default configuration and the
# new one with a 100 ns response window (sim.response_window_ns), the speed
# setting beside the reference it approximates; megatron-own likewise with
# the write responses on a channel of their own (nvlink.response_channel).
# moehub-packet runs the MoE-Hub layer (the AAU, the packet manager and the
# DAM in the hubs, its row transfers' checks). None of these three is in the
# default set.
set -euo pipefail
cd "$(dirname "$0")/.."
old_rev="${1:?usage: scripts/bench-compare.sh OLD_REV [REPS]}"
reps="${2:-3}"
old_sha="$(git rev-parse --short "$old_rev")"
. scripts/build-sim.sh
old_bin="$(moehub_old_sim "$old_sha" "$(nproc)")"
new_bin="$(moehub_new_sim "${BENCH_BUILD_DIR:-}" "$(nproc)")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 - "$old_bin" "$new_bin" "$old_sha" "$reps" "$work" <<'PY'
import json, os, re, statistics, subprocess, sys
old_bin, new_bin, old_sha, reps, work = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
# (name, arguments, repetitions, the new build's extra arguments, in the
# default set): the old build's packet-level ring-expert run takes about ten
# minutes, so it runs once
window = ["--set", "system.sim.response_window_ns=100"]
own = ["--set", "system.nvlink.response_channel=own"]
jobs = [("megatron-packet", "megatron, packet", ["--schedule", "megatron"], reps, [], True),
        ("megatron-row", "megatron, row", ["--schedule", "megatron", "--granularity", "row"], reps, [], True),
        ("ring-expert", "ring-expert, default", ["--schedule", "ring-expert"], 1, [], True),
        ("megatron-window", "megatron, pkt, 100ns", ["--schedule", "megatron"], reps, window, False),
        ("megatron-own", "megatron, pkt, own", ["--schedule", "megatron"], reps, own, False),
        ("moehub-packet", "moehub, packet", ["--schedule", "moehub", "--hub-impl", "moehub"], reps, [], False)]
wanted = [j for j in os.environ.get("BENCH_JOBS", "").split(",") if j]
unknown = set(wanted) - {key for key, *_ in jobs}
if unknown:
    raise SystemExit(f"BENCH_JOBS: unknown job(s) {sorted(unknown)}; allowed: {', '.join(j[0] for j in jobs)}")
jobs = [j[1:5] for j in jobs if (j[0] in wanted if wanted else j[5])]
def run(binary, args, tag):
    out = f"{work}/{tag}"
    subprocess.run(["mkdir", "-p", out], check=True)
    p = subprocess.run([binary, *args, "--no-timeline", "--out-dir", out], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{binary} {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    wall = float(re.search(r"wall time ([0-9.]+) s", p.stdout).group(1))
    r = json.load(open(f"{out}/results.json"))
    up = [l for l in r["links"] if l["from"].startswith("gpu")]
    data = sum(l["write_packets"] for l in up)
    allp = data + sum(l["response_packets"] for l in up)
    return wall, r["layer_time_us"], data, allp
print(f"moehub-sim, old = {old_sha}, new = working tree; {reps} alternating runs each (ring-expert: 1), medians")
print(f"{'job':22s} {'build':5s} {'wall_s':>8s} {'layer_us':>11s} {'data_pkts':>11s} {'all_pkts':>11s} {'data_pkts/s':>12s} {'all_pkts/s':>12s}")
for name, args, n, new_extra in jobs:
    res = {"old": [], "new": []}
    for i in range(n):
        for build, binary in (("old", old_bin), ("new", new_bin)):
            res[build].append(run(binary, args + (new_extra if build == "new" else []), f"{build}{i}"))
    for build in ("old", "new"):
        walls = [x[0] for x in res[build]]
        w = statistics.median(walls)
        _, layer, data, allp = res[build][0]
        print(f"{name:22s} {build:5s} {w:8.3f} {layer:11.2f} {data:11d} {allp:11d} {data / w:12.3g} {allp / w:12.3g}")
PY
