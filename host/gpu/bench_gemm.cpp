// moehub-gpu bench-gemm: expert GEMM throughput of each implementation on the models'
// shapes (configs/models) beside a dense GEMM of the same FLOPs: the forward GEMMs
// (bench_shapes, measure_common.cpp) and the weight-gradient GEMMs (bench_wgrad_shapes).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "cuda_check.hpp"
#include "expert_ops.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "model_shapes.hpp"
#include "moe_plan/moe_plan.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"
#include "trace/trace.hpp"

#include "measure_common.hpp"

namespace moehub::gpu {

namespace {

// The weight-gradient GEMMs of one shape set, dWgu_g = X_g^T dGU_g ([H][2F]) and
// dWd_g = A_g^T dY_g ([F][H]) into fp32 with beta 0 (the a2a layer's form), per
// implementation, beside one dense GEMM of the same FLOPs in the same form (X^T dGU over
// all rows into one fp32 [H][2F]); round-robin rounds as bench_shapes.
void bench_wgrad_shapes(const std::string& label, int H, int F, const std::vector<std::int64_t>& rows) {
  cudaStream_t s;
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto G = static_cast<std::int64_t>(rows.size());
  const std::int64_t M = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  const auto HF = static_cast<std::int64_t>(H) * F;
  bf16_t *x, *gu, *act, *dy;
  float *dw, *dense;
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&x), static_cast<std::size_t>(M * H) * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&gu), static_cast<std::size_t>(M * 2 * F) * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&act), static_cast<std::size_t>(M * F) * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&dy), static_cast<std::size_t>(M * H) * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&dw), static_cast<std::size_t>(G * 3 * HF) * 4, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&dense), static_cast<std::size_t>(2 * HF) * 4, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(x, M * H, 21, 1.0f, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(gu, M * 2 * F, 22, 1.0f, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(act, M * F, 23, 1.0f, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(dy, M * H, 24, 1.0f, s));
  GemmCall c_gu, c_dn, d_gu, d_dn;
  for (GemmCall* c : {&c_gu, &c_dn, &d_gu, &d_dn}) {
    c->trans_a = true;
    c->c_fp32 = true;
  }
  std::int64_t off = 0;
  for (std::int64_t g = 0; g < G; ++g) {
    const std::int64_t k = rows[static_cast<std::size_t>(g)];
    c_gu.groups.push_back({x + off * H, gu + off * 2 * F, dw + g * 2 * HF, H, 2LL * F, k});
    c_dn.groups.push_back({act + off * F, dy + off * H, dw + 2 * G * HF + g * HF, F, H, k});
    off += k;
  }
  d_gu.groups.push_back({x, gu, dense, H, 2LL * F, M});
  d_dn.groups.push_back({act, dy, dense, F, H, M});
  const double flops_gu = 2.0 * static_cast<double>(M) * 2.0 * F * H, flops_dn = 2.0 * static_cast<double>(M) * F * H;
  struct Variant { const char* name; GemmImpl impl; int streams; };
  const Variant variants[] = {{"loop", GemmImpl::kLoop, 4},
                              {"streams4", GemmImpl::kStreams, 4},
                              {"wgmma", GemmImpl::kWgmma, 4},
                              {"auto", GemmImpl::kAuto, kAutoStreams},
                              {"dense-same-flops", GemmImpl::kLoop, 4}};
  std::vector<std::unique_ptr<GemmRunner>> runners;
  std::vector<std::function<void()>> fns;
  for (const Variant& v : variants) {
    runners.push_back(std::make_unique<GemmRunner>(s, v.streams));
    GemmRunner* r = runners.back().get();
    const bool dense_case = std::string(v.name) == "dense-same-flops";
    const GemmCall* a = dense_case ? &d_gu : &c_gu;
    const GemmCall* b = dense_case ? &d_dn : &c_dn;
    const GemmImpl impl = v.impl;
    fns.push_back([r, a, impl] { r->run(*a, impl); });
    fns.push_back([r, b, impl] { r->run(*b, impl); });
  }
  const std::vector<double> med = round_robin_us(s, 5, 20, fns);
  for (std::size_t i = 0; i < std::size(variants); ++i) {
    std::string name = std::string("wgrad-") + variants[i].name;
    if (variants[i].impl == GemmImpl::kWgmma && !runners[i]->wgmma_refusal().empty())
      name += "(fallback-streams: " + runners[i]->wgmma_refusal() + ")";
    const double t1 = med[2 * i], t2 = med[2 * i + 1];
    std::printf("%-18s %-22s gate+up %9.1f us %7.1f TFLOP/s | down %9.1f us %7.1f TFLOP/s\n", label.c_str(),
                name.c_str(), t1, flops_gu / t1 * 1e-6, t2, flops_dn / t2 * 1e-6);
  }
  std::fflush(stdout);
  runners.clear();
  for (void* p : {static_cast<void*>(x), static_cast<void*>(gu), static_cast<void*>(act), static_cast<void*>(dy),
                  static_cast<void*>(dw), static_cast<void*>(dense)})
    MOEHUB_CUDA_CHECK(cudaFreeAsync(p, s));
  MOEHUB_CUDA_CHECK(cudaStreamSynchronize(s));
  MOEHUB_CUDA_CHECK(cudaStreamDestroy(s));
}

}  // namespace

int cmd_bench_gemm(const Args& a) {
  const std::int64_t tokens = a.integer("tokens", 16384, 1, 1 << 20);
  // model shapes from configs/models (model_shapes.hpp)
  const std::vector<std::string> known = model_names();
  const auto names = a.str_list("models", "mixtral-8x7b,qwen3-30b-a3b,qwen1.5-moe-a2.7b", {known.begin(), known.end()});
  std::vector<ModelShape> models;
  for (const std::string& n : names) models.push_back(load_model_shape(n));
  const std::string routing = a.str("routing", "balanced");
  if (routing != "balanced" && routing != "skewed")
    throw UsageError("--routing must be balanced or skewed (got '" + routing + "')");
  const bool skewed = routing == "skewed";
  std::printf("bench-gemm: %lld tokens, %s routing (rows = tokens * k %s), bf16 in, fp32 "
              "accumulate, bf16 out (weight gradients wgrad-*: fp32 out, beta 0); cases round-robin in a new seeded order each round, median of 20 rounds after 5 warm-up rounds; %s\n",
              static_cast<long long>(tokens), routing.c_str(),
              skewed ? "over the experts in proportion to (e + 1)^-0.5" : "split evenly over the experts",
              device_name(0).c_str());
  std::vector<trace::GemmTiming> out;
  for (const ModelShape& m : models) {
    const auto rows = skewed ? skewed_rows(tokens * m.top_k, m.experts) : balanced_rows(tokens * m.top_k, m.experts);
    std::printf("%-18s rows per expert: %lld..%lld\n", m.name.c_str(),
                static_cast<long long>(*std::min_element(rows.begin(), rows.end())),
                static_cast<long long>(*std::max_element(rows.begin(), rows.end())));
    bench_shapes(m.name, m.hidden, m.ffn, rows, out, true);
    bench_wgrad_shapes(m.name, m.hidden, m.ffn, rows);
  }
  return 0;
}


}  // namespace moehub::gpu
