#include "golden/store.hpp"

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
  ByteMask m;
  for (std::uint32_t i = offset; i < offset + n; ++i) m.bits[i / 64] |= 1ULL << (i % 64);
  return m;
}

std::uint32_t ByteMask::count() const {
  return static_cast<std::uint32_t>(std::bitset<64>(bits[0]).count() + std::bitset<64>(bits[1]).count());
}

}  // namespace moehub::golden
