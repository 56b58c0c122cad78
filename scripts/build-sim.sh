# Sourced by scripts/bench-compare.sh and scripts/compare-results.sh (not run on
# its own): builds the moehub-sim binaries the two compare.
#   moehub_old_sim REV JOBS   builds REV from a clean copy (git archive) under
#                             build/bench-old/<rev> once, and prints the binary's path
#   moehub_new_sim DIR JOBS   builds the working tree's moehub-sim in build folder DIR
#                             (empty: the release preset's) and prints the binary's path
# Run from the repository's root.

moehub_old_sim() {
  local sha src dir
  sha="$(git rev-parse --short "$1")"
  src="build/bench-old/$sha/src"
  dir="build/bench-old/$sha/build"
  if [ ! -x "$dir/host/sim/moehub-sim" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    git archive "$sha" | tar -x -C "$src"
    cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DMOEHUB_CUDA=OFF >/dev/null
    cmake --build "$dir" -j "$2" --target moehub-sim >/dev/null
  fi
  echo "$dir/host/sim/moehub-sim"
}

moehub_new_sim() {
  if [ -n "$1" ]; then
    cmake --build "$1" -j "$2" --target moehub-sim >/dev/null
    echo "$1/host/sim/moehub-sim"
  else
    cmake --preset release >/dev/null
    cmake --build --preset release -j "$2" --target moehub-sim >/dev/null
    echo "build/release/host/sim/moehub-sim"
  fi
}
