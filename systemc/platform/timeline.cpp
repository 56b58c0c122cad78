// The Chrome-trace timeline of one run. See timeline.hpp.
#include "platform/timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>
#include <vector>

#include "common/sc_time_util.hpp"
#include "golden/aau.hpp"
#include "golden/rpm.hpp"
#include "platform/node.hpp"
#include "platform/results.hpp"
#include "platform/row_transfers.hpp"

namespace moehub {

namespace {

double us(Tick t) { return ticks_to_us(t); }

constexpr int kHostTid = 99;      ///< timeline thread of a GPU's host
constexpr int kWindowTid = 98;    ///< the routing-to-GEMM1 window
constexpr int kReleaseTid = 97;   ///< releases of the expert GEMM's groups

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

using RowTrace = RowTransfers::Trace;

std::string rat_args(const golden::RatStats& s) {
  return R"({"hits":)" + std::to_string(s.hits) + R"(,"misses":)" + std::to_string(s.misses) + "}";
}
std::string rat_evict_args(const golden::RatStats& s) {
  return R"({"evictions":)" + std::to_string(s.evictions) + R"(,"restores":)" + std::to_string(s.restores) +
         R"(,"bank_conflicts":)" + std::to_string(s.bank_conflicts) + "}";
}
std::string rpm_args(const golden::RpmStats& s) {
  return R"({"stores":)" + std::to_string(s.stores_accepted) + R"(,"packets":)" + std::to_string(s.packets_sent) + "}";
}
std::string rpm_size_args(const golden::RpmStats& s) {
  std::string a = "{";
  for (std::size_t i = 0; i < s.packet_flits.size(); ++i) {
    a += (i ? ",\"" : "\"") + std::to_string(i) + (i == 1 ? " flit\":" : " flits\":") + std::to_string(s.packet_flits[i]);
  }
  return a + "}";
}

/// Counter event of GPU g's process.
void counter(std::ostringstream& o, std::size_t g, const std::string& name, Tick at, const std::string& args) {
  o << R"({"ph":"C","pid":)" << g << R"(,"name":")" << json_escape(name) << R"(","ts":)" << fmt(us(at))
    << R"(,"args":)" << args << "}";
}

/// The MoE-Hub tracks of every GPU (see timeline.hpp).
void moehub_tracks(std::ostringstream& o, const std::function<void()>& sep, const Node& node) {
  const RowTrace& tr = node.row_transfers().trace();
  const auto& recs = node.records();
  const auto& regions = node.schedule().regions;
  const auto links = links_of(node);
  const Tick bin = links.empty() ? 0 : links.front().port->server().bin_ticks();
  for (std::size_t g = 0; g < recs.size(); ++g) {
    const int gi = static_cast<int>(g);
    const Hub& hub = node.hub(gi);
    // releases of the expert GEMM's thread-block groups
    bool named = false;
    for (const auto& r : tr.releases) {
      if (r.gpu != gi) continue;
      if (!named) {
        sep();
        o << R"({"ph":"M","name":"thread_name","pid":)" << g << R"(,"tid":)" << kReleaseTid
          << R"(,"args":{"name":"group releases"}})";
        named = true;
      }
      sep();
      using K = RowTransfers::Release::Kind;
      const char* name = r.kind == K::kDamGroup ? "DAM ready" : r.kind == K::kAllReady ? "AllReady" : "flag release";
      o << R"({"ph":"i","s":"t","pid":)" << g << R"(,"tid":)" << kReleaseTid << R"(,"name":")" << name
        << R"(","cat":"release","ts":)" << fmt(us(r.at)) << R"(,"args":{)";
      o << R"("region":)" << r.region << R"(,"expert":)" << regions[static_cast<std::size_t>(r.region)].expert;
      if (r.kind != K::kAllReady) o << R"(,"group":)" << r.group;
      o << "}}";
    }
    // occupancy of this GPU's regions: the last value in each bin
    for (std::size_t ri = 0; ri < regions.size(); ++ri) {
      if (regions[ri].gpu != gi) continue;
      std::vector<RowTransfers::RowsAt> v;
      for (const auto& x : tr.rows) {
        if (x.region == static_cast<int>(ri)) v.push_back(x);
      }
      std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
      const std::string name = "region " + std::to_string(ri) + " occupancy (expert " +
                               std::to_string(regions[ri].expert) + ", " + std::to_string(regions[ri].capacity_rows) +
                               " rows)";
      const double cap = static_cast<double>(regions[ri].capacity_rows);
      sep();
      counter(o, g, name, 0, R"({"occupancy":0.0000})");
      for (std::size_t i = 0; i < v.size(); ++i) {
        const bool last_in_bin = i + 1 == v.size() || bin == 0 || v[i + 1].at / bin != v[i].at / bin;
        if (!last_in_bin) continue;
        sep();
        counter(o, g, name, v[i].at, R"({"occupancy":)" + fmt(static_cast<double>(v[i].rows) / cap, 4) + "}");
      }
    }
    // RAT counters (consumer side)
    if (const auto* a = dynamic_cast<const golden::AddressAllocationUnit*>(&hub.ingress_function())) {
      const golden::RatStats zero{};
      sep();
      counter(o, g, "RAT lookups", 0, rat_args(zero));
      sep();
      counter(o, g, "RAT evictions", 0, rat_evict_args(zero));
      for (const auto& x : tr.rat) {
        if (x.gpu != gi) continue;
        sep();
        counter(o, g, "RAT lookups", x.at, rat_args(x.rat));
        sep();
        counter(o, g, "RAT evictions", x.at, rat_evict_args(x.rat));
      }
      sep();
      counter(o, g, "RAT lookups", recs[g].end, rat_args(a->rat_stats()));
      sep();
      counter(o, g, "RAT evictions", recs[g].end, rat_evict_args(a->rat_stats()));
    }
    // RPM counters (producer side)
    if (const golden::RpmStats* m = hub.egress_function().rpm_stats()) {
      const golden::RpmStats zero{};
      sep();
      counter(o, g, "RPM stores and packets", 0, rpm_args(zero));
      sep();
      counter(o, g, "RPM packets by payload flits", 0, rpm_size_args(zero));
      for (const auto& x : tr.rpm) {
        if (x.gpu != gi) continue;
        sep();
        counter(o, g, "RPM stores and packets", x.at, rpm_args(x.rpm));
        sep();
        counter(o, g, "RPM packets by payload flits", x.at, rpm_size_args(x.rpm));
      }
      sep();
      counter(o, g, "RPM stores and packets", recs[g].end, rpm_args(*m));
      sep();
      counter(o, g, "RPM packets by payload flits", recs[g].end, rpm_size_args(*m));
    }
  }
}

}  // namespace

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
  const auto windows = routing_windows(node);
  for (std::size_t g = 0; g < windows.size(); ++g) {
    const RoutingWindow& w = windows[g];
    if (!w.valid) continue;
    sep();
    o << R"({"ph":"M","name":"thread_name","pid":)" << g << R"(,"tid":)" << kWindowTid
      << R"(,"args":{"name":"routing to GEMM1"}})";
    sep();
    o << R"({"ph":"X","pid":)" << g << R"(,"tid":)" << kWindowTid
      << R"(,"name":"routing to first GEMM1 tile","cat":"window","ts":)" << fmt(us(w.routed)) << R"(,"dur":)"
      << fmt(us(w.first_tile - w.routed)) << "}";
    sep();
    o << R"({"ph":"X","pid":)" << g << R"(,"tid":)" << kWindowTid
      << R"(,"name":"routing to GEMM1 end","cat":"window","ts":)" << fmt(us(w.routed)) << R"(,"dur":)"
      << fmt(us(w.gemm1_end - w.routed)) << "}";
  }
  if (node.schedule().hub.aau) moehub_tracks(o, sep, node);

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

}  // namespace moehub
