// The SM array of one GPU: runs kernels on the thread-block engine.
//
// - GEMM kernels: a grid of output-tile thread blocks (ComputeModel's
//   per-tile cost: tensor-core rate per SM, efficiency by GEMM shape), split
//   into groups that are released at launch, by a signal or by polling a
//   flag, on a configurable set of SMs; the compulsory HBM traffic is one
//   flow paced over the kernel's compute makespan.
// - Streaming kernels: their bytes are one flow on HBM at full rate, so they
//   contend with whatever else uses HBM.
// - Communication kernels: their remote stores leave through the hub as a
//   StoreStream, issued at a bounded rate per SM.
//
// SystemC cost: one event per kernel a thread waits for, notified at its
// predicted completion and moved when a launch, signal, flag or flow changes it.
#pragma once

#include <systemc>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/config.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/hub.hpp"
#include "gpu/memory_flows.hpp"
#include "gpu/store_stream.hpp"
#include "gpu/tb_engine.hpp"

namespace moehub {

class SmArray : public sc_core::sc_module {
 public:
  SmArray(const sc_core::sc_module_name& name, const GpuConfig& gpu, int dtype_bytes, Hub* hub, MemoryFlows* hbm);

  /// Cost of a grouped GEMM kernel on every SM (the analytic list schedule).
  KernelCost gemm(const std::vector<GemmShape>& groups) const { return compute_.grouped_gemm(groups); }
  /// The kernel of a grouped GEMM on SMs [first_sm, first_sm + num_sms)
  /// (num_sms 0: to the last SM): its tiles in `groups` groups released at
  /// launch, its compulsory HBM traffic paced over its compute makespan there.
  KernelSpec gemm_kernel(const std::vector<GemmShape>& shapes, int groups, int first_sm = 0, int num_sms = 0) const;
  /// A streaming kernel of `bytes` read and written: one HBM flow at full rate.
  static KernelSpec memory_kernel(double bytes);

  /// Launches a kernel now. group_flags[g] >= 0: group g (released by signal
  /// or by polling) waits for that flag of this GPU (see raise_flag).
  int launch(KernelSpec spec, const std::vector<int>& group_flags = {});
  /// Releases a signal-released group at `t` (>= now; a signal may arrive ahead of its time).
  void signal(int kernel, int group, Tick t);
  /// Flag `flag` of this GPU is set at `t` (>= now): releases the groups that
  /// wait for it, now and in kernels launched later. A flag is set once (a
  /// second call is ignored).
  void raise_flag(int flag, Tick t);
  /// Waits, in the calling thread, until the kernel completes; returns that time.
  Tick wait(int kernel);
  /// The first block start of the kernel waited for last (kTickMax: it had no blocks).
  Tick last_first_block_start() const { return last_first_start_; }

  /// Store issue rate of a kernel running on `sms` SMs, GB/s.
  double store_issue_gbps(int sms) const;
  /// Starts a communication kernel's stores (the source must outlive the transfer).
  void start_stores(StoreSource* source) { hub_->add_source(source); }

  const ComputeModel& compute() const { return compute_; }
  const TbEngine& engine() const { return engine_; }
  MemoryFlows& hbm() { return *hbm_; }
  /// Times a thread waiting for a kernel has been woken (about one per kernel).
  std::uint64_t wakeups() const { return wakeups_; }

 private:
  struct Waiter {
    std::unique_ptr<sc_core::sc_event> done;
    Tick notified = kTickMax;  ///< completion its event is notified for
    bool waiting = false;      ///< a thread waits for it
  };
  void release(int kernel, int group, Tick t);
  void refresh();
  void notify(int kernel, Waiter& w, Tick now);

  GpuConfig gpu_;
  ComputeModel compute_;
  Hub* hub_;
  MemoryFlows* hbm_;
  TbEngine engine_;
  std::map<int, Waiter> waiters_;
  std::map<int, Tick> flags_;                               ///< flags raised so far
  std::multimap<int, std::pair<int, int>> flag_waiters_;    ///< flag -> (kernel, group)
  bool refreshing_ = false;
  std::uint64_t wakeups_ = 0;
  Tick last_first_start_ = kTickMax;
};

}  // namespace moehub
