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
. scripts/build-sim.sh
old_bin="${COMPARE_OLD_BIN:-$(moehub_old_sim "$old_sha" "$build_jobs")}"
new_bin="$(moehub_new_sim "${COMPARE_BUILD_DIR:-}" "$build_jobs")"
echo "moehub-sim results, old = $old_sha ($old_bin), new = working tree ($new_bin)"
exec python3 scripts/compare-results.py --old "$old_bin" --new "$new_bin" "$@"
