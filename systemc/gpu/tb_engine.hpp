// The thread-block engine of one GPU's SM array (plain C++, no SystemC).
//
// Function: a kernel is a grid of thread blocks divided into groups; it runs
// on a contiguous set of SMs. Every SM runs one block at a time; when an SM
// becomes free it takes the first block, in (kernel launch order, group,
// block) order, of a group that has been released and whose kernel may use
// that SM, so kernels that share SMs queue for them in launch order. A group
// is released at the kernel's launch, at the time of a signal for it, or,
// when it polls a flag, at the first poll at or after the flag is set.
//
// Timing: a block occupies its SM for its own duration (the per-tile cost of
// ComputeModel for GEMMs) stretched by the polls that fall into it. A polling
// group has a poller on one SM of its kernel (the kernel's first SM, then the
// next for the next polling group) that polls every `interval` from the
// kernel's launch; each poll takes `sm_ticks` of that SM's time from whatever
// block runs there and `bytes` of HBM traffic. A kernel's HBM traffic is a
// flow on MemoryFlows started at launch; a kernel completes when all its
// blocks have finished and all its flows have been served.
//
// How it is computed: no event per block. The engine list-schedules blocks
// analytically with a heap of SM free times. Decisions taken before the
// current time are final (every signal, flag or launch still to come carries
// a time no earlier than now); the rest of the schedule is predicted from
// what is known and recomputed whenever something new is known, so the
// caller needs one event per kernel completion and nothing per block.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/gemm_shape.hpp"
#include "common/units.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/memory_flows.hpp"

namespace moehub {

enum class GroupRelease {
  kLaunch,  ///< with the kernel
  kSignal,  ///< at the time a signal names (hardware data availability)
  kPoll,    ///< at the first poll of a flag at or after it is set
};

/// Cost of a polling loop (software parameters of the kernel that polls).
struct PollCost {
  Tick interval = 1;   ///< between polls, > 0
  Tick sm_ticks = 0;   ///< SM time one poll takes, < interval
  double bytes = 0;    ///< HBM traffic of one poll
};

struct BlockGroup {
  std::vector<Tick> blocks;  ///< each block's time on one SM
  GroupRelease release = GroupRelease::kLaunch;
};

struct KernelSpec {
  std::string name;
  int first_sm = 0;
  int num_sms = 0;  ///< 0: every SM from first_sm on
  std::vector<BlockGroup> groups;
  PollCost poll;
  double hbm_bytes = 0;     ///< the kernel's HBM traffic, one flow from its launch
  double hbm_max_gbps = 0;  ///< pacing of that flow (<= 0: as fast as HBM serves it)
  double flops = 0;         ///< useful floating-point operations (reported, not timed)
};

/// Splits `tiles` into `groups` contiguous groups of near-equal block count
/// (the first ones one larger), all released at launch.
std::vector<BlockGroup> split_groups(const std::vector<Tick>& tiles, int groups);

/// The kernel of a grouped GEMM on SMs [first_sm, first_sm + num_sms)
/// (num_sms 0: to the last SM): ComputeModel's tiles in `groups` groups
/// released at launch, and its compulsory HBM traffic as one flow paced so
/// that its last byte is due at the kernel's compute makespan on those SMs.
KernelSpec gemm_kernel(const ComputeModel& model, int total_sms, const std::vector<GemmShape>& shapes, int groups,
                       int first_sm = 0, int num_sms = 0);

class TbEngine {
 public:
  TbEngine(int num_sms, MemoryFlows* hbm);

  /// Launches a kernel at `now`; returns its id (ids grow in launch order).
  /// Throws std::invalid_argument for an SM set outside the array or a bad poll cost.
  int launch(KernelSpec spec, Tick now);
  /// Releases group `group` of `kernel` at `t` (a time before `now` counts as now).
  void signal(int kernel, int group, Tick t, Tick now);
  /// The flag a polling group polls is set at `t`: the group is released at
  /// the first poll at or after t, and its polls' HBM traffic is issued.
  void set_flag(int kernel, int group, Tick t, Tick now);
  /// Commits the decisions before `now` and predicts the rest (the schedule
  /// is recomputed only after a launch with blocks, a release or a flag).
  void update(Tick now);

  /// Predicted completion of a kernel (kTickMax while it depends on a
  /// release or a flow not yet known). Valid after update().
  Tick predicted_end(int kernel) const;
  /// First block start of a group in the latest prediction (kTickMax: none yet).
  Tick group_start(int kernel, int group) const;
  /// Polls of a polling group up to its release (0 while the flag is not set).
  std::int64_t polls(int kernel, int group) const;
  const KernelSpec& spec(int kernel) const { return this->kernel(kernel).spec; }
  /// Forgets a kernel that has completed.
  void retire(int kernel);
  /// Called when a flow completes after start_flow returned (so a SystemC
  /// wrapper can refresh its events).
  void set_on_flow_done(std::function<void()> f) { on_flow_done_ = std::move(f); }
  int num_sms() const { return num_sms_; }

 private:
  struct Poller {
    int sm = 0;
    Tick first = 0;        ///< first poll (the kernel's launch)
    Tick interval = 1;
    Tick cost = 0;         ///< SM time per poll
    Tick last = kTickMax;  ///< the releasing poll, once the flag is known
    /// Polls in [a, e).
    Tick count(Tick a, Tick e) const;
  };
  struct Kernel {
    KernelSpec spec;
    Tick launch = 0;
    std::vector<Tick> release;  ///< per group (kTickMax: not yet known)
    std::vector<int> poller;    ///< per group: index into pollers_ (-1: none)
    int flows_pending = 0;
    Tick flows_done = 0;
    Tick predicted = kTickMax;
  };
  struct SmState {
    Tick free = 0;        ///< end of the block it runs (or ran last)
    Tick work_start = 0;  ///< that block's start
    Tick work = 0;        ///< and its own duration (polls stretch it)
    int kernel = -1;
  };
  struct Cursor {
    const Kernel* kernel = nullptr;  ///< the kernel it walks (std::map nodes stay put)
    std::vector<std::size_t> next;  ///< per group: next block to dispatch
    std::vector<Tick> first_start;  ///< per group
    std::size_t open = 0;           ///< first group with blocks left
    std::int64_t left = 0;          ///< blocks not yet dispatched
    Tick ended = 0;                 ///< latest end of its blocks no longer on an SM
  };
  struct State {
    std::vector<SmState> sms;
    std::map<int, Cursor> cursors;
  };

  void predict(Tick now);
  Tick finish(int sm, Tick start, Tick work) const;
  void run(State& st, Tick until) const;
  void start_flow(int id, double bytes, double max_gbps, Tick start);
  Kernel& kernel(int id);
  const Kernel& kernel(int id) const;

  int num_sms_;
  MemoryFlows* hbm_;
  std::map<int, Kernel> kernels_;
  std::vector<Poller> pollers_;
  std::vector<std::vector<int>> pollers_on_sm_;
  State committed_;
  Tick committed_until_ = 0;  ///< decisions before it are final
  State predicted_;
  int next_id_ = 0;
  bool updating_ = false;
  bool dirty_ = false;  ///< something the prediction depends on changed
  std::function<void()> on_flow_done_;
};

}  // namespace moehub
