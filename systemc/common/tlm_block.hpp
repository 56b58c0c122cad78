// Base of the platform's TLM-2.0 blocks. Every block here is loosely timed: it
// implements b_transport with an annotated delay, and answers the
// non-blocking and debug interfaces in the one way that fits (a
// non-blocking call is served as a blocking one and completes at once; no
// DMI, no debug access). A block is both target and initiator, so that its
// sockets of either kind can bind to it.
#pragma once

#include <systemc>
#include <tlm>

namespace moehub {

class TlmBlock : public sc_core::sc_module,
                 public tlm::tlm_fw_transport_if<>,
                 public tlm::tlm_bw_transport_if<> {
 public:
  using sc_core::sc_module::sc_module;

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                     sc_core::sc_time& delay) override {
    b_transport(gp, delay);
    return tlm::TLM_COMPLETED;
  }
  bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&,
                                     sc_core::sc_time&) override {
    return tlm::TLM_COMPLETED;
  }
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
};

}  // namespace moehub
