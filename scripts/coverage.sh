#!/usr/bin/env bash
# Line and branch coverage of the project's own C++ (the SystemC model, the golden
# layer, the host libraries and tools, the RTL testbenches and scoreboards) by the
# whole CPU test suite: builds the coverage preset (gcov counters, -Og, no CUDA),
# runs ctest once, and writes
#   build/coverage/report/summary.txt   lines per file with the lines missed, the least covered last
#   build/coverage/report/summary.json  the same, machine-readable (gcovr's JSON summary)
#   build/coverage/report/index.html    every file line by line
# and prints the totals. Extra arguments go to ctest (e.g. -L platform, -E fuzz).
#   scripts/coverage.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh coverage
jobs="$(nproc)"
cmake --preset coverage >/dev/null
cmake --build --preset coverage -j "$jobs"
# counters of an earlier run would add to this one's
find build/coverage -name '*.gcda' -delete
ctest --preset coverage -j "$jobs" "$@"
out=build/coverage/report
rm -rf "$out"
mkdir -p "$out"
gcov_exe=gcov
command -v gcov-12 >/dev/null && gcov_exe=gcov-12  # the compiler's own gcov (g++ 12 on Debian 12)
# The project's sources only: not the tests themselves, not Verilator's generated
# models under build/, not system headers.
gcovr --root . --object-directory build/coverage --gcov-executable "$gcov_exe" -j "$jobs" \
  --filter 'systemc/' --filter 'lib/' --filter 'host/' --filter 'tb/' --filter 'bench/' \
  --exclude-unreachable-branches --exclude-throw-branches \
  --sort-percentage \
  --txt "$out/summary.txt" --json-summary-pretty --json-summary "$out/summary.json" \
  --html-details "$out/index.html" --print-summary
echo "coverage: report in $out/summary.txt and $out/index.html"
