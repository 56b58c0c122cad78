#!/usr/bin/env bash
# Synthesizes every RTL block of rtl/ to ASAP7 with Yosys 0.23 and times it
# with OpenSTA at the hub clock, for the configurations of synth/configs.json.
# Writes build/synth/<config>.json and .md (and per block: netlist, logs),
# each block with the RAT in flip-flops and, where it has one, as SRAM macros.
#   synth/run_synth.sh                       all configurations
#   synth/run_synth.sh --config tiny         one configuration
#   synth/run_synth.sh --clock-ghz 2.0 --out /tmp/synth
# The PDK is synth/pdk/asap7 (kept in the repository with its licence), or $MOEHUB_PDK_DIR.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/flow.py" "$@"
