// The co-simulation adapter (RtlAddressAllocationUnit, the Verilated
// moehub_aau behind golden::IngressFunction) against the behavioural
// AddressAllocationUnit: one stream of writes, fed to both at the same
// simulated times, must give the same acceptance, LocalRowIDs, addresses and
// retry times, and, until a region is reinitialised (after which the RAT
// organisations part, docs/rtl.md), the same spill traffic. The adapter
// must skip the idle cycles between writes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "golden/aau.hpp"
#include "rtl_aau.hpp"

namespace {

using moehub::cosim::RtlAddressAllocationUnit;
using moehub::golden::AauParams;
using moehub::golden::AddressAllocationUnit;
using moehub::golden::IngressResult;
using moehub::golden::Opcode;
using moehub::golden::StoreRequest;
using moehub::golden::Tick;

AauParams params() {
  const auto g = RtlAddressAllocationUnit::geometry();
  AauParams p;
  p.apt_regions = g.regions;
  p.rat.entries = g.rat_entries;
  p.rat.banks = g.rat_banks;
  p.rat.restore_cycles = 40;  // assumption: a short spill-area read keeps the test fast
  return p;
}

TEST(CosimAau, RefusesWhatTheRtlCannotBe) {
  AauParams p = params();
  p.rat.entries *= 2;
  EXPECT_THROW(RtlAddressAllocationUnit{p}, std::invalid_argument);
  RtlAddressAllocationUnit rtl(params());
  EXPECT_THROW(rtl.rowsp_malloc(0, (1U << 16) + 1, 16), std::invalid_argument);  // beyond the RowOffset width
  EXPECT_THROW(rtl.rowsp_malloc(0, 128, 1ULL << 20), std::invalid_argument);
  const auto geo = RtlAddressAllocationUnit::geometry();
  EXPECT_THROW(rtl.rowsp_malloc(1ULL << geo.addr_bits, 128, 16), std::invalid_argument);  // beyond its addresses
  AauParams error_policy = params();
  error_policy.region_full = moehub::golden::RegionFullPolicy::kError;  // the RTL can only refuse (stall)
  EXPECT_THROW(RtlAddressAllocationUnit{error_policy}, std::invalid_argument);
  // a RowID wider than the RTL's (the behavioural AAU has no width)
  const std::uint32_t id = rtl.rowsp_malloc(0x1000, 128, 16);
  StoreRequest w;
  w.op = Opcode::kRowStore;
  w.malloc_id = id;
  w.bytes = 16;
  w.row_id = static_cast<std::int64_t>(1ULL << geo.row_id_bits);
  EXPECT_THROW(rtl.on_write(w, 1000), std::invalid_argument);
  w.row_id = -1;
  EXPECT_THROW(rtl.on_write(w, 1000), std::invalid_argument);
}

// What both refuse, the adapter refuses with the same exception: regions it
// cannot make, an APT with every entry in use, a MallocID that is not active
// (freed), a row store past the end of its row; and a freed entry is handed
// out again as the behavioural APT hands it out.
TEST(CosimAau, RefusesWhatTheGoldenAauRefuses) {
  const auto geo = RtlAddressAllocationUnit::geometry();
  AddressAllocationUnit golden(params());
  RtlAddressAllocationUnit rtl(params());
  EXPECT_THROW(golden.rowsp_malloc(0, 0, 16), std::invalid_argument);  // row_bytes 0
  EXPECT_THROW(rtl.rowsp_malloc(0, 0, 16), std::invalid_argument);
  EXPECT_THROW(golden.rowsp_malloc(0, 128, 0), std::invalid_argument);  // no rows
  EXPECT_THROW(rtl.rowsp_malloc(0, 128, 0), std::invalid_argument);
  std::vector<std::uint32_t> ids;
  for (std::uint32_t r = 0; r < geo.regions; ++r) {
    const std::uint64_t base = 0x100000ULL * (r + 1);
    ids.push_back(golden.rowsp_malloc(base, 128, 16));
    ASSERT_EQ(rtl.rowsp_malloc(base, 128, 16), ids.back());
  }
  EXPECT_THROW(golden.rowsp_malloc(0, 128, 16), std::length_error);
  EXPECT_THROW(rtl.rowsp_malloc(0, 128, 16), std::length_error);
  golden.free_region(ids[1]);
  rtl.free_region(ids[1]);
  EXPECT_THROW(golden.reinit_region(ids[1]), std::out_of_range);
  EXPECT_THROW(rtl.reinit_region(ids[1]), std::out_of_range);
  EXPECT_THROW(golden.free_region(ids[1]), std::out_of_range);
  EXPECT_THROW(rtl.free_region(ids[1]), std::out_of_range);
  StoreRequest w;
  w.op = Opcode::kRowStore;
  w.malloc_id = ids[1];
  w.row_id = 3;
  w.bytes = 32;
  EXPECT_THROW(golden.on_write(w, 1000), std::out_of_range);
  EXPECT_THROW(rtl.on_write(w, 1000), std::out_of_range);
  // the freed entry is the lowest free one again, now with 64-byte rows
  const std::uint32_t again = golden.rowsp_malloc(0x900000, 64, 8);
  EXPECT_EQ(again, ids[1]);
  EXPECT_EQ(rtl.rowsp_malloc(0x900000, 64, 8), again);
  w.row_offset = 48;  // 32 bytes from offset 48 pass the end of a 64-byte row
  EXPECT_THROW(golden.on_write(w, 1000), std::logic_error);
  EXPECT_THROW(rtl.on_write(w, 1000), std::logic_error);
  w.row_offset = 32;
  const IngressResult g = golden.on_write(w, 2000), r = rtl.on_write(w, 2000);
  EXPECT_TRUE(g.accepted && r.accepted);
  EXPECT_EQ(r.local_row_id, g.local_row_id);
  EXPECT_EQ(r.address, g.address);
  EXPECT_EQ(g.address, 0x900000u + 32u) << "the first row of the region";
}

TEST(CosimAau, SameTranslationsAsTheGoldenAau) {
  AddressAllocationUnit golden(params());
  RtlAddressAllocationUnit rtl(params());
  struct Reg {
    std::uint64_t base;
    std::uint32_t row_bytes;
    std::uint64_t rows;
  };
  // region 1's rows are not a power of two (laid out at 256 bytes in the RTL)
  const Reg regs[3] = {{0x100000, 256, 4096}, {0x4000000, 144, 4096}, {0x9000000, 64, 60}};
  std::vector<std::uint32_t> ids;
  for (const Reg& r : regs) {
    const std::uint32_t id = golden.rowsp_malloc(r.base, r.row_bytes, r.rows);
    ASSERT_EQ(rtl.rowsp_malloc(r.base, r.row_bytes, r.rows), id);
    ids.push_back(id);
  }
  std::mt19937_64 rng(5);
  Tick now = 1000;
  bool reinitialised = false;
  std::uint64_t writes = 0, refused = 0, mismatches = 0, spill_bytes = 0;
  double t_golden = 0, t_rtl = 0;
  const std::uint64_t kWrites = 100000;
  for (std::uint64_t i = 0; i < kWrites; ++i) {
    now += rng() % 4 == 0 ? 20000 : rng() % 1000;  // bursts and idle gaps (ps)
    if (i % 25000 == 24999) {
      golden.reinit_region(ids[i / 25000 % 3]);
      rtl.reinit_region(ids[i / 25000 % 3]);
      reinitialised = true;
    }
    StoreRequest w;
    const unsigned k = static_cast<unsigned>(rng() % 16);
    w.op = k == 0 ? Opcode::kStore : (k == 1 ? Opcode::kRowStoreNop : Opcode::kRowStore);
    const unsigned m = static_cast<unsigned>(rng() % 8) < 6 ? static_cast<unsigned>(rng() % 2) : 2;
    w.malloc_id = ids[m];
    w.row_id = static_cast<std::int64_t>((i / 16 + rng() % 200) % 65536);  // a sliding window of 200 rows
    w.bytes = 1 + static_cast<std::uint32_t>(rng() % 16);
    w.row_offset = static_cast<std::uint32_t>(rng() % (regs[m].row_bytes - w.bytes + 1));
    w.address = 0x77000 + i;
    auto t0 = std::chrono::steady_clock::now();
    const IngressResult g = golden.on_write(w, now);
    auto t1 = std::chrono::steady_clock::now();
    const IngressResult r = rtl.on_write(w, now);
    auto t2 = std::chrono::steady_clock::now();
    t_golden += std::chrono::duration<double>(t1 - t0).count();
    t_rtl += std::chrono::duration<double>(t2 - t1).count();
    ++writes;
    refused += g.accepted ? 0 : 1;
    spill_bytes += r.metadata_write_bytes;
    const bool same = g.accepted == r.accepted && g.local_row_id == r.local_row_id && g.address == r.address &&
                      (g.accepted || g.retry_at == r.retry_at) &&
                      (reinitialised || g.metadata_write_bytes == r.metadata_write_bytes);
    if (!same && mismatches++ < 5) {
      ADD_FAILURE() << "write " << i << " (region " << m << ", row " << w.row_id << "): golden accepted "
                    << g.accepted << " local " << g.local_row_id << " address " << g.address << " spill bytes "
                    << g.metadata_write_bytes << "; RTL " << r.accepted << " " << r.local_row_id << " " << r.address
                    << " " << r.metadata_write_bytes;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  std::printf("co-simulation: %llu writes (%llu refused: region full), %llu cycles simulated, %llu skipped, "
              "%llu spills, %llu restore queries; golden %.3f s, RTL adapter %.3f s\n",
              static_cast<unsigned long long>(writes), static_cast<unsigned long long>(refused),
              static_cast<unsigned long long>(rtl.cycles_simulated()),
              static_cast<unsigned long long>(rtl.cycles_skipped()), static_cast<unsigned long long>(rtl.spills()),
              static_cast<unsigned long long>(rtl.restore_queries()), t_golden, t_rtl);
  EXPECT_GT(refused, 0u);                                  // region 2 fills
  EXPECT_GT(spill_bytes, 0u);                              // the RAT spilled
  EXPECT_GT(rtl.cycles_skipped(), rtl.cycles_simulated());  // idle cycles are not simulated
}

}  // namespace

namespace {

// With the behavioural RAT on the RTL's spill record (one bit per region:
// rat_spill_record "region"), the two units agree write by write on the
// response's cycles and its metadata traffic too, as long as every write
// finds the unit idle (the writes here are longer apart than a restore): a
// hit, a new row, a restore, and a new row of a region that has spilled
// (which reads the spill area first) take the same cycles in both.
TEST(CosimAau, RegionRecordSameCyclesAsTheGoldenAau) {
  AauParams p = params();
  p.rat.spill_record = moehub::golden::SpillRecord::kRegion;
  AddressAllocationUnit golden(p);
  RtlAddressAllocationUnit rtl(p);
  const std::uint32_t id = golden.rowsp_malloc(0x100000, 256, 1 << 16);
  ASSERT_EQ(rtl.rowsp_malloc(0x100000, 256, 1 << 16), id);
  std::mt19937_64 rng(11);
  Tick now = 1000;
  std::uint64_t mismatches = 0;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    now += 2'000'000;  // 2 us: longer than a restore (40 cycles here)
    StoreRequest w;
    w.op = Opcode::kRowStore;
    w.malloc_id = id;
    w.row_id = static_cast<std::int64_t>(i / 4 + rng() % 300);
    w.bytes = 16;
    w.row_offset = 0;
    const IngressResult g = golden.on_write(w, now);
    const IngressResult r = rtl.on_write(w, now);
    const bool same = g.local_row_id == r.local_row_id && g.cycles == r.cycles &&
                      g.metadata_read_bytes == r.metadata_read_bytes &&
                      g.metadata_write_bytes == r.metadata_write_bytes;
    if (!same && mismatches++ < 5) {
      ADD_FAILURE() << "write " << i << " (row " << w.row_id << "): golden local " << g.local_row_id << " cycles "
                    << g.cycles << " read " << g.metadata_read_bytes << " write " << g.metadata_write_bytes
                    << "; RTL " << r.local_row_id << " " << r.cycles << " " << r.metadata_read_bytes << " "
                    << r.metadata_write_bytes;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  const auto s = golden.rat_stats();
  EXPECT_GT(s.hits, 0u);
  EXPECT_GT(s.restores, 0u);
  EXPECT_GT(s.empty_queries, 0u);
  EXPECT_GT(s.allocations, s.empty_queries);  // new rows before the first spill read nothing
  EXPECT_EQ(rtl.rat_stats().empty_queries, s.empty_queries);
}

}  // namespace
