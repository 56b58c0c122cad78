// The "moehub" implementation from the factory, end to end: producers' RPMs
// merge and schedule row stores, the consumer's AAU places them, its DAM
// releases the consumer kernel's thread-block groups. Every row lands in one
// row of the region, every byte is counted once, every group is released
// once and AllReady comes with the last byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "golden/aau.hpp"
#include "golden/dam.hpp"
#include "golden/hub_functions.hpp"
#include "golden/rpm.hpp"

namespace moehub::golden {
namespace {

TEST(MoeHubFactory, BuildsTheUnitsFromHubParams) {
  const auto names = hub_implementations();
  EXPECT_NE(std::find(names.begin(), names.end(), "moehub"), names.end());
  HubParams p;
  p.gpu = 1;
  p.num_gpus = 4;
  p.rpm_entries_per_peer = 1;
  p.region_full = "error";
  auto f = make_hub_functions("moehub", p);
  auto* aau = dynamic_cast<AddressAllocationUnit*>(f.ingress.get());
  auto* rpm = dynamic_cast<RuntimePacketManager*>(f.egress.get());
  ASSERT_NE(aau, nullptr);
  ASSERT_NE(rpm, nullptr);
  ASSERT_NE(dynamic_cast<DataAvailabilityManager*>(f.completion.get()), nullptr);
  EXPECT_EQ(aau->apt().policy(), RegionFullPolicy::kError);
  EXPECT_EQ(aau->rat().params().banks, p.rat_banks);
  EXPECT_EQ(aau->rat().params().entries, p.rat_entries);
  EXPECT_EQ(malloc_id_gpu(aau->rowsp_malloc(0, 128, 4)), 1);
  StoreRequest s;
  s.dst_gpu = 2;
  s.address = 0x100;
  s.bytes = 128;
  EXPECT_TRUE(f.egress->can_accept(s, 0));
  f.egress->accept(s, 0);
  s.address = 0x200;
  EXPECT_FALSE(f.egress->can_accept(s, 0));  // one entry per peer
  p.region_full = "drop";
  EXPECT_THROW(make_hub_functions("moehub", p), std::invalid_argument);
  p.region_full = "stall";
  p.rat_entries = 100;  // not a multiple of 16 banks
  EXPECT_THROW(make_hub_functions("moehub", p), std::invalid_argument);
}

TEST(MoeHubChain, RowsFromThreeProducersReachOneRowEachAndReleaseEveryGroupOnce) {
  constexpr std::int32_t kGpus = 4, kConsumer = 0;
  constexpr std::uint32_t kRowBytes = 512, kRowsPerProducer = 700, kRowsPerGroup = 16, kStoreBytes = 32;
  constexpr std::uint32_t kLocalRows = 150;
  HubParams hp;
  hp.num_gpus = kGpus;
  hp.rat_entries = 32;  // 2 ways per bank: far fewer than the rows in flight
  hp.rpm_entries_per_peer = 8;
  hp.rpm_timer_cycles = 16;
  std::vector<HubFunctions> hub;
  for (std::int32_t g = 0; g < kGpus; ++g) {
    hp.gpu = g;
    hub.push_back(make_hub_functions("moehub", hp));
  }
  auto& aau = dynamic_cast<AddressAllocationUnit&>(*hub[kConsumer].ingress);
  auto& dam = dynamic_cast<DataAvailabilityManager&>(*hub[kConsumer].completion);
  const std::uint64_t base = 0x2'0000'0000;
  const std::uint32_t total_rows = kRowsPerProducer * (kGpus - 1) + kLocalRows;
  const std::uint32_t groups = (total_rows + kRowsPerGroup - 1) / kRowsPerGroup + 5;  // conservative
  const std::uint32_t id = aau.rowsp_malloc(base, kRowBytes, groups * kRowsPerGroup);
  std::vector<ReadySignal> ready;
  KernelDependency k;
  k.kernel = 9;
  k.base_address = base;
  k.row_bytes = kRowBytes;
  k.rows_per_group = kRowsPerGroup;
  k.groups = groups;
  k.expected_bytes = std::uint64_t{total_rows} * kRowBytes;  // known from the routing
  dam.add_kernel(k, ready);

  // each producer's stores: its rows cut in 32-byte pieces, shuffled within a window of rows
  std::mt19937_64 rng(1234);
  std::vector<std::vector<StoreRequest>> todo(kGpus);
  for (std::int32_t g = 1; g < kGpus; ++g) {
    for (std::uint32_t r0 = 0; r0 < kRowsPerProducer; r0 += 20) {
      std::vector<StoreRequest> window;
      for (std::uint32_t r = r0; r < std::min(r0 + 20, kRowsPerProducer); ++r) {
        for (std::uint32_t o = 0; o < kRowBytes; o += kStoreBytes) {
          StoreRequest s;
          s.op = Opcode::kRowStore;
          s.src_gpu = g;
          s.dst_gpu = kConsumer;
          s.malloc_id = id;
          s.row_id = std::int64_t{r} * kGpus + g;  // globally unique RowIDs
          s.row_offset = o;
          s.bytes = kStoreBytes;
          window.push_back(s);
        }
      }
      std::shuffle(window.begin(), window.end(), rng);
      todo[static_cast<std::size_t>(g)].insert(todo[static_cast<std::size_t>(g)].end(), window.begin(), window.end());
    }
  }
  std::map<std::int64_t, std::uint64_t> row_at;
  std::set<std::uint64_t> rows_used;
  std::uint64_t bytes_in = 0;
  std::vector<ReadySignal> signals;
  auto deliver = [&](const StoreRequest& w, Tick now, bool local) {
    const IngressResult r = local ? aau.on_local_store(w, now) : hub[kConsumer].ingress->on_write(w, now);
    ASSERT_TRUE(r.accepted);
    const std::uint64_t row_base = r.address - w.row_offset;
    auto [it, fresh] = row_at.emplace(w.row_id, row_base);
    if (fresh) {
      ASSERT_TRUE(rows_used.insert(row_base).second);
    } else {
      ASSERT_EQ(it->second, row_base) << "row " << w.row_id << " moved";
    }
    StoreRequest done = w;
    done.address = r.address;
    done.local_row_id = r.local_row_id;
    bytes_in += w.mask.empty() ? w.bytes : w.mask.count();
    ready.clear();
    dam.on_write_complete(done, now, ready);
    signals.insert(signals.end(), ready.begin(), ready.end());
  };

  const std::vector<std::uint8_t> free_ports(kGpus, 0);
  std::vector<std::size_t> next(kGpus, 0);
  std::uint32_t local_next = 0;
  const HubClock clk(hp.clock_ghz);
  for (std::uint64_t c = 0;; ++c) {
    ASSERT_LT(c, 1'000'000u);
    const Tick now = clk.tick_of(c);
    bool busy = false;
    for (std::int32_t g = 1; g < kGpus; ++g) {
      auto& eg = *hub[static_cast<std::size_t>(g)].egress;
      auto& q = todo[static_cast<std::size_t>(g)];
      auto& n = next[static_cast<std::size_t>(g)];
      for (int lane = 0; lane < 2 && n < q.size() && eg.can_accept(q[n], now); ++lane) eg.accept(q[n++], now);
      EgressPick p;
      if (eg.pick(now, free_ports, p)) deliver(p.store, now, false);
      busy = busy || n < q.size() || eg.occupancy() > 0;
    }
    if (local_next < kLocalRows && c % 3 == 0) {  // the consumer's own tokens, one row at a time
      StoreRequest s;
      s.op = Opcode::kRowStore;
      s.src_gpu = s.dst_gpu = kConsumer;
      s.malloc_id = id;
      s.row_id = std::int64_t{kRowsPerProducer + local_next} * kGpus;
      for (std::uint32_t o = 0; o < kRowBytes; o += kLineBytes) {
        s.row_offset = o;
        s.bytes = kLineBytes;
        deliver(s, now, true);
      }
      ++local_next;
    }
    busy = busy || local_next < kLocalRows;
    if (!busy) break;
  }
  EXPECT_EQ(row_at.size(), total_rows);
  EXPECT_EQ(*rows_used.rbegin(), base + std::uint64_t{total_rows - 1} * kRowBytes);  // dense
  EXPECT_EQ(bytes_in, std::uint64_t{total_rows} * kRowBytes);
  EXPECT_TRUE(dam.all_ready(9));
  std::map<std::int32_t, int> times;
  for (const ReadySignal& s : signals) ++times[s.group];
  ASSERT_EQ(signals.back().group, kAllReadyGroup);
  const std::uint32_t full_or_partial = (total_rows + kRowsPerGroup - 1) / kRowsPerGroup;
  for (std::uint32_t g = 0; g < groups; ++g) {
    EXPECT_EQ(times[static_cast<std::int32_t>(g)], g < full_or_partial ? 1 : 0) << g;
    EXPECT_EQ(dam.group_state(9, g), g < full_or_partial ? GroupState::kReleased : GroupState::kRetired);
  }
  EXPECT_GT(aau.rat().stats().restores, 0u);  // eviction and restore were exercised
  std::uint64_t merged = 0;
  for (std::int32_t g = 1; g < kGpus; ++g) {
    merged += dynamic_cast<RuntimePacketManager&>(*hub[static_cast<std::size_t>(g)].egress).stats().stores_merged;
  }
  EXPECT_GT(merged, 0u);
}

}  // namespace
}  // namespace moehub::golden
