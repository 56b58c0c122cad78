// Prints how long the float64 reference takes on a layer of the size the GPU checks use
// (tokens=2048, hidden=512, ffn=256, experts=16, top_k=4 by default; override with
// arguments: tokens hidden ffn experts top_k), on one thread and on all hardware threads.
// Not a test: a figure to read.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "moe_ref/moe_ref.hpp"

int main(int argc, char** argv) {
  moehub::ref::LayerShape s{2048, 512, 256, 16, 4};
  if (argc == 6) {
    s = {std::atoll(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5])};
    if (s.tokens < 1 || s.hidden < 1 || s.ffn < 1 || s.experts < 1 || s.top_k < 1 || s.top_k > s.experts) {
      std::fprintf(stderr, "bench_moe_ref: arguments tokens hidden ffn experts top_k must be >= 1, top_k <= experts\n");
      return 2;
    }
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: bench_moe_ref [tokens hidden ffn experts top_k]\n");
    return 2;
  }
  std::mt19937_64 rng(1);
  std::normal_distribution<double> nd(0.0, 1.0);
  auto vec = [&](std::size_t n, double scale) {
    std::vector<double> v(n);
    for (double& x : v) x = scale * nd(rng);
    return v;
  };
  const auto T = static_cast<std::size_t>(s.tokens), H = static_cast<std::size_t>(s.hidden),
             F = static_cast<std::size_t>(s.ffn), E = static_cast<std::size_t>(s.experts);
  const auto x = vec(T * H, 1.0), w_router = vec(H * E, 0.05), d_out = vec(T * H, 1.0);
  const moehub::ref::ExpertWeights w{vec(E * H * F, 0.05), vec(E * H * F, 0.05), vec(E * F * H, 0.05)};
  using clock = std::chrono::steady_clock;
  auto sec = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const double flops_fwd = 2.0 * 3.0 * static_cast<double>(T * static_cast<std::size_t>(s.top_k) * H * F);
  for (const int threads : {1, 0}) {
    moehub::ref::set_num_threads(threads);
    const auto t0 = clock::now();
    const auto ro = moehub::ref::router_forward(s, x, w_router);
    const auto t1 = clock::now();
    const auto out = moehub::ref::experts_forward(s, x, ro.topk_ids, ro.topk_weights, w);
    const auto t2 = clock::now();
    const auto g = moehub::ref::experts_backward(s, x, ro.topk_ids, ro.topk_weights, w, d_out);
    const auto t3 = clock::now();
    const auto dl = moehub::ref::router_backward(s, ro, g.d_topk_weights);
    const auto t4 = clock::now();
    std::printf("reference T=%lld H=%d F=%d E=%d k=%d, %d thread(s): router fwd %.3f s, experts fwd %.3f s "
                "(%.2f GFLOP/s), experts bwd %.3f s, router bwd %.3f s, total %.3f s (checksum %.17g)\n",
                static_cast<long long>(s.tokens), s.hidden, s.ffn, s.experts, s.top_k, moehub::ref::num_threads(),
                sec(t0, t1), sec(t1, t2), flops_fwd / sec(t1, t2) / 1e9, sec(t2, t3), sec(t3, t4), sec(t0, t4),
                out[0] + g.d_x[0] + dl[0] + g.d_w_down.back());
  }
  return 0;
}
