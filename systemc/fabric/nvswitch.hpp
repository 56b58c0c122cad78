// One NVSwitch chip: a non-blocking crossbar between its GPU-facing ports.
//
// Function: a packet entering on any input leaves on the output towards its
// destination GPU (MoePacketExt::dst_gpu).
// Timing: a fixed crossing latency; contention is at the output ports, whose
// transmitters are the switch-to-GPU NvlinkPorts bound to `out`. A packet
// stays in its input buffer until its output port starts sending it, which is
// when the input link gets its credits back (virtual output queues: no
// head-of-line blocking between outputs).
#pragma once

#include <systemc>
#include <tlm>

#include "common/config.hpp"
#include "common/tlm_block.hpp"
#include "common/moe_extension.hpp"

namespace moehub {

class NvSwitch : public TlmBlock {
 public:
  sc_core::sc_vector<tlm::tlm_target_socket<>> in;      ///< gpu2sw: one per GPU
  sc_core::sc_vector<tlm::tlm_initiator_socket<>> out;  ///< sw2gpu: one per GPU

  NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg);

  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;

  std::uint64_t packets() const { return packets_; }

 private:
  sc_core::sc_time crossing_;
  std::uint64_t packets_ = 0;
};

}  // namespace moehub
