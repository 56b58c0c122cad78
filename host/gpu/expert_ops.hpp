// Building blocks of the expert computation over rows grouped by local expert
// (rows[i] consecutive rows for local expert i), on a GemmRunner's stream.
#pragma once

#include <cstdint>
#include <vector>

#include "gemm.hpp"
#include "layer.hpp"

namespace moehub::gpu {

struct Dims {
  std::int64_t T, H, F, E, K, El, N;
};
Dims dims(const LayerConfig& c);

// Views into a partition (layout in layer.hpp) and its fp32 gradient.
const bf16_t* wg(const bf16_t* w, const Dims& d, std::int64_t e);
const bf16_t* wu(const bf16_t* w, const Dims& d, std::int64_t e);
const bf16_t* wd(const bf16_t* w, const Dims& d, std::int64_t e);
float* dwg(float* w, const Dims& d, std::int64_t e);
float* dwu(float* w, const Dims& d, std::int64_t e);
float* dwd(float* w, const Dims& d, std::int64_t e);

/// G = X Wg, U = X Wu, A = silu(G) * U, Y = A Wd.
void expert_forward(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* W, bf16_t* G, bf16_t* U, bf16_t* A, bf16_t* Y, cudaStream_t s);
/// dX = dG Wg^T + dU Wu^T.
void expert_dx(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dG,
               const bf16_t* dU, const bf16_t* W, bf16_t* dX);
/// dA = dY Wd^T.
void expert_da(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dY,
               const bf16_t* W, bf16_t* dA);
/// dWg = beta dWg + X^T dG, dWu = beta dWu + X^T dU, dWd = beta dWd + A^T dY (fp32).
void expert_dw(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* X,
               const bf16_t* dG, const bf16_t* dU, const bf16_t* A, const bf16_t* dY, float* dW, float beta);

}  // namespace moehub::gpu
