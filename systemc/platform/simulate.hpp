// One simulation run: routing, schedule, node, SystemC run, self-checks and
// the outputs (results JSON: results.hpp, Chrome-trace timeline: timeline.hpp;
// the summary table of a results object: table.hpp, included here).
//
// SystemC elaborates once per process, so simulate() may be called once per
// process (tests run each case in its own process through CTest).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "platform/table.hpp"
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
  /// The "KEY=VALUE" settings of `options` made on the command line (--set
  /// schedule.KEY=VALUE), in order, for the results.
  std::vector<std::string> schedule_overrides;
  bool timeline = true;  ///< build the Chrome trace
  /// Routing to replay (from a GPU trace) instead of generating one.
  std::optional<Routing> routing;
  std::string routing_source;  ///< where `routing` came from (for the results)
  /// Called during the run with the ops finished and the ops in all GPUs'
  /// lists, at least every `progress_every_us` of simulated time, and once at
  /// the end; unset: the run is not interrupted. The run pauses between time
  /// steps to call it (the event queue is untouched), so results do not depend
  /// on it. Slices that take little wall time grow (up to 64x), so that the
  /// pauses cost nothing noticeable on fast row-granularity runs.
  std::function<void(std::size_t done, std::size_t total)> progress;
  /// Assumption: 10 us of simulated time is a small fraction of a layer (ms)
  /// and well under a second of wall time even at packet granularity.
  double progress_every_us = 10;
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
  std::uint64_t fabric_all_packets = 0;   ///< data packets plus write-response packets
  /// The run passed req.max_sim_time before every GPU finished: nothing else
  /// of this output is set and `time_limit_message` says what happened.
  /// (Reported rather than thrown: no exception may pass through a process
  /// whose SystemC threads stay suspended, see simulate.cpp.)
  bool time_limit_exceeded = false;
  std::string time_limit_message;
  /// The run ended early on a condition of its inputs (a full rowsp region
  /// under hub.region_full: error): nothing else of this output is set and
  /// `fatal_message` names it (moehub-sim exits with status 2).
  bool fatal = false;
  std::string fatal_message;
};

/// The process's peak resident memory so far (getrusage ru_maxrss), in bytes.
std::uint64_t peak_rss_bytes();

/// Runs one simulation. Throws std::invalid_argument on inconsistent inputs;
/// a run that passes req.max_sim_time sets RunOutput::time_limit_exceeded. The
/// results hold a "host" object (peak memory, wall time) that differs from run
/// to run; everything else is deterministic.
RunOutput simulate(const RunRequest& req);

}  // namespace moehub
