// Routing taken from a GPU trace (trace format v1, written by moehub-gpu):
// the simulator can replay the exact token-to-expert routing a real run saw.
#pragma once

#include <string>

#include "common/config.hpp"
#include "workload/routing.hpp"

namespace moehub {

/// Reads the per-rank routing of the trace in `dir` (one rank per simulated
/// GPU). The trace must have `num_gpus` ranks and the model's expert count and
/// top-k. Throws trace::TraceError for a malformed trace and ConfigError (file
/// = the manifest, key = the mismatching field) when it does not fit the run.
Routing routing_from_trace(const std::string& dir, const ModelConfig& model, int num_gpus);

}  // namespace moehub
