// The HBM of one GPU, shared in time order by remote writes and kernels.
//
// Function: accepts reads and writes (the model carries no data values).
// Timing: one bandwidth server (hbm_bw_gbps x memory_kernel_efficiency) plus
// an access latency (hbm_latency_ns). Two kinds of requests reach it:
// - single accesses from the hub's crossbar port (remote writes): TLM
//   nb_transport_fw(BEGIN_REQ) with the arrival annotated; the completion
//   goes back as BEGIN_RESP on the backward path, annotated with the time the
//   write is complete (service end + latency);
// - flows (MemoryFlows): a kernel's bulk traffic, `bytes` from a start time
//   at up to a pacing rate. A flow is served in slices of sim.hbm_slice_bytes;
//   its next slice becomes ready when the previous one is served (and not
//   before the pacing allows), so single accesses that arrive meanwhile are
//   served between its slices: a remote write waits for at most one slice,
//   and several flows share the bandwidth slice by slice.
// All requests are served in order of their ready time (ties: in order of
// submission; single accesses, which come in time order, wait in a FIFO,
// flow slices and any late single access in a heap), from one SystemC method that wakes at most once per drain
// period. The period is bounded by the access latency, so every completion is
// known before its time comes.
#pragma once

#include <systemc>
#include <tlm>

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "common/ring.hpp"
#include "common/server.hpp"
#include "common/tlm_block.hpp"
#include "gpu/memory_flows.hpp"

namespace moehub {

class Hbm : public TlmBlock, public MemoryFlows {
 public:
  tlm::tlm_target_socket<> in{"in"};  ///< xbar2hbm (non-blocking)

  SC_HAS_PROCESS(Hbm);
  Hbm(const sc_core::sc_module_name& name, double bw_gbps, double latency_ns, std::uint32_t slice_bytes,
      Tick quantum);

  void start_flow(double bytes, double max_gbps, Tick start, std::function<void(Tick)> done) override;

  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override;

  const BandwidthServer& server() const { return server_; }
  BandwidthServer& server() { return server_; }
  double bytes_written() const { return bytes_written_; }
  double bytes_read() const { return bytes_read_; }
  /// Bytes of kernel flows (reads and writes together).
  double flow_bytes() const { return flow_bytes_; }
  std::uint64_t single_accesses() const { return singles_; }
  std::uint64_t flows() const { return flows_.size(); }
  std::uint64_t slices() const { return slices_; }
  /// Total time single accesses waited for the server (start - arrival).
  Tick single_wait() const { return single_wait_; }
  std::uint64_t wakes() const { return wakes_; }
  /// Requests served with a ready time earlier than one served before (must stay 0).
  std::uint64_t reorderings() const { return reorderings_; }

 private:
  struct Flow {
    double remaining = 0;
    double bytes_per_tick = 0;  ///< pacing (0: none)
    Tick start = 0;
    double issued = 0;
    std::function<void(Tick)> done;
  };
  struct Request {
    Tick t;
    std::uint64_t seq;
    tlm::tlm_generic_payload* gp;  ///< single access, or nullptr for a flow slice
    std::size_t flow;
    double bytes;
    bool operator>(const Request& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void push(Request r);
  /// The earliest request (there is one), and whether it is the FIFO's.
  const Request& head(bool& fifo) const {
    fifo = !fifo_.empty() && (heap_.empty() || heap_.top() > fifo_.front());
    return fifo ? fifo_.front() : heap_.top();
  }
  void next_slice(std::size_t f, Tick ready);
  void drain();
  void schedule();

  BandwidthServer server_;
  Tick latency_;
  double slice_bytes_;
  Tick quantum_;
  std::vector<Flow> flows_;
  Ring<Request> fifo_;
  std::priority_queue<Request, std::vector<Request>, std::greater<Request>> heap_;
  sc_core::sc_event wake_ev_;
  Tick wake_at_ = kTickMax;
  Tick last_ = 0;
  std::uint64_t seq_ = 0;
  double bytes_written_ = 0;
  double bytes_read_ = 0;
  double flow_bytes_ = 0;
  bool draining_ = false;
  std::uint64_t singles_ = 0;
  std::uint64_t slices_ = 0;
  std::uint64_t wakes_ = 0;
  std::uint64_t reorderings_ = 0;
  Tick single_wait_ = 0;
};

}  // namespace moehub
