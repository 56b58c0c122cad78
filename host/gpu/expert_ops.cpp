// Expert-layer building blocks shared by the schedules and the benchmarks.
#include "expert_ops.hpp"

#include "cuda_check.hpp"

namespace moehub::gpu {

namespace k = moehub::kernels;
namespace {
void ck(cudaError_t e, const char* what) { check_cuda(e, what, __FILE__, __LINE__); }
}  // namespace

Dims dims(const LayerConfig& c) {
  return {c.tokens, c.hidden, c.ffn, c.experts, c.top_k, c.local_experts(), c.ep};
}

const bf16_t* wg(const bf16_t* w, const Dims& d, std::int64_t e) { return w + e * d.H * d.F; }
const bf16_t* wu(const bf16_t* w, const Dims& d, std::int64_t e) { return w + (d.El + e) * d.H * d.F; }
const bf16_t* wd(const bf16_t* w, const Dims& d, std::int64_t e) { return w + 2 * d.El * d.H * d.F + e * d.F * d.H; }
float* dwg(float* w, const Dims& d, std::int64_t e) { return w + e * d.H * d.F; }
float* dwu(float* w, const Dims& d, std::int64_t e) { return w + (d.El + e) * d.H * d.F; }
float* dwd(float* w, const Dims& d, std::int64_t e) { return w + 2 * d.El * d.H * d.F + e * d.F * d.H; }


/// Expert forward over rows grouped by local expert (rows[i] rows for expert i, in order).
void expert_forward(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* W, bf16_t* G, bf16_t* U, bf16_t* A, bf16_t* Y, cudaStream_t s) {
  GemmCall gu;
  GemmCall dn;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto e = static_cast<std::int64_t>(i);
    gu.groups.push_back({X + off * d.H, wg(W, d, e), G + off * d.F, rows[i], d.F, d.H});
    gu.groups.push_back({X + off * d.H, wu(W, d, e), U + off * d.F, rows[i], d.F, d.H});
    dn.groups.push_back({A + off * d.F, wd(W, d, e), Y + off * d.H, rows[i], d.H, d.F});
    off += rows[i];
  }
  g.run(gu, impl);
  ck(k::swiglu_forward(G, U, off * d.F, A, s), "swiglu_forward");
  g.run(dn, impl);
}

/// dX_rows = dG Wg^T + dU Wu^T over grouped rows.
void expert_dx(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dG,
               const bf16_t* dU, const bf16_t* W, bf16_t* dX) {
  GemmCall c1, c2;
  c1.trans_b = c2.trans_b = true;
  c2.beta = 1.f;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto e = static_cast<std::int64_t>(i);
    c1.groups.push_back({dG + off * d.F, wg(W, d, e), dX + off * d.H, rows[i], d.H, d.F});
    c2.groups.push_back({dU + off * d.F, wu(W, d, e), dX + off * d.H, rows[i], d.H, d.F});
    off += rows[i];
  }
  g.run(c1, impl);
  g.run(c2, impl);
}

/// dA = dY Wd^T over grouped rows.
void expert_da(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dY,
               const bf16_t* W, bf16_t* dA) {
  GemmCall c;
  c.trans_b = true;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    c.groups.push_back({dY + off * d.H, wd(W, d, static_cast<std::int64_t>(i)), dA + off * d.F, rows[i], d.F, d.H});
    off += rows[i];
  }
  g.run(c, impl);
}

/// Weight gradients over grouped rows, fp32, C = beta*C + ...:
/// dWg += X^T dG, dWu += X^T dU, dWd += A^T dY.
void expert_dw(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* X,
               const bf16_t* dG, const bf16_t* dU, const bf16_t* A, const bf16_t* dY, float* dW, float beta) {
  GemmCall c1, c2;
  c1.trans_a = c2.trans_a = true;
  c1.c_fp32 = c2.c_fp32 = true;
  c1.beta = c2.beta = beta;
  std::int64_t off = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto e = static_cast<std::int64_t>(i);
    c1.groups.push_back({X + off * d.H, dG + off * d.F, dwg(dW, d, e), d.H, d.F, rows[i]});
    c1.groups.push_back({X + off * d.H, dU + off * d.F, dwu(dW, d, e), d.H, d.F, rows[i]});
    c2.groups.push_back({A + off * d.F, dY + off * d.H, dwd(dW, d, e), d.F, d.H, rows[i]});
    off += rows[i];
  }
  g.run(c1, impl);
  g.run(c2, impl);
}

}  // namespace moehub::gpu
