#include "gpu/compute_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

namespace moehub {

ComputeModel::ComputeModel(const GpuConfig& gpu, int dtype_bytes)
    : gpu_(gpu),
      dtype_bytes_(dtype_bytes),
      per_sm_flops_per_tick_(gpu.dense_bf16_tflops * 1e12 / gpu.num_sms * 1e-12),
      hbm_bytes_per_tick_(gpu.hbm_bw_gbps * gpu.memory_kernel_efficiency * 1e9 * 1e-12) {}

double ComputeModel::efficiency(const GemmShape& g) const {
  const auto f = [](double x, double half) { return half <= 0 ? 1.0 : x / (x + half); };
  return gpu_.gemm.max_efficiency * f(static_cast<double>(g.m), gpu_.gemm.m_half) *
         f(static_cast<double>(g.n), gpu_.gemm.n_half) * f(static_cast<double>(g.k), gpu_.gemm.k_half);
}

Tick ComputeModel::tile_ticks(const GemmShape& g, std::int64_t rows, std::int64_t cols, double eff) const {
  const double flops = 2.0 * static_cast<double>(rows * cols) * static_cast<double>(g.k);
  return ceil_ps_to_ticks(flops / (per_sm_flops_per_tick_ * eff));
}

std::vector<Tick> ComputeModel::tiles(const std::vector<GemmShape>& groups) const {
  std::vector<Tick> out;
  const auto tm = static_cast<std::int64_t>(gpu_.gemm_tile_m);
  const auto tn = static_cast<std::int64_t>(gpu_.gemm_tile_n);
  for (const auto& g : groups) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) continue;
    const double eff = efficiency(g);
    // edge tiles hold fewer rows/columns; the efficiency curve carries the
    // cost of small shapes, so a tile's time follows its own size
    const std::int64_t mt = ceil_div(g.m, tm), nt = ceil_div(g.n, tn);
    for (std::int64_t i = 0; i < mt; ++i) {
      const std::int64_t rows = std::min(tm, g.m - i * tm);
      for (std::int64_t j = 0; j < nt; ++j) out.push_back(tile_ticks(g, rows, std::min(tn, g.n - j * tn), eff));
    }
  }
  return out;
}

KernelCost ComputeModel::grouped_gemm(const std::vector<GemmShape>& groups) const {
  return grouped_gemm(groups, gpu_.num_sms);
}

KernelCost ComputeModel::grouped_gemm(const std::vector<GemmShape>& groups, int num_sms) const {
  KernelCost cost;
  for (const auto& g : groups) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0) continue;
    cost.flops += 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
    cost.hbm_bytes += static_cast<double>(dtype_bytes_) *
                      static_cast<double>(g.m * g.k + g.k * g.n + g.m * g.n);
  }
  // list schedule of thread blocks over SMs: a min-heap of SM free times
  std::priority_queue<Tick, std::vector<Tick>, std::greater<Tick>> sms;
  for (int i = 0; i < std::max(1, num_sms); ++i) sms.push(0);
  const std::vector<Tick> blocks = tiles(groups);
  for (const Tick ticks : blocks) {
    const Tick free_at = sms.top();
    sms.pop();
    sms.push(free_at + ticks);
  }
  cost.thread_blocks = static_cast<std::int64_t>(blocks.size());
  Tick makespan = 0;
  while (!sms.empty()) {
    makespan = std::max(makespan, sms.top());
    sms.pop();
  }
  cost.compute_makespan = makespan;
  cost.duration = std::max(makespan, memory_bound(cost.hbm_bytes));
  return cost;
}

Tick ComputeModel::memory_bound(double bytes) const {
  return ceil_ps_to_ticks(bytes / hbm_bytes_per_tick_);
}

}  // namespace moehub
