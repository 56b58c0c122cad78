// One ring hop's compute, shared by the ring schedules (expert and token routing) and by
// bench-hop: the hop buffers (sized for the largest chunk a rank computes) and the
// executor of a chunk's steps. The steps -- which kernels, in which order, on which rows
// -- come from moe_plan's ring_pass_steps (ring_steps.hpp), the description the
// simulator's ring schedules replay; this file only maps each step name to its kernel. A
// chunk is consecutive local experts' rows of the visiting pairs; its pairs are `src`
// (positions in a token-major [T][k] pair list, so that token = src / k) and its weights
// W a whole partition (PartitionLayout).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "expert_ops.hpp"
#include "moe_plan/moe_plan.hpp"
#include "moe_plan/ring_steps.hpp"

namespace moehub::gpu {

struct HopBufs {
  bf16_t *x = nullptr, *dout = nullptr, *gu = nullptr, *a = nullptr, *y = nullptr;
  float* dtw = nullptr;  ///< per chunk row (token routing's gate-weight gradients)
};
/// Buffers for chunks of up to `rows` rows (at least one), from the rank's pool.
/// `y_over_x`: y is the x buffer (the chunked backward of expert routing, whose gemm_d_x
/// runs after the last reader of x; plan::ring_pass_steps), one [rows][H] buffer less.
HopBufs alloc_hop(RankAllocator& m, const Dims& d, std::int64_t rows, bool backward, bool y_over_x = false);
void free_hop(RankAllocator& m, HopBufs& b);

/// Adds b.y's chunk rows (scaled by the pairs' gate weights when `w` is given) into a
/// [T][H] accumulator: fp32 (`acc32`) or bf16 (`acc16`, one rounding per add).
void hop_chunk_scatter(const HopBufs& b, const Dims& d, std::int64_t rows, const std::int32_t* src, const float* w,
                       float* acc32, bf16_t* acc16, cudaStream_t s);

/// Where a hop chunk's kernels (plan::ring_pass_steps) read and write.
struct HopChunkIO {
  const bf16_t* x = nullptr;           ///< tokens [T][H] (the rank's own or the visiting ones)
  const bf16_t* dout = nullptr;        ///< upstream gradient rows' source (backward)
  const std::int32_t* src = nullptr;   ///< the chunk's pairs
  const float* topk_weights = nullptr; ///< gate weights of the pairs' tokens
  const bf16_t* W = nullptr;           ///< the partition's weights
  float* dtw = nullptr;                ///< swiglu_backward's gate-weight gradient
  bool dtw_per_row = false;            ///< ... indexed by chunk row (else by pair)
  float* acc32 = nullptr;              ///< scatter_out / scatter_d_x target: fp32 ...
  bf16_t* acc16 = nullptr;             ///< ... or bf16
  float* dtw_acc = nullptr;            ///< scatter_d_topk_weights target
  float* dw32 = nullptr;               ///< gemm_d_w_* target (beta = 1): fp32 ...
  bf16_t* dw16 = nullptr;              ///< ... or bf16
  std::function<void()> wait_accum;    ///< the engine's wait for the travelling accumulator
  /// When set, runs the gemm_d_w_* kernels instead (a split expert's pieces).
  std::function<void(const plan::KernelStep&)> dw_override;
};

/// The GPU kernel of each ring step name (ring_steps.hpp).
enum class HopKernel {
  kGatherX, kGatherXDout, kGemmGateUp, kSwiglu, kGemmDown, kGemmDAct, kSwigluBackward, kGemmDX,
  kScatterOut, kScatterDX, kScatterDTopkWeights, kWaitAccum, kGemmDWGateUp, kGemmDWDown
};
/// Throws std::logic_error for a step name without a GPU kernel.
HopKernel hop_kernel_of(const std::string& name);

/// Runs one kernel of a hop chunk's steps on stream `s` (the names of ring_steps.hpp);
/// throws std::logic_error for a name it does not know.
void run_hop_kernel(const plan::KernelStep& step, GemmRunner& g, GemmImpl impl, const Dims& d, const plan::ChunkSteps& ch,
                    const HopChunkIO& io, HopBufs& b, cudaStream_t s);
/// Runs every kernel of a chunk, in order.
void run_hop_chunk(GemmRunner& g, GemmImpl impl, const Dims& d, const plan::ChunkSteps& ch, const HopChunkIO& io,
                   HopBufs& b, cudaStream_t s);

/// The ring routing of a layer from its count matrix (every rank T tokens, E / N experts).
plan::RingRouting ring_routing(const LayerConfig& c, const CountMatrix& cm);
/// The ring-step options of a layer's ring pass: its hop chunks and accumulator bytes
/// (LayerConfig::ring_accum: bf16 2, fp32 4), and in expert routing the travelling
/// gradient partitions' bytes (the same; token routing adds its weight gradients into the
/// resident fp32 parameter gradient).
plan::RingOptions ring_step_options(const LayerConfig& c, plan::RingMode mode);

}  // namespace moehub::gpu
