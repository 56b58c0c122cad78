// The interface through which kernels put bulk traffic on a GPU's HBM.
//
// A streaming kernel's reads and writes, a GEMM's operand and result traffic
// and a polling loop's flag reads are flows: `bytes` that become ready from
// `start` on at no more than a pacing rate. The HBM serves flows slice by
// slice in time order together with the single requests that arrive from
// the hub (remote writes), so that each sees its share of the bandwidth
// rather than a booking made ahead of it.
#pragma once

#include <functional>

#include "common/units.hpp"

namespace moehub {

class MemoryFlows {
 public:
  virtual ~MemoryFlows() = default;
  /// Starts a flow of `bytes` at `start` (not before the current simulated
  /// time), paced to at most `max_gbps` (<= 0: as fast as HBM serves it).
  /// `done(t)` is called once, at a simulated time no later than `t`, with
  /// the time the flow's last byte has been served (start for an empty flow).
  virtual void start_flow(double bytes, double max_gbps, Tick start, std::function<void(Tick)> done) = 0;
};

}  // namespace moehub
