// C entry points of the grouped GEMM (grouped_gemm.hpp) for programs outside C++, such
// as scripts/gpu/torch_grouped_mm.py, which loads this library with ctypes and times the
// kernels beside torch._grouped_mm on the same tensors, in the same process and stream.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>

#include "grouped_gemm.hpp"

namespace {
moehub::kernels::GroupedGemmArgs make_args(const void* a, const void* b, void* c, long long n, long long k, int b_nk,
                                           const long long* rows, int groups) {
  moehub::kernels::GroupedGemmArgs args;
  args.a = a;
  args.b = b;
  args.c = c;
  args.n = n;
  args.k = k;
  args.b_nk = b_nk != 0;
  if (rows && groups > 0) args.rows.assign(rows, rows + groups);
  return args;
}
moehub::kernels::GroupedGemmWgradArgs make_wgrad_args(const void* a, const void* b, void* c, long long m, long long n,
                                                     int c_fp32, float beta, const long long* rows, int groups) {
  moehub::kernels::GroupedGemmWgradArgs args;
  args.a = a;
  args.b = b;
  args.c = c;
  args.m = m;
  args.n = n;
  args.c_fp32 = c_fp32 != 0;
  args.beta = beta;
  if (rows && groups > 0) args.rows.assign(rows, rows + groups);
  return args;
}

int copy_reason(const std::string& r, char* why, int why_len) {
  if (why && why_len > 0) {
    const std::size_t len = std::min<std::size_t>(r.size(), static_cast<std::size_t>(why_len - 1));
    std::memcpy(why, r.data(), len);
    why[len] = '\0';
  }
  return r.empty() ? 0 : 1;
}
}  // namespace

extern "C" {

/// Writes why the kernel cannot run this call into `why` (at most `why_len` bytes, NUL
/// terminated; empty when it can) and returns 0 when it can, 1 when not.
int moehub_grouped_gemm_unsupported(const void* a, const void* b, void* c, long long n, long long k, int b_nk,
                                    const long long* rows, int groups, char* why, int why_len) {
  return copy_reason(moehub::kernels::grouped_gemm_unsupported(make_args(a, b, c, n, k, b_nk, rows, groups)), why,
                     why_len);
}

/// Enqueues C_g = A_g op(B_g) for every group on `stream` (a cudaStream_t; 0 = the legacy
/// default stream); returns the launch's cudaError_t as an int (0 = success).
int moehub_grouped_gemm_bf16(const void* a, const void* b, void* c, long long n, long long k, int b_nk,
                             const long long* rows, int groups, void* stream) {
  return static_cast<int>(moehub::kernels::grouped_gemm_bf16(make_args(a, b, c, n, k, b_nk, rows, groups),
                                                             static_cast<cudaStream_t>(stream)));
}

/// As moehub_grouped_gemm_unsupported, for the weight-gradient GEMM.
int moehub_grouped_gemm_wgrad_unsupported(const void* a, const void* b, void* c, long long m, long long n, int c_fp32,
                                          float beta, const long long* rows, int groups, char* why, int why_len) {
  return copy_reason(
      moehub::kernels::grouped_gemm_wgrad_unsupported(make_wgrad_args(a, b, c, m, n, c_fp32, beta, rows, groups)), why,
      why_len);
}

/// Enqueues C_g = A_g^T B_g + beta C_g for every group (grouped_gemm.hpp,
/// grouped_gemm_wgrad) on `stream`; returns the launch's cudaError_t as an int.
int moehub_grouped_gemm_wgrad(const void* a, const void* b, void* c, long long m, long long n, int c_fp32, float beta,
                              const long long* rows, int groups, void* stream) {
  return static_cast<int>(moehub::kernels::grouped_gemm_wgrad(
      make_wgrad_args(a, b, c, m, n, c_fp32, beta, rows, groups), static_cast<cudaStream_t>(stream)));
}

}  // extern "C"
