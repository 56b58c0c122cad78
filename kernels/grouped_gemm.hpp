// Grouped bf16 GEMM for the expert layers on Hopper (sm_90a): one persistent kernel
// computes, for every group g (an expert),
//
//   C_g[m_g][n] = A_g[m_g][k] * op(B_g)        (fp32 accumulation, bf16 out, row-major)
//
// where the groups' rows are packed one after the other (A_g starts at row
// row_start(g) of A, C_g likewise) and B_g = B + g * k * n is [k][n] (b_nk = false) or
// [n][k] (b_nk = true, op = transpose). All groups share n and k; m_g may differ and
// may be 0. This is the shape of every expert GEMM of the layer except the weight
// gradients: forward gate+up (X Wgu) and down (A Wd), backward dX = dGU Wgu^T and
// dA = dY Wd^T.
//
// Design: tiles of 128 x 256 outputs over 64-wide K blocks; the bulk tensor copy engine
// (TMA, 128-byte swizzle) fills a 4-stage shared-memory ring guarded by mbarriers; one
// producer warp issues the copies, two consumer warpgroups each run wgmma m64n256k16
// on half of the tile's rows; the epilogue converts each consumer's fp32 accumulators to
// bf16 in 64-column slabs, which leave through the tensor copy engine when all of the
// consumer's 64 rows belong to the group, and otherwise are staged through padded shared
// memory and stored as whole 128-byte row runs with 16-byte stores (rows past m_g and
// columns past n are masked). The grid is persistent (one block per
// multiprocessor) and walks a flat list of all groups' tiles, so the small per-expert
// GEMMs of fine-grained MoE models fill the GPU together rather than one at a time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace moehub::kernels {

constexpr int kGroupedGemmMaxGroups = 256;

struct GroupedGemmArgs {
  const void* a = nullptr;  ///< bf16 [sum m_g][k]
  const void* b = nullptr;  ///< bf16, group g at element offset g * k * n
  void* c = nullptr;        ///< bf16 [sum m_g][n]
  std::int64_t n = 0, k = 0;
  bool b_nk = false;              ///< B_g stored [n][k] (used transposed)
  std::vector<std::int64_t> rows;  ///< m_g per group
};

/// Empty when grouped_gemm_bf16 can run `args` on the current device; otherwise the
/// reason (device not sm_90, too many groups, n or k not a multiple of 8, a pointer not
/// 16-byte aligned, sizes past 32-bit tile coordinates).
std::string grouped_gemm_unsupported(const GroupedGemmArgs& args);

/// Enqueues the grouped GEMM on `stream` and returns the launch status, or, without
/// launching, cudaErrorNotSupported for a call grouped_gemm_unsupported() refuses.
cudaError_t grouped_gemm_bf16(const GroupedGemmArgs& args, cudaStream_t stream);

// Weight-gradient grouped GEMM (grouped_gemm_wgrad.cu), for every group g (an expert):
//
//   C_g[m][n] = A_g^T B_g + beta * C_g        (A_g: [k_g][m], B_g: [k_g][n]; fp32 accumulation)
//
// where the groups' A and B rows are packed one after the other (group g's k_g rows start
// at row k_0 + ... + k_{g-1} of A and of B) and C_g = C + g * m * n elements, fp32 or bf16.
// k_g may differ and may be 0 (then C_g = beta * C_g; with beta = 0 it is cleared). C is
// not read when beta = 0. This is the shape of the layer's weight gradients:
// dWgu_e = X_e^T dGU_e ([H][2F]) and dWd_e = A_e^T dY_e ([F][H]), reduced over each
// expert's tokens.
//
// Design: the structure of grouped_gemm_bf16 (128 x 256 output tiles, 64-row K blocks,
// TMA into a 4-stage 128-byte-swizzled ring under mbarriers, one producer warp, two
// consumer warpgroups running wgmma m64n256k16), with both operands MN-major in shared
// memory (A and B tiles are [64 rows][64 columns] boxes of the row-major inputs, used
// transposed by the instruction). A K block that runs past its group's last row (the next
// group's rows, or zeros past the end) has those rows zeroed in shared memory before the
// MMAs. The persistent grid walks the tiles of the groups sorted by k_g, largest first, so
// that uneven experts balance over the multiprocessors. The epilogue sends fp32 C with
// beta 0 or 1, and bf16 C with beta 0, through the tensor copy engine in slabs of 64 rows x
// 128 bytes (a store, or with beta 1 an add); other C is staged in 32-column fp32 slabs and
// stored by the threads as whole 128-byte (fp32) or 64-byte (bf16) row runs, adding beta * C
// (read in the same pieces) in fp32 before the one rounding.
// Calls whose groups average fewer than 2,048 rows run a ping-pong schedule instead: each
// consumer warpgroup computes its own 128 x 128 tiles (6-stage ring), the two taking turns
// so that one's epilogue overlaps the other's MMAs, and the blocks take each round's tiles
// in snake order (reversed on odd rounds), which balances uneven experts better (docs/gpu.md).
struct GroupedGemmWgradArgs {
  const void* a = nullptr;  ///< bf16 [sum k_g][m]
  const void* b = nullptr;  ///< bf16 [sum k_g][n]
  void* c = nullptr;        ///< fp32 or bf16, group g at element offset g * m * n, [m][n]
  std::int64_t m = 0, n = 0;
  bool c_fp32 = true;
  float beta = 0.f;
  std::vector<std::int64_t> rows;  ///< k_g per group
};

/// Empty when grouped_gemm_wgrad can run `args` on the current device; otherwise why.
std::string grouped_gemm_wgrad_unsupported(const GroupedGemmWgradArgs& args);

/// Output tiles of the call (128 x 256 each, per group that is computed or cleared) over the
/// current device's multiprocessors: below 1 the kernel leaves multiprocessors idle (it
/// does not split K), where cuBLAS can split the reduction.
double grouped_gemm_wgrad_waves(const GroupedGemmWgradArgs& args);

/// The grids grouped_gemm_wgrad launches for a call, decided on the host alone.
struct WgradPlan {
  struct Grid {
    std::string schedule;     ///< "cooperative", "pingpong" or "pingpong-64x256" (MOEHUB_WGRAD_SCHEDULE's names)
    bool snake = false;       ///< snake tile order, else strided
    std::vector<int> groups;  ///< the groups it computes, longest reduction first
  };
  std::vector<Grid> grids;  ///< in launch order; none when no group has tiles
  std::string error;        ///< why the call would be refused (a bad switch value), else empty
};

/// The grids that grouped_gemm_wgrad launches for `args` on a GPU whose peak DRAM bandwidth
/// is `dram_gbps` GB/s (0: unknown), with the MOEHUB_WGRAD_* switches of the environment:
/// the schedule rules of docs/gpu.md without a device, for tests and for reports.
WgradPlan grouped_gemm_wgrad_plan(const GroupedGemmWgradArgs& args, double dram_gbps);

/// Enqueues the weight-gradient grouped GEMM on `stream` and returns the launch status,
/// or, without launching, cudaErrorNotSupported for a call that is refused.
cudaError_t grouped_gemm_wgrad(const GroupedGemmWgradArgs& args, cudaStream_t stream);

}  // namespace moehub::kernels
