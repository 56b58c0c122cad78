// One ring hop's compute (ring_hop.hpp).
#include "ring_hop.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"

namespace moehub::gpu {

namespace k = moehub::kernels;

HopBufs alloc_hop(RankAllocator& m, const Dims& d, std::int64_t rows, bool backward, bool y_over_x) {
  HopBufs b;
  const auto R = std::max<std::int64_t>(rows, 1);
  const auto RH = static_cast<std::size_t>(R * d.H), RF = static_cast<std::size_t>(R * d.F);
  b.x = m.alloc_n<bf16_t>(RH, "hop_x");
  b.gu = m.alloc_n<bf16_t>(2 * RF, "hop_gate_up_act");
  b.a = m.alloc_n<bf16_t>(RF, "hop_swiglu_out");
  b.y = y_over_x ? b.x : m.alloc_n<bf16_t>(RH, backward ? "hop_dx" : "hop_expert_out");
  if (backward) {
    b.dout = m.alloc_n<bf16_t>(RH, "hop_d_out");
    b.dtw = m.alloc_n<float>(static_cast<std::size_t>(R), "hop_d_topk_weights");
  }
  return b;
}

void free_hop(RankAllocator& m, HopBufs& b) {
  if (b.y == b.x) b.y = nullptr;  // y over x (alloc_hop): one buffer
  for (void* p : {static_cast<void*>(b.x), static_cast<void*>(b.dout), static_cast<void*>(b.gu),
                  static_cast<void*>(b.a), static_cast<void*>(b.y), static_cast<void*>(b.dtw)})
    if (p) m.free(p);
  b = HopBufs{};
}

void hop_chunk_scatter(const HopBufs& b, const Dims& d, std::int64_t rows, const std::int32_t* src, const float* w,
                       float* acc32, bf16_t* acc16, cudaStream_t s) {
  const int K = static_cast<int>(d.K), H = static_cast<int>(d.H);
  if (acc16)
    MOEHUB_CUDA_CHECK(k::scatter_add_rows_bf16(b.y, src, K, w, rows, H, acc16, s));
  else
    MOEHUB_CUDA_CHECK(k::scatter_add_rows(b.y, src, K, w, rows, H, acc32, s));
}

HopKernel hop_kernel_of(const std::string& name) {
  static const std::pair<const char*, HopKernel> kNames[] = {
      {"gather_x", HopKernel::kGatherX},
      {"gather_x_d_out", HopKernel::kGatherXDout},
      {"gemm1_gate_up", HopKernel::kGemmGateUp},
      {"swiglu", HopKernel::kSwiglu},
      {"gemm2_down", HopKernel::kGemmDown},
      {"gemm_d_act", HopKernel::kGemmDAct},
      {"swiglu_backward", HopKernel::kSwigluBackward},
      {"gemm_d_x", HopKernel::kGemmDX},
      {"scatter_out", HopKernel::kScatterOut},
      {"scatter_d_x", HopKernel::kScatterDX},
      {"scatter_d_topk_weights", HopKernel::kScatterDTopkWeights},
      {"wait_accum", HopKernel::kWaitAccum},
      {"gemm_d_w_gate_up", HopKernel::kGemmDWGateUp},
      {"gemm_d_w_down", HopKernel::kGemmDWDown},
  };
  for (const auto& [n, kind] : kNames)
    if (name == n) return kind;
  throw std::logic_error("ring step '" + name + "' has no GPU kernel (ring_hop.cpp)");
}

void run_hop_kernel(const plan::KernelStep& step, GemmRunner& g, GemmImpl impl, const Dims& d, const plan::ChunkSteps& ch,
                    const HopChunkIO& io, HopBufs& b, cudaStream_t s) {
  const int K = static_cast<int>(d.K), H = static_cast<int>(d.H), F = static_cast<int>(d.F);
  const std::vector<std::int64_t>& rows = ch.expert_rows;
  const std::int64_t M = ch.rows, e0 = ch.first;
  switch (hop_kernel_of(step.name)) {
    case HopKernel::kGatherX:
      MOEHUB_CUDA_CHECK(k::gather_rows(io.x, io.src, K, nullptr, M, H, b.x, s));
      break;
    case HopKernel::kGatherXDout:
      MOEHUB_CUDA_CHECK(k::gather_rows(io.x, io.src, K, nullptr, M, H, b.x, s));
      MOEHUB_CUDA_CHECK(k::gather_rows(io.dout, io.src, K, nullptr, M, H, b.dout, s));
      break;
    case HopKernel::kGemmGateUp:
      expert_gate_up(g, impl, d, rows, b.x, io.W, b.gu, e0);
      break;
    case HopKernel::kSwiglu:
      MOEHUB_CUDA_CHECK(k::swiglu_forward(b.gu, M, F, b.a, s));
      break;
    case HopKernel::kGemmDown:
      expert_down(g, impl, d, rows, b.a, io.W, b.y, e0);
      break;
    case HopKernel::kGemmDAct:
      expert_da(g, impl, d, rows, b.dout, io.W, b.a, e0);  // unscaled dA' = d_out Wd^T
      break;
    case HopKernel::kSwigluBackward:
      MOEHUB_CUDA_CHECK(
          k::swiglu_backward(b.gu, b.a, M, F, io.src, io.topk_weights, b.gu, b.a, io.dtw, io.dtw_per_row, s));
      break;
    case HopKernel::kGemmDX:
      expert_dx(g, impl, d, rows, b.gu, io.W, b.y, e0);
      break;
    case HopKernel::kScatterOut:
      hop_chunk_scatter(b, d, M, io.src, io.topk_weights, io.acc32, io.acc16, s);
      break;
    case HopKernel::kScatterDX:
      hop_chunk_scatter(b, d, M, io.src, nullptr, io.acc32, io.acc16, s);
      break;
    case HopKernel::kScatterDTopkWeights:
      MOEHUB_CUDA_CHECK(k::scatter_add_scalars(b.dtw, io.src, M, io.dtw_acc, s));
      break;
    case HopKernel::kWaitAccum:
      if (io.wait_accum) io.wait_accum();
      break;
    case HopKernel::kGemmDWGateUp:
    case HopKernel::kGemmDWDown: {
      if (io.dw_override) return io.dw_override(step);
      const DwPart part = hop_kernel_of(step.name) == HopKernel::kGemmDWGateUp ? DwPart::kGateUp : DwPart::kDown;
      if (io.dw16)
        expert_dw(g, impl, d, rows, b.x, b.gu, b.a, b.dout, io.dw16, 1.f, e0, part);
      else
        expert_dw(g, impl, d, rows, b.x, b.gu, b.a, b.dout, io.dw32, 1.f, e0, part);
      break;
    }
  }
}

void run_hop_chunk(GemmRunner& g, GemmImpl impl, const Dims& d, const plan::ChunkSteps& ch, const HopChunkIO& io,
                   HopBufs& b, cudaStream_t s) {
  for (const plan::KernelStep& step : ch.kernels) run_hop_kernel(step, g, impl, d, ch, io, b, s);
}

plan::RingRouting ring_routing(const LayerConfig& c, const CountMatrix& cm) {
  return plan::uniform_ring_routing(c.ep, c.experts, c.tokens, cm.raw());
}

plan::RingOptions ring_step_options(const LayerConfig& c, plan::RingMode mode) {
  plan::RingOptions o;
  o.chunk_rows = c.hop_chunk_rows;
  o.accum_bytes = c.ring_accum == RingAccum::kBf16 ? 2 : 4;
  if (mode == plan::RingMode::kExpert) o.grad_bytes = o.accum_bytes;
  return o;
}

}  // namespace moehub::gpu
