// One ring hop's compute (ring_hop.hpp).
#include "ring_hop.hpp"

#include <algorithm>

#include "cuda_check.hpp"

namespace moehub::gpu {

namespace k = moehub::kernels;

HopBufs alloc_hop(RankAllocator& m, const Dims& d, std::int64_t rows, bool backward) {
  HopBufs b;
  const auto R = std::max<std::int64_t>(rows, 1);
  const auto RH = static_cast<std::size_t>(R * d.H), RF = static_cast<std::size_t>(R * d.F);
  b.x = m.alloc_n<bf16_t>(RH, "hop_x");
  b.gu = m.alloc_n<bf16_t>(2 * RF, "hop_gate_up_act");
  b.a = m.alloc_n<bf16_t>(RF, "hop_swiglu_out");
  b.y = m.alloc_n<bf16_t>(RH, backward ? "hop_dx" : "hop_expert_out");
  if (backward) {
    b.dout = m.alloc_n<bf16_t>(RH, "hop_d_out");
    b.dtw = m.alloc_n<float>(static_cast<std::size_t>(R), "hop_d_topk_weights");
  }
  return b;
}

void free_hop(RankAllocator& m, HopBufs& b) {
  for (void* p : {static_cast<void*>(b.x), static_cast<void*>(b.dout), static_cast<void*>(b.gu),
                  static_cast<void*>(b.a), static_cast<void*>(b.y), static_cast<void*>(b.dtw)})
    if (p) m.free(p);
  b = HopBufs{};
}

void hop_chunk_forward(GemmRunner& g, GemmImpl impl, const Dims& d, const plan::HopChunk& ch, const bf16_t* x,
                       const std::int32_t* src, const bf16_t* W, HopBufs& b, cudaStream_t s) {
  MOEHUB_CUDA_CHECK(k::gather_rows(x, src, static_cast<int>(d.K), nullptr, ch.rows, static_cast<int>(d.H), b.x, s));
  expert_forward(g, impl, d, ch.expert_rows, b.x, W, b.gu, b.a, b.y, s, ch.first);
}

void hop_chunk_backward(GemmRunner& g, GemmImpl impl, const Dims& d, const plan::HopChunk& ch, const bf16_t* x,
                        const bf16_t* dout, const std::int32_t* src, const float* topk_weights, const bf16_t* W,
                        float* dtw, bool dtw_per_row, HopBufs& b, cudaStream_t s) {
  const int K = static_cast<int>(d.K), H = static_cast<int>(d.H);
  MOEHUB_CUDA_CHECK(k::gather_rows(x, src, K, nullptr, ch.rows, H, b.x, s));
  MOEHUB_CUDA_CHECK(k::gather_rows(dout, src, K, nullptr, ch.rows, H, b.dout, s));
  expert_gate_up(g, impl, d, ch.expert_rows, b.x, W, b.gu, ch.first);
  expert_da(g, impl, d, ch.expert_rows, b.dout, W, b.a, ch.first);  // unscaled dA' = d_out Wd^T
  MOEHUB_CUDA_CHECK(k::swiglu_backward(b.gu, b.a, ch.rows, static_cast<int>(d.F), src, topk_weights, b.gu, b.a, dtw,
                                       dtw_per_row, s));
  expert_dx(g, impl, d, ch.expert_rows, b.gu, W, b.y, ch.first);
}

void hop_chunk_scatter(const HopBufs& b, const Dims& d, std::int64_t rows, const std::int32_t* src, const float* w,
                       float* acc32, bf16_t* acc16, cudaStream_t s) {
  const int K = static_cast<int>(d.K), H = static_cast<int>(d.H);
  if (acc16)
    MOEHUB_CUDA_CHECK(k::scatter_add_rows_bf16(b.y, src, K, w, rows, H, acc16, s));
  else
    MOEHUB_CUDA_CHECK(k::scatter_add_rows(b.y, src, K, w, rows, H, acc32, s));
}

}  // namespace moehub::gpu
