// The GPU hub: the unit between the on-chip crossbar and the NVLink ports.
//
// What the hub computes is delegated to its functions (systemc/golden/, one
// implementation chosen by hub.implementation): address translation on
// ingress, the write buffer and the choice of the next packet on egress, and
// what a completed write signals. This module adds the transport and timing
// around them:
// - egress: kernels' stores (StoreSources, the SM-to-hub interface) enter
//   the egress function's write buffer when they reach the hub and there is
//   room (otherwise the kernel stalls); the function picks the next packet
//   (EgressFunction::pick_cycles() before a port can start one, as a
//   pipelined picker would, and no sooner than the previous pick is done;
//   a pick in hub cycle c sees the stores that reached the hub by the end of
//   cycle c); the packet leaves the buffer into a staged-packet register
//   and, at its start, takes the NVLink port (one per NVSwitch plane) that
//   can start it first (ties rotate over the planes). Write responses owed
//   to peers leave on the plane of the write they answer; on each port a
//   response ready by the time the staged packet could start there goes
//   first. With `sim.response_window_ns` > 0 the responses
//   owed to one producer for one transfer on one plane that complete within
//   that window of the first travel as one transaction (all their flits),
//   which leaves at the window's end. A packet starts when its port has
//   bandwidth and credits. The egress is one SystemC method using temporal
//   decoupling: it takes stores and handles actions (picks at their decision,
//   sends and responses at their start) in time order while they lie within
//   `sim.sync_quantum_ns` of the current time and sleeps until the next one
//   otherwise.
// - ingress: arrivals from all planes are handled in arrival-time order (an
//   ArrivalQueue with the switch-to-GPU link latency as lookahead). A write
//   goes through the ingress function (its address), leaves the input buffer
//   after hub.latency (which returns the link's credits; a function that
//   stalls keeps them, so back-pressure reaches the link and the sender),
//   crosses the crossbar into HBM, and is answered with a write response
//   once HBM has completed it; the completion function sees it then (the
//   MoE-Hub DAM: its Ready signals go to the ready listener). A response
//   completes one of our own stores. The ingress function's metadata traffic
//   (RAT spills and restores) is booked on HBM; its cycles are converted with
//   hub.clock_ghz. Local row stores (local tokens to local experts) enter the
//   same ingress without crossing a link and get no response.
#pragma once

#include <systemc>
#include <tlm>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/arrival_queue.hpp"
#include "common/config.hpp"
#include "common/egress_port.hpp"
#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"
#include "common/ring.hpp"
#include "common/tlm_block.hpp"
#include "golden/hub_clock.hpp"
#include "golden/hub_functions.hpp"
#include "gpu/memory_flows.hpp"
#include "gpu/store_stream.hpp"

namespace moehub {

/// The parameters of the hub functions from the system config (hub section).
golden::HubParams hub_params_from(const SystemConfig& sys, int gpu);

/// Receives the end points of every transfer (implemented by the platform's
/// scoreboard).
class TrafficSink {
 public:
  virtual ~TrafficSink() = default;
  /// A write is in the consumer's memory at `t`.
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
  /// `functions` overrides the implementation named in sys.hub (tests).
  Hub(const sc_core::sc_module_name& name, int gpu, const SystemConfig& sys, TrafficSink* sink,
      golden::HubFunctions functions = {});

  /// The transmitters behind hub2nvl, for flow-control state (credits).
  void set_egress_ports(std::vector<EgressPort*> ports);
  /// Where the functions' own memory traffic (metadata spills) goes.
  void set_memory(MemoryFlows* m) { memory_ = m; }
  /// Called for every thread-block group a completed write makes ready.
  void set_ready_listener(std::function<void(const golden::ReadySignal&, Tick)> f) { ready_ = std::move(f); }

  /// A kernel's stores (the source must outlive its transfer).
  void add_source(StoreSource* source);
  /// A row store of this GPU's own kernel to a local region (st.rowsp of a
  /// local token to a local expert): it enters the ingress at `arrival`
  /// (moved to the queue's lookahead if earlier), is translated by the AAU's
  /// on_local_store, written to memory and completed like a remote write,
  /// without a response. `st.tag` is the transfer it belongs to.
  void local_store(const golden::StoreRequest& st, Tick arrival);
  /// The hub's functions (the platform reaches unit-specific calls by dynamic_cast).
  golden::IngressFunction& ingress_function() { return *fn_.ingress; }
  golden::EgressFunction& egress_function() { return *fn_.egress; }
  golden::CompletionFunction& completion_function() { return *fn_.completion; }
  const golden::IngressFunction& ingress_function() const { return *fn_.ingress; }
  const golden::EgressFunction& egress_function() const { return *fn_.egress; }
  const golden::CompletionFunction& completion_function() const { return *fn_.completion; }
  /// A condition that ended the run (a full region under region_full: error); empty if none.
  const std::string& fatal_error() const { return fatal_; }
  /// Local row stores, and those that entered later than issued (the queue's lookahead).
  std::uint64_t local_stores() const { return local_stores_; }
  std::uint64_t local_store_delays() const { return local_store_delays_; }
  /// Times a peer became congested (packets in flight to it past the limit).
  std::uint64_t congestion_events() const { return congestion_events_; }
  /// Something a source or port waits for may be possible from `t` on.
  void wake(Tick t);

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;

  int planes() const { return planes_; }
  std::uint64_t data_packets_sent() const { return data_packets_; }
  /// Response transactions sent (each answers one write, or several under sim.response_window_ns).
  std::uint64_t responses_sent() const { return responses_; }
  /// Writes whose response travelled in another's transaction (sim.response_window_ns).
  std::uint64_t responses_joined() const { return responses_joined_; }
  std::uint64_t transactions_sent() const { return transactions_; }
  const ArrivalQueue& arrivals() const { return *ingress_q_; }
  /// Writes handed to the ingress function, and how often it stalled.
  std::uint64_t writes_received() const { return writes_in_; }
  std::uint64_t ingress_stalls() const { return ingress_stalls_; }
  /// Stores that found the write buffer full, and the time they waited.
  std::uint64_t buffer_full_events() const { return buffer_full_; }
  Tick buffer_full_wait() const { return buffer_full_wait_; }
  /// Responses that left before the write they answer was in memory (must stay 0).
  std::uint64_t early_responses() const { return early_responses_; }
  std::uint64_t egress_wakes() const { return egress_wakes_; }
  const PayloadPool& pool() const { return pool_; }

 private:
  struct Response {
    Tick ready;                      ///< may leave: the write it answers is in memory (its window's end)
    std::uint32_t flits;             ///< on the wire (kept here: the payload itself is cold)
    tlm::tlm_generic_payload* gp;    ///< the response, from our pool
  };
  /// What the egress does next. A pick decides the next packet (the egress
  /// function chooses it; it is ready pick_lead_ later and waits in the
  /// staged-packet register); a send puts the staged packet on the port that
  /// can start it first; a response leaves on its plane.
  enum class Step : std::uint8_t { kNone, kPick, kSend, kResponse };
  struct Action {
    Step step = Step::kNone;
    std::int32_t plane = 0;  ///< send and response: the port
    Tick start = kTickMax;   ///< send and response: when the port starts it
    Tick decide = kTickMax;  ///< when it happens: a pick, pick_lead_ before a port can start a packet; else its start
    Tick first_response = kTickMax;  ///< the earliest start of a queued response, on any plane
    bool valid() const { return step != Step::kNone; }
  };
  /// The packet picked and not yet on a port.
  struct Staged {
    bool valid = false;
    golden::StoreRequest store;
    std::uint32_t packets = 0;
    std::uint32_t flits = 0;
    Tick ready = 0;  ///< the pick is done
    /// When it could have started had the ports' credits not held its pick
    /// back (the ports' credit-stall statistic); ready if they did not.
    Tick credit_ready = 0;
    /// The port its pick found (plane, start from ready) and whether that
    /// answer stands: no port changed since (a send on that plane, or a new
    /// call of egress()).
    std::int32_t plane = 0;
    Tick start = kTickMax;
    bool port_known = false;
  };

  void egress();
  /// The source whose next store reaches the hub first (it enters no earlier
  /// than room_at_), and when; nullptr if none.
  StoreSource* next_store(Tick& at);
  /// Takes the stores that reach the hub by `until`, in time order, while
  /// there is room (at most one if `one`), and moves `clock` to the start of
  /// the hub cycle of the last one's arrival; whether it took any.
  bool fill(Tick until, bool one, Tick& clock);
  /// The action decided first (ties: a response, then a send, then a pick).
  /// No pick is decided before `clock` or the end of the previous one
  /// (egress_free_). A pick in hub cycle c sees the stores that reach the
  /// hub in cycle c or before (as the packet manager's RTL does).
  Action next_action(Tick now, Tick clock, bool data_held);
  /// The port the staged packet's pick found still stands for it: no port
  /// changed since, the packet is ready at that start, and it holds a
  /// maximal packet's credits (a port's answer depends on the flits only
  /// through the credits they hold).
  bool staged_port_stands() const {
    return staged_.port_known && staged_.ready == staged_.start && staged_.flits >= max_packet_flits_ &&
           ports_hold_max_packet_;
  }
  /// The start of a packet of `flits` ready at `from` on each port (cached
  /// in data_start_ until a port changes); the plane that can start it
  /// first, ties to the first in rotation order.
  std::size_t earliest_port(Tick from, std::uint32_t flits, Tick& start);
  /// A packet left on `plane`: its port's answers are no longer known.
  void forget_plane(std::size_t plane) {
    if (static_cast<std::size_t>(staged_.plane) == plane) staged_.port_known = false;
    data_known_ &= ~(std::uint64_t{1} << plane);
    response_known_ &= ~(std::uint64_t{1} << plane);
  }
  /// `start`: when its port starts it (as next_action found).
  void send_response(std::int32_t plane, Tick start, Tick now);
  /// Picks at a.decide into the staged register; false if the egress
  /// function holds its data back.
  bool pick(const Action& a);
  void send_staged(Tick now, const Action& a);
  bool on_arrival(tlm::tlm_generic_payload& gp, Tick at, Tick& retry);
  /// Adds the response `w` (its write complete at `done`) to a queued response
  /// of `q` for the same producer and transfer whose window is still open;
  /// whether there was one.
  bool join_open_response(Ring<Response>& q, const MoePacketExt& w, Tick done);
  Tick cycles(std::uint32_t n) const;
  golden::IngressResult local_ingress(const golden::StoreRequest& st, Tick t);

  int gpu_;
  int planes_;
  Tick sm_to_hub_;   ///< crossbar + hub latency of a store on its way out
  Tick hub_latency_;
  Tick quantum_;
  Tick response_window_;  ///< sim.response_window_ns
  bool responses_own_;    ///< nvlink.response_channel == "own": responses take no credits
  Tick pick_lead_ = 0;    ///< the egress function's pick_cycles(), in ticks
  double hub_clock_ghz_;
  golden::HubClock hub_clock_;
  std::uint32_t ack_flits_;
  std::uint32_t max_packet_flits_;
  PacketFormat fmt_;
  /// Packets and flits of a transaction of shape_bytes_ payload bytes (the
  /// last size sent: three divisions by the packet format otherwise).
  std::uint32_t shape_bytes_ = 0;
  std::uint32_t shape_packets_ = 0;
  std::uint32_t shape_flits_ = 0;
  TrafficSink* sink_;
  golden::HubFunctions fn_;
  MemoryFlows* memory_ = nullptr;
  std::function<void(const golden::ReadySignal&, Tick)> ready_;
  std::vector<golden::ReadySignal> ready_buf_;
  std::vector<EgressPort*> ports_;
  bool ports_hold_max_packet_ = false;  ///< every port's credit_flits caps at our max_packet_flits_
  std::vector<StoreSource*> sources_;
  std::vector<std::uint8_t> congested_;  ///< per peer: packets in flight past congestion_packets_
  std::vector<std::uint64_t> inflight_;   ///< per peer: data packets sent and not yet answered
  std::uint64_t congestion_packets_;
  std::uint64_t congestion_events_ = 0;
  std::uint64_t local_stores_ = 0;
  std::uint64_t local_store_delays_ = 0;
  std::string fatal_;
  std::vector<Ring<Response>> responses_q_;  ///< per plane, in completion order
  std::unique_ptr<ArrivalQueue> ingress_q_;
  PayloadPool pool_;
  Tick ingress_free_ = 0;  ///< when the ingress function can take the next write
  Tick egress_free_ = 0;   ///< when the egress function can make the next decision
  Staged staged_;
  /// The earliest start a port's bandwidth allowed the next pick's packet
  /// while credits held the pick back (kTickMax: they did not).
  Tick credit_wait_from_ = kTickMax;
  // next_store's answer, until a store is taken, room_at_ moves or a call of
  // egress() begins (sources come and go between calls)
  StoreSource* next_src_ = nullptr;
  Tick next_src_at_ = kTickMax;
  bool next_src_known_ = false;
  Tick room_at_ = 0;       ///< a store that found the buffer full enters no earlier than this
  bool room_blocked_ = false;
  Tick blocked_since_ = 0;
  std::size_t data_rot_ = 0;  ///< the plane data tries first (rotates per packet sent)
  // The ports' answers to next_action within one call of egress(): a port
  // changes then only by what the egress sends on it (credit reports and new
  // responses come from other processes), so an answer stands until a packet
  // leaves on its plane. Bit p of data_known_: data_start_[p] is the start
  // of a packet of data_known_flits_ from data_known_from_; of
  // response_known_: response_start_[p] is the start of plane p's first
  // response.
  std::vector<Tick> data_start_;
  std::vector<Tick> response_start_;
  std::uint64_t data_known_ = 0;
  std::uint64_t response_known_ = 0;
  Tick data_known_from_ = 0;
  std::uint32_t data_known_flits_ = 0;
  sc_core::sc_event work_ev_;
  Tick wake_at_ = kTickMax;
  std::uint64_t data_packets_ = 0;
  std::uint64_t responses_ = 0;
  std::uint64_t responses_joined_ = 0;
  std::uint64_t transactions_ = 0;
  std::uint64_t writes_in_ = 0;
  std::uint64_t ingress_stalls_ = 0;
  std::uint64_t buffer_full_ = 0;
  Tick buffer_full_wait_ = 0;
  std::uint64_t early_responses_ = 0;
  std::uint64_t egress_wakes_ = 0;
};

}  // namespace moehub
