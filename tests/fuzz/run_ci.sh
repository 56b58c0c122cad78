#!/usr/bin/env bash
# The short fuzz run of CI (about two minutes; scripts/test.sh runs it after
# the test suites). mutate_sim.py's short run is a CTest test of the asan
# preset (fuzz.sim_short); this script runs the libFuzzer targets:
# - fuzz_config, fuzz_npy and fuzz_manifest for FUZZ_SECONDS each (default 20)
#   from the seed corpus: any crash, sanitizer report, leak, timeout or
#   oracle violation fails;
# - fuzz_config_planted, the config loader with a planted missing bounds
#   check, must be caught within PLANTED_SECONDS (default 60).
# Skipped, with a message, when clang has no libFuzzer. Longer runs:
# docs/results/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${FUZZ_SECONDS:-20}"
planted_seconds="${PLANTED_SECONDS:-60}"
build=build/fuzz
mkdir -p build
# bounded allocator caches and stack depot, so that RSS measures the target
export ASAN_OPTIONS="quarantine_size_mb=16:malloc_context_size=8:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# LeakSanitizer keeps its thread-stack scan here (the asan preset turns it off, README,
# "Building by hand"): libFuzzer's driver holds its corpus and dictionary on main's stack,
# which without the scan read as leaks
unset LSAN_OPTIONS

clangxx="$(command -v clang++ || true)"
if [ -z "$clangxx" ]; then
  echo "fuzz: no clang++; libFuzzer targets skipped (scripts/install-deps.sh installs clang)"
  exit 0
fi
if ! cmake -S tests/fuzz -B "$build" -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build.log" 2>&1; then
  if grep -q "no libFuzzer" "$build.log"; then
    echo "fuzz: $clangxx has no libFuzzer; libFuzzer targets skipped"
    exit 0
  fi
  cat "$build.log"
  exit 1
fi
cmake --build "$build" -j "$(nproc)"

run_target() {  # name corpus-folder [extra libFuzzer flags]
  local name="$1" seeds="$2"
  shift 2
  local work="$build/run/$name"
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
  echo "=== fuzz: $name, $seconds s"
  "$build/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$seeds" >"$work/log.txt" 2>&1 || {
    tail -60 "$work/log.txt"
    echo "fuzz: $name FAILED; the input is in $work/artifacts/"
    return 1
  }
  grep -a "stat::number_of_executed_units" "$work/log.txt" || true
}

run_target fuzz_config tests/fuzz/corpus/config -dict=tests/fuzz/config.dict
run_target fuzz_npy tests/fuzz/corpus/npy
run_target fuzz_manifest tests/fuzz/corpus/manifest

echo "=== fuzz: planted bug (a loader without the range check of numbers), up to $planted_seconds s"
work="$build/run/planted"
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
if "$build/fuzz_config_planted" -max_total_time="$planted_seconds" -rss_limit_mb=2048 \
    -dict=tests/fuzz/config.dict -artifact_prefix="$work/artifacts/" "$work/corpus" tests/fuzz/corpus/config \
    >"$work/log.txt" 2>&1; then
  echo "fuzz: the planted bug was NOT found in $planted_seconds s"
  exit 1
fi
if ! grep -aq "violates its ranges" "$work/log.txt"; then
  tail -40 "$work/log.txt"
  echo "fuzz: fuzz_config_planted failed for another reason than the planted bug"
  exit 1
fi
grep -a "violates its ranges" "$work/log.txt" | head -1
echo "fuzz: planted bug found"
