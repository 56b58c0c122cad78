// fabric_switch_bench: drives one NvSwitch with synthetic traffic, the
// traffic BookSim2 offers, to compare the switch microarchitectures with it
// (docs/results/switch-models.md). N sources send 128-byte packets (9 flits
// of 16 B) to uniformly random destinations (any of the N, as BookSim's
// "uniform" pattern) over GPU-to-switch NvlinkPorts into one switch, whose
// outputs are switch-to-GPU NvlinkPorts into sinks that free each packet on
// arrival.
//   batch: every source has --packets packets at time 0 (BookSim sim_type
//          batch); prints the throughput as a fraction of the bound (every
//          input and output busy all the time) from the makespan less the
//          zero-load latency of one packet.
//   rate:  each source creates a packet in each packet time with probability
//          --load (Bernoulli, as BookSim's injection process); prints the
//          accepted throughput (fraction of the ports' rate) and the mean
//          latency from creation to arrival, in packet times above zero load.
// Usage: fabric_switch_bench ARCH SPEEDUP MODE N PACKETS LOAD SEED CREDITS_FLITS
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"
#include "common/sc_time_util.hpp"
#include "common/tlm_block.hpp"
#include "fabric/nvlink_port.hpp"
#include "fabric/nvswitch.hpp"

namespace moehub {
namespace {

constexpr double kLinkGbps = 50;    // one GPU-switch port of dgx-h800.yaml (200 GB/s over 4 switches)
constexpr Tick kPacket = 2880;      // 144 B at 50 GB/s
constexpr Tick kLatency = 250000;   // nvlink.gpu_switch_latency_ns of every shipped system

/// Hands its packets to its port, each annotated with its creation time.
class Source : public TlmBlock {
 public:
  tlm::tlm_initiator_socket<> out{"out"};
  SC_HAS_PROCESS(Source);
  Source(const sc_core::sc_module_name& n, int src, std::vector<int> dsts, std::vector<Tick> created)
      : TlmBlock(n), src_(src), dsts_(std::move(dsts)), created_(std::move(created)) {
    out.bind(*this);
    SC_THREAD(run);
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
    return tlm::TLM_ACCEPTED;
  }
  const std::vector<Tick>& created() const { return created_; }
  PayloadPool pool;

 private:
  void run() {
    for (std::size_t i = 0; i < dsts_.size(); ++i) {
      // created in time order: wait until then, so the port sees each packet
      // when it exists
      if (created_[i] > now_ticks()) sc_core::wait(to_sc(created_[i] - now_ticks()));
      MoePayload* gp = pool.allocate();
      MoePacketExt& ext = *gp->ext();
      ext.kind = PacketKind::kWrite;
      ext.flits = 9;
      ext.src_gpu = src_;
      ext.dst_gpu = dsts_[i];
      ext.store.bytes = 128;
      ext.store.row_id = static_cast<std::int64_t>(i);
      ext.ready = now_ticks();
      gp->set_command(tlm::TLM_WRITE_COMMAND);
      gp->set_data_length(128);
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      out->nb_transport_fw(*gp, ph, d);
    }
  }
  int src_;
  std::vector<int> dsts_;
  std::vector<Tick> created_;
};

struct Arrival {
  Tick at;
  int src;
  std::int64_t row;
};

class Sink : public TlmBlock {
 public:
  tlm::tlm_target_socket<> in{"in"};
  Sink(const sc_core::sc_module_name& n, std::vector<Arrival>& log) : TlmBlock(n), log_(log) { in.bind(*this); }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time& delay) override {
    const Tick at = now_ticks() + to_ticks(delay);
    log_.push_back({at, moe_ext(gp).src_gpu, moe_ext(gp).store.row_id});
    tlm::tlm_phase ph = tlm::END_REQ;
    sc_core::sc_time d = to_sc(at - now_ticks());
    in->nb_transport_bw(gp, ph, d);
    gp.release();
    return tlm::TLM_ACCEPTED;
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}

 private:
  std::vector<Arrival>& log_;
};

int run(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: %s ARCH SPEEDUP batch|rate N PACKETS LOAD SEED CREDITS_FLITS\n", argv[0]);
    return 2;
  }
  const std::string arch_name = argv[1];
  NvswitchConfig cfg;
  cfg.num_switches = 1;
  if (arch_name == "output-queued") {
    cfg.microarchitecture = SwitchMicroarchitecture::kOutputQueued;
  } else if (arch_name == "input-queued") {
    cfg.microarchitecture = SwitchMicroarchitecture::kInputQueued;
  } else if (arch_name == "voq") {
    cfg.microarchitecture = SwitchMicroarchitecture::kVoq;
  } else {
    std::fprintf(stderr, "ARCH must be output-queued, input-queued or voq (got '%s')\n", argv[1]);
    return 2;
  }
  cfg.internal_speedup = std::atof(argv[2]);
  const std::string mode = argv[3];
  const int n = std::atoi(argv[4]);
  const int packets = std::atoi(argv[5]);
  const double load = std::atof(argv[6]);
  const unsigned seed = static_cast<unsigned>(std::atoi(argv[7]));
  const int credits = std::atoi(argv[8]);
  if (!(cfg.internal_speedup >= 1 && cfg.internal_speedup <= 64) || (mode != "batch" && mode != "rate") ||
      n < 2 || n > 64 || packets < 1 || !(load > 0 && load <= 1) || credits < 9) {
    std::fprintf(stderr, "bad arguments (SPEEDUP in [1, 64], MODE batch or rate, N in [2, 64], PACKETS >= 1, "
                         "LOAD in (0, 1], CREDITS_FLITS >= 9)\n");
    return 2;
  }
  set_picosecond_resolution();
  NvlinkConfig link;
  link.flit_bytes = 16;
  link.max_payload_bytes = 128;
  link.header_flits = 1;
  link.gpu_switch_latency_ns = 250;
  link.credits_flits = credits;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dst(0, n - 1);
  std::bernoulli_distribution inject(load);
  std::vector<Arrival> log;
  NvSwitch sw("sw", n, cfg, kLatency, kLatency);
  std::vector<std::unique_ptr<Source>> sources;
  std::vector<std::unique_ptr<NvlinkPort>> up, down;
  std::vector<std::unique_ptr<Sink>> sinks;
  std::vector<int> per_output(static_cast<std::size_t>(n), 0);  ///< packets each output receives
  for (int g = 0; g < n; ++g) {
    std::vector<int> dsts;
    std::vector<Tick> created;
    Tick slot = 0;
    for (int k = 0; k < packets; ++k) {
      if (mode == "rate") {
        while (!inject(rng)) ++slot;
        created.push_back(slot * kPacket);
        ++slot;
      } else {
        created.push_back(0);
      }
      dsts.push_back(dst(rng));
      ++per_output[static_cast<std::size_t>(dsts.back())];
    }
    const std::string s = std::to_string(g);
    sources.push_back(std::make_unique<Source>(("src" + s).c_str(), g, dsts, created));
    up.push_back(std::make_unique<NvlinkPort>(("up" + s).c_str(), link, kLinkGbps));
    down.push_back(std::make_unique<NvlinkPort>(("down" + s).c_str(), link, kLinkGbps));
    sinks.push_back(std::make_unique<Sink>(("sink" + s).c_str(), log));
    sources.back()->out.bind(up.back()->in);
    up.back()->out.bind(sw.in[static_cast<std::size_t>(g)]);
    sw.out[static_cast<std::size_t>(g)].bind(down.back()->in);
    sw.attach_output(g, down.back().get());
    down.back()->out.bind(sinks.back()->in);
  }
  sc_core::sc_start();
  const std::size_t total = static_cast<std::size_t>(n) * static_cast<std::size_t>(packets);
  if (log.size() != total || sw.queued() != 0) {
    std::fprintf(stderr, "conservation failed: %zu of %zu delivered, %zu queued\n", log.size(), total, sw.queued());
    return 1;
  }
  const Tick zero_load = kPacket + kLatency + kPacket + kLatency;  // two serialisations, two link latencies
  Tick last = 0;
  double lat_sum = 0;
  std::size_t lat_n = 0;
  for (const Arrival& a : log) {
    last = std::max(last, a.at);
    // latency over the packets after the first tenth of each source (warm-up)
    if (a.row >= packets / 10) {
      lat_sum += static_cast<double>(a.at - sources[static_cast<std::size_t>(a.src)]->created()[static_cast<std::size_t>(a.row)]);
      ++lat_n;
    }
  }
  if (mode == "batch") {
    // the busiest port, input or output, sending back to back
    int busiest = packets;
    for (const int c : per_output) busiest = std::max(busiest, c);
    const double bound = static_cast<double>(busiest) * kPacket;
    const double span = static_cast<double>(last - (zero_load - kPacket));
    std::printf("%s speedup %.2f batch N=%d packets=%d: makespan %.3f us, throughput %.4f of the busiest port's "
                "bound, %.4f of the inputs' (%d packets each)\n",
                arch_name.c_str(), cfg.internal_speedup, n, packets, static_cast<double>(last) * 1e-6, bound / span,
                static_cast<double>(packets) * kPacket / span, packets);
  } else {
    Tick first_created = kTickMax, last_created = 0;
    for (const auto& s : sources) {
      first_created = std::min(first_created, s->created().front());
      last_created = std::max(last_created, s->created().back());
    }
    // accepted: delivered packets over the span in which they were offered
    const double span = static_cast<double>(last - zero_load - first_created + kPacket);
    std::printf("%s speedup %.2f rate N=%d load %.2f: accepted %.4f, mean latency %.1f packet times above zero load\n",
                arch_name.c_str(), cfg.internal_speedup, n, load,
                static_cast<double>(total) * kPacket / (static_cast<double>(n) * span),
                (lat_sum / static_cast<double>(lat_n) - static_cast<double>(zero_load)) / kPacket);
  }
  return 0;
}

}  // namespace
}  // namespace moehub

int sc_main(int argc, char** argv) { return moehub::run(argc, argv); }
