// One simulation run: the orchestration only. The outputs are written by
// results.cpp (results JSON), timeline.cpp (Chrome trace) and table.cpp
// (summary table).
#include "platform/simulate.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include <sys/resource.h>

#include "common/sc_time_util.hpp"
#include "platform/node.hpp"
#include "platform/results.hpp"
#include "platform/timeline.hpp"
#include "workload/routing.hpp"

namespace moehub {

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
         std::to_string(static_cast<long long>(ticks_to_us(req.max_sim_time))) +
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
  if (schedule.hub.aau && req.system.hub.implementation != "moehub" && req.system.hub.implementation != "rtl") {
    throw std::invalid_argument(req.system.source_file + ": key 'hub.implementation': schedule '" + schedule.name +
                                "' needs the MoE-Hub units: must be 'moehub' or 'rtl' (got '" +
                                req.system.hub.implementation + "'; moehub-sim --hub-impl moehub overrides it)");
  }
  auto node = std::make_unique<Node>("node", req.system, req.model, std::move(schedule));
  const auto t0 = std::chrono::steady_clock::now();
  if (req.progress) {
    // run in slices of simulated time until nothing is left to happen (every
    // GPU has finished, or the rest is deadlocked); a slice that ends between
    // two events leaves the event queue as it was
    constexpr double kShortSliceS = 0.05;  // wall time under which a slice doubles
    constexpr double kLongSliceS = 0.25;   // and over which it halves again
    const Tick base = std::max<Tick>(1, us_to_ticks(req.progress_every_us));
    Tick slice = base;
    do {
      const auto s0 = std::chrono::steady_clock::now();
      const Tick now = now_ticks();
      if (now >= req.max_sim_time) break;
      sc_core::sc_start(to_sc(std::min(slice, req.max_sim_time - now)));
      const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      if (wall_s < kShortSliceS && slice < 64 * base) slice *= 2;
      if (wall_s > kLongSliceS && slice > base) slice /= 2;
      const Node::Progress p = node->progress();
      req.progress(p.done, p.total);
      if (!node->fatal_error().empty()) break;  // the run was stopped (sc_stop)
    } while (sc_core::sc_pending_activity());
  } else {
    // times too long for any run saturate at kTickNever (units.hpp), past the
    // limit: such a run stops here with work still pending
    sc_core::sc_start(to_sc(req.max_sim_time));
  }
  const auto t1 = std::chrono::steady_clock::now();
  bool finished = true;
  for (const auto& r : node->records()) finished = finished && r.finished;
  RunOutput out;
  if (!node->fatal_error().empty()) {
    // as for the time limit below: the node stays, its threads suspended
    out.fatal = true;
    out.fatal_message = node->fatal_error();
    abandoned_node = node.release();
    return out;
  }
  if (!finished && sc_core::sc_pending_activity()) {
    // SystemC cannot unwind the threads that did not finish: the node is kept
    // rather than destroyed under their suspended stacks, and the outcome is
    // returned, not thrown (with SystemC's coroutines, AddressSanitizer loses
    // track of the stack once they ran, and unwinding through main reports
    // false stack-buffer-overflows)
    abandoned_node = node.release();
    out.time_limit_exceeded = true;
    out.time_limit_message = time_limit_message(req);
    if (const std::uint64_t stalls = abandoned_node->region_full_stalls()) {
      out.time_limit_message += "; the hubs refused " + std::to_string(stalls) +
                                " row writes because their rowsp region was full (hub.region_full: stall): "
                                "the regions are too small for the routing";
    }
    return out;
  }

  out.check_errors = node->verify();
  for (std::size_t g = 0; g < node->records().size(); ++g) {
    if (!node->records()[g].finished) {
      out.check_errors.push_back("GPU " + std::to_string(g) + " did not finish its schedule (deadlock)");
    }
  }
  report_block_stats(*node);
  out.results = make_results(*node, req, routing, out.check_errors);
  if (req.timeline) out.timeline = make_timeline(*node, req);
  out.wall_seconds = std::chrono::duration<double>(t1 - t0).count();
  out.fabric_transactions = node->fabric_transactions();
  out.fabric_packets = node->scoreboard().totals().data_packets + node->row_transfers().packets_delivered();
  for (int g = 0; g < node->num_gpus(); ++g) {
    for (int p = 0; p < node->planes(); ++p) out.fabric_all_packets += node->uplink(g, p).packets();
  }
  // differs from run to run: kept apart, in one object that comparisons drop
  out.results["host"] = {{"peak_rss_bytes", peak_rss_bytes()}, {"wall_seconds", out.wall_seconds}};
  return out;
}

}  // namespace moehub
