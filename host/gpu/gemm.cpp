#include "gemm.hpp"

#include <stdexcept>

#include "cuda_check.hpp"
#include "grouped_gemm.hpp"
#include "moe_kernels.hpp"

namespace moehub::gpu {

const char* to_string(GemmImpl i) {
  switch (i) {
    case GemmImpl::kLoop: return "loop";
    case GemmImpl::kStreams: return "streams";
    case GemmImpl::kGrouped: return "grouped";
    case GemmImpl::kWgmma: return "wgmma";
    case GemmImpl::kAuto: return "auto";
    case GemmImpl::kAutoCublasWgrad: return "auto-cublas-wgrad";
  }
  return "?";
}

GemmImpl parse_gemm_impl(const std::string& s) {
  if (s == "loop") return GemmImpl::kLoop;
  if (s == "streams") return GemmImpl::kStreams;
  if (s == "grouped") return GemmImpl::kGrouped;
  if (s == "wgmma") return GemmImpl::kWgmma;
  if (s == "auto") return GemmImpl::kAuto;
  if (s == "auto-cublas-wgrad") return GemmImpl::kAutoCublasWgrad;
  throw std::invalid_argument("--gemm must be one of loop, streams, grouped, wgmma, auto, auto-cublas-wgrad (got '" + s +
                              "')");
}

GemmRunner::GemmRunner(cudaStream_t stream, int side_streams) : stream_(stream) {
  MOEHUB_CUBLAS_CHECK(cublasCreate(&handle_));
  MOEHUB_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
  for (int i = 0; i < side_streams; ++i) {
    cudaStream_t s;
    MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublasHandle_t h;
    MOEHUB_CUBLAS_CHECK(cublasCreate(&h));
    MOEHUB_CUBLAS_CHECK(cublasSetStream(h, s));
    cudaEvent_t e;
    MOEHUB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    side_.push_back(s);
    side_handles_.push_back(h);
    side_events_.push_back(e);
  }
  MOEHUB_CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  MOEHUB_CUDA_CHECK(cudaMalloc(&tables_, 3 * sizeof(void*) * kernels::kMaxPtrGroups));
}

GemmRunner::~GemmRunner() {
  cudaStreamSynchronize(stream_);
  for (std::size_t i = 0; i < side_.size(); ++i) {
    cudaStreamSynchronize(side_[i]);
    cublasDestroy(side_handles_[i]);
    cudaStreamDestroy(side_[i]);
    cudaEventDestroy(side_events_[i]);
  }
  cudaEventDestroy(fork_);
  cublasDestroy(handle_);
  cudaFree(tables_);
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
void GemmRunner::one(cublasHandle_t h, const GemmCall& c, const GemmGroup& g) {
  const float alpha = 1.f;
  const auto lda = static_cast<int>(c.trans_a ? g.m : g.k);
  const auto ldb = static_cast<int>(c.trans_b ? g.k : g.n);
  MOEHUB_CUBLAS_CHECK(cublasGemmEx(h, c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha,
                                   g.b, CUDA_R_16BF, ldb, g.a, CUDA_R_16BF, lda, &c.beta, g.c,
                                   c.c_fp32 ? CUDA_R_32F : CUDA_R_16BF, static_cast<int>(g.n),
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The wgmma kernels' contracts (kernels/grouped_gemm.hpp): one A, B and C base with the
// groups packed in order. Checked on the caller's pointers, so a call that is laid out
// otherwise simply runs on cuBLAS.
bool GemmRunner::try_wgmma(const GemmCall& c, bool chosen_by_auto) {
  wgmma_refusal_.clear();
  if (c.trans_a) return try_wgmma_wgrad(c, chosen_by_auto);
  if (c.c_fp32 || c.beta != 0.f) {
    wgmma_refusal_ = "fp32 C or beta != 0 without transposed A";
    return false;
  }
  const GemmGroup& g0 = c.groups.front();
  kernels::GroupedGemmArgs args;
  args.a = g0.a;
  args.b = g0.b;
  args.c = g0.c;
  args.n = g0.n;
  args.k = g0.k;
  args.b_nk = c.trans_b;
  std::int64_t row = 0;
  for (std::size_t i = 0; i < c.groups.size(); ++i) {
    const GemmGroup& g = c.groups[i];
    const auto* a = static_cast<const std::uint16_t*>(g0.a) + row * g0.k;
    const auto* b = static_cast<const std::uint16_t*>(g0.b) + static_cast<std::int64_t>(i) * g0.k * g0.n;
    auto* cc = static_cast<std::uint16_t*>(g0.c) + row * g0.n;
    if (g.n != g0.n || g.k != g0.k || g.a != a || g.b != b || g.c != cc) {
      wgmma_refusal_ = "groups not packed";
      return false;
    }
    args.rows.push_back(g.m);
    row += g.m;
  }
  // one validation per call: the reason is looked up only when the kernel refuses
  const cudaError_t e = kernels::grouped_gemm_bf16(args, stream_);
  if (e == cudaErrorNotSupported) {
    wgmma_refusal_ = kernels::grouped_gemm_unsupported(args);
    if (!wgmma_refusal_.empty()) return false;
  }
  MOEHUB_CUDA_CHECK(e);
  return true;
}

// Weight gradients C_g = A_g^T B_g + beta C_g (kernels::grouped_gemm_wgrad): A_g [k_g][m]
// and B_g [k_g][n] packed row after row, C_g = C + g * m * n.
bool GemmRunner::try_wgmma_wgrad(const GemmCall& c, bool chosen_by_auto) {
  if (c.trans_b) {
    wgmma_refusal_ = "transposed A and B";
    return false;
  }
  const GemmGroup& g0 = c.groups.front();
  kernels::GroupedGemmWgradArgs args;
  args.a = g0.a;
  args.b = g0.b;
  args.c = g0.c;
  args.m = g0.m;
  args.n = g0.n;
  args.c_fp32 = c.c_fp32;
  args.beta = c.beta;
  const std::int64_t c_bytes = c.c_fp32 ? 4 : 2;
  std::int64_t row = 0;
  for (std::size_t i = 0; i < c.groups.size(); ++i) {
    const GemmGroup& g = c.groups[i];
    const auto* a = static_cast<const std::uint16_t*>(g0.a) + row * g0.m;
    const auto* b = static_cast<const std::uint16_t*>(g0.b) + row * g0.n;
    auto* cc = static_cast<char*>(g0.c) + static_cast<std::int64_t>(i) * g0.m * g0.n * c_bytes;
    if (g.m != g0.m || g.n != g0.n || g.a != a || g.b != b || g.c != cc) {
      wgmma_refusal_ = "groups not packed";
      return false;
    }
    args.rows.push_back(g.k);
    row += g.k;
  }
  // auto: less than one tile per multiprocessor (a ring chunk of one expert, say) runs on
  // cuBLAS, which splits the reduction; bench-hop and run --gemm auto-cublas-wgrad compare
  if (chosen_by_auto && kernels::grouped_gemm_wgrad_waves(args) < kWgradMinWaves) {
    wgmma_refusal_ = "fewer output tiles than multiprocessors";
    return false;
  }
  const cudaError_t e = kernels::grouped_gemm_wgrad(args, stream_);
  if (e == cudaErrorNotSupported) {
    wgmma_refusal_ = kernels::grouped_gemm_wgrad_unsupported(args);
    if (!wgmma_refusal_.empty()) return false;
  }
  MOEHUB_CUDA_CHECK(e);
  return true;
}

void GemmRunner::run(const GemmCall& c, GemmImpl impl) {
  // kAutoCublasWgrad: the weight gradients (transposed A) on cuBLAS, everything else as kAuto
  bool cublas_wgrad = false;
  if (impl == GemmImpl::kAutoCublasWgrad) {
    impl = GemmImpl::kAuto;
    cublas_wgrad = c.trans_a;
  }
  const bool wgmma_wanted = impl == GemmImpl::kWgmma || (impl == GemmImpl::kAuto && !cublas_wgrad);
  // (a weight-gradient call with an empty first group still goes to its kernel: k_g = 0 is allowed)
  if (wgmma_wanted && !c.groups.empty() && (c.trans_a || c.groups.front().k > 0)) {
    if (try_wgmma(c, impl == GemmImpl::kAuto)) return;
    if (impl == GemmImpl::kWgmma) impl = GemmImpl::kStreams;
  }
  // Degenerate groups: nothing to compute, but C = 0 when K = 0 and beta = 0.
  std::vector<GemmGroup> work;
  for (const GemmGroup& g : c.groups) {
    if (g.m == 0 || g.n == 0) continue;
    if (g.k == 0) {
      if (c.beta == 0.f) {
        MOEHUB_CUDA_CHECK(cudaMemsetAsync(g.c, 0, static_cast<std::size_t>(g.m * g.n) * (c.c_fp32 ? 4u : 2u), stream_));
      }
      continue;
    }
    work.push_back(g);
  }
  if (work.empty()) return;
  if (impl == GemmImpl::kAuto) impl = work.size() <= kAutoLoopMaxGroups ? GemmImpl::kLoop : GemmImpl::kStreams;
  if (impl == GemmImpl::kLoop || (impl == GemmImpl::kStreams && work.size() == 1)) {
    for (const GemmGroup& g : work) one(handle_, c, g);
    return;
  }
  if (impl == GemmImpl::kStreams) {
    MOEHUB_CUDA_CHECK(cudaEventRecord(fork_, stream_));
    const std::size_t used = std::min(side_.size(), work.size());
    for (std::size_t i = 0; i < used; ++i) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(side_[i], fork_, 0));
    for (std::size_t i = 0; i < work.size(); ++i) one(side_handles_[i % used], c, work[i]);
    for (std::size_t i = 0; i < used; ++i) {
      MOEHUB_CUDA_CHECK(cudaEventRecord(side_events_[i], side_[i]));
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(stream_, side_events_[i], 0));
    }
    return;
  }
  // kGrouped, in chunks of at most kMaxPtrGroups groups.
  for (std::size_t base = 0; base < work.size(); base += kernels::kMaxPtrGroups) {
    const std::size_t cnt = std::min<std::size_t>(kernels::kMaxPtrGroups, work.size() - base);
    static thread_local kernels::PtrTableArgs args;  // large: keep off the stack
    args.groups = static_cast<int>(cnt);
    std::vector<cublasOperation_t> ta(cnt, c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
    std::vector<cublasOperation_t> tb(cnt, c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
    std::vector<int> m(cnt), n(cnt), k(cnt), lda(cnt), ldb(cnt), ldc(cnt), size(cnt, 1);
    std::vector<float> alpha(cnt, 1.f), beta(cnt, c.beta);
    for (std::size_t i = 0; i < cnt; ++i) {
      const GemmGroup& g = work[base + i];
      args.a[i] = g.b;  // swapped operands, as in one()
      args.b[i] = g.a;
      args.c[i] = g.c;
      m[i] = static_cast<int>(g.n);
      n[i] = static_cast<int>(g.m);
      k[i] = static_cast<int>(g.k);
      lda[i] = static_cast<int>(c.trans_b ? g.k : g.n);
      ldb[i] = static_cast<int>(c.trans_a ? g.m : g.k);
      ldc[i] = static_cast<int>(g.n);
    }
    auto** tab = static_cast<void**>(tables_);
    const void** pa = const_cast<const void**>(tab);
    const void** pb = const_cast<const void**>(tab + kernels::kMaxPtrGroups);
    void** pc = tab + 2 * kernels::kMaxPtrGroups;
    MOEHUB_CUDA_CHECK(kernels::fill_ptr_tables(args, pa, pb, pc, stream_));
    const cublasStatus_t st = cublasGemmGroupedBatchedEx(
        handle_, ta.data(), tb.data(), m.data(), n.data(), k.data(), alpha.data(), pa, CUDA_R_16BF, lda.data(), pb,
        CUDA_R_16BF, ldb.data(), beta.data(), pc, c.c_fp32 ? CUDA_R_32F : CUDA_R_16BF, ldc.data(),
        static_cast<int>(cnt), size.data(), CUBLAS_COMPUTE_32F);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) {
      grouped_fallback_ = true;
      for (std::size_t i = 0; i < cnt; ++i) one(handle_, c, work[base + i]);
    } else {
      MOEHUB_CUBLAS_CHECK(st);
    }
  }
}

}  // namespace moehub::gpu
