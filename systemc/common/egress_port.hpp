// What a sender learns from the transmitter it sends on, apart from the TLM
// socket it hands transactions to: the credits a transaction holds in the far
// buffer, the earliest time one can start, and when credits come back. The
// NVLink port (fabric/nvlink_port.hpp) is one; the hub's egress (gpu/hub.hpp)
// holds its ports through this interface, so that the GPU's blocks and the
// fabric depend on common alone (docs/ARCHITECTURE.md, "Layers").
#pragma once

#include <cstdint>
#include <functional>

#include "common/server.hpp"
#include "common/units.hpp"

namespace moehub {

class EgressPort {
 public:
  virtual ~EgressPort() = default;

  /// Credits a transaction of `flits` holds in the far buffer.
  virtual std::uint32_t credit_flits(std::uint32_t flits) const = 0;
  /// Earliest time a transaction of `flits` flits, ready at `t`, can start,
  /// from bandwidth and the credits known to be back; kTickMax if the credits
  /// it needs are not known to come back yet. Changes nothing.
  virtual Tick earliest_start(Tick t, std::uint32_t flits) const = 0;
  /// Called with the time credits are back, whenever the far end reports a
  /// release (the sender may retry).
  virtual void set_credit_listener(std::function<void(Tick)> f) = 0;
  /// Whether a start is reported upstream as END_REQ (default on).
  virtual void set_release_reports(bool on) = 0;
  /// The transmitter's bandwidth server (its next-free time).
  virtual const BandwidthServer& server() const = 0;

 protected:
  EgressPort() = default;
  EgressPort(const EgressPort&) = default;
  EgressPort& operator=(const EgressPort&) = default;
};

}  // namespace moehub
