// moehub-gpu memory: per-rank peak device memory of each schedule (folded ranks) beside the
// planner's prediction (LayerSchedule::memory_plan).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "cuda_check.hpp"
#include "expert_ops.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "model_shapes.hpp"
#include "moe_plan/moe_plan.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"
#include "trace/trace.hpp"

#include "measure_common.hpp"

namespace moehub::gpu {

int cmd_memory(const Args& a) {
  LayerConfig base = layer_args(a, 49152, 2048, 768, 128, 8);
  const auto eps = a.int_list("ep", "8", 1, 256);
  const std::vector<std::string> registered = schedule_names();
  const auto scheds = a.str_list("schedules", join(registered), {registered.begin(), registered.end()});
  const GemmImpl impl = from_user_input("--gemm", [&] { return parse_gemm_impl(a.str("gemm", "auto")); });
  // ring variants (a2a runs once): each ring schedule with each accumulator type and chunk limit
  const auto accums = a.str_list("ring-accum", "bf16", {"fp32", "bf16"});
  const auto chunks = a.int_list("hop-chunk-rows", "-1", -1, 1LL << 30);
  const std::vector<LayerVariant> variants = layer_variants(scheds, accums, chunks);
  validate_eps(base, eps);
  std::printf("memory: T=%lld per rank, H=%d, F=%d, E=%d, k=%d, folded ranks on %s\n",
              static_cast<long long>(base.tokens), base.hidden, base.ffn, base.experts, base.top_k, device_name(0).c_str());
  std::printf("memory: ring accumulators %s, hop chunk rows %s (0 = whole hop; a2a unaffected); a ring row other "
              "than fp32 / 0 is named schedule/accumulators/c<rows>\n",
              join(accums).c_str(), join(chunks).c_str());
  std::printf("%-4s %-12s %13s %15s %14s %14s %11s  %s\n", "ep", "schedule", "peak_max_GiB", "above_inputs_GiB",
              "pool_high_GiB", "plan_GiB", "plan_err_B", "largest buffers at rank 0's peak");
  for (std::int64_t ep : eps) {  // every EP was validated above
    LayerConfig c = base;
    c.ep = static_cast<int>(ep);
    std::map<std::string, double> peak_of, above_of;
    try {
      // the layer with its inputs; made again after a variant ran out of memory (its
      // buffers are then still allocated), with the same inputs and so the same routing
      std::unique_ptr<Transport> tr;
      std::unique_ptr<MoeLayer> held;
      const auto fresh = [&] {
        held.reset();
        tr.reset();
        tr = make_folded_transport(c.ep, 0);
        held = std::make_unique<MoeLayer>(c, *tr, impl);
        held->allocate_inputs();
        fill_inputs(*held, 1234);
      };
      fresh();
      for (const LayerVariant& v : variants) {
        const std::string& sn = v.label;
        if (!held) fresh();
        MoeLayer& layer = *held;
        layer.set_ring_options(v.accum, v.chunk_rows);
        std::vector<std::int64_t> peaks, pools, above;
        std::string top;
        try {
          std::vector<std::int64_t> base_bytes;
          for (auto& r : layer.ranks()) {
            r->mem->reset_peak();
            base_bytes.push_back(r->mem->in_use());
          }
          layer.allocate_outputs();
          const std::unique_ptr<LayerSchedule> sched = make_schedule(v.schedule);
          layer.run(*sched);
          layer.synchronize();
          for (std::size_t i = 0; i < layer.ranks().size(); ++i) {
            auto& r = layer.ranks()[i];
            peaks.push_back(r->mem->peak());
            above.push_back(r->mem->peak() - base_bytes[i]);
            pools.push_back(r->mem->pool_used_high());
          }
          std::vector<std::pair<std::int64_t, std::string>> bufs;
          for (auto& kv : layer.ranks()[0]->mem->at_peak()) bufs.push_back({kv.second, kv.first});
          std::sort(bufs.rbegin(), bufs.rend());
          for (std::size_t i = 0; i < std::min<std::size_t>(6, bufs.size()); ++i)
            top += bufs[i].second + "=" + gib(bufs[i].first) + " ";
          // the plan of every rank from its exact counts, with this variant's options: rank
          // 0's shown, the largest difference from a rank's measured peak in bytes
          std::vector<plan::BufferPlan> plans;
          long long plan_err = 0;
          for (std::size_t i = 0; i < layer.ranks().size(); ++i) {
            const auto& r = layer.ranks()[i];
            plans.push_back(sched->memory_plan(layer.config(), r->count_matrix, r->rank));
            plan_err = std::max(plan_err, std::llabs(static_cast<long long>(plans.back().peak_bytes) - static_cast<long long>(peaks[i])));
          }
          const plan::BufferPlan& bp = plans[0];
          layer.free_outputs();
          for (auto& r : layer.ranks()) r->mem->trim();
          const double mx = static_cast<double>(*std::max_element(peaks.begin(), peaks.end()));
          const double ab = static_cast<double>(*std::max_element(above.begin(), above.end()));
          peak_of[sn] = mx;
          above_of[sn] = ab;
          std::printf("%-4lld %-12s %13s %15s %14s %14s %11lld  %s(plan peak phase: %s)\n", static_cast<long long>(ep),
                      sn.c_str(), gib(static_cast<std::int64_t>(mx)).c_str(), gib(static_cast<std::int64_t>(ab)).c_str(),
                      gib(*std::max_element(pools.begin(), pools.end())).c_str(),
                      gib(static_cast<std::int64_t>(bp.peak_bytes)).c_str(), plan_err, top.c_str(),
                      bp.peak_phase.c_str());
        } catch (const OutOfMemory& e) {  // a size limit; any other failure ends the command
          std::printf("%-4lld %-12s does not fit on this GPU folded: %s\n", static_cast<long long>(ep), sn.c_str(), e.what());
          cudaGetLastError();
          // the next variant may need less: it starts from a new layer
          layer.synchronize();
          held.reset();
        }
        std::fflush(stdout);
      }
      for (const LayerVariant& v : variants) {
        const std::string& ring = v.label;
        if (ring != "a2a" && peak_of.count("a2a") && peak_of.count(ring))  // a2a is the baseline
          std::printf("ep=%lld a2a / %s per-rank peak: %.3fx (total: %.0f / %.0f bytes), %.2fx (above inputs)\n",
                      static_cast<long long>(ep), ring.c_str(), peak_of["a2a"] / peak_of[ring], peak_of["a2a"],
                      peak_of[ring], above_of["a2a"] / above_of[ring]);
      }
      std::fflush(stdout);
    } catch (const OutOfMemory& e) {
      std::printf("%-4lld inputs do not fit on this GPU folded: %s\n", static_cast<long long>(ep), e.what());
    }
  }
  std::printf("peak = tracked high-water mark per rank, inputs included (x, d_out, router and expert weights, and the "
              "experts' fp32 parameter gradient); above_inputs = peak less those; pool_high = the rank pool's "
              "cudaMemPoolAttrUsedMemHigh; plan = plan::plan_a2a / plan_ring (layer_memory.hpp) for rank 0, plan_err_B = the "
              "largest difference in bytes between a rank's plan and its measured peak (0: exact)\n");
  return 0;
}


}  // namespace moehub::gpu
