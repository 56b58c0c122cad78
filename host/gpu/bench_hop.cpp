// moehub-gpu bench-hop: one ring-expert hop of one rank (the ring steps' kernels), compute
// alone, copy alone and both overlapped.
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

int cmd_bench_hop(const Args& a) {
  // One ring-expert hop of one rank: compute with the visiting partition while the next
  // partition is copied (device-to-device) on the copy stream.
  LayerConfig c = layer_args(a, 49152, 2048, 768, 128, 8);
  c.ep = static_cast<int>(a.integer("ep", 8, 1, 256));
  from_user_input("bench-hop", [&] { validate(c); });
  const GemmImpl impl = from_user_input("--gemm", [&] { return parse_gemm_impl(a.str("gemm", "auto")); });
  const Dims d = dims(c);
  const std::int64_t M = d.T * d.K / d.N;
  const auto rows = balanced_rows(M, static_cast<int>(d.El));
  cudaStream_t comp, copy;
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  auto al = [&](std::size_t bytes) {
    void* p;
    MOEHUB_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  };
  const auto wbytes = static_cast<std::size_t>(3 * d.El * d.H * d.F) * 2;
  auto* xs = static_cast<bf16_t*>(al(static_cast<std::size_t>(d.T * d.H) * 2));
  auto* dout = static_cast<bf16_t*>(al(static_cast<std::size_t>(d.T * d.H) * 2));
  auto* w0 = static_cast<bf16_t*>(al(wbytes));
  auto* w1 = static_cast<bf16_t*>(al(wbytes));
  auto* g0 = static_cast<float*>(al(wbytes * 2));
  auto* g1 = static_cast<float*>(al(wbytes * 2));
  auto* hx = static_cast<bf16_t*>(al(static_cast<std::size_t>(M * d.H) * 2));
  auto* hd = static_cast<bf16_t*>(al(static_cast<std::size_t>(M * d.H) * 2));
  auto* hy = static_cast<bf16_t*>(al(static_cast<std::size_t>(M * d.H) * 2));
  auto* hgu = static_cast<bf16_t*>(al(static_cast<std::size_t>(M * 2 * d.F) * 2));
  auto* ha = static_cast<bf16_t*>(al(static_cast<std::size_t>(M * d.F) * 2));
  auto* out = static_cast<float*>(al(static_cast<std::size_t>(d.T * d.H) * 4));
  auto* tw = static_cast<float*>(al(static_cast<std::size_t>(d.T * d.K) * 4));
  auto* dtw = static_cast<float*>(al(static_cast<std::size_t>(d.T * d.K) * 4));
  auto* src = static_cast<std::int32_t*>(al(static_cast<std::size_t>(M) * 4));
  std::vector<std::int32_t> hsrc(static_cast<std::size_t>(M));
  for (std::int64_t i = 0; i < M; ++i) hsrc[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7919) % (d.T * d.K));
  upload(src, hsrc, comp);
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(xs, d.T * d.H, 1, 1.f, comp));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(dout, d.T * d.H, 2, 1.f, comp));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(w0, static_cast<std::int64_t>(wbytes / 2), 3, 0.02f, comp));
  MOEHUB_CUDA_CHECK(kernels::fill_random_bf16(w1, static_cast<std::int64_t>(wbytes / 2), 4, 0.02f, comp));
  MOEHUB_CUDA_CHECK(cudaMemsetAsync(tw, 0, static_cast<std::size_t>(d.T * d.K) * 4, comp));
  MOEHUB_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(d.T * d.H) * 4, comp));
  MOEHUB_CUDA_CHECK(cudaMemsetAsync(g0, 0, wbytes * 2, comp));
  MOEHUB_CUDA_CHECK(cudaStreamSynchronize(comp));
  auto runner = std::make_unique<GemmRunner>(comp);  // destroyed before its stream
  GemmRunner& g = *runner;
  const int K = static_cast<int>(d.K), H = static_cast<int>(d.H);
  // the hop's kernels are ring-expert's (plan::ring_pass_steps, fp32 accumulators, one
  // chunk), run by the ring schedules' step executor (ring_hop.hpp): rank 0 sends `rows`
  // pairs to every partition's experts, and its hop 0 is timed
  plan::RingRouting rr;
  for (std::int64_t g0i = 0; g0i <= d.N; ++g0i) rr.first_expert.push_back(static_cast<int>(g0i * d.El));
  rr.tokens.assign(static_cast<std::size_t>(d.N), d.T);
  rr.pairs.assign(static_cast<std::size_t>(d.N), std::vector<std::int64_t>(static_cast<std::size_t>(d.E), 0));
  for (std::int64_t e = 0; e < d.E; ++e) rr.pairs[0][static_cast<std::size_t>(e)] = rows[static_cast<std::size_t>(e % d.El)];
  const plan::RingOptions ro;  // fp32 accumulators and gradient partitions, whole hops
  const plan::ChunkSteps fwd_steps = plan::ring_pass_steps(rr, c.hidden, c.ffn, c.top_k, 2, plan::RingMode::kExpert, false, ro)
                                         .hops[0][0].chunks.at(0);
  const plan::ChunkSteps bwd_steps = plan::ring_pass_steps(rr, c.hidden, c.ffn, c.top_k, 2, plan::RingMode::kExpert, true, ro)
                                         .hops[0][0].chunks.at(0);
  HopBufs hb;
  hb.x = hx;
  hb.dout = hd;
  hb.gu = hgu;
  hb.a = ha;
  hb.y = hy;
  HopChunkIO io;
  io.x = xs;
  io.dout = dout;
  io.src = src;
  io.topk_weights = tw;
  io.W = w0;
  io.dtw = dtw;
  io.acc32 = out;
  io.dw32 = g0;
  auto fwd = [&]() { run_hop_chunk(g, impl, d, fwd_steps, io, hb, comp); };
  auto bwd = [&]() { run_hop_chunk(g, impl, d, bwd_steps, io, hb, comp); };
  // per-kernel times of one hop, each step timed alone (CUDA events, median of 10)
  {
    struct Step { const char* pass; const char* name; std::function<void()> fn; };
    const std::vector<Step> steps = {
        {"fwd", "gather x rows", [&] { MOEHUB_CUDA_CHECK(kernels::gather_rows(xs, src, K, nullptr, M, H, hx, comp)); }},
        {"fwd", "gate+up GEMMs", [&] { expert_gate_up(g, impl, d, rows, hx, w0, hgu); }},
        {"fwd", "swiglu", [&] { MOEHUB_CUDA_CHECK(kernels::swiglu_forward(hgu, M, static_cast<int>(d.F), ha, comp)); }},
        {"fwd", "down GEMMs", [&] {
           GemmCall dn;
           std::int64_t off = 0;
           for (std::size_t i = 0; i < rows.size(); ++i) {
             dn.groups.push_back({ha + off * d.F, wd(w0, d, static_cast<std::int64_t>(i)), hy + off * d.H, rows[i], d.H, d.F});
             off += rows[i];
           }
           g.run(dn, impl);
         }},
        {"fwd", "weighted scatter-add", [&] { MOEHUB_CUDA_CHECK(kernels::scatter_add_rows(hy, src, K, tw, M, H, out, comp)); }},
        {"bwd", "gather d_out rows", [&] { MOEHUB_CUDA_CHECK(kernels::gather_rows(dout, src, K, nullptr, M, H, hd, comp)); }},
        {"bwd", "dA GEMMs", [&] { expert_da(g, impl, d, rows, hd, w0, ha); }},
        {"bwd", "swiglu backward", [&] {
           MOEHUB_CUDA_CHECK(kernels::swiglu_backward(hgu, ha, M, static_cast<int>(d.F), src, tw, hgu, ha, dtw, false, comp));
         }},
        {"bwd", "dX GEMMs", [&] { expert_dx(g, impl, d, rows, hgu, w0, hy); }},
        {"bwd", "dW GEMMs", [&] { expert_dw(g, impl, d, rows, hx, hgu, ha, hd, g0, 1.f); }},
    };
    for (const Step& st : steps) {
      const double t = time_us(comp, 3, 10, st.fn);
      std::printf("  %s step %-22s %9.1f us\n", st.pass, st.name, t);
    }
    std::fflush(stdout);
  }
  cudaEvent_t e0, e1, e2, e3;
  for (cudaEvent_t* e : {&e0, &e1, &e2, &e3}) MOEHUB_CUDA_CHECK(cudaEventCreate(e));
  std::printf("bench-hop: ring-expert hop of one rank, T=%lld H=%lld F=%lld E=%lld k=%lld EP=%lld: %lld matched rows over %lld "
              "experts; partition %.1f MB; %s; median of 10\n",
              static_cast<long long>(d.T), static_cast<long long>(d.H), static_cast<long long>(d.F), static_cast<long long>(d.E),
              static_cast<long long>(d.K), static_cast<long long>(d.N), static_cast<long long>(M), static_cast<long long>(d.El),
              static_cast<double>(wbytes) / 1e6, device_name(0).c_str());
  for (int pass = 0; pass < 2; ++pass) {
    const bool b = pass == 1;
    const std::size_t bytes = b ? 3 * wbytes : wbytes;  // weights + fp32 gradient accumulators backward
    auto comp_fn = [&] { b ? bwd() : fwd(); };
    auto copy_fn = [&] {
      MOEHUB_CUDA_CHECK(cudaMemcpyAsync(w1, w0, wbytes, cudaMemcpyDeviceToDevice, copy));
      if (b) MOEHUB_CUDA_CHECK(cudaMemcpyAsync(g1, g0, 2 * wbytes, cudaMemcpyDeviceToDevice, copy));
    };
    const double tc = time_us(comp, 3, 10, comp_fn);
    const double tx = time_us(copy, 3, 10, copy_fn);
    std::vector<double> both;
    for (int i = 0; i < 13; ++i) {
      MOEHUB_CUDA_CHECK(cudaEventRecord(e0, comp));
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(copy, e0, 0));
      copy_fn();
      comp_fn();
      MOEHUB_CUDA_CHECK(cudaEventRecord(e1, copy));
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(comp, e1, 0));
      MOEHUB_CUDA_CHECK(cudaEventRecord(e2, comp));
      MOEHUB_CUDA_CHECK(cudaEventSynchronize(e2));
      float ms = 0;
      MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e2));
      if (i >= 3) both.push_back(1e3 * ms);
    }
    const double tb = median(both);
    std::printf("%s hop: compute %.1f us, copy %.1f us (%.1f MB, %.0f GB/s), overlapped %.1f us = %.3fx max(compute, copy)\n",
                b ? "bwd" : "fwd", tc, tx, static_cast<double>(bytes) / 1e6, static_cast<double>(bytes) / tx * 1e-3, tb,
                tb / std::max(tc, tx));
    std::fflush(stdout);
  }
  runner.reset();
  for (cudaEvent_t e : {e0, e1, e2, e3}) cudaEventDestroy(e);
  for (void* p : {static_cast<void*>(xs), static_cast<void*>(dout), static_cast<void*>(w0), static_cast<void*>(w1),
                  static_cast<void*>(g0), static_cast<void*>(g1), static_cast<void*>(hx), static_cast<void*>(hd),
                  static_cast<void*>(hy), static_cast<void*>(hgu), static_cast<void*>(ha),
                  static_cast<void*>(out), static_cast<void*>(tw), static_cast<void*>(dtw), static_cast<void*>(src)})
    cudaFree(p);
  cudaStreamDestroy(comp);
  cudaStreamDestroy(copy);
  return 0;
}


}  // namespace moehub::gpu
