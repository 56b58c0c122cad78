// moehub-gpu check, GEMM part: the weight-gradient grouped GEMM (C_g = A_g^T B_g + beta C_g,
// the layer's dWgu_e = X_e^T dGU_e and dWd_e = A_e^T dY_e) through GemmRunner with the
// command's --gemm implementation, against a float64 reference on the host, on uneven
// groups (empty ones, one row, a row either side of the 64-row K block, a few hundred
// rows), in the three forms the layer uses, fp32 C with beta 0 (C poisoned with NaN
// first: every element must be written), fp32 C with beta 1 and bf16 C with beta 1 (C
// starts random), and in bf16 C with beta 0 (poisoned; the form torch._grouped_mm
// computes). A guard band after the last group's C must stay untouched. With --gemm
// auto (the default) the cases run the wgmma kernel, which auto leaves to cuBLAS on calls
// this small.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check_gemm.hpp"
#include "cuda_check.hpp"
#include "host_data.hpp"

namespace moehub::gpu {

namespace {

struct WgradForm {
  const char* name;
  bool c_fp32;
  float beta;
};

double bits_to_double(const std::vector<std::uint32_t>& v, std::size_t i) {
  float f;
  std::memcpy(&f, &v[i], 4);
  return f;
}

}  // namespace

int check_wgrad_gemms(GemmImpl impl_arg, std::uint64_t seed, int hidden, int ffn, double tol, int& cases) {
  // auto would send these small calls (fewer tiles than multiprocessors) to cuBLAS: with
  // auto, and with wgmma, the kernel itself is checked
  const GemmImpl impl = impl_arg == GemmImpl::kAuto ? GemmImpl::kWgmma : impl_arg;
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  // uneven groups: empty, 1, 63, 64, 65 rows, a larger one and another empty one, shuffled
  std::vector<std::int64_t> rows = {0, 1, 63, 64, 65, std::uniform_int_distribution<std::int64_t>(100, 400)(rng), 0};
  std::shuffle(rows.begin(), rows.end(), rng);
  std::int64_t total = 0;
  for (auto k : rows) total += k;
  const auto G = static_cast<std::int64_t>(rows.size());
  const std::int64_t guard = 64;  // C elements after the last group
  const WgradForm forms[] = {
      {"fp32/beta0", true, 0.f}, {"fp32/beta1", true, 1.f}, {"bf16/beta0", false, 0.f}, {"bf16/beta1", false, 1.f}};
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{hidden, 2LL * ffn}, {ffn, hidden}};  // (m, n): dWgu, dWd
  cudaStream_t s;
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int failures = 0;
  {
    GemmRunner runner(s);
    for (const auto& [m, n] : shapes) {
      std::vector<double> a, b, c0;
      const std::vector<std::uint16_t> a_b = random_bf16(a, static_cast<std::size_t>(total * m), 1.0, rng);
      const std::vector<std::uint16_t> b_b = random_bf16(b, static_cast<std::size_t>(total * n), 1.0, rng);
      const auto c_elems = static_cast<std::size_t>(G * m * n + guard);
      const std::vector<std::uint16_t> c0_b = random_bf16(c0, c_elems, 1.0, rng);
      // float64 A_g^T B_g per group
      std::vector<double> prod(static_cast<std::size_t>(G * m * n), 0.0);
      std::int64_t r0 = 0;
      for (std::int64_t g = 0; g < G; ++g) {
        double* p = prod.data() + g * m * n;
        for (std::int64_t r = r0; r < r0 + rows[static_cast<std::size_t>(g)]; ++r)
          for (std::int64_t i = 0; i < m; ++i) {
            const double av = a[static_cast<std::size_t>(r * m + i)];
            const double* br = b.data() + r * n;
            for (std::int64_t j = 0; j < n; ++j) p[i * n + j] += av * br[j];
          }
        r0 += rows[static_cast<std::size_t>(g)];
      }
      std::uint16_t *da, *db;
      void* dc;
      MOEHUB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&da), a_b.size() * 2 + 16));
      MOEHUB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&db), b_b.size() * 2 + 16));
      MOEHUB_CUDA_CHECK(cudaMalloc(&dc, c_elems * 4));
      upload(da, a_b, s);
      upload(db, b_b, s);
      for (const WgradForm& f : forms) {
        // C's starting values: NaN (beta 0), or c0 in the C type
        std::vector<std::uint32_t> c_start(c_elems);
        std::vector<std::uint16_t> c_start16(c_elems);
        for (std::size_t i = 0; i < c_elems; ++i) {
          const auto v = static_cast<float>(c0[i]);
          std::memcpy(&c_start[i], &v, 4);
          c_start16[i] = c0_b[i];
        }
        if (f.beta == 0.f)
          for (std::size_t i = 0; i < static_cast<std::size_t>(G * m * n); ++i) {
            c_start[i] = 0xFFFFFFFFu;
            c_start16[i] = 0xFFFFu;  // NaN in bf16 too
          }
        if (f.c_fp32)
          upload(static_cast<std::uint32_t*>(dc), c_start, s);
        else
          upload(static_cast<std::uint16_t*>(dc), c_start16, s);
        GemmCall call;
        call.trans_a = true;
        call.c_fp32 = f.c_fp32;
        call.beta = f.beta;
        std::int64_t off = 0;
        for (std::int64_t g = 0; g < G; ++g) {
          void* cg = static_cast<char*>(dc) + g * m * n * (f.c_fp32 ? 4 : 2);
          call.groups.push_back({da + off * m, db + off * n, cg, m, n, rows[static_cast<std::size_t>(g)]});
          off += rows[static_cast<std::size_t>(g)];
        }
        runner.run(call, impl);
        MOEHUB_CUDA_CHECK(cudaStreamSynchronize(s));
        double num = 0, den = 0;
        std::size_t guard_touched = 0;
        bool finite = true;
        if (f.c_fp32) {
          const std::vector<std::uint32_t> got = download(static_cast<const std::uint32_t*>(dc), c_elems, s);
          for (std::size_t i = 0; i < prod.size(); ++i) {
            const double ref = prod[i] + f.beta * c0[i];
            const double v = bits_to_double(got, i);
            finite = finite && std::isfinite(v);
            num += (v - ref) * (v - ref);
            den += ref * ref;
          }
          for (std::size_t i = prod.size(); i < c_elems; ++i) guard_touched += got[i] != c_start[i];
        } else {
          const std::vector<std::uint16_t> got = download(static_cast<const std::uint16_t*>(dc), c_elems, s);
          for (std::size_t i = 0; i < prod.size(); ++i) {
            const double ref = prod[i] + f.beta * c0[i];
            const double v = from_bf16(got[i]);
            finite = finite && std::isfinite(v);
            num += (v - ref) * (v - ref);
            den += ref * ref;
          }
          for (std::size_t i = prod.size(); i < c_elems; ++i) guard_touched += got[i] != c_start16[i];
        }
        const double err = finite && den > 0 ? std::sqrt(num / den) : INFINITY;
        const bool ok = err <= tol && guard_touched == 0;
        ++cases;
        if (!ok) ++failures;
        std::printf("%-4s gemm-wgrad m=%-5lld n=%-5lld %-10s groups=%lld rows=%lld (%s) rel_err=%.3e guard_touched=%zu%s\n",
                    ok ? "PASS" : "FAIL", static_cast<long long>(m), static_cast<long long>(n), f.name,
                    static_cast<long long>(G), static_cast<long long>(total),
                    runner.wgmma_refusal().empty() ? to_string(impl) : ("cuBLAS, " + runner.wgmma_refusal()).c_str(),
                    err, guard_touched, ok ? "" : "  <-- over tolerance or guard written");
      }
      MOEHUB_CUDA_CHECK(cudaFree(da));
      MOEHUB_CUDA_CHECK(cudaFree(db));
      MOEHUB_CUDA_CHECK(cudaFree(dc));
    }
  }
  MOEHUB_CUDA_CHECK(cudaStreamDestroy(s));
  return failures;
}

}  // namespace moehub::gpu
