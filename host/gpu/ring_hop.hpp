// One ring hop's compute, shared by the ring schedules (expert and token routing) and by
// bench-hop: the hop buffers (sized for the largest chunk a rank computes) and the
// per-chunk kernels. A chunk (plan::HopChunk) is consecutive local experts' rows of the
// visiting pairs; its pairs are `src` (positions in a token-major [T][k] pair list, so
// that token = src / k) and its weights W a whole partition (layer.hpp layout).
#pragma once

#include <cstdint>

#include "expert_ops.hpp"
#include "moe_plan.hpp"

namespace moehub::gpu {

struct HopBufs {
  bf16_t *x = nullptr, *dout = nullptr, *gu = nullptr, *a = nullptr, *y = nullptr;
  float* dtw = nullptr;  ///< per chunk row (token routing's gate-weight gradients)
};
/// Buffers for chunks of up to `rows` rows (at least one), from the rank's pool.
HopBufs alloc_hop(RankAllocator& m, const Dims& d, std::int64_t rows, bool backward);
void free_hop(RankAllocator& m, HopBufs& b);

/// Forward: gather the chunk's rows of x into b.x, GU = x Wgu, A = SwiGLU(GU), Y = A Wd
/// into b.y.
void hop_chunk_forward(GemmRunner& g, GemmImpl impl, const Dims& d, const plan::HopChunk& ch, const bf16_t* x,
                       const std::int32_t* src, const bf16_t* W, HopBufs& b, cudaStream_t s);

/// Backward up to dX, recomputing the intermediates: gathers x and d_out rows (b.x,
/// b.dout), GU = x Wgu, dA' = d_out Wd^T (unscaled), SwiGLU backward in place (b.gu <- dGU,
/// b.a <- A; the gate-weight gradient goes to `dtw`, indexed by pair when
/// `dtw_per_row` is false, else by chunk row), dX = dGU Wgu^T into b.y. The weight
/// gradients (expert_dw on b.x, b.gu, b.a, b.dout) and the scatters are the caller's.
void hop_chunk_backward(GemmRunner& g, GemmImpl impl, const Dims& d, const plan::HopChunk& ch, const bf16_t* x,
                        const bf16_t* dout, const std::int32_t* src, const float* topk_weights, const bf16_t* W,
                        float* dtw, bool dtw_per_row, HopBufs& b, cudaStream_t s);

/// Adds b.y's chunk rows (scaled by the pairs' gate weights when `w` is given) into a
/// [T][H] accumulator: fp32 (`acc32`) or bf16 (`acc16`, one rounding per add).
void hop_chunk_scatter(const HopBufs& b, const Dims& d, std::int64_t rows, const std::int32_t* src, const float* w,
                       float* acc32, bf16_t* acc16, cudaStream_t s);

}  // namespace moehub::gpu
