// The "rtl" hub implementation: the MoE-Hub hub functions with the AAU and
// the RPM's packet scheduler co-simulated from their Verilated RTL
// (RtlAddressAllocationUnit, RtlRuntimePacketManager) and the completion
// function (DAM) behavioural, as in "moehub". Parameters are mapped as for
// "moehub" (golden::aau_params_from, rpm_params_from); a hub configuration
// whose geometry (APT regions, RAT entries and banks, peers, entries per
// peer) the build did not Verilate is refused with std::invalid_argument
// naming the geometries built (tb/CMakeLists.txt).
#pragma once

#include <string>

namespace moehub::cosim {

/// Registers "rtl" with golden::register_hub_implementation. A non-empty
/// `trace_dir` (an existing directory) makes every hub write one FST
/// waveform per block: <trace_dir>/gpu<G>_aau.fst and gpu<G>_rpm.fst.
void register_rtl_hub(const std::string& trace_dir = "");

}  // namespace moehub::cosim
