// The RTL's assertions in the Verilated models (rtl/moehub_assert.svh): a
// failing one calls the DPI function moehub_assert_failed with its
// hierarchical name (for example TOP.moehub_aau.AauSpillHeld), which
// tb/tb_assert.cpp records and prints. The benches' Dut (tb_dut.hpp) turns a
// recorded failure into a test failure that names the assertion; elsewhere
// (the co-simulation) Verilator then stops the process ($stop).
#pragma once

#include <string>
#include <vector>

namespace moehub::tb {

/// The assertions that failed since the last call, in order (the list is cleared).
std::vector<std::string> take_assert_failures();

}  // namespace moehub::tb
