// Runtime Packet Manager: merging, back-pressure, the scheduler's order
// (round robin, priority, full-first, smallest RowID, timer bypass), a pool
// of one entry, and a randomised bound on every store's wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "golden/rpm.hpp"

namespace moehub::golden {
namespace {

RpmParams params(std::int32_t num_gpus, std::uint32_t entries = 16, std::uint32_t timer = 64, bool hold = true) {
  RpmParams p;
  p.gpu = 0;
  p.num_gpus = num_gpus;
  p.entries_per_peer = entries;
  p.timer_cycles = timer;
  p.hold_partial = hold;
  return p;
}

StoreRequest plain(std::int32_t dst, std::uint64_t address, std::uint32_t bytes, std::uint64_t tag = 0) {
  StoreRequest s;
  s.dst_gpu = dst;
  s.address = address;
  s.bytes = bytes;
  s.tag = tag;
  return s;
}

StoreRequest row(std::int32_t dst, std::int64_t row_id, std::uint32_t offset, std::uint32_t bytes, bool priority = true,
                 std::uint64_t tag = 0) {
  StoreRequest s;
  s.op = priority ? Opcode::kRowStore : Opcode::kRowStoreNop;
  s.priority = priority;
  s.dst_gpu = dst;
  s.malloc_id = 0x10000u * static_cast<std::uint32_t>(dst);
  s.row_id = row_id;
  s.row_offset = offset;
  s.bytes = bytes;
  s.tag = tag;
  return s;
}

const std::vector<std::uint8_t> kFree(16, 0);

TEST(Rpm, MergesPlainStoresByLineAndJoinsMasks) {
  RuntimePacketManager rpm(params(2));
  rpm.accept(plain(1, 0x1000, 64, 1), 0);
  rpm.accept(plain(1, 0x1040, 64, 2), 0);
  rpm.accept(plain(1, 0x1080, 32, 3), 0);  // next line
  EXPECT_EQ(rpm.occupancy(), 2u);
  EgressPick p;
  ASSERT_TRUE(rpm.pick(0, kFree, p));
  EXPECT_EQ(p.store.address, 0x1000u);
  EXPECT_EQ(p.store.bytes, 128u);
  EXPECT_TRUE(p.store.mask.full());
  EXPECT_EQ(p.merged, 2u);
  EXPECT_EQ(rpm.last_pick_tags(), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(rpm.stats().stores_merged, 1u);
  EXPECT_EQ(rpm.stats().full_packets, 1u);
}

TEST(Rpm, MergesRowStoresByRowAndLineWithMatchingPriorityOnly) {
  RuntimePacketManager rpm(params(2, 16, 64, false));
  rpm.accept(row(1, 5, 0, 32, true, 1), 0);
  rpm.accept(row(1, 5, 32, 32, true, 2), 0);   // same row, same line: merges
  rpm.accept(row(1, 5, 16, 32, true, 3), 0);   // overlaps: merges, union of bytes
  rpm.accept(row(1, 5, 128, 32, true, 4), 0);  // same row, next line
  rpm.accept(row(1, 6, 0, 32, true, 5), 0);    // another row
  rpm.accept(row(1, 5, 64, 32, false, 6), 0);  // .nop: not with the priority entry
  EXPECT_EQ(rpm.occupancy(), 4u);
  EgressPick p;
  ASSERT_TRUE(rpm.pick(0, kFree, p));
  EXPECT_EQ(p.store.row_id, 5);
  EXPECT_EQ(p.store.row_offset, 0u);
  EXPECT_EQ(p.merged, 3u);
  EXPECT_EQ(p.store.bytes, 64u);
  EXPECT_EQ(p.store.mask, ByteMask::range(0, 64));
  EXPECT_EQ(rpm.stats().stores_merged, 2u);
  ASSERT_TRUE(rpm.pick(0, kFree, p));
  EXPECT_EQ(p.store.row_offset, 128u);  // row 5's second line before row 6
  ASSERT_TRUE(rpm.pick(0, kFree, p));
  EXPECT_EQ(p.store.row_id, 6);
  ASSERT_TRUE(rpm.pick(0, kFree, p));
  EXPECT_FALSE(p.store.priority);
  EXPECT_EQ(p.store.row_offset, 64u);
  EXPECT_DOUBLE_EQ(rpm.stats().merge_ratio(), 6.0 / 4.0);
}

TEST(Rpm, FlagsNeverMergeAndNeverWait) {
  RuntimePacketManager rpm(params(2, 16, 1000, true));
  StoreRequest f = plain(1, 0x40, 4);
  f.op = Opcode::kFlagWrite;
  rpm.accept(f, 0);
  rpm.accept(f, 0);
  EXPECT_EQ(rpm.occupancy(), 2u);
  EgressPick p;
  ASSERT_TRUE(rpm.pick(0, kFree, p));
  EXPECT_EQ(p.merged, 1u);
  EXPECT_EQ(p.store.address, 0x40u);
  EXPECT_EQ(p.store.bytes, 4u);
}

TEST(Rpm, BackPressureOnlyForAFullPartitionWithoutMerge) {
  RuntimePacketManager rpm(params(3, 2));
  rpm.accept(plain(1, 0x000, 64), 0);
  rpm.accept(plain(1, 0x100, 64), 0);
  EXPECT_FALSE(rpm.can_accept(plain(1, 0x200, 64), 0));
  EXPECT_TRUE(rpm.can_accept(plain(1, 0x140, 64), 0));  // merges into 0x100
  EXPECT_TRUE(rpm.can_accept(plain(2, 0x200, 64), 0));  // other peer
  EXPECT_THROW(rpm.accept(plain(1, 0x200, 64), 0), std::logic_error);
  rpm.accept(plain(1, 0x140, 64), 0);
  EXPECT_EQ(rpm.occupancy(1), 2u);
  EXPECT_EQ(rpm.occupancy(2), 0u);
}

TEST(Rpm, PriorityBeforeNopThenFullFirstThenSmallestRowId) {
  RuntimePacketManager rpm(params(2, 16, 64, false));
  rpm.accept(row(1, 1, 0, 128, false), 0);  // .nop, oldest, smallest row
  rpm.accept(row(1, 30, 0, 128), 0);
  rpm.accept(row(1, 20, 0, 64), 0);  // partial
  rpm.accept(row(1, 10, 0, 128), 0);
  rpm.accept(row(1, 20, 128, 128), 0);
  std::vector<std::pair<std::int64_t, std::uint32_t>> order;
  EgressPick p;
  while (rpm.pick(0, kFree, p)) order.emplace_back(p.store.row_id, p.store.bytes);
  const std::vector<std::pair<std::int64_t, std::uint32_t>> want{{10, 128}, {20, 128}, {30, 128}, {20, 64}, {1, 128}};
  EXPECT_EQ(order, want);
}

TEST(Rpm, PartialEntriesWaitForTheTimer) {
  const RpmParams prm = params(2, 16, 40, true);
  RuntimePacketManager rpm(prm);
  const HubClock clk(prm.clock_ghz);
  const Tick t0 = clk.tick_of(100);
  rpm.accept(row(1, 3, 0, 64), t0);
  EgressPick p;
  EXPECT_FALSE(rpm.pick(t0, kFree, p));
  const Tick expiry = rpm.next_event(t0);
  EXPECT_EQ(expiry, clk.tick_of(100 + prm.timer_cycles));
  EXPECT_FALSE(rpm.pick(expiry - 1, kFree, p));
  rpm.accept(row(1, 3, 64, 64), expiry - 1);  // completes the line: leaves at once
  ASSERT_TRUE(rpm.pick(expiry - 1, kFree, p));
  EXPECT_TRUE(p.store.mask.full());
  EXPECT_EQ(rpm.next_event(expiry), kNever);

  rpm.accept(row(1, 4, 0, 16), expiry);
  const Tick e2 = rpm.next_event(expiry);
  EXPECT_FALSE(rpm.pick(e2 - 1, kFree, p));
  ASSERT_TRUE(rpm.pick(e2, kFree, p));
  EXPECT_EQ(p.store.row_id, 4);
  EXPECT_EQ(rpm.stats().timer_flushes, 1u);

  RuntimePacketManager eager(params(2, 16, 40, false));
  eager.accept(row(1, 3, 0, 64), t0);
  EXPECT_EQ(eager.next_event(t0), kNever);
  EXPECT_TRUE(eager.pick(t0, kFree, p));
}

TEST(Rpm, ExpiredEntriesGoFirstOldestFirst) {
  const RpmParams prm = params(2, 16, 10, true);
  RuntimePacketManager rpm(prm);
  const HubClock clk(prm.clock_ghz);
  rpm.accept(row(1, 50, 0, 8, false), clk.tick_of(0));  // .nop, partial
  rpm.accept(row(1, 40, 0, 8, true), clk.tick_of(1));   // priority, partial
  const Tick t = clk.tick_of(11);                       // both expired
  for (std::int64_t r = 0; r < 3; ++r) rpm.accept(row(1, r, 0, 128), t);
  EgressPick p;
  std::vector<std::int64_t> order;
  while (rpm.pick(t, kFree, p)) order.push_back(p.store.row_id);
  EXPECT_EQ(order, (std::vector<std::int64_t>{50, 40, 0, 1, 2}));
  EXPECT_EQ(rpm.stats().timer_flushes, 2u);
}

TEST(Rpm, RoundRobinOverPeersSkipsCongestedOnes) {
  RuntimePacketManager rpm(params(4));
  for (int k = 0; k < 2; ++k) {
    for (std::int32_t d = 1; d <= 3; ++d) rpm.accept(plain(d, 0x1000u * static_cast<unsigned>(k + 1), 128), 0);
  }
  EgressPick p;
  std::vector<std::int32_t> order;
  std::vector<std::uint8_t> congested(4, 0);
  congested[2] = 1;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(rpm.pick(0, congested, p));
    order.push_back(p.store.dst_gpu);
  }
  EXPECT_FALSE(rpm.pick(0, congested, p));  // only GPU 2's stores are left
  congested[2] = 0;
  while (rpm.pick(0, congested, p)) order.push_back(p.store.dst_gpu);
  EXPECT_EQ(order, (std::vector<std::int32_t>{1, 3, 1, 3, 2, 2}));
}

TEST(Rpm, PoolOfOneEntryStillMakesProgress) {
  const RpmParams prm = params(3, 1, 1000000, true);
  RuntimePacketManager rpm(prm);
  const HubClock clk(prm.clock_ghz);
  std::vector<StoreRequest> todo;
  for (std::uint64_t i = 0; i < 60; ++i) {
    todo.push_back(row(1 + static_cast<std::int32_t>(i % 2), static_cast<std::int64_t>(i / 4),
                       static_cast<std::uint32_t>(i % 4) * 32, 32, true, i));
  }
  std::set<std::uint64_t> sent;
  std::size_t next = 0;
  EgressPick p;
  for (std::uint64_t c = 0; c < 1000 && sent.size() < todo.size(); ++c) {
    const Tick now = clk.tick_of(c);
    while (next < todo.size() && rpm.can_accept(todo[next], now)) rpm.accept(todo[next++], now);
    if (rpm.pick(now, kFree, p)) sent.insert(rpm.last_pick_tags().begin(), rpm.last_pick_tags().end());
  }
  EXPECT_EQ(sent.size(), todo.size());
  EXPECT_GT(rpm.stats().pressure_flushes, 0u);
  EXPECT_EQ(rpm.occupancy(), 0u);
}

TEST(Rpm, PacketSizesAndRejects) {
  RuntimePacketManager rpm(params(2, 16, 64, false));
  rpm.accept(plain(1, 0x0, 128), 0);
  rpm.accept(plain(1, 0x100, 16), 0);
  rpm.accept(plain(1, 0x200, 17), 0);
  EgressPick p;
  while (rpm.pick(0, kFree, p)) {
  }
  const auto& h = rpm.stats().packet_flits;
  EXPECT_EQ(h[8], 1u);
  EXPECT_EQ(h[1], 1u);
  EXPECT_EQ(h[2], 1u);
  EXPECT_EQ(rpm.stats().bytes_sent, 128u + 16u + 17u);
  EXPECT_THROW(rpm.accept(plain(0, 0, 8), 0), std::invalid_argument);      // to itself
  EXPECT_THROW(rpm.accept(plain(2, 0, 8), 0), std::invalid_argument);      // no such GPU
  EXPECT_THROW(rpm.accept(plain(1, 0x78, 16), 0), std::invalid_argument);  // crosses a line
  EXPECT_THROW(RuntimePacketManager(params(1)), std::invalid_argument);
  EXPECT_THROW(RuntimePacketManager(params(2, 0)), std::invalid_argument);
}

// Heavy random load (three stores offered per cycle, one packet sent per
// cycle) of row stores, .nop stores and plain stores over four peers: every
// store leaves within timer_cycles + entries_per_peer * peers cycles of its
// acceptance, and every store leaves exactly once.
void run_random(bool congestion) {
  const RpmParams prm = params(5, 8, 32, true);
  const std::uint32_t peers = static_cast<std::uint32_t>(prm.num_gpus - 1);
  const std::uint64_t bound = prm.timer_cycles + std::uint64_t{prm.entries_per_peer} * peers;
  RuntimePacketManager rpm(prm);
  const HubClock clk(prm.clock_ghz);
  std::mt19937_64 rng(congestion ? 99 : 42);
  std::map<std::uint64_t, std::uint64_t> accepted_at;
  std::set<std::uint64_t> delivered;
  std::vector<StoreRequest> lanes(3);
  std::vector<bool> lane_busy(3, false);
  std::uint64_t tag = 0, max_wait = 0, merged_sum = 0;
  const std::uint64_t offer_cycles = 20000;
  auto make = [&]() {
    const auto dst = static_cast<std::int32_t>(1 + rng() % peers);
    const std::uint32_t kind = static_cast<std::uint32_t>(rng() % 20);
    const std::uint32_t bytes = 32u << (rng() % 3);  // 32, 64, 128
    const std::uint32_t in_line = static_cast<std::uint32_t>(rng() % (kLineBytes / bytes)) * bytes;
    StoreRequest s;
    if (kind < 3) {
      s = plain(dst, (rng() % 64) * kLineBytes + in_line, bytes);
      s.row_id = -1;
    } else {
      s = row(dst, static_cast<std::int64_t>(rng() % 200), static_cast<std::uint32_t>(rng() % 4) * kLineBytes + in_line,
              kind < 6 ? 8 : bytes, kind >= 6);
    }
    s.tag = tag++;
    return s;
  };
  EgressPick p;
  std::vector<std::uint8_t> congested(5, 0);
  for (std::uint64_t c = 0; c < offer_cycles || rpm.occupancy() > 0; ++c) {
    ASSERT_LT(c, offer_cycles * 2) << "the buffer did not drain";
    const Tick now = clk.tick_of(c);
    for (std::size_t l = 0; l < lanes.size() && c < offer_cycles; ++l) {
      if (!lane_busy[l]) {
        lanes[l] = make();
        lane_busy[l] = true;
      }
      if (rpm.can_accept(lanes[l], now)) {
        rpm.accept(lanes[l], now);
        accepted_at[lanes[l].tag] = c;
        lane_busy[l] = false;
      }
    }
    if (congestion) {
      for (auto& x : congested) x = rng() % 4 == 0;
    }
    if (!rpm.pick(now, congested, p)) continue;
    merged_sum += p.merged;
    ASSERT_EQ(rpm.last_pick_tags().size(), p.merged);
    for (std::uint64_t t : rpm.last_pick_tags()) {
      ASSERT_TRUE(delivered.insert(t).second) << "store " << t << " sent twice";
      const std::uint64_t wait = c - accepted_at.at(t);
      max_wait = std::max(max_wait, wait);
      if (!congestion) {
        ASSERT_LE(wait, bound) << "store " << t << " starved";
      }
    }
  }
  EXPECT_EQ(delivered.size(), accepted_at.size());
  EXPECT_EQ(merged_sum, rpm.stats().stores_accepted);
  EXPECT_EQ(rpm.stats().stores_sent, rpm.stats().stores_accepted);
  EXPECT_GT(rpm.stats().merge_ratio(), 1.0);
  EXPECT_GT(rpm.stats().stores_merged, 0u);
  EXPECT_GT(max_wait, std::uint64_t{prm.timer_cycles});  // the load made the timer matter
  EXPECT_GT(rpm.stats().timer_flushes, 0u);
}

TEST(Rpm, RandomLoadNeverStarvesAStorePastTheTimerBound) { run_random(false); }
TEST(Rpm, RandomLoadWithCongestionDeliversEveryStoreOnce) { run_random(true); }

}  // namespace
}  // namespace moehub::golden
