#!/usr/bin/env bash
# Installs what is missing, then builds and runs the whole test suite twice:
# the release build (which also compiles the CUDA kernels when nvcc exists) and
# the AddressSanitizer + UndefinedBehaviorSanitizer build (whose suite includes
# a short mutation fuzz run of moehub-sim, CTest label fuzz); then the short
# libFuzzer run with its planted-bug check (tests/fuzz/run_ci.sh, about two
# minutes). GPU tests skip on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs="$(nproc)"
for preset in release asan; do
  echo "=== preset: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
echo "=== fuzz"
./tests/fuzz/run_ci.sh
