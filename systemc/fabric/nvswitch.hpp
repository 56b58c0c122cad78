// One NVSwitch chip: a crossbar between its GPU-facing ports.
//
// Function: a packet entering on any input leaves on the output towards its
// destination GPU (MoePacketExt::dst_gpu).
// Timing: a fixed crossing latency, then the queueing that
// nvswitch.microarchitecture names. Arrivals from all inputs are handled in
// arrival-time order (an ArrivalQueue with the GPU-to-switch link latency as
// lookahead).
//
// "output-queued" (the reference): an ideal crossbar. A packet is handed to
// its output port on arrival, so each output port is booked in the order its
// packets reached the switch; contention is only at the output ports, whose
// transmitters are the switch-to-GPU NvlinkPorts bound to `out`. A packet
// stays in its input buffer until its output port starts sending it (no
// head-of-line blocking between outputs); that start is reported back to the
// input link as the release of its credits.
//
// "input-queued" and "voq": the crossbar is a resource. Each input moves one
// packet at a time through it, at nvswitch.internal_speedup times the link
// rate, and each output takes one packet at a time from it. A packet may
// cross to its output once that output's port can start it no later than
// a full output buffer (nvlink.credits_flits flits of the output link's rate)
// after the crossing ends, with the credits of the GPU's receive buffer known
// to be back: the output buffer is finite and never overflows. Input-queued:
// each input serves its packets strictly in arrival order; a head that its
// output cannot take blocks everything behind it (head-of-line blocking).
// VOQ: per input one queue per output; a blocked output holds only its own
// queue. A packet leaves its input buffer when it crosses (its credits go
// back to the input link then); the input buffer is the input link's
// receive buffer (nvlink.credits_flits), so a full input stops its sender.
// Arbitration runs in time order from one SystemC method, woken at the times
// something can change (an arrival ready, an input or output of the crossbar
// free, an output's credits back); at each wake the free outputs, in turn
// from a rotating start, each grant the first requesting free input after
// the one it granted last (round robin): a maximal matching per wake. Write
// responses on their own channel (nvlink.response_channel "own") take no
// buffer and are handed to their output on arrival as in the reference.
#pragma once

#include <systemc>
#include <tlm>

#include <deque>
#include <memory>
#include <vector>

#include "common/arrival_queue.hpp"
#include "common/config.hpp"
#include "common/tlm_block.hpp"
#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"

namespace moehub {

class NvlinkPort;

class NvSwitch : public TlmBlock {
 public:
  sc_core::sc_vector<tlm::tlm_target_socket<>> in;      ///< gpu2sw: one per GPU
  sc_core::sc_vector<tlm::tlm_initiator_socket<>> out;  ///< sw2gpu: one per GPU

  /// `link_latency` is the GPU-to-switch latency of the input links (the
  /// lookahead of the arrival queue); `quantum` its drain period.
  NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg, Tick link_latency,
           Tick quantum);

  /// The port that `out[g]` is bound to. Needed by "input-queued" and "voq"
  /// (they ask the port when it can take a packet, and learn of its credits
  /// coming back); ignored by "output-queued".
  void attach_output(int g, NvlinkPort* port);

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;

  SwitchMicroarchitecture microarchitecture() const { return arch_; }
  std::uint64_t packets() const { return packets_; }
  const ArrivalQueue& arrivals() const { return *queue_; }
  /// Input-queued and voq: total time packets waited in the switch's input
  /// queues from ready (arrival + crossing latency) to crossing.
  Tick queue_wait() const { return queue_wait_; }
  /// Packets still waiting in the input queues (0 at the end of a run).
  std::size_t queued() const { return queued_; }
  /// Arbitration wakes (input-queued, voq).
  std::uint64_t arbitrations() const { return arbitrations_; }

 private:
  SC_HAS_PROCESS(NvSwitch);
  struct Waiting {
    tlm::tlm_generic_payload* gp;
    Tick ready;
  };
  bool forward(tlm::tlm_generic_payload& gp, Tick at);
  void end_of_elaboration() override;
  /// The arbitration of one wake (SC_METHOD).
  void arbitrate();
  /// Wakes the arbitration at `t` (now at the earliest).
  void wake(Tick t);
  /// The queue input `i` would send to output `j` next (nullptr if none).
  std::deque<Waiting>* candidate(std::size_t i, std::size_t j);
  /// Ticks a packet of `flits` occupies the crossbar's input and output.
  Tick crossing_ticks(std::uint32_t flits) const;
  /// Earliest time >= t at which output j can take `w`, from its port alone
  /// (kTickMax: its credits are not known to come back yet).
  Tick output_takes(std::size_t j, const Waiting& w, Tick t) const;
  void cross(std::size_t i, std::size_t j, std::deque<Waiting>& q, Tick t);

  SwitchMicroarchitecture arch_;
  double speedup_;
  std::size_t n_;
  Tick crossing_;
  std::unique_ptr<ArrivalQueue> queue_;
  std::uint64_t packets_ = 0;
  // input-queued and voq
  std::vector<NvlinkPort*> ports_;
  std::vector<std::deque<Waiting>> queues_;  ///< per input (input-queued) or per input and output (voq: i * n + j)
  std::vector<Tick> in_free_;                ///< when input i's crossbar port is free
  std::vector<Tick> out_free_;               ///< when output j's crossbar port is free
  std::vector<std::size_t> grant_next_;      ///< per output: the input its round robin looks at first
  std::size_t first_output_ = 0;             ///< the output that grants first at the next wake
  Tick out_buffer_ticks_ = 0;                ///< a full output buffer at the output link's rate
  sc_core::sc_event arb_ev_;
  Tick wake_at_ = kTickMax;
  Tick queue_wait_ = 0;
  std::size_t queued_ = 0;
  std::uint64_t arbitrations_ = 0;
};

}  // namespace moehub
