// The results JSON of one run: the request (system, model, schedule, routing),
// the layer time, every GPU's phases and its phase breakdown, the NVLink ports'
// traffic and utilisation, the fabric totals, the blocks' statistics and the
// self-check outcome. Deterministic: equal runs give byte-identical JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "platform/simulate.hpp"
#include "workload/routing.hpp"

namespace moehub {

class Node;
class NvlinkPort;

/// One NVLink port seen as a link of the fabric: "gpu{g}->sw{p}" or "sw{p}->gpu{g}".
struct LinkView {
  std::string name, from, to;
  const NvlinkPort* port;
};

/// Every GPU's up- and downlink on every plane, GPU by GPU, plane by plane.
std::vector<LinkView> links_of(const Node& node);

/// One GPU's routing-to-GEMM1 window: the start of the routing's top-k kernel
/// (megatron: its first router kernel after the gate GEMM), the first thread
/// block of the first expert GEMM (megatron: expert{e}_fc1) and the end of the
/// last one. `valid` is false where a GPU has no such ops or GEMM1 starts first.
struct RoutingWindow {
  bool valid = false;
  Tick routed = 0, first_tile = 0, gemm1_end = 0;
};
std::vector<RoutingWindow> routing_windows(const Node& node);

/// Reports the blocks' counters of a finished run into node.stats(): per NVLink
/// port (block "gpu{g}_to_sw{p}" / "sw{p}_to_gpu{g}") its transactions, packets,
/// flits, payload, busy and credit-stall time and a histogram of its timeline
/// bins' utilisation; per hub ("gpu{g}_hub") the transactions, data packets and
/// responses it sent.
void report_block_stats(Node& node);

/// The results object of a finished run; `errors` are its self-check violations.
nlohmann::ordered_json make_results(const Node& node, const RunRequest& req, const Routing& routing,
                                    const std::vector<std::string>& errors);

}  // namespace moehub
