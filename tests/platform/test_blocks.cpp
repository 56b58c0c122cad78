// Unit test benches of single TLM blocks (NVLink port, NVSwitch, crossbar and
// HBM, the hub): drivers send transactions, sinks record them. One SystemC
// run per process: run through CTest.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/arrival_queue.hpp"
#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"
#include "common/sc_time_util.hpp"
#include "common/tlm_block.hpp"
#include "fabric/nvlink_port.hpp"
#include "fabric/nvswitch.hpp"
#include "golden/address_centric.hpp"
#include "gpu/crossbar.hpp"
#include "gpu/hbm.hpp"
#include "gpu/hub.hpp"

namespace moehub {
namespace {

/// Records what arrives and releases each transaction from its "input
/// buffer" `hold` after its arrival (which returns the sender's credits); with
/// `release_at` != 0 it keeps everything until then (a stalled receiver) and
/// releases it all at that time from a thread of its own.
class Sink : public TlmBlock {
 public:
  tlm::tlm_target_socket<> in{"in"};
  SC_HAS_PROCESS(Sink);
  explicit Sink(const sc_core::sc_module_name& n, Tick hold = 0, Tick release_at = 0)
      : TlmBlock(n), hold_(hold), release_at_(release_at) {
    in.bind(*this);
    if (release_at_) SC_THREAD(release_later);
  }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time& delay) override {
    const Tick at = now_ticks() + to_ticks(delay);
    arrivals.push_back(at);
    dst.push_back(moe_ext(gp).dst_gpu);
    ids.push_back(moe_ext(gp).store.row_id);
    if (release_at_) {
      held_.push_back(&gp);
    } else {
      tlm::tlm_phase ph = tlm::END_REQ;
      sc_core::sc_time d = to_sc(at + hold_ - now_ticks());
      in->nb_transport_bw(gp, ph, d);
      if (consume) gp.release();
    }
    return tlm::TLM_ACCEPTED;
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  bool consume = false;  ///< end each transaction's life here (a hub counting responses)
  std::vector<Tick> arrivals;
  std::vector<int> dst;
  std::vector<std::int64_t> ids;

 private:
  void release_later() {
    sc_core::wait(to_sc(release_at_));
    std::vector<tlm::tlm_generic_payload*> now_held;
    now_held.swap(held_);  // what arrives while we release is kept
    for (auto* gp : now_held) {
      tlm::tlm_phase ph = tlm::END_REQ;
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      in->nb_transport_bw(*gp, ph, d);
    }
  }
  Tick hold_;
  Tick release_at_;
  std::vector<tlm::tlm_generic_payload*> held_;
};

/// Sends `count` transactions of `flits` flits at `at` (delay `delay`),
/// optionally to rotating destinations, and records when its buffer released
/// them (END_REQ) and when memory completed them (BEGIN_RESP).
class Driver : public TlmBlock {
 public:
  tlm::tlm_initiator_socket<> out{"out"};
  SC_HAS_PROCESS(Driver);
  Driver(const sc_core::sc_module_name& n, int count, std::uint32_t flits, std::vector<int> dsts = {}, Tick at = 0,
         Tick delay = 0, int src = 0)
      : TlmBlock(n), count_(count), flits_(flits), dsts_(std::move(dsts)), at_(at), delay_(delay), src_(src) {
    out.bind(*this);
    SC_THREAD(run);
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override {
    (phase == tlm::END_REQ ? released : done).push_back(now_ticks() + to_ticks(delay));
    return tlm::TLM_ACCEPTED;
  }
  std::vector<Tick> released, done;
  PayloadPool pool;
  int plane = 0;  ///< the plane its packets claim to have come by
  /// Kinds of the transactions in turn (empty: all writes); a response is one flit.
  std::vector<PacketKind> kinds;

 private:
  void run() {
    if (at_) sc_core::wait(to_sc(at_));
    for (int i = 0; i < count_; ++i) {
      MoePayload* gp = pool.allocate();
      MoePacketExt& ext = *gp->ext();
      ext.kind = kinds.empty() ? PacketKind::kWrite : kinds[static_cast<std::size_t>(i) % kinds.size()];
      const bool response = ext.kind == PacketKind::kResponse;
      ext.flits = response ? 1 : flits_;
      ext.src_gpu = src_;
      ext.plane = plane;
      ext.store.bytes = response ? 0 : (flits_ - 1) * 16;
      ext.store.row_id = i;
      ext.dst_gpu = dsts_.empty() ? 0 : dsts_[static_cast<std::size_t>(i) % dsts_.size()];
      ext.ready = now_ticks();
      gp->set_command(tlm::TLM_WRITE_COMMAND);
      gp->set_data_length(ext.store.bytes);
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      sc_core::sc_time d = to_sc(delay_);
      out->nb_transport_fw(*gp, ph, d);
    }
  }
  int count_;
  std::uint32_t flits_;
  std::vector<int> dsts_;
  Tick at_, delay_;
  int src_;
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
    EXPECT_EQ(drv.released[i], i * 2880) << i;                   // the driver's buffer frees as each starts
  }
  EXPECT_EQ(port.write_packets(), 4u);
  EXPECT_EQ(port.flits_sent(), 36u);
  EXPECT_EQ(port.server().busy(), 4u * 2880u);
  EXPECT_EQ(port.credit_stall(), 0u);
  EXPECT_EQ(port.credits_outstanding(), 0u);
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

// A receiver that stalls keeps its credits: the port queues what it cannot
// send and sends it, in order and once, when the receiver releases (at 5 us).
TEST(NvlinkPortBlock, StalledReceiverBackPressuresTheSender) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  Driver drv("drv", 6, 9);
  NvlinkPort port("port", link(18), 50.0);  // credits for two packets
  Sink sink("sink", 0, 5000000);
  drv.out.bind(port.in);
  port.out.bind(sink.in);
  sc_core::sc_start();
  // two packets went at once; the others waited for the release
  ASSERT_EQ(sink.arrivals.size(), 4u);  // the sink keeps holding what came after the release
  EXPECT_EQ(sink.arrivals[0], 2880u + 250000u);
  EXPECT_EQ(sink.arrivals[1], 2u * 2880u + 250000u);
  EXPECT_EQ(sink.arrivals[2], 5000000u + 250000u + 2880u + 250000u);
  EXPECT_EQ(sink.ids, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(port.parked(), 4u);
  EXPECT_GE(drv.released.size(), 4u);
  EXPECT_GE(drv.released[2], 5000000u + 250000u);  // the driver's buffer held them until credits came back
}

// Write responses behind data that waits for credits (credits for one packet,
// a receiver that keeps everything until 5 us): on their own channel
// (nvlink.response_channel "own") they take no credits and pass the waiting
// data; sharing the data's channel they wait behind it, here for good (the
// receiver keeps what arrives after its release).
void responses_behind_waiting_data(const std::string& channel) {
  Driver drv("drv", 4, 9);
  drv.kinds = {PacketKind::kWrite, PacketKind::kWrite, PacketKind::kResponse, PacketKind::kResponse};
  NvlinkConfig cfg = link(9);
  cfg.response_channel = channel;
  NvlinkPort port("port", cfg, 50.0);  // a 9-flit packet in 2880 ps, a response in 320 ps
  Sink sink("sink", 0, 5000000);
  drv.out.bind(port.in);
  port.out.bind(sink.in);
  sc_core::sc_start();
  const Tick lat = 250000;
  if (channel == "own") {
    EXPECT_EQ(sink.ids, (std::vector<std::int64_t>{0, 2, 3, 1}));
    ASSERT_EQ(sink.arrivals.size(), 4u);
    EXPECT_EQ(sink.arrivals[1], 2880u + 320u + lat);  // right behind the first packet on the wire
    EXPECT_EQ(sink.arrivals[2], 2880u + 640u + lat);
    EXPECT_EQ(sink.arrivals[3], 5000000u + lat + 2880u + lat);  // the data: when credits are back
    EXPECT_EQ(port.parked(), 1u);
    EXPECT_EQ(port.responses_parked(), 0u);
    EXPECT_EQ(port.response_packets(), 2u);
  } else {
    EXPECT_EQ(sink.ids, (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(port.parked(), 3u);
    EXPECT_EQ(port.responses_parked(), 2u);
    EXPECT_EQ(port.response_packets(), 0u);
  }
}

TEST(NvlinkPortBlock, ResponsesOnTheirOwnChannelPassDataWaitingForCredits) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  responses_behind_waiting_data("own");
}

TEST(NvlinkPortBlock, ResponsesSharingTheDataChannelWaitBehindIt) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  responses_behind_waiting_data("shared");
}

/// Binds driver i to the switch's input i and sink i to its output i.
void wire(NvSwitch& sw, const std::vector<Driver*>& drivers, const std::vector<Sink*>& sinks) {
  for (std::size_t i = 0; i < drivers.size(); ++i) drivers[i]->out.bind(sw.in[i]);
  for (std::size_t i = 0; i < sinks.size(); ++i) sw.out[i].bind(sinks[i]->in);
}

// The switch hands each packet to the output of its destination GPU.
TEST(NvSwitchBlock, RoutesByDestination) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  NvswitchConfig cfg;
  cfg.num_switches = 1;
  cfg.crossing_latency_ns = 5;
  Driver drv("drv", 6, 2, {2, 0, 1, 2, 2, 0});
  NvSwitch sw("sw", 3, cfg, 0, 1000);
  Sink s0("s0"), s1("s1"), s2("s2");
  Driver idle1("idle1", 0, 2), idle2("idle2", 0, 2);  // every input needs a sender
  wire(sw, {&drv, &idle1, &idle2}, {&s0, &s1, &s2});
  sc_core::sc_start();
  EXPECT_EQ(s0.arrivals.size(), 2u);
  EXPECT_EQ(s1.arrivals.size(), 1u);
  EXPECT_EQ(s2.arrivals.size(), 3u);
  for (int d : s2.dst) EXPECT_EQ(d, 2);
  EXPECT_EQ(s1.arrivals[0], 5000u);  // the crossing latency
  EXPECT_EQ(sw.packets(), 6u);
  EXPECT_EQ(drv.released.size(), 6u);  // each output reported its start back to the input
}

// Arrivals are handled in arrival order, not in the order of the calls: a
// packet handed over later but arriving earlier leaves first.
TEST(NvSwitchBlock, HandlesArrivalsInTimeOrder) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  NvswitchConfig cfg;
  cfg.num_switches = 1;
  cfg.crossing_latency_ns = 0;
  // lookahead 250 ns: A is handed over at 0 arriving at 300 ns, B at 10 ns arriving at 260 ns
  Driver a("a", 1, 9, {2}, 0, 300000, 0);
  Driver b("b", 1, 9, {2}, 10000, 250000, 1);
  Driver idle("idle", 0, 2, {}, 0, 0, 2);
  NvSwitch sw("sw", 3, cfg, 250000, 1000);
  Sink s0("s0"), s1("s1"), s2("s2");
  wire(sw, {&a, &b, &idle}, {&s0, &s1, &s2});
  sc_core::sc_start();
  ASSERT_EQ(s2.arrivals.size(), 2u);
  EXPECT_EQ(s2.arrivals[0], 260000u);
  EXPECT_EQ(s2.arrivals[1], 300000u);
  EXPECT_EQ(sw.arrivals().reorderings(), 0u);
  EXPECT_EQ(sw.arrivals().handled(), 2u);
}

// The order invariant is counted, not assumed: a push that breaks the
// lookahead promise (arrival earlier than something already handed over) is
// reported as a reordering; a build with assertions (no NDEBUG) stops there.
void push_behind_the_lookahead(std::vector<Tick>& seen, std::uint64_t& reorderings) {
  ArrivalQueue q("q", 100000, 1000, [&](tlm::tlm_generic_payload&, Tick at, Tick&) {
    seen.push_back(at);
    return true;
  });
  PayloadPool pool;
  struct Pusher : sc_core::sc_module {
    SC_HAS_PROCESS(Pusher);
    Pusher(const sc_core::sc_module_name& n, ArrivalQueue& q, PayloadPool& p) : sc_module(n), q_(q), p_(p) {
      SC_THREAD(run);
    }
    void run() {
      q_.push(p_.allocate(), 150000);  // handed over at 50 ns
      sc_core::wait(to_sc(60000));
      q_.push(p_.allocate(), 120000);  // promised >= 160 ns: too late, 150 ns went first
    }
    ArrivalQueue& q_;
    PayloadPool& p_;
  } pusher("pusher", q, pool);
  sc_core::sc_start();
  reorderings = q.reorderings();
}

TEST(ArrivalQueueBlock, CountsAViolatedLookahead) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  std::vector<Tick> seen;
  std::uint64_t reorderings = 0;
#ifdef NDEBUG
  push_behind_the_lookahead(seen, reorderings);
  EXPECT_EQ(seen, (std::vector<Tick>{150000, 120000}));
  EXPECT_EQ(reorderings, 1u);
#else
  // the simulation runs in the death test's child process only
  EXPECT_DEATH(push_behind_the_lookahead(seen, reorderings), "arrival order violated");
#endif
}

// A crossbar in front of HBM: bandwidth and latency of both apply, contention
// queues requests, and the completion comes back when HBM has the write.
TEST(MemoryBlocks, ChainAddsServiceAndLatency) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  Driver drv("drv", 2, 65);  // 1024-byte payloads
  Crossbar xbar("xbar", 1024.0, 100);       // 1024 GB/s: 1 ns per 1024 B
  Hbm hbm("hbm", 512.0, 500, 65536, 10000);  // 2 ns per 1024 B
  drv.out.bind(xbar.in);
  xbar.out.bind(hbm.in);
  sc_core::sc_start();
  ASSERT_EQ(drv.done.size(), 2u);
  EXPECT_EQ(drv.done[0], 1000u + 100000u + 2000u + 500000u);
  // the second request queues behind the first at HBM (busy until 103 ns)
  EXPECT_EQ(drv.done[1], 103000u + 2000u + 500000u);
  EXPECT_DOUBLE_EQ(hbm.bytes_written(), 2048.0);
  EXPECT_EQ(hbm.reorderings(), 0u);
}

// A kernel's flow takes HBM slice by slice: a write that arrives in the
// middle of a long flow waits for at most one slice, not for the whole flow,
// and the flow finishes later by the write's service time.
TEST(MemoryBlocks, FlowsShareHbmWithWrites) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  Hbm hbm("hbm", 1000.0, 500, 65536, 10000);  // 1 B/ps: a 64 KiB slice takes 65.5 ns
  Driver drv("drv", 1, 65, {}, 1000000, 0);    // one 1 KiB write at 1 us, in the middle of the flow
  drv.out.bind(hbm.in);
  std::vector<Tick> flow_done;
  struct Starter : sc_core::sc_module {
    SC_HAS_PROCESS(Starter);
    Starter(const sc_core::sc_module_name& n, Hbm& h, std::vector<Tick>& d) : sc_module(n), h_(h), d_(d) {
      SC_THREAD(run);
    }
    void run() {
      h_.start_flow(16.0 * 1024 * 1024, 0, 0, [this](Tick t) { d_.push_back(t); });  // 16 MiB: 16.8 us alone
    }
    Hbm& h_;
    std::vector<Tick>& d_;
  } starter("starter", hbm, flow_done);
  sc_core::sc_start();
  ASSERT_EQ(drv.done.size(), 1u);
  ASSERT_EQ(flow_done.size(), 1u);
  const Tick write_alone = 1000000 + 1024 + 500000;
  EXPECT_GE(drv.done[0], write_alone);
  EXPECT_LE(drv.done[0], write_alone + 65536);  // at most one slice ahead of it
  EXPECT_EQ(flow_done[0], 16u * 1024 * 1024 + 1024 + 500000);  // the flow lost exactly the write's service time
  EXPECT_EQ(hbm.slices(), 256u);
  EXPECT_EQ(hbm.reorderings(), 0u);
}

/// Counts what a hub reports.
struct CountingSink : TrafficSink {
  void on_delivered(const MoePacketExt& w, Tick t) override {
    delivered.push_back(t);
    rows.push_back(w.store.row_id);
  }
  void on_acknowledged(const MoePacketExt&, Tick t) override { acked.push_back(t); }
  std::vector<Tick> delivered;
  std::vector<std::int64_t> rows;
  std::vector<Tick> acked;
};

/// An ingress that refuses every write until `until` (a stalled AAU).
struct StallingIngress : golden::IngressFunction {
  explicit StallingIngress(Tick until) : until_(until) {}
  golden::IngressResult on_write(const golden::StoreRequest& w, Tick now) override {
    calls.push_back(now);
    golden::IngressResult r;
    if (now < until_) {
      r.accepted = false;
      r.retry_at = until_;
      return r;
    }
    r.address = w.address;
    return r;
  }
  std::vector<Tick> calls;
  Tick until_;
};

SystemConfig hub_system() {
  SystemConfig s;
  s.num_gpus = 2;
  s.nvswitch.num_switches = 1;
  s.nvlink = link(18);
  s.nvlink.ack_flits = 1;
  return s;
}

// A hub whose ingress stalls keeps its input buffer full: the link into it
// stops (its credits do not come back), the sender's own buffer fills, and
// once the stall ends every write is delivered exactly once, in order, and
// answered after it is in memory.
TEST(HubBlock, StallBackPressuresTheLinkWithoutLosingPackets) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  const SystemConfig sys = hub_system();
  auto* ingress = new StallingIngress(5000000);
  golden::HubFunctions fns;
  fns.ingress.reset(ingress);
  fns.egress = std::make_unique<golden::AddressCentricEgress>(4, false);
  fns.completion = std::make_unique<golden::NoCompletion>();
  CountingSink sink;
  Hub hub("hub", 0, sys, &sink, std::move(fns));
  Driver drv("drv", 8, 9, {0}, 0, 0, 1);  // GPU 1 sends 8 packets to GPU 0
  NvlinkPort down("down", sys.nvlink, 50.0);
  NvlinkPort up("up", sys.nvlink, 50.0);
  Sink peer("peer");
  peer.consume = true;
  Crossbar xbar("xbar", 5000.0, 100);
  Hbm hbm("hbm", 3000.0, 500, 65536, 10000);
  drv.out.bind(down.in);
  down.out.bind(hub.nvl2hub[0]);
  hub.hub2nvl[0].bind(up.in);
  up.out.bind(peer.in);
  hub.hub2xbar.bind(xbar.in);
  xbar.out.bind(hbm.in);
  hub.set_egress_ports({&up});
  sc_core::sc_start();
  ASSERT_EQ(sink.rows.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(sink.rows[i], static_cast<std::int64_t>(i));  // once each, in order
    EXPECT_GE(sink.delivered[i], 5000000u);                  // not before the stall ended
  }
  EXPECT_GT(hub.ingress_stalls(), 0u);
  EXPECT_EQ(hub.writes_received(), 8u);
  EXPECT_GT(down.parked(), 0u);        // the link into the hub stopped
  EXPECT_GT(down.credit_stall(), 0u);
  EXPECT_GE(drv.released.back(), 5000000u);  // the sender's buffer held the rest until the stall ended
  EXPECT_EQ(peer.arrivals.size(), 8u);       // eight responses went back
  for (const int d : peer.dst) EXPECT_EQ(d, 1);  // to the GPU that wrote
  std::vector<std::int64_t> answered = peer.ids;   // each answering its own write
  std::sort(answered.begin(), answered.end());
  EXPECT_EQ(answered, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(hub.early_responses(), 0u);
  EXPECT_EQ(hub.arrivals().reorderings(), 0u);
  // each response is its write's own payload, turned round at the consumer: the hub
  // made none, and all of the producer's came back to its pool
  EXPECT_EQ(hub.pool().capacity(), 0u);
  EXPECT_EQ(hub.pool().live(), 0u);
  EXPECT_EQ(drv.pool.capacity(), 8u);
  EXPECT_EQ(drv.pool.live(), 0u);
  for (std::size_t i = 1; i < ingress->calls.size(); ++i) EXPECT_GE(ingress->calls[i], ingress->calls[i - 1]);
}

// Writes from two planes are handed to the ingress function in arrival order
// even when the later one was handed over first.
TEST(HubBlock, IngressSeesArrivalsInTimeOrder) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  SystemConfig sys = hub_system();
  sys.nvswitch.num_switches = 2;
  auto* ingress = new StallingIngress(0);
  golden::HubFunctions fns;
  fns.ingress.reset(ingress);
  fns.egress = std::make_unique<golden::AddressCentricEgress>(4, false);
  fns.completion = std::make_unique<golden::NoCompletion>();
  CountingSink sink;
  Hub hub("hub", 0, sys, &sink, std::move(fns));
  // plane 0: handed over at 0 arriving at 400 ns; plane 1: at 100 ns arriving at 380 ns
  Driver p0("p0", 3, 9, {0}, 0, 400000, 1);
  Driver p1("p1", 3, 9, {0}, 100000, 280000, 1);
  p1.plane = 1;
  NvlinkPort up0("up0", sys.nvlink, 50.0), up1("up1", sys.nvlink, 50.0);
  Sink peer0("peer0"), peer1("peer1");
  Crossbar xbar("xbar", 5000.0, 100);
  Hbm hbm("hbm", 3000.0, 500, 65536, 10000);
  p0.out.bind(hub.nvl2hub[0]);
  p1.out.bind(hub.nvl2hub[1]);
  hub.hub2nvl[0].bind(up0.in);
  hub.hub2nvl[1].bind(up1.in);
  up0.out.bind(peer0.in);
  up1.out.bind(peer1.in);
  hub.hub2xbar.bind(xbar.in);
  xbar.out.bind(hbm.in);
  hub.set_egress_ports({&up0, &up1});
  sc_core::sc_start();
  ASSERT_EQ(ingress->calls.size(), 6u);
  EXPECT_EQ(ingress->calls, (std::vector<Tick>{380000, 380000, 380000, 400000, 400000, 400000}));
  EXPECT_EQ(hub.arrivals().reorderings(), 0u);
  EXPECT_EQ(sink.delivered.size(), 6u);
}

}  // namespace
}  // namespace moehub
