// The Runtime Packet Manager's merge rule, in one place: which stores share a
// write-buffer entry, and which bytes of its 128-byte line each one writes.
// The behavioural RPM (rpm.hpp), the RPM co-simulation adapter
// (tb/cosim/rtl_rpm.cpp) and the pool of the RTL scoreboard (tb/sb_rpm.cpp)
// all merge through these functions; none of them restates the rule.
//
// Function: a mergeable store (any but a flag write) joins an entry whose
// first store has the same merge key: opcode, priority, line and, for row
// stores, MallocID and RowID (a row store's line is that of its RowOffset in
// its row, a plain store's that of its address). Its bytes are its mask, or
// [offset in line, + bytes) without one. Timing: none (the RPM's cycles are
// its own parameters).
#pragma once

#include <cstddef>
#include <cstdint>

#include "golden/store.hpp"

namespace moehub::golden {

/// Whether a store may share an entry with others: flag writes never merge.
inline bool mergeable(const StoreRequest& s) { return s.op != Opcode::kFlagWrite; }

/// The 128-byte line a store writes: of its row (row stores) or of its address.
inline std::uint64_t merge_line(const StoreRequest& s) {
  return is_row_store(s.op) ? s.row_offset / kLineBytes : s.address / kLineBytes;
}

/// Where in that line the store's first byte lies.
inline std::uint32_t offset_in_line(const StoreRequest& s) {
  return is_row_store(s.op) ? s.row_offset % kLineBytes : static_cast<std::uint32_t>(s.address % kLineBytes);
}

/// The bytes of its line the store writes: its mask if set, else [offset, offset
/// + bytes). Throws std::invalid_argument, its message starting with `who`, for a
/// store of no bytes or one that crosses its line.
ByteMask line_mask(const StoreRequest& s, const char* who);

/// What two mergeable stores must share to merge into one entry.
struct MergeKey {
  std::uint64_t line = 0;
  std::int64_t row_id = 0;      ///< row stores only (0 for st)
  std::uint32_t malloc_id = 0;  ///< row stores only (0 for st)
  std::uint8_t op = 0;
  std::uint8_t priority = 0;
  bool operator==(const MergeKey& o) const {
    return line == o.line && row_id == o.row_id && malloc_id == o.malloc_id && op == o.op && priority == o.priority;
  }
  bool operator!=(const MergeKey& o) const { return !(*this == o); }
  /// A hash of the key (equal keys, equal hashes), for the RPM's merge index.
  std::size_t hash() const;
};

/// The merge key of a store (of the first store of an entry: the entry's key).
MergeKey merge_key(const StoreRequest& s);

}  // namespace moehub::golden
