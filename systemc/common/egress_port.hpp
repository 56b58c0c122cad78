// What a sender learns from the transmitter it sends on, apart from the TLM
// socket it hands transactions to: the credits a transaction holds in the far
// buffer, the earliest time one can start, and when credits come back. The
// state the usual answer needs (bandwidth server, credits known to be back,
// the last answer for a short transaction) lives here, so that the egress's
// question is an inline call; the transmitter keeps the rest. The
// NVLink port (fabric/nvlink_port.hpp) is one; the hub's egress (gpu/hub.hpp)
// holds its ports through this interface, so that the GPU's blocks and the
// fabric depend on common alone (docs/ARCHITECTURE.md, "Layers").
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "common/server.hpp"
#include "common/units.hpp"

namespace moehub {

class EgressPort {
 public:
  virtual ~EgressPort() = default;

  /// Credits a transaction of `flits` holds in the far buffer: a whole packet,
  /// or, for a row-granularity transaction, one maximal packet (its packets
  /// stream through the buffer one behind the other).
  std::uint32_t credit_flits(std::uint32_t flits) const { return std::min(flits, max_packet_flits_); }
  /// Earliest time a transaction of `flits` flits, ready at `t`, can start,
  /// from bandwidth and the credits known to be back; kTickMax if the credits
  /// it needs are not known to come back yet. Changes nothing. (Not virtual:
  /// the egress asks every port for every packet, and the usual answer needs
  /// only the state below; the transmitter answers the rest.)
  Tick earliest_start(Tick t, std::uint32_t flits) const {
    flits = credit_flits(flits);
    const Tick start = server_.earliest_start(t);
    if (credits_available_ >= flits) return start;  // the usual case: credits never ran short
    // the time the credits are back, already known since the last change:
    // start lies past every release the short path would make first
    if (memo_valid_ && memo_flits_ == flits) return std::max(start, memo_time_);
    return earliest_start_short(start, flits);
  }
  /// Called with the time credits are back, whenever the far end reports a
  /// release (the sender may retry).
  virtual void set_credit_listener(std::function<void(Tick)> f) = 0;
  /// Whether a start is reported upstream as END_REQ (default on).
  virtual void set_release_reports(bool on) = 0;
  /// The transmitter's bandwidth server (its next-free time).
  const BandwidthServer& server() const { return server_; }

 protected:
  /// A transmitter named `name` of `bw_gbps` and `latency`, whose far buffer
  /// holds `credits` flits and whose largest packet is `max_packet_flits`.
  EgressPort(const std::string& name, double bw_gbps, Tick latency, std::uint32_t max_packet_flits,
             std::uint32_t credits)
      : max_packet_flits_(max_packet_flits), server_(name, bw_gbps, latency), credits_available_(credits) {}
  EgressPort(const EgressPort&) = default;
  EgressPort& operator=(const EgressPort&) = default;

  /// earliest_start when the available credits do not cover the transaction
  /// and no earlier answer holds: `start` is the bandwidth's answer.
  virtual Tick earliest_start_short(Tick start, std::uint32_t flits) const = 0;

  std::uint32_t max_packet_flits_;
  BandwidthServer server_;
  /// Credits known to be back at the transmitter (flits).
  mutable std::uint32_t credits_available_;
  /// The transmitter's last answer for a short transaction (valid until
  /// credits are taken or reported).
  mutable bool memo_valid_ = false;
  mutable std::uint32_t memo_flits_ = 0;
  mutable Tick memo_time_ = 0;
};

}  // namespace moehub
