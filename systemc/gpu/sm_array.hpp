// The SM array of one GPU: the thread-block engine that runs kernels.
//
// - GEMM kernels: a grid of output-tile thread blocks list-scheduled over the
//   SMs (ComputeModel: tensor-core rate per SM, efficiency by GEMM shape).
// - Streaming kernels: their HBM traffic goes to the HBM target through the
//   sm2hbm socket, so they contend with whatever else uses HBM.
// - Communication kernels: their remote stores leave through the hub as a
//   StoreStream, issued at a bounded rate per SM.
#pragma once

#include <systemc>
#include <tlm>

#include <memory>

#include "common/config.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/hub.hpp"
#include "gpu/store_stream.hpp"

namespace moehub {

class SmArray : public sc_core::sc_module, public tlm::tlm_bw_transport_if<> {
 public:
  tlm::tlm_initiator_socket<> sm2hbm;

  SmArray(const sc_core::sc_module_name& name, const GpuConfig& gpu, int dtype_bytes, Hub* hub);

  /// Cost of a grouped GEMM kernel (the caller waits for it).
  KernelCost gemm(const std::vector<GemmShape>& groups) const { return compute_.grouped_gemm(groups); }
  /// Issues the HBM traffic of a streaming kernel now; returns when it completes.
  Tick memory_kernel(double bytes, bool write);
  /// Store issue rate of a kernel running on `sms` SMs, GB/s.
  double store_issue_gbps(int sms) const;
  /// Starts a communication kernel's stores (the source must outlive the transfer).
  void start_stores(StoreSource* source) { hub_->add_source(source); }

  const ComputeModel& compute() const { return compute_; }

  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&,
                                     sc_core::sc_time&) override {
    return tlm::TLM_COMPLETED;
  }
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}

 private:
  GpuConfig gpu_;
  ComputeModel compute_;
  Hub* hub_;
  tlm::tlm_generic_payload gp_;
};

}  // namespace moehub
