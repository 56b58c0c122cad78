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
#include "common/moe_extension.hpp"

namespace moehub {

class NvSwitch : public sc_core::sc_module,
                 public tlm::tlm_fw_transport_if<>,
                 public tlm::tlm_bw_transport_if<> {
 public:
  sc_core::sc_vector<tlm::tlm_target_socket<>> in;      ///< gpu2sw: one per GPU
  sc_core::sc_vector<tlm::tlm_initiator_socket<>> out;  ///< sw2gpu: one per GPU

  NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg);

  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload&, tlm::tlm_phase&,
                                     sc_core::sc_time&) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&,
                                     sc_core::sc_time&) override;
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}

  std::uint64_t packets() const { return packets_; }

 private:
  sc_core::sc_time crossing_;
  std::uint64_t packets_ = 0;
};

}  // namespace moehub
