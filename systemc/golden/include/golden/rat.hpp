// Row Allocation Table (RAT) of the consumer's Address Allocation Unit.
//
// Function: maps (MallocID, RowID) to the row's LocalRowID. A hit returns the
// cached LocalRowID. A miss either restores the mapping from the spill area
// in device memory (the row was allocated before and its entry evicted) or
// allocates a new LocalRowID from the APT. Every (MallocID, RowID) thus gets
// exactly one LocalRowID for its region's lifetime (until flush()).
//
// Organisation: `entries` entries in `banks` banks of entries/banks entries.
// A row lives in bank RowID mod banks (the low bits of the RowID for a
// power-of-two bank count), so consecutive RowIDs, which the producers' RPMs
// send in order, spread over all banks. Each bank is a fully associative
// tag RAM with FIFO replacement: a miss into a full bank evicts the bank's
// oldest entry. An evicted entry that was allocated here (dirty) is written
// to the spill area (spill_entry_bytes of metadata write); an entry that was
// itself restored from the spill area is clean and dropped without a write.
//
// Timing, in hub cycles (the caller gives the cycle of the access):
// - ports: a bank serves `ports_per_bank` accesses per cycle. A hit is one
//   access (tag read); a miss two (tag read and fill write), both booked in
//   the lookup's cycle (the fill's real later time is not modelled). Each bank
//   keeps the cycle it is booked up to and the slots used in it; accesses are
//   booked in call order, which the AAU keeps in non-decreasing time. An
//   access that finds its bank's slots of the cycle used waits for the next
//   cycle: those waits are the bank-conflict cycles.
// - hit:     wait + lookup_cycles
// - new row: wait + lookup_cycles + apt_cycles
// - restore: wait + lookup_cycles + restore_cycles + lookup_cycles (one
//   device-memory read of spill_entry_bytes, whose answer passes the lookup
//   stage again to fill; the bytes are reported so the platform can book HBM)
// - a spill write is posted and adds no cycles (reported as bytes).
// Whether a missing row was allocated before: with spill_record kExact it is
// answered without memory traffic (assumption: an on-chip record of spilled
// RowIDs per region); with kRegion the RAT keeps one bit per region (set by
// its first spill, cleared by flush()), and once it is set every miss in the
// region reads the spill area (restore_cycles, spill_entry_bytes) before it
// restores the mapping or, when the row is not there, passes the lookup stage
// again and allocates a new one (wait + lookup_cycles + restore_cycles +
// lookup_cycles + apt_cycles). kRegion is what the RTL (rtl/moehub_rat.sv,
// rtl/moehub_aau.sv) builds, with the same cycles.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "golden/apt.hpp"

namespace moehub::golden {

/// What the RAT records of its spilled entries (hub.rat_spill_record).
enum class SpillRecord {
  kExact,   ///< "exact": the spilled RowIDs themselves
  kRegion,  ///< "region": one bit per region, a spill-area read on every miss once it is set
};
/// "exact" -> kExact, "region" -> kRegion; throws std::invalid_argument otherwise.
SpillRecord spill_record_from(const std::string& name);

struct RatParams {
  std::uint32_t entries = 4096;          ///< total entries (multiple of banks)
  std::uint32_t banks = 16;              ///< SRAM banks
  std::uint32_t ports_per_bank = 2;      ///< accesses per bank per cycle
  std::uint32_t lookup_cycles = 1;       ///< tag lookup
  std::uint32_t apt_cycles = 1;          ///< APT allocation on a miss of a new row
  std::uint32_t restore_cycles = 750;    ///< spill-area read on a miss of an evicted row
  std::uint32_t spill_entry_bytes = 8;   ///< one spilled mapping in device memory
  SpillRecord spill_record = SpillRecord::kExact;
};

struct RatStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;          ///< new rows + restores
  std::uint64_t allocations = 0;     ///< new LocalRowIDs from the APT
  std::uint64_t restores = 0;
  std::uint64_t evictions = 0;
  std::uint64_t spills = 0;          ///< evictions that wrote the spill area
  std::uint64_t bank_conflicts = 0;  ///< accesses that waited for a bank
  std::uint64_t conflict_cycles = 0;
  std::uint64_t stalls = 0;          ///< misses refused because the region was full (stall policy)
  std::uint64_t empty_queries = 0;   ///< spill-area reads that found no mapping (kRegion: a new row in a spilled region)
};

struct RatResult {
  bool ok = true;                 ///< false: new row in a full region (stall policy); no mapping changed
  std::int64_t local_row_id = -1;
  std::uint32_t cycles = 0;
  bool hit = false;
  bool restored = false;
  bool evicted = false;
  std::uint64_t metadata_read_bytes = 0;
  std::uint64_t metadata_write_bytes = 0;
};

class RowAllocationTable {
 public:
  /// Throws std::invalid_argument for zero sizes or entries not a multiple of banks.
  RowAllocationTable(const RatParams& p, AllocationPointerTable& apt);

  /// Translates (malloc_id, row_id) in hub cycle `cycle` (non-decreasing over calls).
  /// Throws std::out_of_range for an unknown region, std::invalid_argument for row_id < 0.
  RatResult lookup(std::uint32_t malloc_id, std::int64_t row_id, std::uint64_t cycle);
  /// Drops the region's entries and its spilled mappings (region freed or reinitialised).
  void flush(std::uint32_t malloc_id);

  std::uint32_t bank_of(std::int64_t row_id) const;
  const RatParams& params() const { return p_; }
  const RatStats& stats() const { return stats_; }
  std::size_t occupancy() const { return tags_.size(); }
  bool cached(std::uint32_t malloc_id, std::int64_t row_id) const;
  /// Mappings of the region held in the spill area.
  std::size_t spilled(std::uint32_t malloc_id) const;

 private:
  struct Key {
    std::uint32_t malloc_id;
    std::int64_t row_id;
    bool operator==(const Key& o) const { return malloc_id == o.malloc_id && row_id == o.row_id; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()(static_cast<std::uint64_t>(k.row_id) * 0x9E3779B97F4A7C15ULL ^ k.malloc_id);
    }
  };
  struct Tag {
    std::int64_t local_row_id;
    bool dirty;  ///< allocated here, not yet in the spill area
  };
  struct Bank {
    std::deque<Key> fifo;  ///< insertion order, oldest first
    std::uint64_t cycle = 0;
    std::uint32_t used = 0;
  };
  std::uint32_t book(Bank& b, std::uint64_t cycle, std::uint32_t accesses);

  RatParams p_;
  AllocationPointerTable& apt_;
  std::uint32_t ways_;
  std::vector<Bank> banks_;
  std::unordered_map<Key, Tag, KeyHash> tags_;
  std::unordered_map<Key, std::int64_t, KeyHash> spill_;  ///< the spill area in device memory
  std::unordered_set<std::uint32_t> spilled_regions_;     ///< kRegion: regions that spilled since their flush
  RatStats stats_;
};

}  // namespace moehub::golden
