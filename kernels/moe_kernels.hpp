// moehub kernels: the device-side pieces of one MoE layer (router, permutation,
// SwiGLU, combine) as host-callable launchers. Storage is bf16 (passed as raw
// 16-bit words, `bf16_t`, so that plain C++ host code can include this header),
// arithmetic and accumulation fp32. Every launcher enqueues work on `stream`,
// never synchronises, and returns the launch status (cudaGetLastError()).
//
// Terms. A "pair" is one (token t, slot j) of the top-k routing, numbered
// src = t * top_k + j. Permuting sorts the pairs by expert: `pair_src[pos]` is the
// src of the pair at sorted position pos, `pair_pos[src]` its inverse, and
// `offsets[e]..offsets[e+1]` the positions routed to expert e.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace moehub::kernels {

using bf16_t = std::uint16_t;  ///< raw bits of one bfloat16 value

/// The most experts permute_pairs takes (its kernels keep two int32 words per expert in
/// 48 KiB of shared memory).
constexpr int kMaxPermuteExperts = 6144;

/// Softmax over each row of fp32 logits [tokens][experts], then the top_k experts per
/// row (descending probability, ties -> lower id) and their renormalised weights.
/// Requires experts <= 1024 and top_k <= 32.
cudaError_t softmax_topk(const float* logits, std::int64_t tokens, int experts, int top_k,
                         float* probs, std::int32_t* topk_ids, float* topk_weights,
                         cudaStream_t stream);

/// d_logits[t][e] = w_e * (dw_e - sum_j w_j dw_j) for the selected e, 0 otherwise
/// (backward of the renormalised top-k softmax; selection is piecewise constant).
/// Requires top_k <= 32.
cudaError_t router_backward(const std::int32_t* topk_ids, const float* topk_weights,
                            const float* d_topk_weights, std::int64_t tokens, int experts,
                            int top_k, float* d_logits, cudaStream_t stream);

/// Device-side permutation of the pairs by expert: counts [experts] (int32),
/// offsets [experts + 1], pair_src / pair_pos [tokens * top_k]. `scratch` needs
/// experts int32 words. The order of pairs inside one expert is unspecified.
/// Requires 1 <= experts <= kMaxPermuteExperts (shared memory of two words per expert).
cudaError_t permute_pairs(const std::int32_t* topk_ids, std::int64_t tokens, int top_k,
                          int experts, std::int32_t* counts, std::int32_t* offsets,
                          std::int32_t* pair_src, std::int32_t* pair_pos,
                          std::int32_t* scratch, cudaStream_t stream);

/// dst[i] = scale_i * src[index[i] / index_div] for i in [0, rows); rows of `hidden`
/// bf16 values. scale_i = scale_by_index[index[i]] when scale_by_index is non-null, else 1.
cudaError_t gather_rows(const bf16_t* src, const std::int32_t* index, int index_div,
                        const float* scale_by_index, std::int64_t rows, int hidden,
                        bf16_t* dst, cudaStream_t stream);

/// (SwiGLU and scatter-add need ffn and hidden to be multiples of 8: 16-byte rows.)
/// SwiGLU over rows whose gate and up halves sit side by side: gu is [rows][2*ffn]
/// with g = gu[r][0..ffn) and u = gu[r][ffn..2ffn); a[r][f] = silu(g) * u ([rows][ffn]).
cudaError_t swiglu_forward(const bf16_t* gu, std::int64_t rows, int ffn, bf16_t* a,
                           cudaStream_t stream);

/// SwiGLU backward over rows (layouts as swiglu_forward). Given da_in [rows][ffn] (the
/// gradient reaching a = silu(g) * u, unscaled when `weight_by_src` is non-null):
///   s_i = weight_by_src[pair_src[i]] (or 1), da = s_i * da_in,
///   dgu = [da * u * silu'(g) | da * silu(g)], a_out = s_i * silu(g) * u,
///   and when d_weight is non-null, d_weight[j] = <silu(g) * u, da_in>_row with
///   j = i when d_weight_by_row, else j = pair_src[i].
/// dgu may alias gu and a_out may alias da_in (each element is read before it is written
/// by the same thread).
cudaError_t swiglu_backward(const bf16_t* gu, const bf16_t* da_in, std::int64_t rows, int ffn,
                            const std::int32_t* pair_src, const float* weight_by_src, bf16_t* dgu,
                            bf16_t* a_out, float* d_weight, bool d_weight_by_row, cudaStream_t stream);

/// out[pair_src[i] / top_k][:] += weight_by_src[pair_src[i]] * y[i][:] (fp32 atomics;
/// weight 1 when weight_by_src is null).
cudaError_t scatter_add_rows(const bf16_t* y, const std::int32_t* pair_src, int top_k,
                             const float* weight_by_src, std::int64_t rows, int hidden,
                             float* out, cudaStream_t stream);

/// As scatter_add_rows into bf16 rows: out[t][:] = bf16(float(out[t][:]) + w * y[i][:]),
/// fp32 arithmetic and one rounding per add (64-bit compare-and-swap over 4 values; the
/// order of adds into one row is unspecified). `out` is not zeroed here.
cudaError_t scatter_add_rows_bf16(const bf16_t* y, const std::int32_t* pair_src, int top_k,
                                  const float* weight_by_src, std::int64_t rows, int hidden,
                                  bf16_t* out, cudaStream_t stream);

/// Deterministic unpermute: out[t][:] = sum_j w[t*k+j] * y[pair_pos[t*k+j]][:], with
/// w = 1 when weights is null. Writes bf16 (out_bf16) or fp32 (out_f32), whichever is non-null.
cudaError_t unpermute_sum(const bf16_t* y, const std::int32_t* pair_pos, const float* weights,
                          std::int64_t tokens, int top_k, int hidden, bf16_t* out_bf16,
                          float* out_f32, cudaStream_t stream);

/// d_w[src] = <d_out[src / top_k], y[pair_pos[src]]> for every pair.
cudaError_t pair_dot(const bf16_t* d_out, const bf16_t* y, const std::int32_t* pair_pos,
                     std::int64_t tokens, int top_k, int hidden, float* d_w,
                     cudaStream_t stream);

cudaError_t f32_to_bf16(const float* src, std::int64_t n, bf16_t* dst, cudaStream_t stream);
cudaError_t bf16_to_f32(const bf16_t* src, std::int64_t n, float* dst, cudaStream_t stream);
/// dst[i] = bf16(float(dst[i]) + src[i]).
cudaError_t add_f32_into_bf16(const float* src, std::int64_t n, bf16_t* dst, cudaStream_t stream);

/// Fill bf16 values with a deterministic pseudo-random uniform distribution in
/// [-scale, scale) (seeded; used by benchmarks to avoid timing on zeros).
cudaError_t fill_random_bf16(bf16_t* dst, std::int64_t n, std::uint64_t seed, float scale,
                             cudaStream_t stream);

/// Device pointer tables for one grouped GEMM call (the host builds them; one launch
/// copies them to a, b, c, stream-ordered, so they may be reused by the next call).
constexpr int kMaxPtrGroups = 384;
struct PtrTableArgs {
  int groups;
  const void* a[kMaxPtrGroups];
  const void* b[kMaxPtrGroups];
  void* c[kMaxPtrGroups];
};
cudaError_t fill_ptr_tables(const PtrTableArgs& args, const void** a, const void** b, void** c,
                            cudaStream_t stream);

/// dst[pair_src[i]] += vals[i] for i in [0, rows). A plain (non-atomic) add: the
/// pair_src entries of one call must be distinct (they are: each is one (token, slot)
/// pair, and a hop chunk holds each pair once).
cudaError_t scatter_add_scalars(const float* vals, const std::int32_t* pair_src, std::int64_t rows,
                                float* dst, cudaStream_t stream);

}  // namespace moehub::kernels
