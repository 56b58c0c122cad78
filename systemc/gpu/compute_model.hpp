// How long the SM array takes for a kernel (plain C++, no SystemC).
//
// GEMMs run as grids of thread blocks: every output tile of tile_m x tile_n
// is one thread block; thread blocks are dealt to the SMs in launch order,
// each SM running one at a time (a persistent-tile GEMM on Hopper keeps one
// large tile per SM), so the kernel takes the makespan of that list schedule.
// A tile of a GEMM with shape (M, N, K) takes
//     2 * tile_m * tile_n * K / (per-SM tensor rate * eff(M, N, K))
// where the per-SM rate is dense_bf16_tflops / num_sms, partial edge tiles
// cost in proportion to their size (the padding the tensor cores compute is
// part of the small-shape loss below), and
//     eff(M, N, K) = max_efficiency * M/(M+m_half) * N/(N+n_half) * K/(K+k_half)
// models the loss of small GEMMs (pipeline fill, wave quantisation inside a
// tile, epilogue). The kernel is also bounded below by its compulsory HBM
// traffic (operands read once, result written once) at the achievable HBM
// bandwidth: time = max(makespan, bytes / (hbm_bw * memory_kernel_efficiency)).
#pragma once

#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "common/gemm_shape.hpp"
#include "common/units.hpp"

namespace moehub {

struct KernelCost {
  Tick duration = 0;
  double flops = 0;        ///< useful floating-point operations
  double hbm_bytes = 0;    ///< compulsory HBM traffic
  std::int64_t thread_blocks = 0;
  Tick compute_makespan = 0;
};

class ComputeModel {
 public:
  ComputeModel(const GpuConfig& gpu, int dtype_bytes);

  double efficiency(const GemmShape& g) const;
  /// A grouped GEMM (one group per expert; empty groups cost nothing).
  KernelCost grouped_gemm(const std::vector<GemmShape>& groups) const;
  /// The same on `num_sms` SMs.
  KernelCost grouped_gemm(const std::vector<GemmShape>& groups, int num_sms) const;
  /// The time of every thread block (output tile) of a grouped GEMM on one
  /// SM, in launch order (group by group, row of tiles by row of tiles): the
  /// numbers grouped_gemm list-schedules and the thread-block engine runs.
  std::vector<Tick> tiles(const std::vector<GemmShape>& groups) const;
  /// A streaming kernel that reads and writes `bytes` in total.
  Tick memory_bound(double bytes) const;

 private:
  Tick tile_ticks(const GemmShape& g, std::int64_t rows, std::int64_t cols, double eff) const;

  GpuConfig gpu_;
  int dtype_bytes_;
  double per_sm_flops_per_tick_;
  double hbm_bytes_per_tick_;
};

}  // namespace moehub
