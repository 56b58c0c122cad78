// Data Availability Manager: groups released exactly once and only when
// their data is complete, the partial last group and empty groups through
// the global total (known at registration or only at the end), masks,
// overlapping kernels, and conservation errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "golden/dam.hpp"

namespace moehub::golden {
namespace {

constexpr std::uint64_t kBase = 0x4000'0000;
constexpr std::uint32_t kRowBytes = 256;

KernelDependency kernel(std::int32_t id, std::uint32_t rows_per_group, std::uint32_t groups,
                        std::optional<std::uint64_t> expected_rows = std::nullopt) {
  KernelDependency k;
  k.kernel = id;
  k.base_address = kBase;
  k.row_bytes = kRowBytes;
  k.rows_per_group = rows_per_group;
  k.groups = groups;
  if (expected_rows) k.expected_bytes = *expected_rows * kRowBytes;
  return k;
}

/// A completed row store: LocalRowID `lrid`, bytes [offset, offset + bytes) of the row.
StoreRequest done(std::int64_t lrid, std::uint32_t offset, std::uint32_t bytes = 128) {
  StoreRequest w;
  w.op = Opcode::kRowStore;
  w.local_row_id = lrid;
  w.row_offset = offset;
  w.address = kBase + static_cast<std::uint64_t>(lrid) * kRowBytes + offset;
  w.bytes = bytes;
  w.mask = ByteMask::range(offset % kLineBytes, bytes);
  return w;
}

std::vector<ReadySignal> write_row(DataAvailabilityManager& dam, std::int64_t lrid) {
  std::vector<ReadySignal> ready;
  for (std::uint32_t o = 0; o < kRowBytes; o += kLineBytes) dam.on_write_complete(done(lrid, o), 0, ready);
  return ready;
}

bool operator==(const ReadySignal& a, const ReadySignal& b) { return a.kernel == b.kernel && a.group == b.group; }

TEST(Dam, GroupIsReleasedOnceWhenItsLastByteArrives) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(7, 4, 3), ready);
  EXPECT_TRUE(ready.empty());
  for (std::int64_t r = 0; r < 3; ++r) EXPECT_TRUE(write_row(dam, r).empty());
  dam.on_write_complete(done(3, 0), 0, ready);
  EXPECT_TRUE(ready.empty());  // one line of the fourth row still missing
  EXPECT_EQ(dam.group_state(7, 0), GroupState::kWaiting);
  dam.on_write_complete(done(3, 128), 0, ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_TRUE(ready[0] == (ReadySignal{7, 0}));
  EXPECT_EQ(dam.group_state(7, 0), GroupState::kReleased);
  EXPECT_EQ(dam.group_bytes(7, 0), 4u * kRowBytes);
  EXPECT_TRUE(write_row(dam, 4).empty());  // group 1 starts
  EXPECT_EQ(dam.stats().groups_released, 1u);
  // more data for a released group is a conservation error
  EXPECT_THROW(dam.on_write_complete(done(0, 0), 0, ready), std::logic_error);
}

TEST(Dam, KnownTotalReleasesThePartialLastGroupAndRetiresEmptyOnes) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(1, 4, 4, 6), ready);  // 6 rows: group 0 full, group 1 two rows, groups 2-3 empty
  EXPECT_EQ(dam.threshold_bytes(1, 1), 2u * kRowBytes);
  EXPECT_EQ(dam.threshold_bytes(1, 2), 0u);
  std::vector<ReadySignal> all;
  for (std::int64_t r : {4, 0, 1, 2, 5, 3}) {
    auto got = write_row(dam, r);
    all.insert(all.end(), got.begin(), got.end());
  }
  const std::vector<ReadySignal> want{{1, 1}, {1, 0}, {1, kAllReadyGroup}};
  ASSERT_EQ(all.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(all[i] == want[i]) << i;
  EXPECT_EQ(dam.group_state(1, 2), GroupState::kRetired);
  EXPECT_EQ(dam.group_state(1, 3), GroupState::kRetired);
  EXPECT_TRUE(dam.all_ready(1));
  EXPECT_EQ(dam.stats().groups_retired, 2u);
}

TEST(Dam, TotalKnownOnlyAtTheEndResolvesTheLastGroupThen) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(2, 4, 3), ready);
  for (std::int64_t r = 0; r < 6; ++r) {
    auto got = write_row(dam, r);
    ready.insert(ready.end(), got.begin(), got.end());
  }
  ASSERT_EQ(ready.size(), 1u);  // group 0 only: group 1's threshold is still a full group
  EXPECT_EQ(dam.group_state(2, 1), GroupState::kWaiting);
  ready.clear();
  dam.set_expected_bytes(2, 6 * kRowBytes, ready);
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_TRUE(ready[0] == (ReadySignal{2, 1}));
  EXPECT_TRUE(ready[1] == (ReadySignal{2, kAllReadyGroup}));
  EXPECT_EQ(dam.group_state(2, 2), GroupState::kRetired);
  EXPECT_THROW(dam.set_expected_bytes(2, 6 * kRowBytes, ready), std::logic_error);
}

TEST(Dam, TotalKnownEarlyWaitsForTheDataThenSignalsAllReady) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(3, 2, 3), ready);
  write_row(dam, 0);
  dam.set_expected_bytes(3, 3 * kRowBytes, ready);
  EXPECT_TRUE(ready.empty());
  EXPECT_FALSE(dam.all_ready(3));
  auto got = write_row(dam, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == (ReadySignal{3, 1}));
  got = write_row(dam, 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0] == (ReadySignal{3, 0}));
  EXPECT_TRUE(got[1] == (ReadySignal{3, kAllReadyGroup}));
  EXPECT_EQ(dam.group_state(3, 2), GroupState::kRetired);
}

TEST(Dam, KernelWithoutRowsIsAllReadyAtOnce) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(4, 8, 5, 0), ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_TRUE(ready[0] == (ReadySignal{4, kAllReadyGroup}));
  for (std::uint32_t g = 0; g < 5; ++g) EXPECT_EQ(dam.group_state(4, g), GroupState::kRetired);
}

TEST(Dam, MasksCountOnlyTheirBytesAndPlainStoresSplitAcrossGroups) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(5, 1, 2), ready);  // one row per group: group g = [base + g*256, +256)
  StoreRequest merged = done(0, 0);
  merged.mask = ByteMask::range(0, 32);
  merged.mask |= ByteMask::range(64, 32);
  dam.on_write_complete(merged, 0, ready);
  EXPECT_EQ(dam.group_bytes(5, 0), 64u);
  StoreRequest plain;
  plain.address = kBase + 192;  // 128 bytes: 64 in group 0, 64 in group 1
  plain.bytes = 128;
  dam.on_write_complete(plain, 0, ready);
  EXPECT_EQ(dam.group_bytes(5, 0), 128u);
  EXPECT_EQ(dam.group_bytes(5, 1), 64u);
  StoreRequest outside;
  outside.address = kBase + 2 * kRowBytes;
  outside.bytes = 64;
  dam.on_write_complete(outside, 0, ready);
  EXPECT_EQ(dam.stats().unmatched_completions, 1u);
  EXPECT_EQ(dam.received_bytes(5), 192u);
  EXPECT_TRUE(ready.empty());
}

TEST(Dam, MaskRunsAcrossTheWordBoundaryAndSparseMasksCountEveryByte) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(6, 1, 2), ready);  // group g = [base + g*256, +256)
  StoreRequest a = done(0, 0);
  a.mask = ByteMask::range(60, 10);  // bytes 60..69: one run over both mask words
  dam.on_write_complete(a, 0, ready);
  EXPECT_EQ(dam.group_bytes(6, 0), 10u);
  StoreRequest b = done(0, 128);
  b.mask = ByteMask{};
  for (std::uint32_t i = 1; i < kLineBytes; i += 2) b.mask |= ByteMask::range(i, 1);  // 64 runs of one byte
  dam.on_write_complete(b, 0, ready);
  EXPECT_EQ(dam.group_bytes(6, 0), 74u);
  StoreRequest c = done(1, 0);
  c.mask = ByteMask::range(127, 1);  // the line's last byte alone
  c.mask |= ByteMask::range(0, 1);
  dam.on_write_complete(c, 0, ready);
  EXPECT_EQ(dam.group_bytes(6, 1), 2u);
  EXPECT_EQ(dam.received_bytes(6), 76u);
  EXPECT_TRUE(ready.empty());
}

TEST(Dam, OverlappingKernelsBothCount) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  dam.add_kernel(kernel(10, 1, 4), ready);
  dam.add_kernel(kernel(11, 2, 2), ready);
  auto got = write_row(dam, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == (ReadySignal{10, 1}));
  got = write_row(dam, 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0] == (ReadySignal{10, 0}));
  EXPECT_TRUE(got[1] == (ReadySignal{11, 0}));
  dam.remove_kernel(10);
  EXPECT_THROW(dam.group_state(10, 0), std::out_of_range);
  EXPECT_EQ(dam.group_bytes(11, 0), 2u * kRowBytes);
}

TEST(Dam, RejectsBadRegistrationsAndOverDelivery) {
  DataAvailabilityManager dam;
  std::vector<ReadySignal> ready;
  EXPECT_THROW(dam.add_kernel(kernel(1, 0, 2), ready), std::invalid_argument);
  KernelDependency odd = kernel(1, 2, 2);
  odd.expected_bytes = kRowBytes + 1;
  EXPECT_THROW(dam.add_kernel(odd, ready), std::invalid_argument);
  dam.add_kernel(kernel(1, 2, 2), ready);
  EXPECT_THROW(dam.add_kernel(kernel(1, 2, 2), ready), std::invalid_argument);
  EXPECT_THROW(dam.set_expected_bytes(1, 5 * kRowBytes, ready), std::invalid_argument);  // past 4 rows of capacity
  write_row(dam, 0);
  write_row(dam, 2);
  EXPECT_THROW(dam.set_expected_bytes(1, 1 * kRowBytes, ready), std::logic_error);  // already more arrived
}

// Random arrival order of the packets of a random number of rows into a
// kernel with conservatively many groups: each group is released exactly
// once, at the completion that makes its rows complete and not before; the
// empty groups are retired at AllReady, which comes last.
TEST(Dam, RandomArrivalsReleaseEveryGroupOnceWhenComplete) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint32_t rpg = 1 + static_cast<std::uint32_t>(rng() % 16);
    const std::uint32_t groups = 1 + static_cast<std::uint32_t>(rng() % 20);
    const std::uint64_t rows = rng() % (std::uint64_t{rpg} * groups + 1);
    const bool total_first = rng() % 2 == 0;
    DataAvailabilityManager dam;
    std::vector<ReadySignal> ready;
    dam.add_kernel(kernel(0, rpg, groups, total_first ? std::optional<std::uint64_t>(rows) : std::nullopt), ready);
    std::vector<StoreRequest> packets;
    for (std::uint64_t r = 0; r < rows; ++r) {
      for (std::uint32_t o = 0; o < kRowBytes; o += 64) packets.push_back(done(static_cast<std::int64_t>(r), o, 64));
    }
    std::shuffle(packets.begin(), packets.end(), rng);
    std::map<std::uint32_t, std::uint64_t> arrived;  // group -> bytes, counted here
    std::map<std::int32_t, int> released;
    auto expected_bytes = [&](std::uint32_t g) {
      const std::uint64_t first = std::uint64_t{g} * rpg;
      return (rows <= first ? 0 : std::min<std::uint64_t>(rpg, rows - first)) * kRowBytes;
    };
    auto check = [&](const std::vector<ReadySignal>& got, bool only_full) {
      for (const ReadySignal& s : got) {
        if (s.group == kAllReadyGroup) continue;
        const auto g = static_cast<std::uint32_t>(s.group);
        ASSERT_EQ(++released[s.group], 1) << "group " << g << " released twice";
        const bool full_group = expected_bytes(g) == std::uint64_t{rpg} * kRowBytes;
        ASSERT_EQ(arrived[g], expected_bytes(g)) << "group " << g << " released before its data";
        // without the total, only full groups can be released from counters
        if (only_full) {
          ASSERT_TRUE(full_group);
        }
      }
    };
    check(ready, false);
    for (const StoreRequest& w : packets) {
      ready.clear();
      arrived[static_cast<std::uint32_t>(w.local_row_id) / rpg] += w.bytes;
      dam.on_write_complete(w, 0, ready);
      check(ready, !total_first);
      ASSERT_FALSE(dam.all_ready(0) && &w != &packets.back()) << "AllReady before the last byte";
    }
    if (!total_first) {
      ready.clear();
      dam.set_expected_bytes(0, rows * kRowBytes, ready);
      check(ready, false);
    }
    ASSERT_TRUE(dam.all_ready(0));
    for (std::uint32_t g = 0; g < groups; ++g) {
      const GroupState want = expected_bytes(g) > 0 ? GroupState::kReleased : GroupState::kRetired;
      ASSERT_EQ(dam.group_state(0, g), want) << "trial " << trial << " group " << g;
      ASSERT_EQ(released.count(static_cast<std::int32_t>(g)), expected_bytes(g) > 0 ? 1u : 0u);
    }
    EXPECT_EQ(dam.stats().all_ready, 1u);
  }
}

}  // namespace
}  // namespace moehub::golden
