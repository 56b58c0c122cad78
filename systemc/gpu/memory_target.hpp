// Bandwidth/latency memory-side targets of one GPU: the crossbar port that
// connects the hub to L2/HBM, and HBM itself.
//
// Function: a write or read of `data_length` bytes is accepted (the model
// carries no data values: timing and accounting only).
// Timing: each is a BandwidthServer; the annotated delay on return is the
// time the access completes.
#pragma once

#include <systemc>
#include <tlm>

#include <memory>
#include <string>

#include "common/server.hpp"
#include "common/tlm_block.hpp"

namespace moehub {

/// A TLM target (optionally forwarding to a next stage) with one bandwidth
/// server. Used for the crossbar (forwards to HBM) and HBM (terminal).
class ServerTarget : public TlmBlock {
 public:
  sc_core::sc_vector<tlm::tlm_target_socket<>> in;
  /// The socket to the next stage (only for a forwarding target).
  tlm::tlm_initiator_socket<>& out() { return *out_; }

  ServerTarget(const sc_core::sc_module_name& name, int num_inputs, double bw_gbps,
               double latency_ns, bool forwards);

  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) override;

  const BandwidthServer& server() const { return server_; }
  BandwidthServer& server() { return server_; }
  double bytes_written() const { return bytes_written_; }
  double bytes_read() const { return bytes_read_; }

 private:
  std::unique_ptr<tlm::tlm_initiator_socket<>> out_;
  BandwidthServer server_;
  bool forwards_;
  double bytes_written_ = 0;
  double bytes_read_ = 0;
};

}  // namespace moehub
