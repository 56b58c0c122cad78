// Unit tests of the models' building blocks that need no simulation run.
#include <gtest/gtest.h>

#include <set>

#include "common/server.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/store_stream.hpp"
#include "platform/collectives.hpp"

namespace moehub {
namespace {

TEST(BandwidthServer, QueuesAndAccountsBusyTime) {
  BandwidthServer s("s", 100, 50);  // 100 GB/s = 100 bytes/ns, 50 ps latency
  auto a = s.serve(0, 1000);        // 10 ns
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(a.finish, 10000u);
  EXPECT_EQ(a.done, 10050u);
  auto b = s.serve(5000, 1000);  // arrives while busy: waits
  EXPECT_EQ(b.start, 10000u);
  EXPECT_EQ(b.finish, 20000u);
  auto c = s.serve(30000, 500);  // idle gap, then 5 ns
  EXPECT_EQ(c.start, 30000u);
  EXPECT_EQ(s.busy(), 25000u);
  EXPECT_EQ(s.requests(), 3u);
  EXPECT_DOUBLE_EQ(s.bytes(), 2500.0);
  auto d = s.serve(0, 100, 40000);  // not before 40 ns
  EXPECT_EQ(d.start, 40000u);
}

TEST(BandwidthServer, BinsSplitIntervals) {
  BandwidthServer s("s", 1, 0);  // 1 byte/ns
  s.set_bin(1000);               // 1 ns bins
  s.serve(500, 2);               // busy 0.5 .. 2.5 ns
  ASSERT_GE(s.bins().size(), 3u);
  EXPECT_EQ(s.bins()[0], 500u);
  EXPECT_EQ(s.bins()[1], 1000u);
  EXPECT_EQ(s.bins()[2], 500u);
}

TEST(PacketFormat, FlitsAndPackets) {
  PacketFormat f{16, 128, 1};
  EXPECT_EQ(f.packet_flits(128), 9u);
  EXPECT_EQ(f.packet_flits(1), 2u);
  EXPECT_EQ(f.packets_per_row(8192), 64u);
  EXPECT_EQ(f.packets_per_row(300), 3u);
  EXPECT_EQ(f.row_flits(300), 9u + 9u + 4u);  // 128 + 128 + 44 bytes
}

TEST(StoreStream, InterleavesPeersAndSplitsRows) {
  const std::vector<std::int64_t> to1 = {10, 11}, to2 = {20};
  StoreStream s({{1, to1.data(), 2}, {2, to2.data(), 1}}, 300, PacketFormat{16, 128, 1}, 1, 64, 0);
  EXPECT_FALSE(s.has_head());  // nothing enabled yet
  s.enable(1, 0);
  s.enable(2, 1000);
  std::vector<std::pair<int, std::int64_t>> order;
  std::uint64_t bytes = 0;
  Tick last = 0;
  while (s.has_head()) {
    const StorePacket p = s.head();
    EXPECT_GE(p.issue, last);
    last = p.issue;
    if (p.dst == 2) {
      EXPECT_GE(p.issue, 1000u);  // not before its peer joined
    }
    order.emplace_back(p.dst, p.row_id);
    bytes += p.bytes;
    EXPECT_LE(p.bytes, 128u);
    s.pop();
  }
  EXPECT_TRUE(s.finished());
  EXPECT_EQ(bytes, 3u * 300u);
  EXPECT_EQ(order.size(), 9u);
  // round robin: the first packets alternate between the two peers
  EXPECT_EQ(order[0].first, 1);
  EXPECT_EQ(order[1].first, 2);
  EXPECT_EQ(order[2].first, 1);
  // each row's packets in order of offset, rows in order
  std::vector<std::int64_t> rows1;
  for (auto& [d, r] : order) if (d == 1) rows1.push_back(r);
  EXPECT_EQ(rows1, (std::vector<std::int64_t>{10, 10, 10, 11, 11, 11}));
}

TEST(StoreStream, IssueRateBoundsThroughput) {
  std::vector<std::int64_t> rows(100);
  for (int i = 0; i < 100; ++i) rows[static_cast<std::size_t>(i)] = i;
  StoreStream s({{1, rows.data(), 100}}, 128, PacketFormat{16, 128, 1}, 1, 64, 0);  // 64 B/ns
  s.enable(1, 0);
  Tick last = 0;
  while (s.has_head()) {
    last = s.head().issue;
    s.pop();
  }
  EXPECT_EQ(last, 100u * 2000u);  // 100 x 128 B at 64 B/ns
}

GpuConfig gpu() {
  GpuConfig g;
  g.num_sms = 4;
  g.dense_bf16_tflops = 4;  // 1 TFLOP/s per SM = 1 flop/ps
  g.gemm = {1.0, 0, 0, 0};  // no shape loss
  g.gemm_tile_m = 128;
  g.gemm_tile_n = 128;
  g.hbm_bw_gbps = 1e9;  // never the limit here
  g.memory_kernel_efficiency = 1;
  return g;
}

TEST(ComputeModel, EfficiencyCurve) {
  GpuConfig g = gpu();
  g.gemm = {0.8, 64, 0, 64};
  ComputeModel m(g, 2);
  EXPECT_DOUBLE_EQ(m.efficiency({64, 100, 64}), 0.8 * 0.5 * 1.0 * 0.5);
  EXPECT_NEAR(m.efficiency({1 << 20, 4096, 1 << 20}), 0.8, 1e-4);
  EXPECT_LT(m.efficiency({16, 4096, 4096}), m.efficiency({256, 4096, 4096}));
}

TEST(ComputeModel, ThreadBlocksListScheduledOverSms) {
  ComputeModel m(gpu(), 2);
  // 8 full tiles of 2*128*128*100 flops = 3,276,800 ps each on 4 SMs: two waves
  const KernelCost c = m.grouped_gemm({{256, 512, 100}});
  EXPECT_EQ(c.thread_blocks, 8);
  EXPECT_EQ(c.duration, 2u * 3276800u);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 256 * 512 * 100);
  // a fifth SM-worth of work adds a third (partial) wave
  const KernelCost d = m.grouped_gemm({{256, 512, 100}, {128, 128, 100}});
  EXPECT_EQ(d.thread_blocks, 9);
  EXPECT_EQ(d.duration, 3u * 3276800u);
  // an edge tile costs in proportion to its rows; empty groups cost nothing
  const KernelCost e = m.grouped_gemm({{64, 128, 100}, {0, 128, 100}});
  EXPECT_EQ(e.thread_blocks, 1);
  EXPECT_EQ(e.duration, 3276800u / 2);
}

TEST(ComputeModel, MemoryRoofline) {
  GpuConfig g = gpu();
  g.hbm_bw_gbps = 1;  // 1 byte/ns: HBM bound
  ComputeModel m(g, 2);
  const KernelCost c = m.grouped_gemm({{128, 128, 128}});
  const double bytes = 2.0 * (128 * 128 * 3);
  EXPECT_DOUBLE_EQ(c.hbm_bytes, bytes);
  EXPECT_EQ(c.duration, static_cast<Tick>(bytes * 1000));
  EXPECT_EQ(m.memory_bound(1000), 1000u * 1000u);
}

// The end-of-run checks catch rows that go missing, arrive twice or arrive
// at the wrong GPU, and GPUs that never finish.
TEST(Collectives, SelfChecksCatchViolations) {
  Schedule s;
  AllToAll a;
  a.name = "dispatch";
  a.row_bytes = 128;
  a.rows.assign(2, std::vector<std::vector<std::int64_t>>(2));
  a.rows[0][1] = {0, 1};
  a.rows[1][0] = {2};
  a.expected_dst = {1, 1, 0};
  s.collectives.push_back(a);
  Collectives c(s, 2, PacketFormat{16, 128, 1}, 1);
  MoePacketExt w;
  w.kind = PacketKind::kWrite;
  w.phase = 0;
  w.payload_bytes = 128;
  w.packets = 1;
  w.src_gpu = 0;
  w.dst_gpu = 1;
  w.row_id = 0;
  c.on_delivered(w, 0);
  c.on_delivered(w, 0);  // row 0 twice
  w.row_id = 2;          // row 2 belongs on GPU 0
  c.on_delivered(w, 0);
  const auto errors = c.verify();
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("1 rows not delivered completely"), std::string::npos) << all;  // row 1
  EXPECT_NE(all.find("delivered more than once"), std::string::npos) << all;
  EXPECT_NE(all.find("wrong GPU"), std::string::npos) << all;
  EXPECT_NE(all.find("never joined"), std::string::npos) << all;
  EXPECT_NE(all.find("bytes sent"), std::string::npos) << all;
}

}  // namespace
}  // namespace moehub
