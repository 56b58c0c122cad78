// One direction of an NVLink connection between a GPU and an NVSwitch chip
// (all of the GPU's links to that chip bundled into one port).
//
// Function: forwards each packet unchanged to the far end.
// Timing: the transmitter is a bandwidth server over flits (16-byte flits,
// header flits included); a packet may start only when the receiver has
// credits for all of its flits; credits come back when the packet leaves the
// receiver's input buffer, one link latency later, in sending order. Arrival at the far end is
// start + serialisation + link latency (store and forward).
#pragma once

#include <systemc>
#include <tlm>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/tlm_block.hpp"
#include "common/moe_extension.hpp"
#include "common/server.hpp"

namespace moehub {

class NvlinkPort : public TlmBlock {
 public:
  tlm::tlm_target_socket<> in;      ///< from the transmitting side
  tlm::tlm_initiator_socket<> out;  ///< to the receiving side

  NvlinkPort(const sc_core::sc_module_name& name, const NvlinkConfig& cfg, double bw_gbps);

  /// Credits a transaction of `flits` holds in the far buffer: a whole packet,
  /// or, for a row-granularity transaction, one maximal packet (its packets
  /// stream through the buffer one behind the other).
  std::uint32_t credit_flits(std::uint32_t flits) const { return std::min(flits, max_packet_flits_); }

  /// Earliest time a transaction of `flits` flits, ready at `t`, can start on
  /// this port (bandwidth and credits). Changes nothing.
  Tick earliest_start(Tick t, std::uint32_t flits) const;

  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;

  const BandwidthServer& server() const { return server_; }
  BandwidthServer& server() { return server_; }
  std::uint64_t transactions() const { return transactions_; }
  /// NVLink packets (a row-granularity transaction counts all of its packets).
  std::uint64_t packets() const { return packets_; }
  std::uint64_t flits_sent() const { return flits_; }
  double payload_bytes() const { return payload_bytes_; }
  std::uint64_t write_packets() const { return write_packets_; }
  std::uint64_t response_packets() const { return response_packets_; }
  Tick credit_stall() const { return credit_stall_; }

 private:
  using Release = std::pair<Tick, std::uint32_t>;  // (time credits are back, flits)
  void release_until(Tick t);

  NvlinkConfig cfg_;
  std::uint32_t max_packet_flits_;
  Tick latency_;
  BandwidthServer server_;
  std::uint32_t credits_available_;
  // Credits come back in the order the packets were sent (a FIFO, as a
  // credit counter sees them); a packet that leaves the far buffer early
  // returns its credits no earlier than those sent before it.
  std::deque<Release> pending_;
  std::uint64_t transactions_ = 0;
  std::uint64_t packets_ = 0;
  std::uint64_t flits_ = 0;
  std::uint64_t write_packets_ = 0;
  std::uint64_t response_packets_ = 0;
  double payload_bytes_ = 0;
  Tick credit_stall_ = 0;
};

}  // namespace moehub
