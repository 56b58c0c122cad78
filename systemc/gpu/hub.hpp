// The GPU hub: the unit between the on-chip crossbar and the NVLink ports.
//
// This is the conventional, address-centric remote-store path:
// - egress: remote stores issued by the SMs (StoreStreams) and write
//   responses owed to peers leave through one NVLink port per NVSwitch plane.
//   A response leaves on the plane of the write it answers; each data packet
//   takes the port that can start it first (ties rotate over the planes), so
//   the planes share the load. On each port a waiting response goes before
//   new data. A packet goes out when its port has bandwidth and credits.
// - ingress: a write from a peer is forwarded through the crossbar into
//   local memory and answered with a write response; a response completes
//   one of our own stores.
// The MoE-Hub units (AAU, RPM, DAM) plug in here later as functions of the
// golden model behind the same sockets.
//
// The egress runs as one SystemC thread using temporal decoupling: it sends
// every packet whose start time lies within `sync_quantum_ns` of the current
// time without yielding, and waits otherwise.
#pragma once

#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <vector>

#include "common/config.hpp"
#include "common/tlm_block.hpp"
#include "common/moe_extension.hpp"
#include "gpu/store_stream.hpp"

namespace moehub {

class NvlinkPort;

/// Receives the end points of every transfer (implemented by the platform's
/// collective bookkeeping).
class TrafficSink {
 public:
  virtual ~TrafficSink() = default;
  /// A write reached the consumer's memory side at `t`.
  virtual void on_delivered(const MoePacketExt& write, Tick t) = 0;
  /// A write response reached the producer at `t` (ext.dst_gpu is the producer).
  virtual void on_acknowledged(const MoePacketExt& response, Tick t) = 0;
};

class Hub : public TlmBlock {
 public:
  sc_core::sc_vector<tlm::tlm_initiator_socket<>> hub2nvl;  ///< egress, one per plane
  sc_core::sc_vector<tlm::tlm_target_socket<>> nvl2hub;     ///< ingress, one per plane
  tlm::tlm_initiator_socket<> hub2xbar;                     ///< writes into local memory

  SC_HAS_PROCESS(Hub);
  Hub(const sc_core::sc_module_name& name, int gpu, const SystemConfig& sys, TrafficSink* sink);

  /// The transmitters behind hub2nvl, for flow-control state (credits).
  void set_egress_ports(std::vector<NvlinkPort*> ports) { ports_ = std::move(ports); }

  /// Starts sending the stores of a kernel; the stream must outlive the transfer.
  void start_stream(int phase, StoreStream* stream);
  /// Peer `dst` joined collective `phase` at `t`: its rows may flow.
  void enable_peer(int phase, std::int32_t dst, Tick t);

  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;

  int planes() const { return planes_; }
  std::uint64_t data_packets_sent() const { return data_packets_; }
  std::uint64_t responses_sent() const { return responses_; }
  std::uint64_t transactions_sent() const { return transactions_; }

 private:
  struct Response {
    Tick ready;
    std::int32_t producer;
    std::int32_t plane;
    std::int32_t phase;
    std::int64_t row_id;
    std::uint32_t packets;
  };
  struct Candidate {
    bool valid = false;
    bool response = false;
    std::size_t stream = 0;
    std::int32_t plane = 0;
    Tick ready = 0;
    Tick start = 0;
  };
  struct ActiveStream {
    int phase;
    StoreStream* stream;
  };

  void egress_thread();
  Candidate pick();
  void transmit(const Candidate& c);
  void wake(Tick t);

  int gpu_;
  int planes_;
  Tick sm_to_hub_;   ///< crossbar + hub latency of a store on its way out
  Tick hub_latency_;
  Tick quantum_;
  std::uint32_t ack_flits_;
  TrafficSink* sink_;
  std::vector<NvlinkPort*> ports_;
  std::vector<ActiveStream> streams_;
  // Write responses owed, one FIFO per plane in the order the writes came in
  // (their ready times are in arrival order up to the temporal-decoupling
  // quantum).
  std::vector<std::deque<Response>> responses_q_;  ///< per plane
  std::uint64_t data_seq_ = 0;
  sc_core::sc_event work_ev_;
  Tick wake_at_ = 0;  ///< when the egress thread will look again (kTickMax: waiting for work)
  tlm::tlm_generic_payload gp_;
  MoePacketExt* ext_;  ///< owned by gp_ (freed with it)
  std::uint64_t data_packets_ = 0;
  std::uint64_t responses_ = 0;
  std::uint64_t transactions_ = 0;
};

}  // namespace moehub
