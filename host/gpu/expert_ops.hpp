// Building blocks of the expert computation over rows grouped by local expert
// (rows[i] consecutive rows for local expert e0 + i, e0 = 0 unless given: a run of
// consecutive experts of the partition), on a GemmRunner's stream.
// Gate and up projections are one GEMM per expert: Wgu_e = [Wg_e | Wu_e] ([H][2F]),
// so GU rows hold [g | u] side by side ([rows][2F]).
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

// Views into a partition (PartitionLayout, layout.hpp).
PartitionLayout layout(const Dims& d);
const bf16_t* wgu(const bf16_t* w, const Dims& d, std::int64_t e);
const bf16_t* wd(const bf16_t* w, const Dims& d, std::int64_t e);

/// GU = X Wgu.
void expert_gate_up(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* W, bf16_t* GU, std::int64_t e0 = 0);
/// Y = A Wd.
void expert_down(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* A,
                 const bf16_t* W, bf16_t* Y, std::int64_t e0 = 0);
/// GU = X Wgu, A = silu(G) * U, Y = A Wd.
void expert_forward(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows,
                    const bf16_t* X, const bf16_t* W, bf16_t* GU, bf16_t* A, bf16_t* Y, cudaStream_t s,
                    std::int64_t e0 = 0);
/// dX = dGU Wgu^T.
void expert_dx(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dGU,
               const bf16_t* W, bf16_t* dX, std::int64_t e0 = 0);
/// dA = dY Wd^T.
void expert_da(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* dY,
               const bf16_t* W, bf16_t* dA, std::int64_t e0 = 0);
/// Which weight gradients expert_dw computes.
enum class DwPart { kBoth, kGateUp, kDown };
/// dWgu = beta dWgu + X^T dGU, dWd = beta dWd + A^T dY (fp32).
void expert_dw(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* X,
               const bf16_t* dGU, const bf16_t* A, const bf16_t* dY, float* dW, float beta, std::int64_t e0 = 0,
               DwPart part = DwPart::kBoth);
/// As above into a bf16 gradient partition (same layout): fp32 GEMM arithmetic, C read and
/// written in bf16 (one rounding per call).
void expert_dw(GemmRunner& g, GemmImpl impl, const Dims& d, const std::vector<std::int64_t>& rows, const bf16_t* X,
               const bf16_t* dGU, const bf16_t* A, const bf16_t* dY, bf16_t* dW, float beta, std::int64_t e0 = 0,
               DwPart part = DwPart::kBoth);

}  // namespace moehub::gpu
