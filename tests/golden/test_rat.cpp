// Row Allocation Table: hits, misses, banked FIFO eviction with spill and
// restore, port timing, flush, full regions, and the one-LocalRowID-per-row
// invariant with a table far smaller than the rows in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "golden/apt.hpp"
#include "golden/rat.hpp"

namespace moehub::golden {
namespace {

RatParams small(std::uint32_t entries, std::uint32_t banks, std::uint32_t ports = 2) {
  RatParams p;
  p.entries = entries;
  p.banks = banks;
  p.ports_per_bank = ports;
  return p;
}

TEST(Rat, MissAllocatesAndHitReuses) {
  AllocationPointerTable apt(0, 4, RegionFullPolicy::kStall);
  const std::uint32_t id = apt.rowsp_malloc(0, 256, 100);
  const RatParams p = small(64, 16);
  RowAllocationTable rat(p, apt);
  const RatResult m = rat.lookup(id, 77, 10);
  EXPECT_TRUE(m.ok);
  EXPECT_FALSE(m.hit);
  EXPECT_EQ(m.local_row_id, 0);
  EXPECT_EQ(m.cycles, p.lookup_cycles + p.apt_cycles);
  const RatResult h = rat.lookup(id, 77, 11);
  EXPECT_TRUE(h.hit);
  EXPECT_EQ(h.local_row_id, 0);
  EXPECT_EQ(h.cycles, p.lookup_cycles);
  EXPECT_EQ(rat.lookup(id, 5, 12).local_row_id, 1);
  EXPECT_EQ(rat.stats().hits, 1u);
  EXPECT_EQ(rat.stats().misses, 2u);
  EXPECT_EQ(rat.stats().allocations, 2u);
  EXPECT_EQ(rat.bank_of(77), 77u % p.banks);
  EXPECT_THROW(rat.lookup(id, -1, 13), std::invalid_argument);
  EXPECT_THROW(rat.lookup(make_malloc_id(0, 3), 1, 13), std::out_of_range);
}

TEST(Rat, FifoEvictionSpillsAndRestoresTheSameId) {
  AllocationPointerTable apt(0, 1, RegionFullPolicy::kStall);
  const std::uint32_t id = apt.rowsp_malloc(0, 256, 100);
  const RatParams p = small(4, 2);  // 2 banks of 2 ways
  RowAllocationTable rat(p, apt);
  std::uint64_t c = 0;
  // rows 0, 2, 4 map to bank 0; row 1 to bank 1
  const auto r0 = rat.lookup(id, 0, c++), r2 = rat.lookup(id, 2, c++), r1 = rat.lookup(id, 1, c++);
  EXPECT_FALSE(r0.evicted || r2.evicted || r1.evicted);
  const auto r4 = rat.lookup(id, 4, c++);
  EXPECT_TRUE(r4.evicted);  // bank 0 full: its oldest, row 0, goes
  EXPECT_EQ(r4.metadata_write_bytes, p.spill_entry_bytes);
  EXPECT_FALSE(rat.cached(id, 0));
  EXPECT_TRUE(rat.cached(id, 2));
  EXPECT_TRUE(rat.cached(id, 1));  // the other bank is untouched
  EXPECT_EQ(rat.spilled(id), 1u);

  const auto back = rat.lookup(id, 0, c++);
  EXPECT_TRUE(back.restored);
  EXPECT_EQ(back.local_row_id, r0.local_row_id);
  EXPECT_EQ(back.cycles, p.lookup_cycles + p.restore_cycles + p.lookup_cycles);
  EXPECT_EQ(back.metadata_read_bytes, p.spill_entry_bytes);
  EXPECT_TRUE(back.evicted);  // row 2 was bank 0's oldest
  EXPECT_EQ(back.metadata_write_bytes, p.spill_entry_bytes);
  EXPECT_EQ(apt.region(id).row_pointer, 4u);  // a restore allocates nothing

  // rows 4 and 0 now in bank 0; 0 was restored (clean): evicting it writes nothing
  rat.lookup(id, 6, c++);  // evicts 4 (dirty)
  const auto e = rat.lookup(id, 8, c++);  // evicts 0 (clean)
  EXPECT_TRUE(e.evicted);
  EXPECT_EQ(e.metadata_write_bytes, 0u);
  EXPECT_EQ(rat.lookup(id, 0, c++).local_row_id, r0.local_row_id);
  EXPECT_EQ(rat.lookup(id, 2, c++).local_row_id, r2.local_row_id);
  EXPECT_EQ(rat.stats().restores, 3u);
  EXPECT_EQ(rat.stats().evictions, 6u);
  EXPECT_EQ(rat.stats().spills, rat.stats().evictions - 1);  // one clean drop (row 0 after its restore)
}

// spill_record "region" (what the RTL builds): one bit per region; once a
// region has spilled, a new row in it reads the spill area first (restore
// cycles and a metadata read) and then allocates; another region, and the
// same region after a flush, allocate at once. "exact" (the default) never
// reads memory for a new row.
TEST(Rat, RegionSpillRecordReadsTheSpillAreaForNewRowsOfASpilledRegion) {
  for (const SpillRecord rec : {SpillRecord::kExact, SpillRecord::kRegion}) {
    SCOPED_TRACE(rec == SpillRecord::kExact ? "exact" : "region");
    AllocationPointerTable apt(0, 2, RegionFullPolicy::kStall);
    const std::uint32_t a = apt.rowsp_malloc(0, 256, 100);
    const std::uint32_t b = apt.rowsp_malloc(1 << 20, 256, 100);
    RatParams p = small(2, 1);  // one bank of 2 ways
    p.spill_record = rec;
    RowAllocationTable rat(p, apt);
    std::uint64_t c = 0;
    const std::uint32_t new_row = p.lookup_cycles + p.apt_cycles;
    EXPECT_EQ(rat.lookup(a, 0, c++).cycles, new_row);
    EXPECT_EQ(rat.lookup(a, 1, c++).cycles, new_row);
    EXPECT_EQ(rat.lookup(b, 9, c++).cycles, new_row);  // evicts a's row 0: region a has spilled
    const RatResult n = rat.lookup(a, 2, c++);      // a new row of region a
    EXPECT_FALSE(n.restored);
    EXPECT_EQ(n.local_row_id, 2);
    const bool reads = rec == SpillRecord::kRegion;
    EXPECT_EQ(n.cycles, new_row + (reads ? p.restore_cycles + p.lookup_cycles : 0u));
    EXPECT_EQ(n.metadata_read_bytes, reads ? p.spill_entry_bytes : 0u);
    EXPECT_EQ(rat.stats().empty_queries, reads ? 1u : 0u);
    // region b has not spilled: a new row there allocates at once
    const RatResult nb = rat.lookup(b, 10, c++);
    EXPECT_EQ(nb.metadata_read_bytes, 0u);
    EXPECT_EQ(nb.cycles, new_row);
    // a restore costs the same under both records
    const RatResult r = rat.lookup(a, 0, c++);
    EXPECT_TRUE(r.restored);
    EXPECT_EQ(r.cycles, p.lookup_cycles + p.restore_cycles + p.lookup_cycles);
    // after a flush region a starts without its bit
    rat.flush(a);
    apt.reinit(a);
    EXPECT_EQ(rat.lookup(a, 5, c++).cycles, new_row);
  }
  EXPECT_EQ(spill_record_from("exact"), SpillRecord::kExact);
  EXPECT_EQ(spill_record_from("region"), SpillRecord::kRegion);
  EXPECT_THROW(spill_record_from("bloom"), std::invalid_argument);
}

TEST(Rat, BankPortsLimitAccessesPerCycle) {
  AllocationPointerTable apt(0, 2, RegionFullPolicy::kStall);
  const std::uint32_t id = apt.rowsp_malloc(0, 256, 100);
  const RatParams p = small(64, 4, 2);
  RowAllocationTable rat(p, apt);
  for (std::int64_t r : {0, 4, 8}) rat.lookup(id, r, 0);  // warm bank 0 (misses, cycles 0..)
  const std::uint64_t t = 100;
  // two hits on bank 0 fit its two ports; the third waits one cycle
  EXPECT_EQ(rat.lookup(id, 0, t).cycles, p.lookup_cycles);
  EXPECT_EQ(rat.lookup(id, 4, t).cycles, p.lookup_cycles);
  const std::uint64_t conflicts = rat.stats().bank_conflicts;
  EXPECT_EQ(rat.lookup(id, 8, t).cycles, p.lookup_cycles + 1);
  EXPECT_EQ(rat.stats().bank_conflicts, conflicts + 1);
  // another bank in the same cycle is free
  EXPECT_EQ(rat.lookup(id, 1, t).cycles, p.lookup_cycles + p.apt_cycles);
  // a miss takes both ports of its bank: a hit in the same cycle waits
  const std::uint64_t u = 200;
  EXPECT_EQ(rat.lookup(id, 12, u).cycles, p.lookup_cycles + p.apt_cycles);
  EXPECT_EQ(rat.lookup(id, 0, u).cycles, p.lookup_cycles + 1);
  // a later cycle starts afresh
  EXPECT_EQ(rat.lookup(id, 0, u + 5).cycles, p.lookup_cycles);

  RowAllocationTable one_port(small(64, 4, 1), apt);
  const std::uint32_t id2 = apt.rowsp_malloc(0, 256, 100);
  one_port.lookup(id2, 0, 0);
  EXPECT_EQ(one_port.lookup(id2, 0, 10).cycles, p.lookup_cycles);
  EXPECT_EQ(one_port.lookup(id2, 0, 10).cycles, p.lookup_cycles + 1);
  EXPECT_EQ(one_port.lookup(id2, 0, 10).cycles, p.lookup_cycles + 2);
}

TEST(Rat, FlushForgetsOneRegionOnly) {
  AllocationPointerTable apt(0, 2, RegionFullPolicy::kStall);
  const std::uint32_t a = apt.rowsp_malloc(0, 128, 100), b = apt.rowsp_malloc(1 << 20, 128, 100);
  RowAllocationTable rat(small(4, 1), apt);
  for (std::int64_t r = 0; r < 6; ++r) rat.lookup(a, r, static_cast<std::uint64_t>(r));
  rat.lookup(b, 0, 10);
  EXPECT_GT(rat.spilled(a), 0u);
  rat.flush(a);
  apt.reinit(a);
  EXPECT_EQ(rat.spilled(a), 0u);
  EXPECT_FALSE(rat.cached(a, 5));
  EXPECT_TRUE(rat.cached(b, 0));
  EXPECT_EQ(rat.lookup(a, 3, 20).local_row_id, 0);  // a fresh allocation, not a restore
  EXPECT_EQ(rat.lookup(b, 0, 21).local_row_id, 0);
  EXPECT_TRUE(rat.lookup(b, 0, 22).hit);
}

TEST(Rat, FullRegionChangesNoMapping) {
  AllocationPointerTable apt(0, 1, RegionFullPolicy::kStall);
  const std::uint32_t id = apt.rowsp_malloc(0, 128, 2);
  RowAllocationTable rat(small(4, 1), apt);
  rat.lookup(id, 10, 0);
  rat.lookup(id, 11, 1);
  const RatResult s = rat.lookup(id, 12, 2);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.local_row_id, -1);
  EXPECT_EQ(rat.occupancy(), 2u);
  EXPECT_FALSE(rat.cached(id, 12));
  EXPECT_EQ(rat.stats().stalls, 1u);
  EXPECT_TRUE(rat.lookup(id, 10, 3).hit);  // known rows still translate

  AllocationPointerTable err(0, 1, RegionFullPolicy::kError);
  const std::uint32_t e = err.rowsp_malloc(0, 128, 1);
  RowAllocationTable rat2(small(4, 1), err);
  rat2.lookup(e, 1, 0);
  EXPECT_THROW(rat2.lookup(e, 2, 1), RegionFullError);
  EXPECT_EQ(rat2.occupancy(), 1u);
}

TEST(Rat, RejectsBadGeometry) {
  AllocationPointerTable apt(0, 1, RegionFullPolicy::kStall);
  EXPECT_THROW(RowAllocationTable(small(10, 4), apt), std::invalid_argument);
  EXPECT_THROW(RowAllocationTable(small(0, 4), apt), std::invalid_argument);
  EXPECT_THROW(RowAllocationTable(small(8, 0), apt), std::invalid_argument);
  EXPECT_THROW(RowAllocationTable(small(8, 4, 0), apt), std::invalid_argument);
}

// Thousands of rows, hundreds in flight, packets of a row interleaved at
// random with other rows', into a 64-entry RAT: every packet of a row gets
// the row's one LocalRowID, no LocalRowID is handed out twice, and the ids
// of each region are dense.
TEST(Rat, OneLocalRowIdPerRowAcrossEvictionAndRestore) {
  constexpr std::uint32_t kRows = 4000, kInFlight = 256, kPackets = 8, kRegions = 2;
  AllocationPointerTable apt(1, kRegions, RegionFullPolicy::kStall);
  std::vector<std::uint32_t> ids;
  for (std::uint32_t r = 0; r < kRegions; ++r) ids.push_back(apt.rowsp_malloc(r << 30, 1024, kRows));
  const RatParams p = small(64, 8);
  RowAllocationTable rat(p, apt);
  ASSERT_LE(p.entries * 4, kInFlight);

  std::mt19937_64 rng(20261201);
  std::uniform_int_distribution<std::int64_t> row_dist(0, 1 << 24);
  struct Flight {
    std::uint32_t region;
    std::int64_t row;
    std::uint32_t left;
  };
  std::vector<Flight> flight;
  std::set<std::pair<std::uint32_t, std::int64_t>> used_rows;
  std::map<std::pair<std::uint32_t, std::int64_t>, std::int64_t> lrid;
  std::uint32_t started = 0;
  auto start_row = [&] {
    std::pair<std::uint32_t, std::int64_t> k;
    do {
      k = {ids[started % kRegions], row_dist(rng)};
    } while (!used_rows.insert(k).second);
    flight.push_back({k.first, k.second, kPackets});
    ++started;
  };
  std::uint64_t cycle = 0, lookups = 0, read_bytes = 0, write_bytes = 0;
  while (started < kRows || !flight.empty()) {
    while (flight.size() < kInFlight && started < kRows) start_row();
    const std::size_t i = std::uniform_int_distribution<std::size_t>(0, flight.size() - 1)(rng);
    Flight& f = flight[i];
    cycle += rng() % 2;
    const RatResult r = rat.lookup(f.region, f.row, cycle);
    ++lookups;
    ASSERT_TRUE(r.ok);
    read_bytes += r.metadata_read_bytes;
    write_bytes += r.metadata_write_bytes;
    const auto key = std::make_pair(f.region, f.row);
    auto it = lrid.find(key);
    if (it == lrid.end()) {
      ASSERT_FALSE(r.hit || r.restored) << "first packet of a row must allocate";
      lrid.emplace(key, r.local_row_id);
    } else {
      ASSERT_EQ(r.local_row_id, it->second) << "row " << f.row << " got a second LocalRowID";
    }
    if (--f.left == 0) {
      flight[i] = flight.back();
      flight.pop_back();
    }
  }
  // unique and dense per region
  for (std::uint32_t id : ids) {
    std::vector<std::int64_t> got;
    for (const auto& kv : lrid) {
      if (kv.first.first == id) got.push_back(kv.second);
    }
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got.size(), kRows / kRegions);
    for (std::size_t k = 0; k < got.size(); ++k) ASSERT_EQ(got[k], static_cast<std::int64_t>(k));
  }
  const RatStats& s = rat.stats();
  EXPECT_EQ(s.allocations, kRows);
  EXPECT_EQ(s.hits + s.misses, lookups);
  EXPECT_EQ(s.misses, s.allocations + s.restores);
  EXPECT_GT(s.restores, 0u);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_LE(s.spills, s.evictions);
  EXPECT_EQ(read_bytes, s.restores * p.spill_entry_bytes);
  EXPECT_EQ(write_bytes, s.spills * p.spill_entry_bytes);
  EXPECT_LE(rat.occupancy(), p.entries);
}

}  // namespace
}  // namespace moehub::golden
