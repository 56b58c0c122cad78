// A schedule of the MoE layer as a plug-in: a name, the planner's memory plan, a forward
// and a backward built from MoeLayer's steps (route, exchange_counts, ring_pass, phases)
// and the kernels of expert_ops / moe_kernels. Each schedule is one file under
// schedules/ that defines make_<id>_schedule(); schedules/registry.cpp lists them, one
// line each, and every command takes its schedule names from that list.
//
// A schedule object runs one layer at a time: state that its backward needs from its
// forward (saved activations) lives in the object, one struct per local rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layer.hpp"
#include "layout.hpp"
#include "moe_plan/layer_memory.hpp"
#include "moe_plan/moe_plan.hpp"

namespace moehub::gpu {

class LayerSchedule {
 public:
  virtual ~LayerSchedule() = default;
  virtual std::string name() const = 0;
  /// True when the schedule takes the ring options (LayerConfig::ring_accum,
  /// hop_chunk_rows): check and memory then run it once per option combination.
  virtual bool ring_options() const { return false; }
  /// The planner's buffer plan for rank `rank` with its exact counts (moe_plan), for the
  /// configuration's ring options.
  virtual plan::BufferPlan memory_plan(const LayerConfig& c, const CountMatrix& counts, int rank) const = 0;
  /// From the inputs to `out`, `probs`, `topk_ids`, `topk_weights`.
  virtual void forward(MoeLayer& layer) = 0;
  /// From `d_out` to `d_x`, `d_topk_weights` and the experts' `d_w_part` (MoeLayer::run
  /// runs the router backward afterwards).
  virtual void backward(MoeLayer& layer) = 0;
  /// Rows for a trace's hop table when the schedule has no ring hops (a2a: one row per
  /// pass from its phases); none by default.
  virtual std::vector<HopTime> pass_rows(const std::vector<PhaseTime>&, int /*rank*/) const { return {}; }
};

/// The registered schedule names, in registry order.
std::vector<std::string> schedule_names();
/// A new schedule object; throws std::invalid_argument naming the registered schedules.
std::unique_ptr<LayerSchedule> make_schedule(const std::string& name);

}  // namespace moehub::gpu
