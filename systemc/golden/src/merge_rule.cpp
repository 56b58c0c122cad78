#include "golden/merge_rule.hpp"

#include <stdexcept>
#include <string>

namespace moehub::golden {

ByteMask line_mask(const StoreRequest& s, const char* who) {
  if (!s.mask.empty()) return s.mask;
  const std::uint32_t off = offset_in_line(s);
  if (s.bytes == 0 || off + s.bytes > kLineBytes) {
    throw std::invalid_argument(std::string(who) + ": store of " + std::to_string(s.bytes) + " bytes at offset " +
                                std::to_string(off) + " of its 128-byte line (a store is 1..128 bytes within one line)");
  }
  return ByteMask::range(off, s.bytes);
}

std::size_t MergeKey::hash() const {
  std::uint64_t h = line * 0x9E3779B97F4A7C15ULL;
  h ^= (static_cast<std::uint64_t>(row_id) + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
  h ^= (std::uint64_t{malloc_id} << 16 | std::uint64_t{op} << 8 | priority) * 0x165667B19E3779F9ULL;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

MergeKey merge_key(const StoreRequest& s) {
  MergeKey k;
  k.line = merge_line(s);
  if (is_row_store(s.op)) {
    k.row_id = s.row_id;
    k.malloc_id = s.malloc_id;
  }
  k.op = static_cast<std::uint8_t>(s.op);
  k.priority = s.priority ? 1 : 0;
  return k;
}

}  // namespace moehub::golden
