// Unit tests of single TLM blocks (NVLink port, NVSwitch, memory targets) in
// small test benches: a driver thread sends transactions, a sink records
// them. One SystemC run per process: run through CTest.
#include <gtest/gtest.h>

#include <vector>

#include "common/moe_extension.hpp"
#include "common/sc_time_util.hpp"
#include "common/tlm_block.hpp"
#include "fabric/nvlink_port.hpp"
#include "fabric/nvswitch.hpp"
#include "gpu/memory_target.hpp"

namespace moehub {
namespace {

/// Records what arrives and holds each packet in its "input buffer" for
/// `hold` before releasing it (which returns the sender's credits).
class Sink : public TlmBlock {
 public:
  tlm::tlm_target_socket<> in{"in"};
  explicit Sink(const sc_core::sc_module_name& n, Tick hold = 0) : TlmBlock(n), hold_(hold) { in.bind(*this); }
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override {
    auto* ext = gp.get_extension<MoePacketExt>();
    const Tick at = now_ticks() + to_ticks(delay);
    arrivals.push_back(at);
    dst.push_back(ext->dst_gpu);
    ext->buffer_exit = at + hold_;
  }
  std::vector<Tick> arrivals;
  std::vector<int> dst;

 private:
  Tick hold_;
};

/// Sends `count` packets of `flits` flits back to back at time 0 into `out`.
class Driver : public TlmBlock {
 public:
  tlm::tlm_initiator_socket<> out{"out"};
  SC_HAS_PROCESS(Driver);
  Driver(const sc_core::sc_module_name& n, int count, std::uint32_t flits, std::vector<int> dsts = {})
      : TlmBlock(n), count_(count), flits_(flits), dsts_(std::move(dsts)) {
    out.bind(*this);
    SC_THREAD(run);
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  std::vector<Tick> done;

 private:
  void run() {
    tlm::tlm_generic_payload gp;
    MoePacketExt* ext = new MoePacketExt;
    gp.set_extension(ext);
    for (int i = 0; i < count_; ++i) {
      ext->flits = flits_;
      ext->payload_bytes = (flits_ - 1) * 16;
      ext->dst_gpu = dsts_.empty() ? 0 : dsts_[static_cast<std::size_t>(i) % dsts_.size()];
      ext->ready = now_ticks();
      gp.set_command(tlm::TLM_WRITE_COMMAND);
      gp.set_data_length(ext->payload_bytes);
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      out->b_transport(gp, d);
      done.push_back(now_ticks() + to_ticks(d));
    }
  }
  int count_;
  std::uint32_t flits_;
  std::vector<int> dsts_;
};

bool first_run() {
  static bool ran = false;
  const bool first = !ran;
  ran = true;
  if (first) set_picosecond_resolution();
  return first;
}

NvlinkConfig link(int credits) {
  NvlinkConfig c;
  c.flit_bytes = 16;
  c.max_payload_bytes = 128;
  c.header_flits = 1;
  c.gpu_switch_latency_ns = 250;
  c.credits_flits = credits;
  return c;
}

// Packets leave back to back at the port's rate and arrive one latency later.
TEST(NvlinkPortBlock, SerialisesAtItsRateAndAddsLatency) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  Driver drv("drv", 4, 9);
  NvlinkPort port("port", link(4096), 50.0);  // 50 GB/s: 144 B in 2880 ps
  Sink sink("sink");
  drv.out.bind(port.in);
  port.out.bind(sink.in);
  sc_core::sc_start();
  ASSERT_EQ(sink.arrivals.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sink.arrivals[i], (i + 1) * 2880 + 250000) << i;  // store and forward
  }
  EXPECT_EQ(port.write_packets(), 4u);
  EXPECT_EQ(port.flits_sent(), 36u);
  EXPECT_EQ(port.server().busy(), 4u * 2880u);
  EXPECT_EQ(port.credit_stall(), 0u);
}

// With credits for one packet, the next may start only when the previous one
// has left the far buffer (held 1 us there) and its credits have travelled back.
TEST(NvlinkPortBlock, WaitsForCredits) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  Driver drv("drv", 3, 9);
  NvlinkPort port("port", link(9), 50.0);
  Sink sink("sink", 1000000);
  drv.out.bind(port.in);
  port.out.bind(sink.in);
  sc_core::sc_start();
  ASSERT_EQ(sink.arrivals.size(), 3u);
  const Tick first = 2880 + 250000;
  const Tick credit_back = first + 1000000 + 250000;  // buffer exit + return latency
  EXPECT_EQ(sink.arrivals[0], first);
  EXPECT_EQ(sink.arrivals[1], credit_back + 2880 + 250000);
  EXPECT_GT(port.credit_stall(), 0u);
}

// The switch hands each packet to the output of its destination GPU.
TEST(NvSwitchBlock, RoutesByDestination) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  NvswitchConfig cfg;
  cfg.num_switches = 1;
  cfg.crossing_latency_ns = 5;
  Driver drv("drv", 6, 2, {2, 0, 1, 2, 2, 0});
  NvSwitch sw("sw", 3, cfg);
  Sink s0("s0"), s1("s1"), s2("s2");
  Driver idle1("idle1", 0, 2), idle2("idle2", 0, 2);  // every input needs a sender
  drv.out.bind(sw.in[0]);
  idle1.out.bind(sw.in[1]);
  idle2.out.bind(sw.in[2]);
  sw.out[0].bind(s0.in);
  sw.out[1].bind(s1.in);
  sw.out[2].bind(s2.in);
  sc_core::sc_start();
  EXPECT_EQ(s0.arrivals.size(), 2u);
  EXPECT_EQ(s1.arrivals.size(), 1u);
  EXPECT_EQ(s2.arrivals.size(), 3u);
  for (int d : s2.dst) EXPECT_EQ(d, 2);
  EXPECT_EQ(s1.arrivals[0], 5000u);  // the crossing latency
  EXPECT_EQ(sw.packets(), 6u);
}

// A forwarding target (crossbar) in front of a terminal one (HBM): bandwidth
// and latency of both apply, and contention queues requests.
TEST(MemoryTargets, ChainAddsServiceAndLatency) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  Driver drv("drv", 2, 65);  // 1024-byte payloads
  ServerTarget xbar("xbar", 1, 1024.0, 100, true);  // 1024 GB/s: 1 ns per 1024 B
  ServerTarget hbm("hbm", 1, 512.0, 500, false);    // 2 ns per 1024 B
  drv.out.bind(xbar.in[0]);
  xbar.out().bind(hbm.in[0]);
  sc_core::sc_start();
  ASSERT_EQ(drv.done.size(), 2u);
  EXPECT_EQ(drv.done[0], 1000u + 100000u + 2000u + 500000u);
  // the second request queues behind the first at HBM (busy until 103 ns)
  EXPECT_EQ(drv.done[1], 103000u + 2000u + 500000u);
  EXPECT_DOUBLE_EQ(hbm.bytes_written(), 2048.0);
}

}  // namespace
}  // namespace moehub
