// A store as the hub's functions see it: plain C++17, no SystemC or TLM.
//
// The platform's TLM payload extension (systemc/common/moe_extension.hpp)
// carries one of these per transaction, so the hub functions, the RTL
// testbenches and the Verilated adapters all speak about the same fields.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

namespace moehub::golden {

/// Simulated time in picoseconds (the platform's Tick).
using Tick = std::uint64_t;
inline constexpr Tick kNever = std::numeric_limits<Tick>::max();

/// What a store asks of the consumer's hub.
enum class Opcode : std::uint8_t {
  kStore,        ///< st: plain store to a physical address of the destination GPU
  kRowStore,     ///< st.rowsp: destination-agnostic row store (MallocID, RowID, RowOffset)
  kRowStoreNop,  ///< st.rowsp.nop: the same at low priority (e.g. a row's source information)
  kFlagWrite,    ///< a flag/semaphore write (synchronisation of software schedules)
};

const char* to_string(Opcode op);

/// st.rowsp or st.rowsp.nop: a destination-agnostic row store.
inline bool is_row_store(Opcode op) { return op == Opcode::kRowStore || op == Opcode::kRowStoreNop; }

inline constexpr std::uint32_t kLineBytes = 128;

/// Which bytes of a 128-byte line a store writes (bit i = byte i).
struct ByteMask {
  std::array<std::uint64_t, 2> bits{0, 0};
  /// Bytes [offset, offset + n) of the line (offset + n <= 128).
  static ByteMask range(std::uint32_t offset, std::uint32_t n);
  bool full() const { return bits[0] == ~0ULL && bits[1] == ~0ULL; }
  bool empty() const { return bits[0] == 0 && bits[1] == 0; }
  /// Bytes written (most stores write whole lines: those count nothing).
  std::uint32_t count() const { return full() ? kLineBytes : count_partial(); }
  bool overlaps(const ByteMask& o) const { return (bits[0] & o.bits[0]) || (bits[1] & o.bits[1]); }
  ByteMask& operator|=(const ByteMask& o) {
    bits[0] |= o.bits[0];
    bits[1] |= o.bits[1];
    return *this;
  }
  bool operator==(const ByteMask& o) const { return bits == o.bits; }

 private:
  std::uint32_t count_partial() const;
};

struct StoreRequest {
  Opcode op = Opcode::kStore;
  std::int32_t src_gpu = 0;         ///< producer
  std::int32_t dst_gpu = 0;         ///< consumer
  std::uint64_t address = 0;        ///< st / flag: destination address; row stores: set by the consumer's hub
  std::uint32_t malloc_id = 0;      ///< row stores: the registered region (names consumer GPU and region)
  std::int64_t row_id = -1;         ///< row stores: logical row; st: the row the data belongs to (bookkeeping)
  std::uint32_t row_offset = 0;     ///< byte offset of the payload within its row
  std::uint32_t bytes = 0;          ///< payload bytes
  bool priority = true;             ///< false for .nop stores
  ByteMask mask;                    ///< valid bytes of the line
  std::int64_t local_row_id = -1;   ///< row stores: assigned by the consumer's AAU
  Tick ready = 0;                   ///< when its data reached the producer's write buffer (a merged packet: the latest of its stores)
  std::uint64_t tag = 0;            ///< the platform's bookkeeping (opaque to the hub functions)
};

}  // namespace moehub::golden
