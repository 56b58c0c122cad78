#!/usr/bin/env bash
# Installs what is missing, builds the release preset and runs the simulator's
# built-in default job (8 x H800-class GPUs, one Mixtral-8x7B MoE layer,
# megatron all-to-all schedule). Results land in out/default/.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
mkdir -p out/default
./build/release/host/sim/moehub-sim --out-dir out/default "$@"
