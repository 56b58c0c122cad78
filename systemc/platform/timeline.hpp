// The Chrome-trace timeline of one run (Perfetto / chrome://tracing): one
// process per GPU with a thread per stream ("X" events for its kernels,
// collectives and waits) and one for its host (synchronisations), and one
// process for the NVLink fabric with a utilisation counter ("C" events) per
// link, sampled at the ports' timeline bins. Times in microseconds, written
// with fixed precision so that equal runs give byte-identical files.
//
// Each GPU also carries its routing-to-GEMM1 window (thread "routing to
// GEMM1": to the first tile and to GEMM1's end, results.hpp) and, in the
// MoE-Hub schedules, the releases of its expert GEMM's thread-block groups as
// instant events (thread "group releases": "DAM ready", "AllReady", or the
// polling variants' "flag release") and counter tracks: each row region's
// occupancy, the RAT's hits and misses, its evictions, restores and bank
// conflicts, and the RPM's stores and packets and its packets by payload
// size in flits (cumulative counts; RAT sampled when a row store is
// delivered, RPM when one is acknowledged, at most once per timeline bin,
// plus the final value at the GPU's end; occupancy at most once per bin).
#pragma once

#include <string>

#include "platform/simulate.hpp"

namespace moehub {

class Node;

/// The Chrome trace JSON of a finished run.
std::string make_timeline(const Node& node, const RunRequest& req);

}  // namespace moehub
