// A multi-GPU node assembled from a system config, running one schedule.
//
// Per GPU: SM array, hub, crossbar port and HBM; per GPU and NVSwitch chip one
// NVLink port in each direction; the NVSwitch chips. Wiring (initiator ->
// target): sm2hbm -> hbm.in[1], hub2nvl[p] -> gpu{g}->sw{p} -> sw{p}.gpu2sw[g],
// sw{p}.sw2gpu[d] -> sw{p}->gpu{d} -> hub{d}.nvl2hub[p], hub2xbar -> xbar ->
// xbar2hbm -> hbm.in[0]. Kernels' bulk traffic reaches HBM as flows
// (MemoryFlows); the address map lays out each GPU's memory.
//
// Each GPU runs its op list on one SystemC thread per stream (ops of other
// streams they depend on are awaited as CUDA events would be), with the host
// modelled by one more thread: a clock that launches kernels ahead of the
// streams in list order and stalls on synchronisations until every earlier op
// has finished.
#pragma once

#ifndef SC_INCLUDE_DYNAMIC_PROCESSES
#define SC_INCLUDE_DYNAMIC_PROCESSES
#endif
#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/stats.hpp"
#include "fabric/nvlink_port.hpp"
#include "fabric/nvswitch.hpp"
#include "gpu/crossbar.hpp"
#include "gpu/hbm.hpp"
#include "gpu/hub.hpp"
#include "gpu/memory_flows.hpp"
#include "gpu/sm_array.hpp"
#include "platform/address_map.hpp"
#include "platform/collectives.hpp"
#include "platform/row_transfers.hpp"
#include "platform/scoreboard.hpp"
#include "workload/schedule.hpp"

namespace moehub {

/// One interval on a GPU's stream or host timeline.
struct OpRecord {
  std::string name;
  std::string phase;
  std::string kind;  ///< "gemm", "memory", "all_to_all", "host_sync", "launch_gap"
  Tick start = 0;
  Tick end = 0;
  double flops = 0;
  double bytes = 0;
  int stream = 0;  ///< the GPU stream it ran on (host records: -1)
  Tick first_block = kTickMax;  ///< GEMMs: when the first thread block started
};

struct GpuRecord {
  std::vector<OpRecord> stream;  ///< kernels, collectives and the gaps between them, every stream, by start time
  std::vector<OpRecord> host;    ///< synchronisations on the host
  Tick end = 0;                  ///< when the last op finished
  bool finished = false;         ///< the whole op list ran
};

class Node : public sc_core::sc_module {
 public:
  /// The node keeps its own copy of the schedule (the collectives refer to it).
  Node(const sc_core::sc_module_name& name, const SystemConfig& sys, const ModelConfig& model,
       Schedule schedule);
  ~Node() override;

  const std::vector<GpuRecord>& records() const { return records_; }
  const Collectives& collectives() const { return *collectives_; }
  const RowTransfers& row_transfers() const { return *row_transfers_; }
  const Schedule& schedule() const { return schedule_; }
  /// A condition that ended the run early (empty if none), e.g. a full rowsp
  /// region under hub.region_full: error.
  std::string fatal_error() const;
  /// Writes the hubs refused because a rowsp region was full (stall policy).
  std::uint64_t region_full_stalls() const;
  const Scoreboard& scoreboard() const { return *scoreboard_; }
  const AddressMap& address_map() const { return *address_map_; }
  int num_gpus() const { return sys_.num_gpus; }
  int planes() const { return sys_.nvswitch.num_switches; }
  /// GPU -> switch port of GPU g on plane p, and switch -> GPU.
  const NvlinkPort& uplink(int g, int p) const { return *up_[static_cast<std::size_t>(g * planes() + p)]; }
  const NvlinkPort& downlink(int g, int p) const { return *down_[static_cast<std::size_t>(g * planes() + p)]; }
  const Hub& hub(int g) const { return *hubs_[static_cast<std::size_t>(g)]; }
  const Hbm& hbm(int g) const { return *hbm_[static_cast<std::size_t>(g)]; }
  Hbm& hbm(int g) { return *hbm_[static_cast<std::size_t>(g)]; }
  Hub& hub(int g) { return *hubs_[static_cast<std::size_t>(g)]; }
  const NvSwitch& nvswitch(int p) const { return *switches_[static_cast<std::size_t>(p)]; }
  std::uint64_t fabric_transactions() const;
  /// End-of-run self-checks of the whole node: the transfers' rendezvous and
  /// scoreboard, and the blocks' invariants (every hub, switch and HBM handled
  /// its inputs in time order). One message per violation; empty = pass.
  std::vector<std::string> verify() const;
  /// Inputs handled out of arrival order, over all hubs, switches and HBMs (0).
  std::uint64_t reorderings() const;
  /// The blocks' statistics (reported under each block's name; in the results JSON's "stats").
  StatsRegistry& stats() { return stats_; }
  const StatsRegistry& stats() const { return stats_; }
  /// Ops finished and ops in all GPUs' lists, for a progress display.
  struct Progress {
    std::size_t done = 0, total = 0;
  };
  Progress progress() const;

 private:
  struct GpuRun;  // per-GPU execution state shared by its host and stream threads
  void host_thread(int g);
  void stream_thread(int g, int stream);
  void execute(int g, const Op& op, OpRecord& r);

  SystemConfig sys_;
  ModelConfig model_;
  const Schedule schedule_;
  std::vector<std::unique_ptr<Hub>> hubs_;
  std::vector<std::unique_ptr<SmArray>> sms_;
  std::vector<std::unique_ptr<Crossbar>> xbar_;
  std::vector<std::unique_ptr<Hbm>> hbm_;
  std::vector<std::unique_ptr<NvSwitch>> switches_;
  std::vector<std::unique_ptr<NvlinkPort>> up_;
  std::vector<std::unique_ptr<NvlinkPort>> down_;
  std::unique_ptr<AddressMap> address_map_;
  std::unique_ptr<Scoreboard> scoreboard_;
  std::unique_ptr<Collectives> collectives_;
  std::unique_ptr<RowTransfers> row_transfers_;
  std::vector<GpuRecord> records_;
  std::vector<std::unique_ptr<GpuRun>> runs_;
  StatsRegistry stats_;
};

}  // namespace moehub
