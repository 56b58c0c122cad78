// Speed of the routing generator (prints figures; not a test).
// Run: <build>/tests/workload/bench_routing
#include <benchmark/benchmark.h>

#include <cstdint>

#include "workload/routing.hpp"

namespace {

moehub::ModelConfig model_of(int num_experts, int top_k) {
  moehub::ModelConfig m;
  m.num_experts = num_experts;
  m.top_k = top_k;
  return m;
}

moehub::WorkloadConfig workload(std::int64_t tokens, const char* distribution, double spread) {
  moehub::WorkloadConfig w;
  w.tokens = tokens;
  w.seed = 1;
  w.distribution = distribution;
  w.imbalance_std = spread;
  w.zipf_s = spread;
  return w;
}

// args: experts, top_k, tokens, imbalance_std * 1000 (normal)
void BM_GenerateNormal(benchmark::State& state) {
  const auto m = model_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const auto w = workload(state.range(2), "normal", static_cast<double>(state.range(3)) / 1000.0);
  for (auto _ : state) benchmark::DoNotOptimize(moehub::generate_routing(m, w, 8));
  state.SetItemsProcessed(state.iterations() * state.range(2));
}
BENCHMARK(BM_GenerateNormal)
    ->Args({8, 2, 8192, 0})
    ->Args({8, 2, 8192, 32})
    ->Args({64, 4, 8192, 15})
    ->Args({128, 8, 8192, 0})
    ->Args({128, 8, 8192, 8})
    ->Args({128, 8, 1 << 20, 8})
    ->Unit(benchmark::kMillisecond);

// args: experts, top_k, tokens, zipf_s * 100
void BM_GenerateZipf(benchmark::State& state) {
  const auto m = model_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const auto w = workload(state.range(2), "zipf", static_cast<double>(state.range(3)) / 100.0);
  for (auto _ : state) benchmark::DoNotOptimize(moehub::generate_routing(m, w, 8));
  state.SetItemsProcessed(state.iterations() * state.range(2));
}
BENCHMARK(BM_GenerateZipf)->Args({128, 8, 8192, 120})->Unit(benchmark::kMillisecond);

// the calibration of the normal popularity alone
void BM_CalibrateNormal(benchmark::State& state) {
  const auto m = model_of(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const auto w = workload(1, "normal", static_cast<double>(state.range(2)) / 1000.0);
  for (auto _ : state) benchmark::DoNotOptimize(moehub::routing_detail::expert_popularity(m, w));
}
BENCHMARK(BM_CalibrateNormal)->Args({8, 2, 32})->Args({64, 4, 15})->Args({128, 8, 8})->Unit(benchmark::kMillisecond);

}  // namespace
