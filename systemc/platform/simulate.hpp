// One simulation run: routing, schedule, node, SystemC run, self-checks and
// the outputs (results JSON: results.hpp, Chrome-trace timeline: timeline.hpp;
// the summary table of a results object: table.hpp, included here).
//
// SystemC elaborates once per process, so simulate() may be called once per
// process (tests run each case in its own process through CTest).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "platform/table.hpp"
#include "workload/routing.hpp"
#include "workload/schedule.hpp"

namespace moehub {

struct RunRequest {
  SystemConfig system;
  ModelConfig model;
  WorkloadConfig workload;
  std::string schedule = "megatron";
  ScheduleOptions options;
  bool timeline = true;  ///< build the Chrome trace
  /// Routing to replay (from a GPU trace) instead of generating one.
  std::optional<Routing> routing;
  std::string routing_source;  ///< where `routing` came from (for the results)
};

struct RunOutput {
  nlohmann::ordered_json results;      ///< deterministic for equal requests
  std::string timeline;                ///< Chrome trace JSON (empty unless requested)
  std::vector<std::string> check_errors;  ///< self-check violations (empty = pass)
  double wall_seconds = 0;             ///< host time of the SystemC run
  std::uint64_t fabric_transactions = 0;  ///< TLM transactions through the NVLink fabric
  std::uint64_t fabric_packets = 0;       ///< NVLink data packets they stand for
};

/// Runs one simulation. Throws std::invalid_argument on inconsistent inputs.
RunOutput simulate(const RunRequest& req);

}  // namespace moehub
