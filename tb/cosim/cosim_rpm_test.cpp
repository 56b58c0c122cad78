// The co-simulation adapter of the egress side (RtlRuntimePacketManager:
// the C++ buffer pool with the Verilated moehub_rpm_sched picking) against
// the behavioural RuntimePacketManager: the same stores accepted and the
// same pick() calls with the same congestion, cycle by cycle, must give the
// same packets (the stores they carry, their bytes and offsets) in the same
// order, the same can_accept answers and the same next_event times. Each
// cycle accepts before it picks (the order the adapter models exactly).
// Without a waveform the adapter forms a clock edge by copying the model's
// next state into its flip-flops; with one it toggles the clock: both must
// agree with the behavioural RPM.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "golden/rpm.hpp"
#include "rtl_rpm.hpp"

namespace {

using moehub::cosim::RtlRuntimePacketManager;
using moehub::golden::EgressPick;
using moehub::golden::HubClock;
using moehub::golden::Opcode;
using moehub::golden::RpmParams;
using moehub::golden::RuntimePacketManager;
using moehub::golden::StoreRequest;

RpmParams params(bool hold) {
  const auto g = RtlRuntimePacketManager::geometry();
  RpmParams p;
  p.gpu = 1;
  p.num_gpus = static_cast<std::int32_t>(g.peers) + 1;
  p.entries_per_peer = g.entries_per_peer;
  p.timer_cycles = 12;  // assumption: short enough that the timer path is exercised often
  p.hold_partial = hold;
  return p;
}

TEST(CosimRpm, RefusesWhatTheRtlCannotBe) {
  RpmParams p = params(true);
  p.num_gpus += 1;
  EXPECT_THROW(RtlRuntimePacketManager{p}, std::invalid_argument);
  p = params(true);
  p.timer_cycles = 1000;
  EXPECT_THROW(RtlRuntimePacketManager{p}, std::invalid_argument);
}

void run(bool hold, std::uint32_t seed, std::uint64_t cycles = 200000, const std::string& fst = "") {
  RuntimePacketManager golden(params(hold));
  RtlRuntimePacketManager rtl(params(hold));
  if (!fst.empty()) rtl.trace_to(fst);
  const HubClock clock(params(hold).clock_ghz);
  std::mt19937_64 rng(seed);
  std::uint64_t picks = 0, mismatches = 0, tag = 1;
  const auto fail = [&](std::uint64_t c, const char* what) {
    if (mismatches++ < 5) ADD_FAILURE() << "cycle " << c << ": " << what;
  };
  for (std::uint64_t c = 0; c < cycles; ++c) {
    const auto now = clock.tick_of(c);
    const bool quiet = (c / 2000) % 4 == 3;  // a quarter of the time no stores: the pool drains, then idles
    if (!quiet && rng() % 4 != 0) {
      StoreRequest s;
      const unsigned bytes = 32u << (rng() % 3);
      const unsigned off = static_cast<unsigned>(rng() % (128 / bytes)) * bytes;
      s.dst_gpu = static_cast<std::int32_t>(rng() % 4);
      if (s.dst_gpu == 1) s.dst_gpu = 0;
      s.bytes = bytes;
      s.tag = tag++;
      const unsigned kind = static_cast<unsigned>(rng() % 4);
      if (kind == 3) {
        s.op = Opcode::kStore;
        s.address = 0x1000 + 128 * (rng() % 4) + off;
      } else {
        s.op = kind == 2 ? Opcode::kRowStoreNop : Opcode::kRowStore;
        s.priority = kind != 2;
        s.malloc_id = static_cast<std::uint32_t>(rng() % 2);
        s.row_id = static_cast<std::int64_t>(rng() % 6);
        s.row_offset = 128 * static_cast<std::uint32_t>(rng() % 2) + off;
      }
      const bool can = golden.can_accept(s, now);
      if (can != rtl.can_accept(s, now)) fail(c, "can_accept differs");
      if (can) {
        golden.accept(s, now);
        rtl.accept(s, now);
      }
    }
    if (golden.next_event(now) != rtl.next_event(now)) fail(c, "next_event differs");
    std::vector<std::uint8_t> congested(4, 0);
    for (auto& x : congested) x = rng() % 4 == 0 ? 1 : 0;
    EgressPick g, r;
    const bool gp = golden.pick(now, congested, g);
    const bool rp = rtl.pick(now, congested, r);
    if (gp != rp) {
      fail(c, gp ? "golden picked, RTL did not" : "RTL picked, golden did not");
      continue;
    }
    if (!gp) continue;
    ++picks;
    if (golden.last_pick_tags() != rtl.last_pick_tags() || g.merged != r.merged || g.store.bytes != r.store.bytes ||
        g.store.row_offset != r.store.row_offset || g.store.address != r.store.address ||
        !(g.store.mask == r.store.mask) || g.store.dst_gpu != r.store.dst_gpu) {
      fail(c, "a different packet");
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(golden.occupancy(), rtl.occupancy());
  // the statistics the adapter counts are the behavioural RPM's
  const auto& gs = golden.stats();
  ASSERT_NE(rtl.rpm_stats(), nullptr);
  const auto& rs = *rtl.rpm_stats();
  EXPECT_EQ(gs.stores_accepted, rs.stores_accepted);
  EXPECT_EQ(gs.stores_merged, rs.stores_merged);
  EXPECT_EQ(gs.stores_sent, rs.stores_sent);
  EXPECT_EQ(gs.packets_sent, rs.packets_sent);
  EXPECT_EQ(gs.bytes_sent, rs.bytes_sent);
  EXPECT_EQ(gs.full_packets, rs.full_packets);
  EXPECT_EQ(gs.timer_flushes, rs.timer_flushes);
  EXPECT_EQ(gs.pressure_flushes, rs.pressure_flushes);
  EXPECT_EQ(gs.packet_flits, rs.packet_flits);
  if (hold) {
    EXPECT_GT(rs.timer_flushes, 0u);
  }
  std::printf("egress co-simulation (hold_partial %d): %llu packets, %llu cycles simulated, %llu skipped; %llu full, "
              "%llu timer flushes, %llu pressure flushes\n",
              hold ? 1 : 0, static_cast<unsigned long long>(picks),
              static_cast<unsigned long long>(rtl.cycles_simulated()),
              static_cast<unsigned long long>(rtl.cycles_skipped()), static_cast<unsigned long long>(rs.full_packets),
              static_cast<unsigned long long>(rs.timer_flushes), static_cast<unsigned long long>(rs.pressure_flushes));
  EXPECT_GT(picks, cycles / 4);
  EXPECT_GT(rtl.cycles_skipped(), 0u);  // idle stretches are not simulated
}

TEST(CosimRpm, SamePacketsAsTheGoldenRpm) { run(true, 3); }
TEST(CosimRpm, SamePacketsWithoutHolding) { run(false, 4); }
TEST(CosimRpm, SamePacketsWithEveryEdgeClocked) {
  const auto fst = std::filesystem::temp_directory_path() / "cosim_rpm_test_every_edge.fst";
  run(true, 5, 20000, fst.string());
  EXPECT_GT(std::filesystem::file_size(fst), 0u);
  std::filesystem::remove(fst);
}

}  // namespace
