// The Chrome-trace timeline of one run (Perfetto / chrome://tracing): one
// process per GPU with a thread per stream ("X" events for its kernels,
// collectives and waits) and one for its host (synchronisations), and one
// process for the NVLink fabric with a utilisation counter ("C" events) per
// link, sampled at the ports' timeline bins. Times in microseconds, written
// with fixed precision so that equal runs give byte-identical files.
#pragma once

#include <string>

#include "platform/simulate.hpp"

namespace moehub {

class Node;

/// The Chrome trace JSON of a finished run.
std::string make_timeline(const Node& node, const RunRequest& req);

}  // namespace moehub
