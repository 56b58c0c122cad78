// One NVSwitch chip: a non-blocking crossbar between its GPU-facing ports.
//
// Function: a packet entering on any input leaves on the output towards its
// destination GPU (MoePacketExt::dst_gpu).
// Timing: a fixed crossing latency; contention is at the output ports, whose
// transmitters are the switch-to-GPU NvlinkPorts bound to `out`. Arrivals
// from all inputs are handled in arrival-time order (an ArrivalQueue with the
// GPU-to-switch link latency as lookahead), so each output port is booked in
// the order its packets reached the switch. A packet stays in its input
// buffer until its output port starts sending it (virtual output queues: no
// head-of-line blocking between outputs); that start is reported back to the
// input link as the release of its credits.
#pragma once

#include <systemc>
#include <tlm>

#include <memory>

#include "common/arrival_queue.hpp"
#include "common/config.hpp"
#include "common/tlm_block.hpp"
#include "common/moe_extension.hpp"
#include "common/payload_pool.hpp"

namespace moehub {

class NvSwitch : public TlmBlock {
 public:
  sc_core::sc_vector<tlm::tlm_target_socket<>> in;      ///< gpu2sw: one per GPU
  sc_core::sc_vector<tlm::tlm_initiator_socket<>> out;  ///< sw2gpu: one per GPU

  /// `link_latency` is the GPU-to-switch latency of the input links (the
  /// lookahead of the arrival queue); `quantum` its drain period.
  NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg, Tick link_latency,
           Tick quantum);

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;

  std::uint64_t packets() const { return packets_; }
  const ArrivalQueue& arrivals() const { return *queue_; }

 private:
  bool forward(tlm::tlm_generic_payload& gp, Tick at);

  Tick crossing_;
  std::unique_ptr<ArrivalQueue> queue_;
  std::uint64_t packets_ = 0;
};

}  // namespace moehub
