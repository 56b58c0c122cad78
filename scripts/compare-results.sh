#!/usr/bin/env bash
# Shows that the working tree's moehub-sim gives the results of an older
# revision's: builds that revision from a clean copy (under
# build/bench-old/<rev>, the folder scripts/bench-compare.sh builds it in, so
# the two scripts share one build) and the working tree's release preset, then
# runs scripts/compare-results.py on both: every job of its fixed list with
# both binaries, the results JSON (less its "host" object: peak memory and wall
# time) and the timeline compared byte for byte. Prints one line per job and
# exits non-zero on any difference.
#
#   scripts/compare-results.sh OLD_REV [-j N]
#
# Environment: COMPARE_BUILD_DIR=<dir> compares the moehub-sim of an existing
# build folder of the working tree instead of the release preset's;
# COMPARE_OLD_BIN=<path> takes that binary as the old one instead of building
# OLD_REV (it must be a build of OLD_REV); BUILD_JOBS=<n> (default 2) for the
# builds.
set -euo pipefail
cd "$(dirname "$0")/.."
old_rev="${1:?usage: scripts/compare-results.sh OLD_REV [-j N]}"
shift
build_jobs="${BUILD_JOBS:-2}"
old_sha="$(git rev-parse --short "$old_rev")"
if [ -n "${COMPARE_OLD_BIN:-}" ]; then
  old_bin="$COMPARE_OLD_BIN"
else
  old_src="build/bench-old/$old_sha/src"
  old_bin="build/bench-old/$old_sha/build/host/sim/moehub-sim"
  if [ ! -x "$old_bin" ]; then
    rm -rf "$old_src"
    mkdir -p "$old_src"
    git archive "$old_sha" | tar -x -C "$old_src"
    cmake -S "$old_src" -B "build/bench-old/$old_sha/build" -DCMAKE_BUILD_TYPE=Release -DMOEHUB_CUDA=OFF >/dev/null
    cmake --build "build/bench-old/$old_sha/build" -j "$build_jobs" --target moehub-sim >/dev/null
  fi
fi
if [ -n "${COMPARE_BUILD_DIR:-}" ]; then
  cmake --build "$COMPARE_BUILD_DIR" -j "$build_jobs" --target moehub-sim >/dev/null
  new_bin="$COMPARE_BUILD_DIR/host/sim/moehub-sim"
else
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$build_jobs" --target moehub-sim >/dev/null
  new_bin="build/release/host/sim/moehub-sim"
fi
echo "moehub-sim results, old = $old_sha ($old_bin), new = working tree ($new_bin)"
exec python3 scripts/compare-results.py --old "$old_bin" --new "$new_bin" "$@"
