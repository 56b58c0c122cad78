// One simulation run: routing, schedule, node, SystemC run, self-checks and
// the outputs (results JSON, Chrome-trace timeline, summary table).
//
// SystemC elaborates once per process, so simulate() may be called once per
// process (tests run each case in its own process through CTest).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/units.hpp"
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
  /// Simulated-time limit: a run that has not finished by then stops, see
  /// RunOutput::time_limit_exceeded. At most kMaxSimTimeLimit.
  Tick max_sim_time = kDefaultMaxSimTime;
  static constexpr Tick kDefaultMaxSimTime = kPsPerS;  ///< 1 s of simulated time
  static constexpr Tick kMaxSimTimeLimit = kTickConversionLimit / 2;  ///< see units.hpp
};

struct RunOutput {
  nlohmann::ordered_json results;      ///< deterministic for equal requests
  std::string timeline;                ///< Chrome trace JSON (empty unless requested)
  std::vector<std::string> check_errors;  ///< self-check violations (empty = pass)
  double wall_seconds = 0;             ///< host time of the SystemC run
  std::uint64_t fabric_transactions = 0;  ///< TLM transactions through the NVLink fabric
  std::uint64_t fabric_packets = 0;       ///< NVLink data packets they stand for
  /// The run passed req.max_sim_time before every GPU finished: nothing else
  /// of this output is set and `time_limit_message` says what happened.
  /// (Reported rather than thrown: no exception may pass through a process
  /// whose SystemC threads stay suspended, see simulate.cpp.)
  bool time_limit_exceeded = false;
  std::string time_limit_message;
};

/// The process's peak resident memory so far (getrusage ru_maxrss), in bytes.
std::uint64_t peak_rss_bytes();

/// Runs one simulation. Throws std::invalid_argument on inconsistent inputs;
/// a run that passes req.max_sim_time sets RunOutput::time_limit_exceeded. The
/// results hold a "host" object (peak memory, wall time) that differs from run
/// to run; everything else is deterministic.
RunOutput simulate(const RunRequest& req);

/// Human-readable summary of a results object.
std::string format_table(const nlohmann::ordered_json& results);

}  // namespace moehub
