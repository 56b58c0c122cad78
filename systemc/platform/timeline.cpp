// The Chrome-trace timeline of one run. See timeline.hpp.
#include "platform/timeline.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/sc_time_util.hpp"
#include "platform/node.hpp"
#include "platform/results.hpp"

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
