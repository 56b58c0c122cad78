// Helpers shared by the measuring commands (measure_common.hpp).
#include "measure_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
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


namespace moehub::gpu {

LayerConfig layer_args(const Args& a, std::int64_t t, int h, int f, int e, int k) {
  LayerConfig c;
  c.tokens = a.integer("tokens", t, 1, 1 << 22);
  c.hidden = static_cast<int>(a.integer("hidden", h, 8, 65536));
  c.ffn = static_cast<int>(a.integer("ffn", f, 8, 65536));
  c.experts = static_cast<int>(a.integer("experts", e, 1, 1024));
  c.top_k = static_cast<int>(a.integer("top-k", k, 1, 32));
  return c;
}

void fill_inputs(MoeLayer& layer, std::uint64_t seed) {
  const LayerConfig& c = layer.config();
  const auto T = c.tokens, H = static_cast<std::int64_t>(c.hidden), F = static_cast<std::int64_t>(c.ffn),
             E = static_cast<std::int64_t>(c.experts), El = static_cast<std::int64_t>(c.local_experts());
  for (auto& rp : layer.ranks()) {
    Rank& r = *rp;
    const std::uint64_t s = seed + 7919ull * static_cast<std::uint64_t>(r.rank);
    MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(r.in.x, T * H, s + 1, 1.0f, r.comp));
    MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(r.in.d_out, T * H, s + 2, 1.0f, r.comp));
    MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(r.in.w_router, H * E, seed + 3, 1.0f / std::sqrt(static_cast<float>(H)), r.comp));
    MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(r.in.w_part, 2 * El * H * F, s + 4, 1.0f / std::sqrt(static_cast<float>(H)), r.comp));
    MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(r.in.w_part + 2 * El * H * F, El * H * F, s + 5, 1.0f / std::sqrt(static_cast<float>(F)), r.comp));
  }
  layer.synchronize();
}

std::string gib(std::int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string device_name(int dev) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) return "unknown";
  return p.name;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::vector<double> round_robin_us(cudaStream_t s, int warm, int reps, const std::vector<std::function<void()>>& fns) {
  cudaEvent_t a, b;
  MOEHUB_CUDA_CHECK(cudaEventCreate(&a));
  MOEHUB_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<std::vector<double>> t(fns.size());
  std::vector<std::size_t> order(fns.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 rng(20261207u);
  for (int round = 0; round < warm + reps; ++round) {
    std::shuffle(order.begin(), order.end(), rng);
    for (const std::size_t i : order) {
      MOEHUB_CUDA_CHECK(cudaEventRecord(a, s));
      fns[i]();
      MOEHUB_CUDA_CHECK(cudaEventRecord(b, s));
      MOEHUB_CUDA_CHECK(cudaEventSynchronize(b));
      float ms = 0;
      MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      if (round >= warm) t[i].push_back(1e3 * ms);
    }
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::vector<double> med;
  for (auto& v : t) med.push_back(median(v));
  return med;
}

double time_us(cudaStream_t s, int warm, int reps, const std::function<void()>& fn) {
  return round_robin_us(s, warm, reps, {fn})[0];
}

/// Times the forward expert GEMMs (gate+up, then down) of one shape set with each
/// implementation and a dense GEMM of the same FLOPs; appends to `out`.
void bench_shapes(const std::string& label, int H, int F, const std::vector<std::int64_t>& rows,
                  std::vector<trace::GemmTiming>& out, bool print) {
  cudaStream_t s;
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const auto G = static_cast<std::int64_t>(rows.size());
  const std::int64_t M = std::accumulate(rows.begin(), rows.end(), std::int64_t{0});
  bf16_t *x, *w, *y, *a;
  const auto HF = static_cast<std::size_t>(H) * static_cast<std::size_t>(F);
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&x), static_cast<std::size_t>(M * H) * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&w), 3 * static_cast<std::size_t>(G) * HF * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&y), static_cast<std::size_t>(M * 2 * F) * 2, s));
  MOEHUB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&a), static_cast<std::size_t>(M * H) * 2, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(x, M * H, 11, 1.0f, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(w, 3 * G * static_cast<std::int64_t>(HF), 12, 0.05f, s));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(y, M * 2 * F, 13, 1.0f, s));
  auto runner = std::make_unique<GemmRunner>(s);  // destroyed before its stream
  GemmRunner& g = *runner;
  // gate and up as one GEMM per expert (N = 2F), as in the layer
  auto call_gu = [&]() {
    GemmCall c;
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < G; ++i) {
      const std::int64_t m = rows[static_cast<std::size_t>(i)];
      c.groups.push_back({x + off * H, w + i * 2 * static_cast<std::int64_t>(HF), y + off * 2 * F, m, 2LL * F, H});
      off += m;
    }
    return c;
  };
  auto call_dn = [&]() {
    GemmCall c;
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < G; ++i) {
      const std::int64_t m = rows[static_cast<std::size_t>(i)];
      c.groups.push_back({y + off * F, w + (2 * G + i) * static_cast<std::int64_t>(HF), a + off * H, m, H, F});
      off += m;
    }
    return c;
  };
  const GemmCall gu = call_gu(), dn = call_dn();
  const double flops_gu = 2.0 * static_cast<double>(M) * 2.0 * F * H, flops_dn = 2.0 * static_cast<double>(M) * F * H;
  struct Variant { const char* name; GemmImpl impl; int streams; };
  const Variant variants[] = {{"loop", GemmImpl::kLoop, 8},        {"streams4", GemmImpl::kStreams, 4},
                              {"streams8", GemmImpl::kStreams, 8}, {"streams16", GemmImpl::kStreams, 16},
                              {"grouped", GemmImpl::kGrouped, 8},  {"wgmma", GemmImpl::kWgmma, 8},
                              {"auto", GemmImpl::kAuto, kAutoStreams}};
  // dense GEMMs of the same FLOPs: [M][H] x [H][2F] and [M][F] x [F][H]
  GemmCall d1, d2;
  d1.groups.push_back({x, w, y, M, 2LL * F, H});
  d2.groups.push_back({y, w, a, M, H, F});
  // all cases in the same rounds: the GPU's clock drift must not favour those measured first
  struct Case { std::string name; const GemmCall* call; GemmImpl impl; GemmRunner* runner; };
  std::vector<std::unique_ptr<GemmRunner>> runners;
  std::vector<Case> cases;
  for (const Variant& v : variants) {
    runners.push_back(std::make_unique<GemmRunner>(s, v.streams));
    cases.push_back({v.name, &gu, v.impl, runners.back().get()});
    cases.push_back({v.name, &dn, v.impl, runners.back().get()});
  }
  cases.push_back({"dense-same-flops", &d1, GemmImpl::kLoop, &g});
  cases.push_back({"dense-same-flops", &d2, GemmImpl::kLoop, &g});
  std::vector<std::function<void()>> fns;
  for (Case& c : cases) fns.push_back([&c] { c.runner->run(*c.call, c.impl); });
  const std::vector<double> med = round_robin_us(s, 5, 20, fns);
  for (std::size_t i = 0; i + 1 < cases.size(); i += 2) {
    std::string name = cases[i].name;
    const GemmRunner& gv = *cases[i].runner;
    if (cases[i].impl == GemmImpl::kGrouped && gv.grouped_fallback()) name += "(fallback-loop)";
    if (cases[i].impl == GemmImpl::kWgmma && !gv.wgmma_refusal().empty()) name += "(fallback-streams)";
    const double t1 = med[i], t2 = med[i + 1];
    const int groups = cases[i].call->groups.size() == 1 ? 1 : static_cast<int>(G);
    out.push_back({M, 2LL * F, H, groups, name == "dense-same-flops" ? "dense" : name, t1, flops_gu / t1 * 1e-6});
    out.push_back({M, H, F, groups, name == "dense-same-flops" ? "dense" : name, t2, flops_dn / t2 * 1e-6});
    if (print)
      std::printf("%-18s %-22s gate+up %9.1f us %7.1f TFLOP/s | down %9.1f us %7.1f TFLOP/s\n", label.c_str(),
                  name.c_str(), t1, flops_gu / t1 * 1e-6, t2, flops_dn / t2 * 1e-6);
  }
  std::fflush(stdout);
  runners.clear();
  runner.reset();
  MOEHUB_CUDA_CHECK(cudaFreeAsync(x, s));
  MOEHUB_CUDA_CHECK(cudaFreeAsync(w, s));
  MOEHUB_CUDA_CHECK(cudaFreeAsync(y, s));
  MOEHUB_CUDA_CHECK(cudaFreeAsync(a, s));
  MOEHUB_CUDA_CHECK(cudaStreamSynchronize(s));
  MOEHUB_CUDA_CHECK(cudaStreamDestroy(s));
}


}  // namespace moehub::gpu
