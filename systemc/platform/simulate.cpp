#include "platform/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include <sys/resource.h>

#include "common/sc_time_util.hpp"
#include "platform/node.hpp"
#include "workload/routing.hpp"

namespace moehub {

namespace {

double us(Tick t) { return ticks_to_us(t); }

constexpr int kHostTid = 99;  ///< timeline thread of a GPU's host

// Fixed-format number for the hand-written timeline (deterministic, compact).
std::string fmt(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

struct LinkView {
  std::string name, from, to;
  const NvlinkPort* port;
};

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
  j["granularity"] = req.system.sim.granularity;
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

  const auto t = node.collectives().totals();
  J tj;
  tj["fabric_payload_bytes_sent"] = t.payload_bytes_sent;
  tj["fabric_payload_bytes_received"] = t.payload_bytes_received;
  tj["local_copy_bytes"] = t.local_bytes;
  tj["data_packets"] = t.data_packets;
  tj["rows_delivered"] = t.rows_delivered;
  tj["link_wire_bytes"] = wire_total;
  j["totals"] = tj;

  J checks;
  checks["passed"] = errors.empty();
  checks["errors"] = errors;
  j["checks"] = checks;
  return j;
}

std::string make_timeline(const Node& node, const RunRequest& req) {
  std::ostringstream o;
  o << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"system\":\"" << json_escape(req.system.name)
    << "\",\"model\":\"" << json_escape(req.model.name) << "\",\"schedule\":\"" << json_escape(req.schedule)
    << "\"},\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() {
    if (!first) o << ",\n";
    first = false;
  };
  const auto& recs = node.records();
  for (std::size_t g = 0; g < recs.size(); ++g) {
    sep();
    o << R"({"ph":"M","name":"process_name","pid":)" << g << R"(,"args":{"name":"GPU )" << g << "\"}}";
    int streams = 1;
    for (const auto& r : recs[g].stream) streams = std::max(streams, r.stream + 1);
    for (int st = 0; st < streams; ++st) {
      sep();
      o << R"({"ph":"M","name":"thread_name","pid":)" << g << R"(,"tid":)" << 1 + st << R"(,"args":{"name":")"
        << (st == 0 ? "stream 0 (compute)" : "stream " + std::to_string(st) + " (communication)") << "\"}}";
    }
    sep();
    o << R"({"ph":"M","name":"thread_name","pid":)" << g << R"(,"tid":)" << kHostTid << R"(,"args":{"name":"host"}})";
    for (const auto& r : recs[g].stream) {
      sep();
      o << R"({"ph":"X","pid":)" << g << R"(,"tid":)" << 1 + r.stream << R"(,"name":")" << json_escape(r.name) << R"(","cat":")"
        << json_escape(r.phase) << R"(","ts":)" << fmt(us(r.start)) << R"(,"dur":)" << fmt(us(r.end - r.start))
        << R"(,"args":{"kind":")" << r.kind << R"(","bytes":)" << fmt(r.bytes, 0) << R"(,"flops":)"
        << fmt(r.flops, 0) << "}}";
    }
    for (const auto& r : recs[g].host) {
      sep();
      o << R"({"ph":"X","pid":)" << g << R"(,"tid":)" << kHostTid << R"(,"name":")" << json_escape(r.name) << R"(","cat":")"
        << json_escape(r.phase) << R"(","ts":)" << fmt(us(r.start)) << R"(,"dur":)" << fmt(us(r.end - r.start))
        << "}";
    }
  }
  // link utilisation counters, one process for the fabric
  const std::size_t fabric_pid = recs.size();
  sep();
  o << R"({"ph":"M","name":"process_name","pid":)" << fabric_pid << R"(,"args":{"name":"NVLink fabric"}})";
  for (const auto& l : links_of(node)) {
    const auto& s = l.port->server();
    const Tick bin = s.bin_ticks();
    if (bin == 0) continue;
    const auto& bins = s.bins();
    double last = -1;
    for (std::size_t i = 0; i <= bins.size(); ++i) {
      const double u = i < bins.size() ? static_cast<double>(bins[i]) / static_cast<double>(bin) : 0.0;
      if (u == last) continue;  // counters hold their value until the next sample
      last = u;
      sep();
      o << R"({"ph":"C","pid":)" << fabric_pid << R"(,"name":")" << l.name << R"(","ts":)"
        << fmt(us(static_cast<Tick>(i) * bin)) << R"(,"args":{"utilisation":)" << fmt(u, 4) << "}}";
    }
  }
  o << "\n]}\n";
  return o.str();
}

}  // namespace

std::uint64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

namespace {

/// The node of a run stopped at its time limit (see simulate()).
Node* abandoned_node = nullptr;

std::string time_limit_message(const RunRequest& req) {
  return "the run had not finished when it reached its simulated-time limit of " +
         fmt(us(req.max_sim_time), 0) +
         " us (raise it with --max-sim-time, in us); a run this long usually means that a bandwidth, "
         "latency or clock in the system config is far from its usual scale";
}

}  // namespace

RunOutput simulate(const RunRequest& req) {
  if (req.max_sim_time == 0 || req.max_sim_time > RunRequest::kMaxSimTimeLimit) {
    throw std::invalid_argument("max_sim_time must be in [1, 2^59] ps");
  }
  set_picosecond_resolution();
  const Routing routing =
      req.routing ? *req.routing : generate_routing(req.model, req.workload, req.system.num_gpus);
  const ExpertPlacement placement = ExpertPlacement::contiguous(req.model.num_experts, req.system.num_gpus);
  Schedule schedule = build_schedule(req.schedule, req.model, routing, placement, req.options);
  auto node = std::make_unique<Node>("node", req.system, req.model, std::move(schedule));
  const auto t0 = std::chrono::steady_clock::now();
  // times too long for any run saturate at kTickNever (units.hpp), past the
  // limit: such a run stops here with work still pending
  sc_core::sc_start(to_sc(req.max_sim_time));
  const auto t1 = std::chrono::steady_clock::now();
  bool finished = true;
  for (const auto& r : node->records()) finished = finished && r.finished;
  RunOutput out;
  if (!finished && sc_core::sc_pending_activity()) {
    // SystemC cannot unwind the threads that did not finish: the node is kept
    // rather than destroyed under their suspended stacks, and the outcome is
    // returned, not thrown (with SystemC's coroutines, AddressSanitizer loses
    // track of the stack once they ran, and unwinding through main reports
    // false stack-buffer-overflows)
    abandoned_node = node.release();
    out.time_limit_exceeded = true;
    out.time_limit_message = time_limit_message(req);
    return out;
  }

  out.check_errors = node->collectives().verify();
  for (std::size_t g = 0; g < node->records().size(); ++g) {
    if (!node->records()[g].finished) {
      out.check_errors.push_back("GPU " + std::to_string(g) + " did not finish its schedule (deadlock)");
    }
  }
  out.results = make_results(*node, req, routing, out.check_errors);
  if (req.timeline) out.timeline = make_timeline(*node, req);
  out.wall_seconds = std::chrono::duration<double>(t1 - t0).count();
  out.fabric_transactions = node->fabric_transactions();
  out.fabric_packets = node->collectives().totals().data_packets;
  // differs from run to run: kept apart, in one object that comparisons drop
  out.results["host"] = {{"peak_rss_bytes", peak_rss_bytes()}, {"wall_seconds", out.wall_seconds}};
  return out;
}

std::string format_table(const nlohmann::ordered_json& r) {
  std::ostringstream o;
  char line[256];
  o << "moehub-sim: " << r["schedule"].get<std::string>() << " on " << r["system"].get<std::string>()
    << " (" << r["num_gpus"].get<int>() << " GPUs), " << r["model"].get<std::string>() << ", "
    << r["tokens"].get<std::int64_t>() << " tokens, measured load std "
    << fmt(r["measured_load_std"].get<double>(), 4) << "\n\n";
  o << "phase breakdown of the GPU that finishes last (us):\n";
  for (const auto& [k, v] : r["breakdown_us"].items()) {
    std::snprintf(line, sizeof line, "  %-18s %12.2f\n", k.c_str(), v.get<double>());
    o << line;
  }
  std::snprintf(line, sizeof line, "  %-18s %12.2f\n\n", "layer", r["layer_time_us"].get<double>());
  o << line;
  o << "per GPU layer time (us):";
  for (const auto& g : r["gpus"]) o << " " << fmt(g["layer_time_us"].get<double>(), 1);
  o << "\n";
  double max_u = 0, sum_u = 0;
  for (const auto& l : r["links"]) {
    max_u = std::max(max_u, l["utilisation"].get<double>());
    sum_u += l["utilisation"].get<double>();
  }
  const auto& t = r["totals"];
  std::snprintf(line, sizeof line,
                "fabric: %.3f MB payload in %llu packets; link utilisation mean %.3f, max %.3f\n",
                t["fabric_payload_bytes_sent"].get<double>() / 1e6,
                static_cast<unsigned long long>(t["data_packets"].get<std::uint64_t>()),
                r["links"].empty() ? 0.0 : sum_u / static_cast<double>(r["links"].size()), max_u);
  o << line;
  o << "self-checks: " << (r["checks"]["passed"].get<bool>() ? "passed" : "FAILED") << "\n";
  for (const auto& e : r["checks"]["errors"]) o << "  " << e.get<std::string>() << "\n";
  return o.str();
}

}  // namespace moehub
