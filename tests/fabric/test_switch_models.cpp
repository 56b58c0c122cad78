// The switch microarchitectures (nvswitch.microarchitecture): sources send
// 128-byte packets (9 flits) over GPU-to-switch NvlinkPorts into one NvSwitch,
// whose outputs are switch-to-GPU NvlinkPorts into sinks. One SystemC run per
// process: run through CTest.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"
#include "common/sc_time_util.hpp"
#include "common/tlm_block.hpp"
#include "fabric/nvlink_port.hpp"
#include "fabric/nvswitch.hpp"
#include "platform/node.hpp"
#include "../platform/sim_fixture.hpp"

namespace moehub {
namespace {

namespace fs = std::filesystem;

bool first_run() {
  static bool ran = false;
  const bool first = !ran;
  ran = true;
  if (first) set_picosecond_resolution();
  return first;
}

constexpr double kLinkGbps = 50;  // 144 B (9 flits) in 2880 ps
constexpr Tick kPacket = 2880;    // one packet's serialisation
constexpr Tick kLatency = 250000; // GPU <-> switch, one way

/// Hands its packets (destination per packet, all 9 flits) to its port at
/// time 0; the port serialises them and parks them while credits are short.
class Source : public TlmBlock {
 public:
  tlm::tlm_initiator_socket<> out{"out"};
  SC_HAS_PROCESS(Source);
  Source(const sc_core::sc_module_name& n, int src, std::vector<int> dsts, bool responses = false, Tick start = 0)
      : TlmBlock(n), src_(src), dsts_(std::move(dsts)), responses_(responses), start_(start) {
    out.bind(*this);
    SC_THREAD(run);
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time& delay) override {
    started.push_back(now_ticks() + to_ticks(delay));  // its port started one
    return tlm::TLM_ACCEPTED;
  }
  std::vector<Tick> started;
  PayloadPool pool;

 private:
  void run() {
    if (start_) sc_core::wait(to_sc(start_));
    for (std::size_t i = 0; i < dsts_.size(); ++i) {
      MoePayload* gp = pool.allocate();
      MoePacketExt& ext = *gp->ext();
      ext.kind = responses_ ? PacketKind::kResponse : PacketKind::kWrite;
      ext.flits = responses_ ? 1 : 9;
      ext.src_gpu = src_;
      ext.dst_gpu = dsts_[i];
      ext.store.bytes = responses_ ? 0 : 128;
      ext.store.row_id = static_cast<std::int64_t>(i);
      ext.ready = now_ticks();
      gp->set_command(tlm::TLM_WRITE_COMMAND);
      gp->set_data_length(ext.store.bytes);
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      out->nb_transport_fw(*gp, ph, d);
    }
  }
  int src_;
  std::vector<int> dsts_;
  bool responses_;
  Tick start_;
};

/// Records arrivals (source, row) and frees each packet's buffer on arrival,
/// or, with `release_at` != 0, keeps everything until then (a stalled GPU).
class Sink : public TlmBlock {
 public:
  tlm::tlm_target_socket<> in{"in"};
  SC_HAS_PROCESS(Sink);
  explicit Sink(const sc_core::sc_module_name& n, Tick release_at = 0) : TlmBlock(n), release_at_(release_at) {
    in.bind(*this);
    if (release_at_) SC_THREAD(release_later);
  }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time& delay) override {
    const Tick at = now_ticks() + to_ticks(delay);
    arrivals.push_back(at);
    src.push_back(moe_ext(gp).src_gpu);
    row.push_back(moe_ext(gp).store.row_id);
    if (release_at_ && at < release_at_) {
      held_.push_back(&gp);
      return tlm::TLM_ACCEPTED;
    }
    tlm::tlm_phase ph = tlm::END_REQ;
    sc_core::sc_time d = to_sc(at - now_ticks());
    in->nb_transport_bw(gp, ph, d);
    return tlm::TLM_ACCEPTED;
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  std::vector<Tick> arrivals;
  std::vector<int> src;
  std::vector<std::int64_t> row;

 private:
  void release_later() {
    sc_core::wait(to_sc(release_at_));
    for (auto* gp : held_) {
      tlm::tlm_phase ph = tlm::END_REQ;
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      in->nb_transport_bw(*gp, ph, d);
    }
    held_.clear();
  }
  Tick release_at_;
  std::vector<tlm::tlm_generic_payload*> held_;
};

/// n sources -> GPU-to-switch ports -> one switch -> switch-to-GPU ports -> n sinks.
struct Bench {
  std::vector<std::unique_ptr<Source>> sources;
  std::vector<std::unique_ptr<NvlinkPort>> up, down;
  std::unique_ptr<NvSwitch> sw;
  std::vector<std::unique_ptr<Sink>> sinks;

  /// `responses`: which sources send one-flit write responses instead of data,
  /// starting at `starts` (default 0); `out_credits` (0: `credits`) and
  /// `hold_until` for the output ports and sinks.
  Bench(const std::vector<std::vector<int>>& traffic, SwitchMicroarchitecture arch, double speedup, int credits,
        std::vector<bool> responses = {}, int out_credits = 0, Tick hold_until = 0, std::vector<Tick> starts = {}) {
    const int n = static_cast<int>(traffic.size());
    NvlinkConfig link;
    link.flit_bytes = 16;
    link.max_payload_bytes = 128;
    link.header_flits = 1;
    link.gpu_switch_latency_ns = 250;
    link.credits_flits = credits;
    NvswitchConfig cfg;
    cfg.num_switches = 1;
    cfg.microarchitecture = arch;
    cfg.internal_speedup = speedup;
    sw = std::make_unique<NvSwitch>("sw", n, cfg, kLatency, kLatency);
    for (int g = 0; g < n; ++g) {
      const std::string s = std::to_string(g);
      const auto gi = static_cast<std::size_t>(g);
      sources.push_back(std::make_unique<Source>(("src" + s).c_str(), g, traffic[gi],
                                                 gi < responses.size() && responses[gi],
                                                 gi < starts.size() ? starts[gi] : 0));
      up.push_back(std::make_unique<NvlinkPort>(("up" + s).c_str(), link, kLinkGbps));
      NvlinkConfig out_link = link;
      if (out_credits > 0) out_link.credits_flits = out_credits;
      down.push_back(std::make_unique<NvlinkPort>(("down" + s).c_str(), out_link, kLinkGbps));
      sinks.push_back(std::make_unique<Sink>(("sink" + s).c_str(), hold_until));
      sources.back()->out.bind(up.back()->in);
      up.back()->out.bind(sw->in[static_cast<std::size_t>(g)]);
      sw->out[static_cast<std::size_t>(g)].bind(down.back()->in);
      sw->attach_output(g, down.back().get());
      down.back()->out.bind(sinks.back()->in);
    }
  }
  std::size_t delivered() const {
    std::size_t k = 0;
    for (const auto& s : sinks) k += s->arrivals.size();
    return k;
  }
};

/// Inputs 0 and 1 each send 16 packets to the hot output 2; input 0 then
/// sends one packet to output 1, which nobody else uses. Returns how much
/// later than on an idle switch that packet reached its sink.
Tick free_output_delay(SwitchMicroarchitecture arch, double speedup) {
  std::vector<int> hot(16, 2);
  std::vector<int> first = hot;
  first.push_back(1);
  Bench b({first, hot, {}}, arch, speedup, 2048);
  sc_core::sc_start();
  // conservation: every packet reached its destination, none stayed behind
  EXPECT_EQ(b.delivered(), 33u);
  EXPECT_EQ(b.sinks[2]->arrivals.size(), 32u);
  EXPECT_EQ(b.sw->packets(), 33u);
  EXPECT_EQ(b.sw->queued(), 0u);
  // the hot output sends back to back at its rate, never faster
  const std::vector<Tick>& hot_at = b.sinks[2]->arrivals;
  for (std::size_t k = 1; k < hot_at.size(); ++k) EXPECT_GE(hot_at[k] - hot_at[k - 1], kPacket) << k;
  if (b.sinks[1]->arrivals.size() != 1u) {
    ADD_FAILURE() << "the packet to output 1 did not arrive once";
    return kTickMax;
  }
  // idle switch: the 17th packet of input 0 arrives at the switch after 17
  // packet times and one latency, and leaves after one packet time more
  const Tick idle = 17 * kPacket + kLatency + kPacket + kLatency;
  EXPECT_GE(b.sinks[1]->arrivals[0], idle);
  ::testing::Test::RecordProperty("free_output_delay_ps", std::to_string(b.sinks[1]->arrivals[0] - idle));
  return b.sinks[1]->arrivals[0] - idle;
}

// The reference hands each packet to its output on arrival: no wait.
TEST(SwitchModels, OutputQueuedNeverDelaysAFreeOutput) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  EXPECT_EQ(free_output_delay(SwitchMicroarchitecture::kOutputQueued, 1.0), 0u);
}

// Input-queued: the packet to the free output waits behind input 0's packets
// to the hot output, which shares that output with input 1 (one packet every
// two packet times per input): it leaves after about 32 packet times instead
// of 17.
TEST(SwitchModels, InputQueuedBlocksAFreeOutputBehindItsHead) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  const Tick delay = free_output_delay(SwitchMicroarchitecture::kInputQueued, 1.0);
  EXPECT_GE(delay, 12 * kPacket);
  EXPECT_LE(delay, 16 * kPacket);
}

// VOQ: the packet to the free output has a queue of its own and crosses as
// soon as its input's crossbar port is free (at most one packet time later).
TEST(SwitchModels, VoqDoesNotBlockAFreeOutput) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  EXPECT_LE(free_output_delay(SwitchMicroarchitecture::kVoq, 1.0), kPacket);
}

// Input-queued with internal speedup 2: the hot output's crossbar port takes
// the two inputs' packets as fast as they arrive (its output buffer holds
// them), so the head never waits long: most of the blocking is gone.
TEST(SwitchModels, InternalSpeedupTwoRemovesMostHeadOfLineBlocking) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  EXPECT_LE(free_output_delay(SwitchMicroarchitecture::kInputQueued, 2.0), kPacket);
}

/// Output 3's GPU keeps what it receives until 5 us and has credits for 20
/// flits: the data packets of inputs 0 and 1 take 18, so input 2's data
/// packet does not fit, but input 3's one-flit write response does (sent
/// after the data have crossed). After granting inputs 0 and 1 the output
/// looks at input 2 first: the response must not wait behind it (it crosses
/// when it arrives), and the arbitration must not wake again and again.
void response_passes_data_that_does_not_fit(SwitchMicroarchitecture arch) {
  Bench b({{3}, {3}, {3}, {3}}, arch, 1.0, 2048, {false, false, false, true}, 20, 5000000, {0, 0, 0, 3 * kPacket});
  sc_core::sc_start();
  EXPECT_EQ(b.delivered(), 4u);
  EXPECT_EQ(b.sw->queued(), 0u);
  const Sink& s3 = *b.sinks[3];
  ASSERT_EQ(s3.arrivals.size(), 4u);
  // the response (from input 3) arrives before the GPU frees anything, and
  // the data of input 2 only after
  Tick response = kTickMax, blocked = kTickMax;
  for (std::size_t k = 0; k < 4; ++k) {
    if (s3.src[k] == 3) response = s3.arrivals[k];
    if (s3.src[k] == 2) blocked = s3.arrivals[k];
  }
  EXPECT_LT(response, 2 * kLatency + 5 * kPacket);
  EXPECT_GT(blocked, 5000000u);
  EXPECT_LE(b.sw->arbitrations(), 20u);
  ::testing::Test::RecordProperty("arbitrations", std::to_string(b.sw->arbitrations()));
}

TEST(SwitchModels, InputQueuedResponsePassesDataThatDoesNotFit) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  response_passes_data_that_does_not_fit(SwitchMicroarchitecture::kInputQueued);
}

TEST(SwitchModels, VoqResponsePassesDataThatDoesNotFit) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  response_passes_data_that_does_not_fit(SwitchMicroarchitecture::kVoq);
}

/// Inputs 0 and 1 each send 400 packets to output 2: more than their input
/// buffers (2048 flits, 227 packets) hold. The hot output takes one packet of
/// each input every two packet times, so once input 0's buffer is full its
/// sender is held back by credits to that pace.
void back_pressure(SwitchMicroarchitecture arch) {
  std::vector<int> hot(400, 2);
  Bench b({hot, hot, {}}, arch, 1.0, 2048);
  sc_core::sc_start();
  EXPECT_EQ(b.delivered(), 800u);
  EXPECT_EQ(b.sw->queued(), 0u);
  ASSERT_EQ(b.sources[0]->started.size(), 400u);
  // unchecked, input 0 would start its packets back to back (the last at 399
  // packet times); held to one every two packet times after about the first
  // 227 + 500 ns of credit round trip, the last starts after more than 500
  EXPECT_GE(b.sources[0]->started.back(), 500 * kPacket);
  EXPECT_GT(b.up[0]->parked(), 0u);
  EXPECT_GT(b.up[0]->credit_stall(), 0u);
  for (const auto& p : b.up) EXPECT_EQ(p->credits_outstanding(), 0u);
  ::testing::Test::RecordProperty("last_start_ps", std::to_string(b.sources[0]->started.back()));
}

TEST(SwitchModels, InputQueuedBackPressureStopsTheSender) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  back_pressure(SwitchMicroarchitecture::kInputQueued);
}

TEST(SwitchModels, OutputQueuedBackPressureStopsTheSender) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  back_pressure(SwitchMicroarchitecture::kOutputQueued);
}

TEST(SwitchModels, VoqBackPressureStopsTheSender) {
  if (!first_run()) GTEST_SKIP() << "one simulation per process: run through ctest";
  back_pressure(SwitchMicroarchitecture::kVoq);
}

/// A uniform all-to-all of 8 KiB rows (320 KiB to each peer) on the shipped
/// node with its switches set to `arch`: every row arrives (the node's
/// self-checks), no packet stays in a switch, and the arbitration wakes a few
/// times per packet (an arrival, a crossbar port free, credits back), not once
/// per picosecond.
void node_all_to_all(SwitchMicroarchitecture arch, double speedup) {
  SystemConfig sys = test::default_system();
  sys.nvswitch.microarchitecture = arch;
  sys.nvswitch.internal_speedup = speedup;
  auto node = test::run_node(sys, test::single_all_to_all(test::uniform_rows(sys.num_gpus, 40), 8192, 24));
  if (!node) GTEST_SKIP() << "one simulation per process: run through ctest";
  EXPECT_TRUE(node->verify().empty());
  std::uint64_t packets = 0, wakes = 0;
  for (int p = 0; p < node->planes(); ++p) {
    EXPECT_EQ(node->nvswitch(p).queued(), 0u) << p;
    packets += node->nvswitch(p).packets();
    wakes += node->nvswitch(p).arbitrations();
  }
  EXPECT_GT(packets, 0u);
  EXPECT_LE(wakes, 2 * packets);
  ::testing::Test::RecordProperty("wakes_per_packet", std::to_string(static_cast<double>(wakes) / static_cast<double>(packets)));
}

TEST(SwitchModels, NodeAllToAllInputQueued) { node_all_to_all(SwitchMicroarchitecture::kInputQueued, 1.0); }
TEST(SwitchModels, NodeAllToAllInputQueuedSpeedupTwo) {
  node_all_to_all(SwitchMicroarchitecture::kInputQueued, 2.0);
}
TEST(SwitchModels, NodeAllToAllVoq) { node_all_to_all(SwitchMicroarchitecture::kVoq, 1.0); }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Cli {
  int status;
  std::string err;
  fs::path dir;
};

Cli run_sim(const std::string& tag, const std::string& args) {
  const fs::path dir = fs::temp_directory_path() / ("moehub-switch-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cmd = std::string(MOEHUB_SIM_BINARY) + " --quiet --no-timeline --out-dir " +
                          (dir / "out").string() + " " + args + " >" + (dir / "stdout.txt").string() + " 2>" +
                          (dir / "stderr.txt").string();
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(dir / "stderr.txt"), dir};
}

// A whole layer under each microarchitecture: the run's own checks
// (conservation of rows and bytes, order, completion) pass.
void whole_run_checks(const std::string& arch, const std::string& extra) {
  const Cli r = run_sim(arch, "--tokens 512 --set system.nvswitch.microarchitecture=" + arch + " " + extra);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(r.dir / "out" / "results.json"));
  EXPECT_TRUE(j.at("checks").at("passed").get<bool>()) << j.at("checks").dump();
  EXPECT_GT(j.at("layer_time_us").get<double>(), 0);
  fs::remove_all(r.dir);
}

TEST(SwitchModels, WholeRunChecksPassInputQueued) { whole_run_checks("input-queued", ""); }
TEST(SwitchModels, WholeRunChecksPassVoq) { whole_run_checks("voq", ""); }
TEST(SwitchModels, WholeRunChecksPassInputQueuedSpeedupTwo) {
  whole_run_checks("input-queued", "--set system.nvswitch.internal_speedup=2");
}
TEST(SwitchModels, WholeRunChecksPassMoehubOnVoq) { whole_run_checks("voq", "--schedule moehub --hub-impl moehub"); }

// Bad values: exit status 2, the file and key named, no results written.
TEST(SwitchModels, BadValuesExitTwoNamingTheKey) {
  const Cli arch = run_sim("bad-arch", "--tokens 512 --set system.nvswitch.microarchitecture=crossbar");
  EXPECT_EQ(arch.status, 2);
  EXPECT_NE(arch.err.find("nvswitch.microarchitecture"), std::string::npos) << arch.err;
  EXPECT_NE(arch.err.find("output-queued, input-queued, voq"), std::string::npos) << arch.err;
  EXPECT_FALSE(fs::exists(arch.dir / "out" / "results.json"));
  const Cli speed = run_sim("bad-speedup", "--tokens 512 --set system.nvswitch.internal_speedup=0.5");
  EXPECT_EQ(speed.status, 2);
  EXPECT_NE(speed.err.find("nvswitch.internal_speedup"), std::string::npos) << speed.err;
  EXPECT_NE(speed.err.find("[1, 64]"), std::string::npos) << speed.err;
  EXPECT_NE(speed.err.find("<command line>"), std::string::npos) << speed.err;  // where the value came from
  EXPECT_FALSE(fs::exists(speed.dir / "out" / "results.json"));
  fs::remove_all(arch.dir);
  fs::remove_all(speed.dir);
}

}  // namespace
}  // namespace moehub
