// Address Allocation Unit: the row-store address, pass-through of plain
// stores and flags, local stores, full regions (stall with retry, or error),
// reinit, and every packet of a row at one address through eviction.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "golden/aau.hpp"

namespace moehub::golden {
namespace {

AauParams params(std::int32_t gpu, std::uint32_t rat_entries = 64, std::uint32_t rat_banks = 16) {
  AauParams p;
  p.gpu = gpu;
  p.rat.entries = rat_entries;
  p.rat.banks = rat_banks;
  return p;
}

StoreRequest row_store(std::uint32_t malloc_id, std::int64_t row, std::uint32_t offset, std::uint32_t bytes = 128) {
  StoreRequest s;
  s.op = Opcode::kRowStore;
  s.malloc_id = malloc_id;
  s.row_id = row;
  s.row_offset = offset;
  s.bytes = bytes;
  return s;
}

TEST(Aau, RowStoreAddressIsBasePlusLocalRowTimesRowSizePlusOffset) {
  AddressAllocationUnit aau(params(2));
  const std::uint64_t base = 0x7000'0000;
  const std::uint32_t row_bytes = 4096 + 128;  // e.g. hidden 2048 bf16 + a source-info column
  const std::uint32_t id = aau.rowsp_malloc(base, row_bytes, 1000);
  const IngressResult a = aau.on_write(row_store(id, 900, 256), 1000);
  EXPECT_TRUE(a.accepted);
  EXPECT_EQ(a.local_row_id, 0);
  EXPECT_EQ(a.address, base + 256);
  const IngressResult b = aau.on_write(row_store(id, 17, 0), 2000);
  EXPECT_EQ(b.local_row_id, 1);
  EXPECT_EQ(b.address, base + row_bytes);
  StoreRequest nop = row_store(id, 900, 4096, 8);
  nop.op = Opcode::kRowStoreNop;
  nop.priority = false;
  const IngressResult c = aau.on_write(nop, 3000);
  EXPECT_EQ(c.local_row_id, 0);
  EXPECT_EQ(c.address, base + 4096);
  EXPECT_EQ(c.address, aau.address_of(id, 0, 4096));
  EXPECT_EQ(c.cycles, aau.rat().params().lookup_cycles);  // a hit
  EXPECT_EQ(b.cycles, aau.rat().params().lookup_cycles + aau.rat().params().apt_cycles);
}

TEST(Aau, PlainStoresAndFlagsPassThrough) {
  AddressAllocationUnit aau(params(1));
  StoreRequest s;
  s.address = 0x1234'5680;
  s.bytes = 128;
  EXPECT_EQ(aau.on_write(s, 0).address, s.address);
  EXPECT_EQ(aau.on_write(s, 0).local_row_id, -1);
  s.op = Opcode::kFlagWrite;
  s.address = 0x40;
  EXPECT_EQ(aau.on_write(s, 0).address, 0x40u);
  EXPECT_EQ(aau.rat().stats().hits + aau.rat().stats().misses, 0u);
}

TEST(Aau, LocalStoresShareTheMapping) {
  AddressAllocationUnit aau(params(0));
  const std::uint32_t id = aau.rowsp_malloc(0x1000, 1024, 64);
  StoreRequest local = row_store(id, 5, 0);
  local.src_gpu = 0;
  const IngressResult l = aau.on_local_store(local, 10);
  StoreRequest remote = row_store(id, 5, 512);
  remote.src_gpu = 3;
  const IngressResult r = aau.on_write(remote, 20);
  EXPECT_EQ(l.local_row_id, r.local_row_id);
  EXPECT_EQ(r.address, l.address + 512);
  EXPECT_EQ(aau.on_local_store(row_store(id, 6, 0), 30).local_row_id, 1);
  StoreRequest plain;
  EXPECT_THROW(aau.on_local_store(plain, 40), std::logic_error);
}

TEST(Aau, RejectsMisroutedAndOversizedRowStores) {
  AddressAllocationUnit aau(params(1));
  const std::uint32_t id = aau.rowsp_malloc(0, 256, 8);
  EXPECT_THROW(aau.on_write(row_store(make_malloc_id(2, 0), 1, 0), 0), std::logic_error);  // GPU 2's region
  EXPECT_THROW(aau.on_write(row_store(make_malloc_id(1, 5), 1, 0), 0), std::out_of_range);  // not registered
  EXPECT_THROW(aau.on_write(row_store(id, 1, 200, 64), 0), std::logic_error);               // past the row
  StoreRequest masked = row_store(id, 1, 128, 0);
  masked.mask = ByteMask::range(100, 28);
  EXPECT_NO_THROW(aau.on_write(masked, 0));
  masked.row_offset = 256 - 28;  // window [128, 256): the mask ends at byte 128 + 127 = 255
  masked.mask = ByteMask::range(100, 28);
  EXPECT_NO_THROW(aau.on_write(masked, 0));
  StoreRequest past = row_store(id, 1, 256 - 8, 0);
  past.mask = ByteMask::range(0, 128);  // window [128, 256) fully: fine
  EXPECT_NO_THROW(aau.on_write(past, 0));
  AddressAllocationUnit small_row(params(1));
  const std::uint32_t sid = small_row.rowsp_malloc(0, 192, 8);
  StoreRequest over = row_store(sid, 1, 128, 0);
  over.mask = ByteMask::range(0, 128);  // window [128, 256) passes the 192-byte row
  EXPECT_THROW(small_row.on_write(over, 0), std::logic_error);
  over.mask = ByteMask::range(0, 64);  // the mask's low word only: ends at byte 191, the row's last
  EXPECT_NO_THROW(small_row.on_write(over, 0));
  over.mask = ByteMask::range(0, 65);  // one byte into the high word: byte 192 passes the row
  EXPECT_THROW(small_row.on_write(over, 0), std::logic_error);
}

TEST(Aau, FullRegionStallsWithARetryTimeAndRecoversAfterReinit) {
  AauParams p = params(0);
  p.region_full_retry_cycles = 10;
  AddressAllocationUnit aau(p);
  const std::uint32_t id = aau.rowsp_malloc(0, 128, 2);
  aau.on_write(row_store(id, 1, 0), 0);
  aau.on_write(row_store(id, 2, 0), 1000);
  const Tick now = 5000;
  const IngressResult s = aau.on_write(row_store(id, 3, 0), now);
  EXPECT_FALSE(s.accepted);
  EXPECT_GT(s.retry_at, now);
  EXPECT_EQ(s.retry_at, aau.clock().tick_of(aau.clock().cycle_at(now) + p.region_full_retry_cycles));
  EXPECT_EQ(aau.stalled_writes(), 1u);
  EXPECT_TRUE(aau.on_write(row_store(id, 1, 0), s.retry_at).accepted);  // known rows still go
  EXPECT_FALSE(aau.on_write(row_store(id, 3, 0), s.retry_at).accepted);
  aau.reinit_region(id);
  const IngressResult after = aau.on_write(row_store(id, 3, 0), s.retry_at + 1000);
  EXPECT_TRUE(after.accepted);
  EXPECT_EQ(after.local_row_id, 0);
  EXPECT_EQ(aau.on_write(row_store(id, 1, 0), s.retry_at + 2000).local_row_id, 1);  // a new row now
}

TEST(Aau, FullRegionThrowsUnderTheErrorPolicy) {
  AauParams p = params(0);
  p.region_full = RegionFullPolicy::kError;
  AddressAllocationUnit aau(p);
  const std::uint32_t id = aau.rowsp_malloc(0, 128, 1);
  aau.on_write(row_store(id, 1, 0), 0);
  EXPECT_THROW(aau.on_write(row_store(id, 2, 0), 10), RegionFullError);
}

TEST(Aau, FreedRegionIsUnknown) {
  AddressAllocationUnit aau(params(0));
  const std::uint32_t id = aau.rowsp_malloc(0, 128, 4);
  aau.on_write(row_store(id, 1, 0), 0);
  aau.free_region(id);
  EXPECT_THROW(aau.on_write(row_store(id, 1, 0), 10), std::out_of_range);
  EXPECT_EQ(aau.rat().occupancy(), 0u);
}

// Several producers' packets of thousands of rows, interleaved, through a
// RAT of 32 entries: each row's packets land in one row of the region, no
// two rows share one, and the rows are packed densely from the base.
TEST(Aau, AllPacketsOfARowLandInOneRowThroughEvictions) {
  constexpr std::uint32_t kRows = 3000, kRowBytes = 1024, kPackets = kRowBytes / kLineBytes, kInFlight = 200;
  AauParams p = params(4, 32, 8);
  AddressAllocationUnit aau(p);
  const std::uint64_t base = 0x10'0000'0000;
  const std::uint32_t id = aau.rowsp_malloc(base, kRowBytes, kRows);
  std::mt19937_64 rng(7);
  struct Flight {
    std::int64_t row;
    std::vector<std::uint32_t> offsets;
  };
  std::vector<Flight> flight;
  std::int64_t next_row = 0;
  std::map<std::int64_t, std::uint64_t> row_base;
  std::set<std::uint64_t> bases;
  std::uint64_t restores_seen = 0, read_bytes = 0;
  Tick now = 0;
  while (next_row < kRows || !flight.empty()) {
    while (flight.size() < kInFlight && next_row < kRows) {
      Flight f{next_row * 7919 % 100003, {}};  // RowIDs scattered over banks
      ++next_row;
      for (std::uint32_t k = 0; k < kPackets; ++k) f.offsets.push_back(k * kLineBytes);
      std::shuffle(f.offsets.begin(), f.offsets.end(), rng);
      flight.push_back(f);
    }
    const std::size_t i = rng() % flight.size();
    Flight& f = flight[i];
    StoreRequest s = row_store(id, f.row, f.offsets.back());
    s.src_gpu = static_cast<std::int32_t>(rng() % 8);
    now += rng() % 700;
    const IngressResult r = aau.on_write(s, now);
    ASSERT_TRUE(r.accepted);
    read_bytes += r.metadata_read_bytes;
    restores_seen += r.metadata_read_bytes > 0 ? 1 : 0;
    const std::uint64_t rb = r.address - s.row_offset;
    ASSERT_EQ(rb, aau.address_of(id, r.local_row_id, 0));
    auto it = row_base.find(f.row);
    if (it == row_base.end()) {
      ASSERT_TRUE(bases.insert(rb).second) << "two rows share the row at " << rb;
      row_base.emplace(f.row, rb);
    } else {
      ASSERT_EQ(rb, it->second);
    }
    f.offsets.pop_back();
    if (f.offsets.empty()) {
      flight[i] = flight.back();
      flight.pop_back();
    }
  }
  ASSERT_EQ(bases.size(), kRows);
  EXPECT_EQ(*bases.begin(), base);
  EXPECT_EQ(*bases.rbegin(), base + std::uint64_t{kRows - 1} * kRowBytes);  // dense: first to last, none missing
  EXPECT_GT(restores_seen, 0u);
  EXPECT_EQ(restores_seen, aau.rat().stats().restores);
  EXPECT_EQ(read_bytes, aau.rat().stats().restores * p.rat.spill_entry_bytes);
}

}  // namespace
}  // namespace moehub::golden
