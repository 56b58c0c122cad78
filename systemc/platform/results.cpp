// The results JSON of one run. See results.hpp.
#include "platform/results.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "common/sc_time_util.hpp"
#include "golden/aau.hpp"
#include "golden/dam.hpp"
#include "golden/rpm.hpp"
#include "platform/node.hpp"

namespace moehub {

namespace {

double us(Tick t) { return ticks_to_us(t); }

/// The routing kernel after which the first token's expert is known: the
/// top-k kernel of the MoE-Hub and baseline schedules, or the first kernel of
/// megatron's router phase after its gate GEMM.
bool is_topk(const std::string& name) { return name == "router_softmax_topk" || name == "router_k0"; }

/// The first expert GEMM: `expert_gemm1`, or one of megatron's sequential
/// experts' `expert{e}_fc1`.
bool is_gemm1(const std::string& name) {
  if (name == "expert_gemm1") return true;
  const std::string pre = "expert", post = "_fc1";
  if (name.size() <= pre.size() + post.size() || name.compare(0, pre.size(), pre) != 0 ||
      name.compare(name.size() - post.size(), post.size(), post) != 0) {
    return false;
  }
  for (std::size_t i = pre.size(); i < name.size() - post.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

/// Per GPU, from the start of the routing's top-k kernel (when the first
/// token's expert is known) to the first thread block of the first expert
/// GEMM; null where a GPU has no such ops. The end variant runs to the end of
/// the last GEMM1 (for megatron's sequential experts that includes the other
/// experts' fc2).
nlohmann::ordered_json routing_to_gemm1(const Node& node) {
  using J = nlohmann::ordered_json;
  J per = J::array(), per_end = J::array();
  double sum = 0, mx = 0, sum_end = 0;
  int n = 0;
  for (const RoutingWindow& w : routing_windows(node)) {
    if (!w.valid) {
      per.push_back(nullptr);
      per_end.push_back(nullptr);
      continue;
    }
    const double first = us(w.first_tile - w.routed), end = us(w.gemm1_end - w.routed);
    per.push_back(first);
    per_end.push_back(end);
    sum += first;
    sum_end += end;
    mx = std::max(mx, first);
    ++n;
  }
  J j;
  j["per_gpu_us"] = per;
  j["mean_us"] = n ? sum / n : 0.0;
  j["max_us"] = mx;
  // to the end of GEMM1 (the window with GEMM1's own data-paced tiles)
  j["end_per_gpu_us"] = per_end;
  j["end_mean_us"] = n ? sum_end / n : 0.0;
  return j;
}

/// The MoE-Hub units' counters summed over the hubs, and the row regions.
nlohmann::ordered_json moehub_stats(const Node& node) {
  using J = nlohmann::ordered_json;
  golden::RatStats rat;
  golden::RpmStats rpm;
  golden::DamStats dam;
  bool has_aau = false, has_rpm = false, has_dam = false;
  std::uint64_t congestion = 0, local = 0, local_delays = 0;
  for (int g = 0; g < node.num_gpus(); ++g) {
    const Hub& h = node.hub(g);
    congestion += h.congestion_events();
    local += h.local_stores();
    local_delays += h.local_store_delays();
    if (const auto* a = dynamic_cast<const golden::AddressAllocationUnit*>(&h.ingress_function())) {
      has_aau = true;
      const golden::RatStats s = a->rat_stats();
      rat.hits += s.hits;
      rat.misses += s.misses;
      rat.allocations += s.allocations;
      rat.restores += s.restores;
      rat.evictions += s.evictions;
      rat.spills += s.spills;
      rat.bank_conflicts += s.bank_conflicts;
      rat.conflict_cycles += s.conflict_cycles;
      rat.stalls += s.stalls;
      rat.empty_queries += s.empty_queries;
    }
    if (const golden::RpmStats* r = h.egress_function().rpm_stats()) {
      has_rpm = true;
      const auto& s = *r;
      rpm.stores_accepted += s.stores_accepted;
      rpm.stores_merged += s.stores_merged;
      rpm.stores_sent += s.stores_sent;
      rpm.packets_sent += s.packets_sent;
      rpm.bytes_sent += s.bytes_sent;
      rpm.full_packets += s.full_packets;
      rpm.timer_flushes += s.timer_flushes;
      rpm.pressure_flushes += s.pressure_flushes;
      for (std::size_t i = 0; i < s.packet_flits.size(); ++i) rpm.packet_flits[i] += s.packet_flits[i];
    }
    if (const auto* d = dynamic_cast<const golden::DataAvailabilityManager*>(&h.completion_function())) {
      has_dam = true;
      const auto& s = d->stats();
      dam.completions += s.completions;
      dam.unmatched_completions += s.unmatched_completions;
      dam.counted_bytes += s.counted_bytes;
      dam.groups_released += s.groups_released;
      dam.groups_retired += s.groups_retired;
      dam.all_ready += s.all_ready;
    }
  }
  J j;
  j["units"] = {{"aau", has_aau}, {"rpm", has_rpm}, {"dam", has_dam}};
  if (has_aau) {
    j["rat"] = {{"hits", rat.hits}, {"misses", rat.misses}, {"allocations", rat.allocations},
                {"evictions", rat.evictions}, {"spills", rat.spills}, {"restores", rat.restores},
                {"bank_conflicts", rat.bank_conflicts}, {"conflict_cycles", rat.conflict_cycles},
                {"stalls", rat.stalls}, {"empty_queries", rat.empty_queries}};
  }
  if (has_rpm) {
    J hist = J::array();
    for (const auto x : rpm.packet_flits) hist.push_back(x);
    j["rpm"] = {{"stores_accepted", rpm.stores_accepted}, {"stores_merged", rpm.stores_merged},
                {"packets_sent", rpm.packets_sent}, {"bytes_sent", rpm.bytes_sent},
                {"merge_ratio", rpm.merge_ratio()}, {"full_packets", rpm.full_packets},
                {"timer_flushes", rpm.timer_flushes}, {"pressure_flushes", rpm.pressure_flushes},
                {"packet_payload_flits_histogram", hist}};
  }
  if (has_dam) {
    j["dam"] = {{"completions", dam.completions}, {"unmatched_completions", dam.unmatched_completions},
                {"counted_bytes", dam.counted_bytes}, {"groups_released", dam.groups_released},
                {"groups_retired", dam.groups_retired}, {"all_ready", dam.all_ready}};
  }
  j["hub"] = {{"peer_congestion_events", congestion}, {"local_row_stores", local},
              {"local_row_stores_delayed", local_delays}};
  j["row_transfers"] = node.row_transfers().stats();
  return j;
}

}  // namespace

std::vector<RoutingWindow> routing_windows(const Node& node) {
  std::vector<RoutingWindow> v;
  for (const auto& rec : node.records()) {
    Tick routed = kTickMax, first = kTickMax, end = 0;
    for (const auto& r : rec.stream) {
      if (is_topk(r.name)) routed = std::min(routed, r.start);
      if (is_gemm1(r.name)) {
        first = std::min(first, r.first_block);
        end = std::max(end, r.end);
      }
    }
    RoutingWindow w;
    w.valid = routed != kTickMax && first != kTickMax && first >= routed;
    if (w.valid) {
      w.routed = routed;
      w.first_tile = first;
      w.gemm1_end = end;
    }
    v.push_back(w);
  }
  return v;
}

std::vector<LinkView> links_of(const Node& node) {
  std::vector<LinkView> v;
  for (int g = 0; g < node.num_gpus(); ++g) {
    for (int p = 0; p < node.planes(); ++p) {
      const std::string gs = "gpu" + std::to_string(g), ps = "sw" + std::to_string(p);
      v.push_back({gs + "->" + ps, gs, ps, &node.uplink(g, p)});
      v.push_back({ps + "->" + gs, ps, gs, &node.downlink(g, p)});
    }
  }
  return v;
}

void report_block_stats(Node& node) {
  constexpr int kUtilisationBins = 10;  // deciles of a timeline bin's busy fraction
  for (const auto& l : links_of(node)) {
    const NvlinkPort& port = *l.port;
    const BandwidthServer& s = port.server();
    BlockStats& b = node.stats().block(port.basename());
    b.add("transactions", port.transactions())
        .add("packets", port.packets())
        .add("flits", port.flits_sent())
        .add("write_packets", port.write_packets())
        .add("response_packets", port.response_packets())
        .add("parked", port.parked())
        .add("responses_parked", port.responses_parked())
        .set("payload_bytes", port.payload_bytes())
        .set("busy_us", us(s.busy()))
        .set("credit_stall_us", us(port.credit_stall()));
    if (s.bin_ticks() > 0) {
      Histogram& h = b.histogram("bin_utilisation", 0.0, 1.0, kUtilisationBins);
      for (const Tick busy : s.bins()) h.add(static_cast<double>(busy) / static_cast<double>(s.bin_ticks()));
    }
  }
  for (int g = 0; g < node.num_gpus(); ++g) {
    const Hub& hub = node.hub(g);
    node.stats()
        .block(hub.basename())
        .add("transactions_sent", hub.transactions_sent())
        .add("data_packets_sent", hub.data_packets_sent())
        .add("responses_sent", hub.responses_sent())
        .add("responses_joined", hub.responses_joined())
        .add("writes_received", hub.writes_received())
        .add("ingress_stalls", hub.ingress_stalls())
        .add("arrivals_handled", hub.arrivals().handled())
        .add("arrival_reorderings", hub.arrivals().reorderings())
        .set("ingress_stalled_us", us(hub.arrivals().stalled()))
        .add("write_buffer_full_events", hub.buffer_full_events())
        .set("write_buffer_full_us", us(hub.buffer_full_wait()))
        .add("responses_before_write", hub.early_responses());
    const Hbm& hbm = node.hbm(g);
    node.stats()
        .block(hbm.basename())
        .set("remote_write_bytes", hbm.bytes_written())
        .set("flow_bytes", hbm.flow_bytes())
        .add("remote_writes", hbm.single_accesses())
        .add("flow_slices", hbm.slices())
        .set("remote_write_wait_us", us(hbm.single_wait()))
        .add("reorderings", hbm.reorderings())
        .set("busy_us", us(hbm.server().busy()));
  }
  for (int p = 0; p < node.planes(); ++p) {
    const NvSwitch& sw = node.nvswitch(p);
    node.stats()
        .block(sw.basename())
        .add("packets", sw.packets())
        .add("arrival_reorderings", sw.arrivals().reorderings());
  }
}

nlohmann::ordered_json make_results(const Node& node, const RunRequest& req, const Routing& routing,
                                    const std::vector<std::string>& errors) {
  using J = nlohmann::ordered_json;
  const auto& recs = node.records();
  Tick layer = 0;
  for (const auto& r : recs) layer = std::max(layer, r.end);

  J j;
  j["format"] = "moehub-sim-results";
  j["version"] = 1;
  j["system"] = req.system.name;
  j["model"] = req.model.name;
  // keys changed on the command line (--set), only when there are any
  if (!req.system.overrides.empty()) j["system_overrides"] = req.system.overrides;
  if (!req.model.overrides.empty()) j["model_overrides"] = req.model.overrides;
  if (!req.schedule_overrides.empty()) j["schedule_overrides"] = req.schedule_overrides;
  j["schedule"] = req.schedule;
  j["num_gpus"] = req.system.num_gpus;
  j["tokens"] = routing.total_tokens();
  if (req.routing) {
    j["routing"] = "trace";
    j["routing_trace"] = req.routing_source;
  } else {
    j["routing"] = "generated";
    j["seed"] = req.workload.seed;
    j["distribution"] = req.workload.distribution;
    if (req.workload.distribution == "zipf") {
      j["zipf_s"] = req.workload.zipf_s;
    } else {
      j["imbalance_std"] = req.workload.imbalance_std;
    }
  }
  j["measured_load_std"] = routing.load_std();
  {
    // the routing's (token, expert) pairs and those a schedule with a capacity
    // per expert (tutel) dropped: it computes only the others
    std::int64_t pairs = 0;
    for (const auto& ids : routing.expert_ids) pairs += static_cast<std::int64_t>(ids.size());
    const CapacityDrops& cap = node.schedule().capacity;
    if (cap.limited) j["capacity_factor"] = cap.capacity_factor;
    j["token_expert_pairs"] = pairs;
    j["dropped_token_expert_pairs"] = cap.dropped;
    j["dropped_pair_fraction"] = pairs > 0 ? static_cast<double>(cap.dropped) / static_cast<double>(pairs) : 0.0;
  }
  j["granularity"] = req.system.sim.granularity;
  j["hub_implementation"] = req.system.hub.implementation;
  j["layer_time_us"] = us(layer);

  // per-GPU phases and breakdown
  J gpus = J::array();
  std::map<std::string, double> critical;  // breakdown of the GPU that finishes last
  Tick latest = 0;
  for (std::size_t g = 0; g < recs.size(); ++g) {
    J gj;
    gj["gpu"] = g;
    gj["tokens"] = routing.tokens_per_gpu[g];
    gj["layer_time_us"] = us(recs[g].end);
    // the breakdown follows the compute stream (0), which covers the layer up
    // to its last op; whatever runs after that on other streams is charged to
    // the phase of the op that finished last
    std::map<std::string, double> breakdown;
    J phases = J::array();
    Tick stream0_end = 0;
    const OpRecord* last = nullptr;
    for (const auto& r : recs[g].stream) {
      phases.push_back({{"name", r.name}, {"phase", r.phase}, {"kind", r.kind}, {"stream", r.stream},
                        {"start_us", us(r.start)}, {"end_us", us(r.end)}});
      if (r.stream == 0) {
        breakdown[r.phase] += us(r.end - r.start);
        stream0_end = std::max(stream0_end, r.end);
      }
      if (!last || r.end >= last->end) last = &r;
    }
    if (last && recs[g].end > stream0_end) breakdown[last->phase] += us(recs[g].end - stream0_end);
    gj["phases"] = phases;
    J bj;
    for (const auto& [k, v] : breakdown) bj[k] = v;
    gj["breakdown_us"] = bj;
    gpus.push_back(gj);
    if (recs[g].end >= latest) {
      latest = recs[g].end;
      critical = breakdown;
    }
  }
  J cj;
  for (const auto& [k, v] : critical) cj[k] = v;
  j["breakdown_us"] = cj;
  j["gpus"] = gpus;

  // links
  J links = J::array();
  double wire_total = 0;
  std::uint64_t packets_total = 0;
  for (const auto& l : links_of(node)) {
    const auto& s = l.port->server();
    const double wire = s.bytes();
    wire_total += wire;
    packets_total += l.port->write_packets();
    links.push_back({{"name", l.name}, {"from", l.from}, {"to", l.to},
                     {"payload_bytes", l.port->payload_bytes()}, {"wire_bytes", wire},
                     {"write_packets", l.port->write_packets()},
                     {"response_packets", l.port->response_packets()},
                     {"busy_us", us(s.busy())},
                     {"utilisation", layer ? static_cast<double>(s.busy()) / static_cast<double>(layer) : 0.0},
                     {"credit_stall_us", us(l.port->credit_stall())}});
  }
  j["links"] = links;

  // the collectives' transfers (scoreboard) and the MoE-Hub row transfers
  const auto t = node.scoreboard().totals();
  const RowTransfers& rt = node.row_transfers();
  J tj;
  tj["fabric_payload_bytes_sent"] = t.payload_bytes_sent + static_cast<double>(rt.fabric_bytes_sent());
  tj["fabric_payload_bytes_received"] = t.payload_bytes_received + static_cast<double>(rt.fabric_bytes_received());
  tj["local_copy_bytes"] = t.local_bytes + static_cast<double>(rt.local_bytes());
  tj["data_packets"] = t.data_packets + rt.packets_delivered();
  tj["rows_delivered"] = t.rows_delivered + rt.rows_delivered();
  tj["wrong_addresses"] = t.wrong_addresses;
  tj["responses_before_write"] = t.early_responses;
  tj["arrival_reorderings"] = node.reorderings();
  tj["link_wire_bytes"] = wire_total;
  j["totals"] = tj;
  {
    // the simulator's own work: process activations (deterministic)
    std::uint64_t egress = 0, ingress = 0, sw = 0, hbm = 0, slices = 0, payloads = 0, live = 0;
    for (int g = 0; g < node.num_gpus(); ++g) {
      egress += node.hub(g).egress_wakes();
      ingress += node.hub(g).arrivals().wakes();
      hbm += node.hbm(g).wakes();
      slices += node.hbm(g).slices();
      payloads += node.hub(g).pool().capacity();
      live += node.hub(g).pool().live();
    }
    for (int p = 0; p < node.planes(); ++p) sw += node.nvswitch(p).arrivals().wakes();
    J sj;
    sj["hub_egress_wakes"] = egress;
    sj["hub_ingress_wakes"] = ingress;
    sj["switch_wakes"] = sw;
    sj["hbm_wakes"] = hbm;
    sj["hbm_flow_slices"] = slices;
    sj["payloads_allocated"] = payloads;
    sj["payloads_live_at_end"] = live;
    j["simulator"] = sj;
  }

  J checks;
  checks["passed"] = errors.empty();
  checks["errors"] = errors;
  j["checks"] = checks;
  j["routing_to_gemm1"] = routing_to_gemm1(node);
  if (node.schedule().hub.aau) j["moehub"] = moehub_stats(node);
  j["stats"] = node.stats().to_json();
  return j;
}

}  // namespace moehub
