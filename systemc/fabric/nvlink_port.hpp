// One direction of an NVLink connection between a GPU and an NVSwitch chip
// (all of the GPU's links to that chip bundled into one port).
//
// Function: forwards each transaction unchanged to the far end.
// Timing: the transmitter is a bandwidth server over flits (16-byte flits,
// header flits included); a transaction may start only when the receiver has
// credits for it; arrival at the far end is start + serialisation + link
// latency (store and forward).
// Flow control: credits come back when the transaction leaves the receiver's
// input buffer, which the receiver reports on the backward path (END_REQ,
// annotated with the time) whenever that happens, possibly long after the
// arrival (a receiver that stalls keeps them). Credits are back at the
// transmitter one link latency after the report's time. A transaction that
// reaches the port while credits are not known to be back waits in the
// port's queue (FIFO) until they are: back-pressure. When the port starts a
// transaction it reports END_REQ upstream (the sender's buffer is free),
// unless the sender has switched the reports off (set_release_reports).
//
// Write responses: with nvlink.response_channel "own" they travel on a
// channel of their own whose receivers always take them (as PCIe endpoints
// advertise infinite completion credits and CHI requesters accept every
// response): a response takes no credits, so nobody reports its release.
// It shares the link's bandwidth, and passes data that waits in the port's
// queue for credits (that data could not start before the response's
// arrival, up to nvswitch.crossing_latency_ns at a switch port: see
// nb_transport_fw). With "shared" (the reference) responses
// take the data's credits and wait in the queue like any transaction
// (counted: responses_parked).
//
// Protocol (both directions): nb_transport_fw(BEGIN_REQ, delay = arrival -
// now) hands a transaction over; nb_transport_bw(END_REQ, delay = release -
// now) reports that the receiver's buffer released it.
#pragma once

#include <systemc>
#include <tlm>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/egress_port.hpp"
#include "common/tlm_block.hpp"
#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"
#include "common/ring.hpp"
#include "common/server.hpp"

namespace moehub {

class NvlinkPort : public TlmBlock, public EgressPort {
 public:
  tlm::tlm_target_socket<> in;      ///< from the transmitting side
  tlm::tlm_initiator_socket<> out;  ///< to the receiving side

  NvlinkPort(const sc_core::sc_module_name& name, const NvlinkConfig& cfg, double bw_gbps);

  /// Whether a transaction of this kind takes credits (every one, unless
  /// responses have a channel of their own).
  bool takes_credits(PacketKind kind) const { return !(responses_own_ && kind == PacketKind::kResponse); }
  bool responses_own_channel() const { return responses_own_; }
  const NvlinkConfig& config() const { return cfg_; }

  /// Called with the time credits are back, whenever the far end reports a
  /// release (the sender behind this port may retry).
  void set_credit_listener(std::function<void(Tick)> f) override { listener_ = std::move(f); }
  /// Whether a start is reported upstream as END_REQ (default on). A sender
  /// that learns the port's state from earliest_start and the credit
  /// listener (a hub's egress) ignores the report and switches it off.
  void set_release_reports(bool on) override { release_reports_ = on; }

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;

  using EgressPort::server;
  BandwidthServer& server() { return server_; }
  std::uint64_t transactions() const { return transactions_; }
  /// NVLink packets (a row-granularity transaction counts all of its packets).
  std::uint64_t packets() const { return packets_; }
  std::uint64_t flits_sent() const { return flits_; }
  double payload_bytes() const { return payload_bytes_; }
  std::uint64_t write_packets() const { return write_packets_; }
  std::uint64_t response_packets() const { return response_packets_; }
  /// Time transactions waited for credits beyond what bandwidth alone imposed.
  Tick credit_stall() const { return credit_stall_; }
  /// Transactions that had to wait in the port's queue for credits.
  std::uint64_t parked() const { return parked_total_; }
  /// Of those, write responses (0 when they have a channel of their own).
  std::uint64_t responses_parked() const { return responses_parked_; }
  /// Credits (flits) currently held by the far end.
  std::uint32_t credits_outstanding() const;

 private:
  struct Waiting {
    tlm::tlm_generic_payload* gp;
    Tick arrival;
  };
  bool try_send(tlm::tlm_generic_payload& gp, Tick arrival);
  Tick earliest_start_short(Tick start, std::uint32_t flits) const override;
  /// When `flits` credits are known to be back (kTickMax: not known yet).
  Tick credits_back(std::uint32_t flits) const;
  /// Moves the returns due by `t` into credits_available_.
  void release_until(Tick t) const;

  NvlinkConfig cfg_;
  Tick latency_;
  /// Credits on their way back. Reports come out of time order (a switch
  /// input's packets leave by several outputs) but in time order per
  /// destination GPU (one output port starts its packets in order), so the
  /// returns are kept in one time-ordered lane per destination (a late
  /// report is inserted from the back of its lane). Released lazily: a
  /// return whose time has passed moves into credits_available_ only when
  /// the available credits do not cover a transaction (earliest_start_short,
  /// try_send); earliest_start answers the same as with returns released at
  /// every start.
  struct Return {
    Tick t;
    std::uint32_t flits;
  };
  static constexpr std::size_t kLanes = 64;
  mutable std::vector<Ring<Return>> lanes_;
  /// The rare paths of nb_transport_bw, out of line so that a report costs
  /// few saved registers: a return earlier than its lane's last, and the
  /// parked transactions it may let go.
  [[gnu::noinline]] static void insert_late(Ring<Return>& lane, const Return& r);
  [[gnu::noinline]] void send_waiting();
  mutable std::uint64_t nonempty_ = 0;      ///< bit i: lane i holds returns
  mutable Tick earliest_return_ = kTickMax;  ///< the earliest time among the returns
  std::uint32_t credits_total_;
  mutable std::uint32_t returning_flits_ = 0;
  /// Returns due by this time may be released: the start of the last
  /// transaction (every later start is no earlier).
  Tick released_to_ = 0;
  std::deque<Waiting> waiting_;
  std::function<void(Tick)> listener_;
  bool release_reports_ = true;
  bool responses_own_ = false;  ///< nvlink.response_channel == "own"
  std::uint64_t transactions_ = 0;
  std::uint64_t packets_ = 0;
  std::uint64_t flits_ = 0;
  std::uint64_t write_packets_ = 0;
  std::uint64_t response_packets_ = 0;
  std::uint64_t parked_total_ = 0;
  std::uint64_t responses_parked_ = 0;
  double payload_bytes_ = 0;
  Tick credit_stall_ = 0;
};

}  // namespace moehub
