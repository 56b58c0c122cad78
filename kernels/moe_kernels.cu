// Kernels of one MoE layer; see moe_kernels.hpp for the contract of each launcher.
#include "moe_kernels.hpp"

#include <cuda_bf16.h>

#include <cstdint>

namespace moehub::kernels {
namespace {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ld(const bf16_t* p, std::int64_t i) {
  return __bfloat162float(reinterpret_cast<const bf16*>(p)[i]);
}
__device__ __forceinline__ void st(bf16_t* p, std::int64_t i, float v) {
  reinterpret_cast<bf16*>(p)[i] = __float2bfloat16(v);
}
__device__ __forceinline__ float sigmoidf(float x) { return 1.0f / (1.0f + __expf(-x)); }

// 8 bf16 values <-> one 16-byte vector
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __bfloat1622float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}
__device__ __forceinline__ uint4 pack8(const float* f) {
  uint4 v;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

unsigned grid_for(std::int64_t n, int block, std::int64_t cap = 65535LL * 16) {
  std::int64_t g = (n + block - 1) / block;
  if (g < 1) g = 1;
  if (g > cap) g = cap;
  return static_cast<unsigned>(g);
}

// ---- router ---------------------------------------------------------------------------
// One warp per token: softmax over `experts` logits held 32 per lane-round, then top_k
// rounds of warp argmax (ties -> lower id). Lane l keeps experts l, l + 32, ... in
// registers (kPerLane of them, the fewest that cover `experts`; at most 32: experts <=
// 1024), so the rounds read no memory and compare only the experts there are; a chosen
// expert's probability is replaced by kTaken, below every candidate. The sums and
// comparisons are those of reading the probabilities back from memory, in the same order.
template <int kPerLane>
__global__ void softmax_topk_kernel(const float* __restrict__ logits, std::int64_t tokens, int experts,
                                    int top_k, float* __restrict__ probs, std::int32_t* __restrict__ ids,
                                    float* __restrict__ weights) {
  constexpr float kNone = -1.f, kTaken = -2.f;
  const int lane = threadIdx.x & 31;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (t >= tokens) return;
  const float* row = logits + t * experts;
  float v[kPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    v[i] = e < experts ? row[e] : -INFINITY;
    mx = fmaxf(mx, v[i]);
  }
  for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (lane + 32 * i < experts) sum += __expf(v[i] - mx);
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const float inv = 1.0f / sum;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    if (e < experts) {
      v[i] = __expf(v[i] - mx) * inv;
      probs[t * experts + e] = v[i];
    } else {
      v[i] = kTaken;
    }
  }
  float sel_sum = 0.f;
  float my_sel_p = 0.f;  // lane j holds slot j's probability
  int my_sel_id = 0;
  for (int j = 0; j < top_k; ++j) {
    float best = kNone;
    int best_id = 0x7fffffff;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + 32 * i;
      if (v[i] > best || (v[i] == best && e < best_id)) {
        best = v[i];
        best_id = e;
      }
    }
    for (int o = 16; o; o >>= 1) {
      const float ob = __shfl_xor_sync(0xffffffffu, best, o);
      const int oi = __shfl_xor_sync(0xffffffffu, best_id, o);
      if (ob > best || (ob == best && oi < best_id)) { best = ob; best_id = oi; }
    }
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      if (lane + 32 * i == best_id) v[i] = kTaken;
    sel_sum += best;
    if (lane == j) { my_sel_p = best; my_sel_id = best_id; }
  }
  if (lane < top_k) {
    ids[t * top_k + lane] = my_sel_id;
    weights[t * top_k + lane] = my_sel_p / sel_sum;
  }
}

// One warp per token, so that the row of d_logits is written coalesced (one thread per
// token wrote 32 rows a column at a time: one sector per value). Every lane sums
// w_j * dw_j in slot order, as the one thread per token did; lane j < top_k holds slot
// j, and each expert's value is taken from the last slot naming it.
__global__ void router_backward_kernel(const std::int32_t* __restrict__ ids, const float* __restrict__ w,
                                       const float* __restrict__ dw, std::int64_t tokens, int experts,
                                       int top_k, float* __restrict__ dl) {
  const int lane = threadIdx.x & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; t < tokens;
       t += warps) {
    const std::int64_t b = t * top_k;
    float s = 0.f;
    for (int j = 0; j < top_k; ++j) s += w[b + j] * dw[b + j];
    int my_id = -1;
    float my_v = 0.f;
    if (lane < top_k) {
      my_id = ids[b + lane];
      my_v = w[b + lane] * (dw[b + lane] - s);
    }
    for (int e0 = 0; e0 < experts; e0 += 32) {
      const int e = e0 + lane;
      float v = 0.f;
      for (int j = 0; j < top_k; ++j) {
        const int id = __shfl_sync(0xffffffffu, my_id, j);
        const float x = __shfl_sync(0xffffffffu, my_v, j);
        if (id == e) v = x;
      }
      if (e < experts) dl[t * experts + e] = v;
    }
  }
}

// ---- permutation ----------------------------------------------------------------------
// Pairs a block takes per round: kPermuteItems per thread of kPermuteThreads.
constexpr int kPermuteThreads = 256;
constexpr int kPermuteItems = 4;
constexpr std::int64_t kPermuteTile = static_cast<std::int64_t>(kPermuteThreads) * kPermuteItems;

// Per-expert counts: a histogram per block in shared memory, then one global atomic per
// block and expert.
__global__ void count_kernel(const std::int32_t* __restrict__ ids, std::int64_t n, int experts,
                             std::int32_t* __restrict__ counts) {
  extern __shared__ std::int32_t hist[];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) hist[e] = 0;
  __syncthreads();
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    atomicAdd(&hist[ids[i]], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < experts; e += blockDim.x)
    if (hist[e]) atomicAdd(&counts[e], hist[e]);
}

// Exclusive prefix sum of the counts in one block: each thread sums a run of consecutive
// experts, the block scans those sums (warp shuffles, then the warps' totals), and each
// thread writes its run. (One thread walking the experts waited for one global load per
// expert: tens of microseconds at 128 experts.)
__global__ void scan_kernel(const std::int32_t* __restrict__ counts, int experts, std::int32_t* __restrict__ offsets,
                            std::int32_t* __restrict__ cursor) {
  __shared__ std::int32_t warp_sum[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  const int per = (experts + static_cast<int>(blockDim.x) - 1) / static_cast<int>(blockDim.x);
  const int lo = min(experts, static_cast<int>(threadIdx.x) * per), hi = min(experts, lo + per);
  std::int32_t mine = 0;
  for (int e = lo; e < hi; ++e) mine += counts[e];
  std::int32_t incl = mine;  // inclusive scan over the warp
  for (int o = 1; o < 32; o <<= 1) {
    const std::int32_t y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) warp_sum[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    std::int32_t x = lane < nwarps ? warp_sum[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const std::int32_t y = __shfl_up_sync(0xffffffffu, x, o);
      if (lane >= o) x += y;
    }
    warp_sum[lane] = x;  // inclusive over the warps
  }
  __syncthreads();
  std::int32_t acc = incl - mine + (warp > 0 ? warp_sum[warp - 1] : 0);
  for (int e = lo; e < hi; ++e) {
    offsets[e] = acc;
    cursor[e] = acc;
    acc += counts[e];
  }
  if (threadIdx.x == blockDim.x - 1) offsets[experts] = acc;  // the last run ends at the total
}

// Places kPermuteTile pairs per block and round: their ranks within the block come from a
// shared-memory histogram, and the block reserves each expert's run of positions with one
// global atomic (instead of one global atomic per pair, all of them queued on the
// experts' counters).
__global__ void place_kernel(const std::int32_t* __restrict__ ids, std::int64_t n, int experts,
                             std::int32_t* __restrict__ cursor, std::int32_t* __restrict__ pair_src,
                             std::int32_t* __restrict__ pair_pos) {
  extern __shared__ std::int32_t sh[];
  std::int32_t* hist = sh;
  std::int32_t* base = sh + experts;
  for (std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * kPermuteTile; start < n;
       start += static_cast<std::int64_t>(gridDim.x) * kPermuteTile) {
    for (int e = threadIdx.x; e < experts; e += blockDim.x) hist[e] = 0;
    __syncthreads();
    std::int32_t id[kPermuteItems], rank[kPermuteItems];
#pragma unroll
    for (int k = 0; k < kPermuteItems; ++k) {
      const std::int64_t i = start + static_cast<std::int64_t>(k) * blockDim.x + threadIdx.x;
      id[k] = i < n ? ids[i] : -1;
      rank[k] = id[k] >= 0 ? atomicAdd(&hist[id[k]], 1) : 0;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < experts; e += blockDim.x)
      if (hist[e]) base[e] = atomicAdd(&cursor[e], hist[e]);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kPermuteItems; ++k) {
      const std::int64_t i = start + static_cast<std::int64_t>(k) * blockDim.x + threadIdx.x;
      if (id[k] < 0) continue;
      const std::int32_t pos = base[id[k]] + rank[k];
      pair_src[pos] = static_cast<std::int32_t>(i);
      pair_pos[i] = pos;
    }
    __syncthreads();  // base and hist are rewritten by the next round
  }
}

// ---- row movement -----------------------------------------------------------------------
// One block per row; 16-byte vectors when the row allows it.
__global__ void gather_rows_kernel(const bf16_t* src, const std::int32_t* index, int index_div,
                                   const float* scale, std::int64_t rows, int hidden, bf16_t* dst) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int32_t idx = index[r];
    const std::int64_t s = idx / index_div;
    const float sc = scale ? scale[idx] : 1.0f;
    if ((hidden % 8) == 0 && sc == 1.0f) {
      const uint4* in = reinterpret_cast<const uint4*>(src + s * hidden);
      uint4* out = reinterpret_cast<uint4*>(dst + r * hidden);
      for (int i = threadIdx.x; i < hidden / 8; i += blockDim.x) out[i] = in[i];
    } else {
      for (int i = threadIdx.x; i < hidden; i += blockDim.x)
        st(dst, r * hidden + i, sc * ld(src, s * hidden + i));
    }
  }
}

// One thread per 8 consecutive values of a row (ffn % 8 == 0), 16-byte accesses.
__global__ void swiglu_fwd_kernel(const bf16_t* gu, std::int64_t rows, int ffn, bf16_t* a) {
  const int per_row = ffn / 8;
  const std::int64_t n = rows * per_row;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / per_row;
    const int c = static_cast<int>(i - r * per_row) * 8;
    const uint4 gv = *reinterpret_cast<const uint4*>(gu + r * 2 * ffn + c);
    const uint4 uv = *reinterpret_cast<const uint4*>(gu + r * 2 * ffn + ffn + c);
    float g8[8], u8[8], a8[8];
    unpack8(gv, g8);
    unpack8(uv, u8);
#pragma unroll
    for (int j = 0; j < 8; ++j) a8[j] = g8[j] * sigmoidf(g8[j]) * u8[j];
    *reinterpret_cast<uint4*>(a + r * ffn + c) = pack8(a8);
  }
}

// One warp per row, 16-byte accesses (ffn % 8 == 0); the row dot product is a warp sum.
__global__ void swiglu_bwd_kernel(const bf16_t* gu, const bf16_t* da_in, std::int64_t rows, int ffn,
                                  const std::int32_t* pair_src, const float* w_by_src, bf16_t* dgu,
                                  bf16_t* a_out, float* dw_out, bool dw_by_row) {
  const int lane = threadIdx.x & 31;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t r = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; r < rows;
       r += warps) {
    const float s = w_by_src ? w_by_src[pair_src[r]] : 1.0f;
    float dot = 0.f;
    for (int c = lane * 8; c < ffn; c += 32 * 8) {
      const std::int64_t ig = r * 2 * ffn + c, iu = ig + ffn, i = r * ffn + c;
      float g8[8], u8[8], d8[8], dg8[8], du8[8], a8[8];
      unpack8(*reinterpret_cast<const uint4*>(gu + ig), g8);
      unpack8(*reinterpret_cast<const uint4*>(gu + iu), u8);
      unpack8(*reinterpret_cast<const uint4*>(da_in + i), d8);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float sg = sigmoidf(g8[j]);
        const float silu = g8[j] * sg;
        const float av = silu * u8[j];
        dot += av * d8[j];
        const float da = s * d8[j];
        dg8[j] = da * u8[j] * (sg * (1.0f + g8[j] * (1.0f - sg)));
        du8[j] = da * silu;
        a8[j] = s * av;
      }
      *reinterpret_cast<uint4*>(dgu + ig) = pack8(dg8);
      *reinterpret_cast<uint4*>(dgu + iu) = pack8(du8);
      *reinterpret_cast<uint4*>(a_out + i) = pack8(a8);
    }
    if (dw_out) {
      for (int o = 16; o; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (lane == 0) dw_out[dw_by_row ? r : pair_src[r]] = dot;
    }
  }
}

__global__ void scatter_add_kernel(const bf16_t* y, const std::int32_t* pair_src, int top_k,
                                   const float* w_by_src, std::int64_t rows, int hidden, float* out) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int32_t src = pair_src[r];
    const float w = w_by_src ? w_by_src[src] : 1.0f;
    float* o = out + static_cast<std::int64_t>(src / top_k) * hidden;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // 4 values per atomic (sm_90 vector atomics); hidden % 8 == 0 keeps 16-byte alignment
    for (int i = threadIdx.x * 4; i < hidden; i += blockDim.x * 4) {
      const uint2 raw = *reinterpret_cast<const uint2*>(y + r * hidden + i);
      const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
      const float2 p0 = __bfloat1622float2(h[0]), p1 = __bfloat1622float2(h[1]);
      atomicAdd(reinterpret_cast<float4*>(o + i), make_float4(w * p0.x, w * p0.y, w * p1.x, w * p1.y));
    }
#else
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) atomicAdd(o + i, w * ld(y, r * hidden + i));
#endif
  }
}

// As scatter_add_kernel into bf16 rows: 4 values per 64-bit compare-and-swap; each add
// is done in fp32 on the current bf16 values and rounded once.
__global__ void scatter_add_bf16_kernel(const bf16_t* y, const std::int32_t* pair_src, int top_k,
                                        const float* w_by_src, std::int64_t rows, int hidden,
                                        bf16_t* out) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int32_t src = pair_src[r];
    const float w = w_by_src ? w_by_src[src] : 1.0f;
    bf16_t* o = out + static_cast<std::int64_t>(src / top_k) * hidden;
    for (int i = threadIdx.x * 4; i < hidden; i += blockDim.x * 4) {
      const uint2 raw = *reinterpret_cast<const uint2*>(y + r * hidden + i);
      const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
      const float2 p0 = __bfloat1622float2(h[0]), p1 = __bfloat1622float2(h[1]);
      const float add[4] = {w * p0.x, w * p0.y, w * p1.x, w * p1.y};
      auto* addr = reinterpret_cast<unsigned long long*>(o + i);
      unsigned long long old = *addr, assumed;
      do {
        assumed = old;
        const auto* cur = reinterpret_cast<const __nv_bfloat162*>(&assumed);
        const float2 c0 = __bfloat1622float2(cur[0]), c1 = __bfloat1622float2(cur[1]);
        unsigned long long next;
        auto* nx = reinterpret_cast<__nv_bfloat162*>(&next);
        nx[0] = __floats2bfloat162_rn(c0.x + add[0], c0.y + add[1]);
        nx[1] = __floats2bfloat162_rn(c1.x + add[2], c1.y + add[3]);
        old = atomicCAS(addr, assumed, next);
      } while (old != assumed);
    }
  }
}

__global__ void unpermute_kernel(const bf16_t* y, const std::int32_t* pair_pos, const float* w,
                                 std::int64_t tokens, int top_k, int hidden, bf16_t* ob, float* of) {
  for (std::int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
      float acc = 0.f;
      for (int j = 0; j < top_k; ++j) {
        const std::int64_t src = t * top_k + j;
        acc += (w ? w[src] : 1.0f) * ld(y, static_cast<std::int64_t>(pair_pos[src]) * hidden + i);
      }
      if (ob) st(ob, t * hidden + i, acc);
      if (of) of[t * hidden + i] = acc;
    }
  }
}

__global__ void pair_dot_kernel(const bf16_t* d_out, const bf16_t* y, const std::int32_t* pair_pos,
                                std::int64_t pairs, int top_k, int hidden, float* d_w) {
  __shared__ float red[32];
  for (std::int64_t src = blockIdx.x; src < pairs; src += gridDim.x) {
    const std::int64_t t = src / top_k;
    const std::int64_t p = pair_pos[src];
    float dot = 0.f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x)
      dot += ld(d_out, t * hidden + i) * ld(y, p * hidden + i);
    for (int o = 16; o; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = dot;
    __syncthreads();
    if (threadIdx.x == 0) {
      float tot = 0.f;
      for (unsigned w = 0; w < blockDim.x / 32; ++w) tot += red[w];
      d_w[src] = tot;
    }
    __syncthreads();
  }
}

__global__ void f32_to_bf16_kernel(const float* s, std::int64_t n, bf16_t* d) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    st(d, i, s[i]);
}
__global__ void bf16_to_f32_kernel(const bf16_t* s, std::int64_t n, float* d) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    d[i] = ld(s, i);
}
__global__ void add_into_kernel(const float* s, std::int64_t n, bf16_t* d) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    st(d, i, ld(d, i) + s[i]);
}
__global__ void fill_random_kernel(bf16_t* d, std::int64_t n, std::uint64_t seed, float scale) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::uint64_t z = seed + static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u01 = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    st(d, i, scale * (2.0f * u01 - 1.0f));
  }
}

__global__ void ptr_table_kernel(const PtrTableArgs args, const void** a, const void** b, void** c) {
  const int g = static_cast<int>(threadIdx.x + blockIdx.x * blockDim.x);
  if (g >= args.groups) return;
  a[g] = args.a[g];
  b[g] = args.b[g];
  c[g] = args.c[g];
}

__global__ void scatter_scalars_kernel(const float* vals, const std::int32_t* pair_src, std::int64_t rows,
                                       float* dst) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < rows;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    dst[pair_src[i]] += vals[i];
}

}  // namespace

cudaError_t softmax_topk(const float* logits, std::int64_t tokens, int experts, int top_k,
                         float* probs, std::int32_t* topk_ids, float* topk_weights,
                         cudaStream_t stream) {
  if (experts > 1024 || top_k > 32 || top_k > experts || top_k < 1) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int warps = 8;
  const unsigned grid = grid_for(tokens, warps, 1LL << 30);
  const auto launch = [&](auto kernel) {
    kernel<<<grid, warps * 32, 0, stream>>>(logits, tokens, experts, top_k, probs, topk_ids, topk_weights);
  };
  if (experts <= 32) launch(softmax_topk_kernel<1>);
  else if (experts <= 64) launch(softmax_topk_kernel<2>);
  else if (experts <= 128) launch(softmax_topk_kernel<4>);
  else if (experts <= 256) launch(softmax_topk_kernel<8>);
  else if (experts <= 512) launch(softmax_topk_kernel<16>);
  else launch(softmax_topk_kernel<32>);
  return cudaGetLastError();
}

cudaError_t router_backward(const std::int32_t* topk_ids, const float* topk_weights,
                            const float* d_topk_weights, std::int64_t tokens, int experts,
                            int top_k, float* d_logits, cudaStream_t stream) {
  if (top_k < 1 || top_k > 32 || experts < 1) return cudaErrorInvalidValue;
  if (tokens == 0) return cudaSuccess;
  const int warps = 8;
  router_backward_kernel<<<grid_for(tokens, warps, 1LL << 30), warps * 32, 0, stream>>>(
      topk_ids, topk_weights, d_topk_weights, tokens, experts, top_k, d_logits);
  return cudaGetLastError();
}

cudaError_t permute_pairs(const std::int32_t* topk_ids, std::int64_t tokens, int top_k,
                          int experts, std::int32_t* counts, std::int32_t* offsets,
                          std::int32_t* pair_src, std::int32_t* pair_pos,
                          std::int32_t* scratch, cudaStream_t stream) {
  if (experts < 1 || experts > kMaxPermuteExperts) return cudaErrorInvalidValue;
  const std::int64_t n = tokens * top_k;
  cudaError_t e = cudaMemsetAsync(counts, 0, sizeof(std::int32_t) * static_cast<std::size_t>(experts), stream);
  if (e != cudaSuccess) return e;
  const auto ex = static_cast<std::size_t>(experts);
  const unsigned blocks = grid_for(n, static_cast<int>(kPermuteTile), 1024);
  if (n > 0) count_kernel<<<blocks, kPermuteThreads, sizeof(std::int32_t) * ex, stream>>>(topk_ids, n, experts, counts);
  scan_kernel<<<1, 1024, 0, stream>>>(counts, experts, offsets, scratch);
  if (n > 0) {
    place_kernel<<<blocks, kPermuteThreads, 2 * sizeof(std::int32_t) * ex, stream>>>(topk_ids, n, experts, scratch,
                                                                                    pair_src, pair_pos);
  }
  return cudaGetLastError();
}

cudaError_t gather_rows(const bf16_t* src, const std::int32_t* index, int index_div,
                        const float* scale_by_index, std::int64_t rows, int hidden,
                        bf16_t* dst, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  gather_rows_kernel<<<grid_for(rows, 1, 1 << 20), 128, 0, stream>>>(src, index, index_div,
                                                                     scale_by_index, rows, hidden, dst);
  return cudaGetLastError();
}

cudaError_t swiglu_forward(const bf16_t* gu, std::int64_t rows, int ffn, bf16_t* a,
                           cudaStream_t stream) {
  if (ffn % 8) return cudaErrorInvalidValue;
  const std::int64_t n = rows * (ffn / 8);
  if (n == 0) return cudaSuccess;
  swiglu_fwd_kernel<<<grid_for(n, 256, 1 << 16), 256, 0, stream>>>(gu, rows, ffn, a);
  return cudaGetLastError();
}

cudaError_t swiglu_backward(const bf16_t* gu, const bf16_t* da_in, std::int64_t rows, int ffn,
                            const std::int32_t* pair_src, const float* weight_by_src, bf16_t* dgu,
                            bf16_t* a_out, float* d_weight, bool d_weight_by_row, cudaStream_t stream) {
  if (ffn % 8) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  swiglu_bwd_kernel<<<grid_for(rows, 8, 1 << 20), 256, 0, stream>>>(
      gu, da_in, rows, ffn, pair_src, weight_by_src, dgu, a_out, d_weight, d_weight_by_row);
  return cudaGetLastError();
}

cudaError_t scatter_add_rows(const bf16_t* y, const std::int32_t* pair_src, int top_k,
                             const float* weight_by_src, std::int64_t rows, int hidden,
                             float* out, cudaStream_t stream) {
  if (hidden % 8) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  scatter_add_kernel<<<grid_for(rows, 1, 1 << 20), 256, 0, stream>>>(y, pair_src, top_k, weight_by_src,
                                                                     rows, hidden, out);
  return cudaGetLastError();
}

cudaError_t scatter_add_rows_bf16(const bf16_t* y, const std::int32_t* pair_src, int top_k,
                                  const float* weight_by_src, std::int64_t rows, int hidden,
                                  bf16_t* out, cudaStream_t stream) {
  if (hidden % 8) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  scatter_add_bf16_kernel<<<grid_for(rows, 1, 1 << 20), 256, 0, stream>>>(y, pair_src, top_k, weight_by_src,
                                                                          rows, hidden, out);
  return cudaGetLastError();
}

cudaError_t unpermute_sum(const bf16_t* y, const std::int32_t* pair_pos, const float* weights,
                          std::int64_t tokens, int top_k, int hidden, bf16_t* out_bf16,
                          float* out_f32, cudaStream_t stream) {
  if (tokens == 0) return cudaSuccess;
  unpermute_kernel<<<grid_for(tokens, 1, 1 << 20), 256, 0, stream>>>(y, pair_pos, weights, tokens, top_k,
                                                                     hidden, out_bf16, out_f32);
  return cudaGetLastError();
}

cudaError_t pair_dot(const bf16_t* d_out, const bf16_t* y, const std::int32_t* pair_pos,
                     std::int64_t tokens, int top_k, int hidden, float* d_w,
                     cudaStream_t stream) {
  const std::int64_t pairs = tokens * top_k;
  if (pairs == 0) return cudaSuccess;
  pair_dot_kernel<<<grid_for(pairs, 1, 1 << 20), 256, 0, stream>>>(d_out, y, pair_pos, pairs, top_k, hidden, d_w);
  return cudaGetLastError();
}

cudaError_t f32_to_bf16(const float* src, std::int64_t n, bf16_t* dst, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  f32_to_bf16_kernel<<<grid_for(n, 256, 1 << 16), 256, 0, stream>>>(src, n, dst);
  return cudaGetLastError();
}
cudaError_t bf16_to_f32(const bf16_t* src, std::int64_t n, float* dst, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  bf16_to_f32_kernel<<<grid_for(n, 256, 1 << 16), 256, 0, stream>>>(src, n, dst);
  return cudaGetLastError();
}
cudaError_t add_f32_into_bf16(const float* src, std::int64_t n, bf16_t* dst, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  add_into_kernel<<<grid_for(n, 256, 1 << 16), 256, 0, stream>>>(src, n, dst);
  return cudaGetLastError();
}
cudaError_t fill_random_bf16(bf16_t* dst, std::int64_t n, std::uint64_t seed, float scale,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_random_kernel<<<grid_for(n, 256, 1 << 16), 256, 0, stream>>>(dst, n, seed, scale);
  return cudaGetLastError();
}
cudaError_t fill_ptr_tables(const PtrTableArgs& args, const void** a, const void** b, void** c,
                            cudaStream_t stream) {
  if (args.groups <= 0) return cudaSuccess;
  if (args.groups > kMaxPtrGroups) return cudaErrorInvalidValue;
  ptr_table_kernel<<<(args.groups + 127) / 128, 128, 0, stream>>>(args, a, b, c);
  return cudaGetLastError();
}

cudaError_t scatter_add_scalars(const float* vals, const std::int32_t* pair_src, std::int64_t rows,
                                float* dst, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  scatter_scalars_kernel<<<grid_for(rows, 256, 4096), 256, 0, stream>>>(vals, pair_src, rows, dst);
  return cudaGetLastError();
}

}  // namespace moehub::kernels
