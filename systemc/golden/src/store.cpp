#include "golden/store.hpp"

#include <algorithm>
#include <bitset>
#include <stdexcept>

namespace moehub::golden {

const char* to_string(Opcode op) {
  switch (op) {
    case Opcode::kStore: return "st";
    case Opcode::kRowStore: return "st.rowsp";
    case Opcode::kRowStoreNop: return "st.rowsp.nop";
    case Opcode::kFlagWrite: return "flag";
  }
  return "?";
}

ByteMask ByteMask::range(std::uint32_t offset, std::uint32_t n) {
  if (offset + n > kLineBytes) throw std::invalid_argument("ByteMask::range: past the end of the line");
  // bits [offset, offset + n) of a 128-bit mask, word by word
  ByteMask m;
  for (std::uint32_t w = 0; w < 2; ++w) {
    const std::uint32_t lo = std::max(offset, w * 64), hi = std::min(offset + n, w * 64 + 64);
    if (lo >= hi) continue;
    const std::uint32_t len = hi - lo, shift = lo - w * 64;
    m.bits[w] = (len == 64 ? ~0ULL : ((1ULL << len) - 1)) << shift;
  }
  return m;
}

std::uint32_t ByteMask::count_partial() const {
  return static_cast<std::uint32_t>(std::bitset<64>(bits[0]).count() + std::bitset<64>(bits[1]).count());
}

}  // namespace moehub::golden
