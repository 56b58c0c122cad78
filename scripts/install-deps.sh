#!/usr/bin/env bash
# Installs the Debian 12 packages that moehub's build and tests need, and only
# those that are missing. Safe to run again. The CUDA toolkit is optional: when
# nvcc is present the kernels and moehub-gpu are built too.
#   scripts/install-deps.sh [coverage] [booksim]   # coverage: also gcovr, for scripts/coverage.sh;
#                                                  # booksim: flex and bison, to build BookSim2 (switch-models.md)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  libsystemc-dev            # SystemC 2.3.4 + TLM-2.0
  libyaml-cpp-dev           # configs
  nlohmann-json3-dev        # results JSON
  libcli11-dev              # command lines
  libgtest-dev libgmock-dev googletest  # unit tests
  libbenchmark-dev          # benchmarks
  python3                   # report scripts, tests/fuzz/mutate_sim.py
  python3-matplotlib        # the plots of docs/results (scripts run with /usr/bin/python3)
  python3-yaml              # the experiment files of scripts/reproduce.sh (configs/experiments)
  verilator                 # 5.006: lint and the C++ testbenches of rtl/ (tb/)
  yosys                     # 0.23: synthesis to ASAP7 cells (synth/)
  opensta                   # OpenSTA 2.0.17, binary `sta`: static timing of the netlists
  iverilog                  # a second SystemVerilog front end for quick checks
  z3                        # SMT solver behind yosys-smtbmc for formal checks
  gzip                      # the ASAP7 liberty files ship gzipped
  clang libclang-rt-14-dev  # libFuzzer targets of tests/fuzz (-fsanitize=fuzzer)
)

for extra in "$@"; do
  case "$extra" in
    coverage) PACKAGES+=(gcovr) ;;  # 5.2: reads the gcov counters of the coverage preset
    booksim) PACKAGES+=(flex bison) ;;  # to build BookSim2 beside the tree for docs/results/switch-models.md
    *) echo "install-deps: unknown package group '$extra' (known: coverage, booksim)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
