// Drives equiv_top (the hub RTL beside its Yosys generic netlist) with
// random inputs and checks, before and after every clock edge, that both
// sides give the same outputs.
// Usage: equiv_sim <cycles> <seed> [<flip cycle>]. Prints "equivalent: ..."
// and exits 0, or names the first differing cycle and exits 1. With a flip
// cycle, the netlist side's first output bit is inverted from that cycle on
// (a check that the comparison fails when it should).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>

#include "Vequiv_top.h"
#include "verilated.h"

namespace {

template <typename T>
void fill(T& v, std::mt19937_64& rng) {
  if constexpr (std::is_integral_v<T>) {
    v = static_cast<T>(rng());
  } else {
    for (std::size_t i = 0; i < sizeof(v) / sizeof(v[0]); ++i) v[i] = static_cast<std::uint32_t>(rng());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: %s <cycles> <seed> [<flip cycle>]\n", argv[0]);
    return 2;
  }
  const long cycles = std::atol(argv[1]);
  const long flip_at = argc == 4 ? std::atol(argv[3]) : -1;
  std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
  VerilatedContext ctx;
  Vequiv_top top(&ctx);
  long stores = 0, grants = 0;
  top.clk_i = 0;
  top.rst_ni = 0;
  top.flip_i = 0;
  fill(top.stim_i, rng);
  top.eval();
  for (long c = 0; c < cycles; ++c) {
    top.rst_ni = c >= 3;
    top.flip_i = flip_at >= 0 && c >= flip_at;
    fill(top.stim_i, rng);
    top.clk_i = 0;
    top.eval();
    const bool before = top.mismatch_o;
    if (top.rst_ni) {
      stores += (top.activity_o >> 1) & 1;
      grants += top.activity_o & 1;
    }
    top.clk_i = 1;
    top.eval();
    if (before || top.mismatch_o) {
      std::printf("mismatch at cycle %ld (%s the clock edge)\n", c, before ? "before" : "after");
      return 1;
    }
  }
  top.final();
  std::printf("equivalent: %ld cycles, %ld translated stores, %ld grants\n", cycles, stores, grants);
  return 0;
}
