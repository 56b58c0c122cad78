#!/usr/bin/env bash
# Installs the Debian 12 packages that the RTL flow needs (lint, Verilator
# testbenches, Yosys synthesis, OpenSTA timing, formal checks), and only those
# that are missing. Safe to run again. Without them the software build still
# works: the rtl tests and the synth target are simply not configured.
set -euo pipefail

PACKAGES=(
  verilator     # 5.006: lint and the C++ testbenches of rtl/ (tb/)
  yosys         # 0.23: synthesis to ASAP7 cells (synth/)
  opensta       # OpenSTA 2.0.17, binary `sta`: static timing of the netlists
  iverilog      # a second SystemVerilog front end for quick checks
  z3            # SMT solver behind yosys-smtbmc for formal checks
  python3       # report parsers of synth/
  gzip          # the ASAP7 liberty files ship gzipped
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-hw-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-hw-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
