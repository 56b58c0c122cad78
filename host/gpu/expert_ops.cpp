// Expert-layer building blocks shared by the schedules and the benchmarks.
#include "expert_ops.hpp"

#include <numeric>

#include "cuda_check.hpp"

namespace moehub::gpu {

namespace k = moehub::kernels;

Dims dims(const LayerConfig& c) {
  return {c.tokens, c.hidden, c.ffn, c.experts, c.top_k, c.local_experts(), c.ep};
}

PartitionLayout layout(const Dims& d) { return {d.El, d.H, d.F}; }
const bf16_t* wgu(const bf16_t* w, const Dims& d, std::int64_t e) { return w + layout(d).gate_up(e); }
const bf16_t* wd(const bf16_t* w, const Dims& d, std::int64_t e) { return w + layout(d).down(e); }

namespace {
// One GEMM group per local expert e0 + i: A and C rows packed one after the other ([rows][k]
// and [rows][n]), B the expert's matrix (b_of), as the wgmma kernel takes them.
template <typename BOf>
GemmCall packed_call(const std::vector<std::int64_t>& rows, bool trans_b, const bf16_t* A, std::int64_t k, BOf b_of,
                     bf16_t* C, std::int64_t n, std::int64_t e0) {
  GemmCall c;
  c.trans_b = trans_b;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    c.groups.push_back({A + off * k, b_of(e0 + static_cast<std::int64_t>(i)), C + off * n, rows[i], n, k});
    off += rows[i];
  }
  return c;
}
}  // namespace

void expert_gate_up(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* W, bf16_t* GU, std::int64_t e0) {
  g.run(packed_call(rows, false, X, d.H, [&](std::int64_t e) { return wgu(W, d, e); }, GU, 2 * d.F, e0), impl);
}

void expert_down(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* A,
                 const bf16_t* W, bf16_t* Y, std::int64_t e0) {
  g.run(packed_call(rows, false, A, d.F, [&](std::int64_t e) { return wd(W, d, e); }, Y, d.H, e0), impl);
}

void expert_forward(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* W, bf16_t* GU, bf16_t* A, bf16_t* Y, cudaStream_t s,
                    std::int64_t e0) {
  expert_gate_up(g, impl, d, rows, X, W, GU, e0);
  const std::int64_t total = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  MOEHUB_CUDA_CHECK(k::swiglu_forward(GU, total, static_cast<int>(d.F), A, s));
  g.run(packed_call(rows, false, A, d.F, [&](std::int64_t e) { return wd(W, d, e); }, Y, d.H, e0), impl);
}

void expert_dx(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dGU,
               const bf16_t* W, bf16_t* dX, std::int64_t e0) {
  g.run(packed_call(rows, true, dGU, 2 * d.F, [&](std::int64_t e) { return wgu(W, d, e); }, dX, d.H, e0), impl);
}

void expert_da(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dY,
               const bf16_t* W, bf16_t* dA, std::int64_t e0) {
  g.run(packed_call(rows, true, dY, d.H, [&](std::int64_t e) { return wd(W, d, e); }, dA, d.F, e0), impl);
}

namespace {
// dW offsets are in elements, the same for fp32 and bf16 partitions.
template <typename GradT>
void expert_dw_into(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* dGU, const bf16_t* A, const bf16_t* dY, GradT* dW, float beta,
                    std::int64_t e0, DwPart part) {
  GemmCall c1, c2;
  c1.trans_a = c2.trans_a = true;
  c1.c_fp32 = c2.c_fp32 = sizeof(GradT) == 4;
  c1.beta = c2.beta = beta;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto e = e0 + static_cast<std::int64_t>(i);
    c1.groups.push_back({X + off * d.H, dGU + off * 2 * d.F, dW + layout(d).gate_up(e), d.H, 2 * d.F, rows[i]});
    c2.groups.push_back({A + off * d.F, dY + off * d.H, dW + layout(d).down(e), d.F, d.H, rows[i]});
    off += rows[i];
  }
  if (part != DwPart::kDown) g.run(c1, impl);
  if (part != DwPart::kGateUp) g.run(c2, impl);
}
}  // namespace

void expert_dw(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* X,
               const bf16_t* dGU, const bf16_t* A, const bf16_t* dY, float* dW, float beta, std::int64_t e0,
               DwPart part) {
  expert_dw_into(g, impl, d, rows, X, dGU, A, dY, dW, beta, e0, part);
}

void expert_dw(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* X,
               const bf16_t* dGU, const bf16_t* A, const bf16_t* dY, bf16_t* dW, float beta, std::int64_t e0,
               DwPart part) {
  expert_dw_into(g, impl, d, rows, X, dGU, A, dY, dW, beta, e0, part);
}

}  // namespace moehub::gpu
