#!/usr/bin/env bash
# Reproduces the papers' evaluation claims: every experiment of configs/experiments/ (or
# those named with --experiment ID), run with the release moehub-sim, and writes
# docs/results/reproduction.md with its plots. Builds moehub-sim first if it is missing.
# Every option goes to host/scripts/reproduce.py (--help lists them), e.g.
#   scripts/reproduce.sh                                       # every claim, full size
#   scripts/reproduce.sh --experiment mh-fig15-dep-speedup     # one claim
#   scripts/reproduce.sh --size small --page /tmp/r/reproduction.md   # the CI pass
set -euo pipefail
cd "$(dirname "$0")/.."
sim=build/release/host/sim/moehub-sim
if [ ! -x "$sim" ]; then
  cmake --preset release >/dev/null
  cmake --build build/release -j "$(nproc)" --target moehub-sim
fi
# Debian's interpreter has matplotlib and PyYAML (scripts/install-deps.sh)
exec /usr/bin/python3 host/scripts/reproduce.py --sim "$sim" "$@"
