// Unit tests of the models' building blocks that need no simulation run.
#include <gtest/gtest.h>

#include <set>

#include "common/server.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/store_stream.hpp"
#include "platform/address_map.hpp"
#include "platform/collectives.hpp"
#include "platform/row_transfers.hpp"
#include "platform/scoreboard.hpp"

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
  StoreStream s(0, 7, {{1, to1.data(), 2, 0x10000}, {2, to2.data(), 1, 0x20000}}, 300, PacketFormat{16, 128, 1}, 1, 64,
                0, 0);
  EXPECT_FALSE(s.has_head());  // nothing enabled yet
  s.enable(1, 0);
  s.enable(2, 1000);
  std::vector<std::pair<int, std::int64_t>> order;
  std::uint64_t bytes = 0;
  Tick last = 0;
  std::vector<std::uint64_t> addrs1;
  while (s.has_head()) {
    const SourceStore h = s.head();
    const golden::StoreRequest& p = h.store;
    EXPECT_GE(h.issue, last);
    last = h.issue;
    if (p.dst_gpu == 2) {
      EXPECT_GE(h.issue, 1000u);  // not before its peer joined
      EXPECT_EQ(p.address, 0x20000u + p.row_offset);
    } else {
      addrs1.push_back(p.address);
    }
    EXPECT_EQ(p.tag, 7u);
    EXPECT_EQ(p.src_gpu, 0);
    EXPECT_EQ(p.mask.count(), p.bytes);
    order.emplace_back(p.dst_gpu, p.row_id);
    bytes += p.bytes;
    EXPECT_LE(p.bytes, 128u);
    s.pop(h.issue);
  }
  // rows to GPU 1 are contiguous from the batch's base: row i at base + i * 300 + offset
  EXPECT_EQ(addrs1, (std::vector<std::uint64_t>{0x10000, 0x10000 + 128, 0x10000 + 256, 0x10000 + 300,
                                                0x10000 + 428, 0x10000 + 556}));
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
  StoreStream s(0, 0, {{1, rows.data(), 100, 0}}, 128, PacketFormat{16, 128, 1}, 1, 64, 0, 0);  // 64 B/ns
  s.enable(1, 0);
  Tick last = 0;
  while (s.has_head()) {
    last = s.head().issue;
    s.pop(last);
  }
  EXPECT_EQ(last, 100u * 2000u);  // 100 x 128 B at 64 B/ns
}

// A hub that takes stores later than they were issued slows the kernel down:
// the next store issues no earlier than the last one was taken (minus the
// time from the SMs to the hub).
TEST(StoreStream, BackPressureDelaysLaterStores) {
  std::vector<std::int64_t> rows(4);
  for (int i = 0; i < 4; ++i) rows[static_cast<std::size_t>(i)] = i;
  const Tick sm_to_hub = 500;
  StoreStream s(0, 0, {{1, rows.data(), 4, 0}}, 128, PacketFormat{16, 128, 1}, 1, 64, 0, sm_to_hub);
  s.enable(1, 0);
  EXPECT_EQ(s.head().issue, 2000u);
  s.pop(100000);  // taken long after it reached the hub
  EXPECT_EQ(s.head().issue, 100000u - sm_to_hub + 2000u);
}

// A kernel's stores come in the kernel's order (no interleaving over peers),
// each row no earlier than its ready time, and a late take delays the rest.
TEST(KernelStoreSource, KernelOrderReadyTimesAndBackPressure) {
  std::vector<KernelRow> rows;
  rows.push_back({2, 7, 0x1000, 256, 0});
  rows.push_back({1, 3, 0x2000, 128, 50000});  // ready at 50 ns
  rows.push_back({2, 9, 0x3000, 100, 0});
  KernelStoreSource k(0, 4, rows, PacketFormat{16, 128, 1}, 1, 64, 0, 1000);  // 64 B/ns
  std::vector<std::pair<int, std::uint64_t>> seen;
  std::vector<Tick> issue;
  while (k.has_head()) {
    const SourceStore h = k.head();
    seen.emplace_back(h.store.dst_gpu, h.store.address);
    issue.push_back(h.issue);
    EXPECT_EQ(h.store.tag, 4u);
    k.pop(seen.size() == 3 ? 200000 : h.issue + 1000);  // the third store is taken late
  }
  EXPECT_TRUE(k.finished());
  EXPECT_EQ(seen, (std::vector<std::pair<int, std::uint64_t>>{{2, 0x1000}, {2, 0x1080}, {1, 0x2000}, {2, 0x3000}}));
  EXPECT_EQ(issue[0], 2000u);
  EXPECT_EQ(issue[1], 4000u);
  EXPECT_EQ(issue[2], 50000u + 2000u);          // not before its row was ready
  EXPECT_EQ(issue[3], 200000u - 1000u + 1563u);  // after the late take (100 B at 64 B/ns)
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
  SystemConfig sys;
  sys.num_gpus = 2;
  AddressMap map(2);
  Scoreboard sb(s, 2, PacketFormat{16, 128, 1}, map);
  Collectives c(s, sys, sb);
  sb.count_sent(0, 0, 256);
  MoePacketExt w;
  w.kind = PacketKind::kWrite;
  w.transfer = 0;
  w.store.bytes = 128;
  w.packets = 1;
  w.src_gpu = 0;
  w.dst_gpu = 1;
  w.store.row_id = 0;
  w.store.address = sb.address_of(0, 0, 1, 0);
  sb.on_delivered(w, 0);
  w.store.address = sb.address_of(0, 0, 1, 1);  // row 0 again, at row 1's address
  sb.on_delivered(w, 0);  // row 0 twice
  w.store.row_id = 2;     // row 2 belongs on GPU 0
  sb.on_delivered(w, 0);
  MoePacketExt r;         // a response that left before its write was in memory
  r.kind = PacketKind::kResponse;
  r.transfer = 0;
  r.dst_gpu = 0;
  r.packets = 1;
  r.written = 500;
  r.sent = 400;
  sb.on_acknowledged(r, 900);
  auto errors = c.verify();
  const auto sb_errors = sb.verify();
  errors.insert(errors.end(), sb_errors.begin(), sb_errors.end());
  std::string all;
  for (const auto& e : errors) all += e + "\n";
  EXPECT_NE(all.find("1 rows not delivered completely"), std::string::npos) << all;  // row 1
  EXPECT_NE(all.find("delivered more than once"), std::string::npos) << all;
  EXPECT_NE(all.find("wrong GPU"), std::string::npos) << all;
  EXPECT_NE(all.find("never joined"), std::string::npos) << all;
  EXPECT_NE(all.find("bytes sent"), std::string::npos) << all;
  EXPECT_NE(all.find("address their row does not own"), std::string::npos) << all;  // row 2's address is row 0's
  EXPECT_NE(all.find("before their write was in memory"), std::string::npos) << all;
  EXPECT_NE(all.find("expected 2"), std::string::npos) << all;  // GPU 0 got 1 of its 2 responses
}

// Plain row stores are credited by address. The packet manager merges the
// stores to one 128-byte line into one packet; with rows under a line those
// are stores of several rows, and the packet names only its oldest store's
// row and offset. A store at another row's address is still caught.
TEST(RowTransfers, PlainStoresAreCreditedByAddressAcrossMergedRows) {
  Schedule s;
  RowTransfer t;
  t.name = "combine";
  t.row_bytes = 32;
  t.store_bytes = 32;
  t.rows.resize(2);
  for (std::int64_t r = 0; r < 8; ++r) {  // rows 0..7 from GPU 0 to GPU 1, in slots 0..7: two lines
    RowStore rs;
    rs.dst = 1;
    rs.row_id = r;
    rs.slot = r;
    t.rows[0].push_back(rs);
  }
  s.row_transfers.push_back(t);
  SystemConfig sys;
  sys.num_gpus = 2;
  AddressMap map(2);
  RowTransfers rt(s, sys, map);
  ASSERT_EQ(map.regions(1).size(), 1u);
  const std::uint64_t base = map.regions(1)[0].base;
  MoePacketExt w;
  w.kind = PacketKind::kWrite;
  w.transfer = RowTransfers::kTagBase;
  w.src_gpu = 0;
  w.dst_gpu = 1;
  w.packets = 1;
  w.store.op = golden::Opcode::kStore;
  auto deliver = [&](std::int64_t row, std::uint32_t row_offset, std::uint64_t address, std::uint32_t line_at,
                     std::uint32_t bytes) {
    w.store.row_id = row;
    w.store.row_offset = row_offset;
    w.store.address = address;
    w.store.bytes = bytes;
    w.store.mask = golden::ByteMask::range(line_at, bytes);
    rt.on_delivered(w, 0);
  };
  auto errors = [&] {
    std::string all;
    for (const auto& e : rt.verify()) all += e + "\n";
    return all;
  };
  deliver(2, 0, base, 0, 128);            // line 0: rows 0-3 merged, named by row 2 (the oldest store)
  deliver(5, 0, base + 128, 0, 64);       // line 1: rows 4 and 5 merged, named by row 5
  deliver(6, 0, base + 6 * 32, 64, 32);   // row 6 on its own
  deliver(7, 16, base + 7 * 32 + 16, 112, 16);  // row 7 in two stores
  deliver(7, 0, base + 7 * 32, 96, 16);
  std::string all = errors();
  EXPECT_EQ(all.find("not delivered exactly once"), std::string::npos) << all;
  EXPECT_EQ(all.find("does not own"), std::string::npos) << all;
  EXPECT_EQ(rt.rows_delivered(), 8);
  deliver(7, 0, base + 6 * 32, 64, 32);  // row 7's store at row 6's address
  all = errors();
  EXPECT_NE(all.find("combine: 1 rows not delivered exactly once"), std::string::npos) << all;  // row 6 twice
  EXPECT_NE(all.find("combine: 1 stores at an address their row does not own"), std::string::npos) << all;
  deliver(0, 0, base + 8 * 32, 0, 32);  // past the receive buffer
  all = errors();
  EXPECT_NE(all.find("combine: 2 stores at an address"), std::string::npos) << all;
}

TEST(AddressMap, RegionsAreAlignedDisjointAndFound) {
  AddressMap m(2);
  const auto a = m.allocate(0, "recv:dispatch", 10000);
  const auto b = m.allocate(0, "recv:combine", 1);
  const auto c = m.allocate(1, "recv:dispatch", 4096);
  EXPECT_EQ(a % AddressMap::kAlign, 0u);
  EXPECT_EQ(b % AddressMap::kAlign, 0u);
  EXPECT_GE(b, a + 10000);
  EXPECT_EQ(a, c);  // each GPU has its own address space
  ASSERT_NE(m.find(0, a + 9999), nullptr);
  EXPECT_EQ(m.find(0, a + 9999)->name, "recv:dispatch");
  EXPECT_EQ(m.find(0, a + 10000), nullptr);  // past the end, before the next region
  EXPECT_EQ(m.find(0, b)->name, "recv:combine");
  EXPECT_EQ(m.find(1, 0), nullptr);
}

}  // namespace
}  // namespace moehub
