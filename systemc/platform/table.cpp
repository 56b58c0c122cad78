// The summary table of a results object. See table.hpp.
#include "platform/table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>

namespace moehub {

namespace {

// Fixed-format number (as the timeline writes them).
std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string format_table(const nlohmann::ordered_json& r) {
  std::ostringstream o;
  char line[256];
  o << "moehub-sim: " << r["schedule"].get<std::string>() << " on " << r["system"].get<std::string>()
    << " (" << r["num_gpus"].get<int>() << " GPUs), " << r["model"].get<std::string>() << ", "
    << r["tokens"].get<std::int64_t>() << " tokens, measured load std "
    << fmt(r["measured_load_std"].get<double>(), 4) << "\n";
  if (r.contains("capacity_factor")) {
    // a schedule with a capacity per expert computes only the pairs within it
    std::snprintf(line, sizeof line, "capacity factor %s: %lld of %lld token-expert pairs dropped (%.2f %%)\n",
                  fmt(r["capacity_factor"].get<double>(), 2).c_str(),
                  static_cast<long long>(r["dropped_token_expert_pairs"].get<std::int64_t>()),
                  static_cast<long long>(r["token_expert_pairs"].get<std::int64_t>()),
                  100 * r["dropped_pair_fraction"].get<double>());
    o << line;
  }
  o << "\n";
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
