// The crossbar port between the hub and the L2/HBM side of one GPU.
//
// Function: forwards a write from the hub to HBM and HBM's completion back.
// Timing: a bandwidth server (xbar_bw_gbps) plus latency (xbar_latency_ns);
// the hub is its only user and hands it writes in arrival order, so it is
// booked in time order.
#pragma once

#include <systemc>
#include <tlm>

#include "common/server.hpp"
#include "common/tlm_block.hpp"

namespace moehub {

class Crossbar : public TlmBlock {
 public:
  tlm::tlm_target_socket<> in{"in"};     ///< hub2xbar
  tlm::tlm_initiator_socket<> out{"out"};  ///< xbar2hbm

  Crossbar(const sc_core::sc_module_name& name, double bw_gbps, double latency_ns);

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;

  const BandwidthServer& server() const { return server_; }

 private:
  BandwidthServer server_;
};

}  // namespace moehub
