// moehub-gpu memory / bench-gemm / bench-hop / run: measurements and traces.
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
#include "moe_plan.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"
#include "trace.hpp"

namespace moehub::gpu {

namespace {


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

/// Median time (us) of each of `fns` enqueued on `s`: `warm` rounds, then `reps` timed
/// rounds, one call of each function per round (round-robin, so that the GPU's clock drift
/// over the measurement is shared by all of them), CUDA events around each call.
std::vector<double> round_robin_us(cudaStream_t s, int warm, int reps, const std::vector<std::function<void()>>& fns) {
  cudaEvent_t a, b;
  MOEHUB_CUDA_CHECK(cudaEventCreate(&a));
  MOEHUB_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<std::vector<double>> t(fns.size());
  for (int round = 0; round < warm + reps; ++round) {
    for (std::size_t i = 0; i < fns.size(); ++i) {
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

/// Median time (us) of `fn` enqueued on `s`, over `reps` runs after `warm` warm-ups.
double time_us(cudaStream_t s, int warm, int reps, const std::function<void()>& fn) {
  return round_robin_us(s, warm, reps, {fn})[0];
}


std::vector<std::int64_t> balanced_rows(std::int64_t total, int groups) {
  std::vector<std::int64_t> r(static_cast<std::size_t>(groups), total / groups);
  for (std::int64_t i = 0; i < total % groups; ++i) ++r[static_cast<std::size_t>(i)];
  return r;
}

/// Rows of expert e proportional to (e + 1)^-0.5, rounded down, the remainder one row each
/// to the first experts: a fixed, reproducible imbalance (128 experts: the largest gets
/// 6.0x the mean, the smallest 0.53x). scripts/gpu/torch_grouped_mm.py --routing skewed
/// computes the same rows.
std::vector<std::int64_t> skewed_rows(std::int64_t total, int groups) {
  double sum = 0;
  for (int e = 0; e < groups; ++e) sum += std::pow(static_cast<double>(e + 1), -0.5);
  std::vector<std::int64_t> r(static_cast<std::size_t>(groups));
  std::int64_t used = 0;
  for (int e = 0; e < groups; ++e) {
    r[static_cast<std::size_t>(e)] =
        static_cast<std::int64_t>(std::floor(static_cast<double>(total) * std::pow(static_cast<double>(e + 1), -0.5) / sum));
    used += r[static_cast<std::size_t>(e)];
  }
  for (std::int64_t i = 0; i < total - used; ++i) ++r[static_cast<std::size_t>(i % groups)];
  return r;
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

}  // namespace

int cmd_memory(const Args& a) {
  LayerConfig base = layer_args(a, 49152, 2048, 768, 128, 8);
  const auto eps = a.int_list("ep", "8", 1, 256);
  const std::vector<std::string> registered = schedule_names();
  const auto scheds = a.str_list("schedules", join(registered), {registered.begin(), registered.end()});
  const GemmImpl impl = from_user_input("--gemm", [&] { return parse_gemm_impl(a.str("gemm", "auto")); });
  // ring variants (a2a runs once): each ring schedule with each accumulator type and chunk limit
  const auto accums = a.str_list("ring-accum", "fp32", {"fp32", "bf16"});
  const auto chunks = a.int_list("hop-chunk-rows", "0", 0, 1LL << 30);
  const std::vector<LayerVariant> variants = layer_variants(scheds, accums, chunks);
  validate_eps(base, eps);
  std::printf("memory: T=%lld per rank, H=%d, F=%d, E=%d, k=%d, folded ranks on %s\n",
              static_cast<long long>(base.tokens), base.hidden, base.ffn, base.experts, base.top_k, device_name(0).c_str());
  std::printf("memory: ring accumulators %s, hop chunk rows %s (0 = whole hop; a2a unaffected); a ring row other "
              "than fp32 / 0 is named schedule/accumulators/c<rows>\n",
              join(accums).c_str(), join(chunks).c_str());
  std::printf("%-4s %-12s %13s %15s %14s %14s  %s\n", "ep", "schedule", "peak_max_GiB", "above_inputs_GiB",
              "pool_high_GiB", "plan_GiB", "largest buffers at rank 0's peak");
  for (std::int64_t ep : eps) {  // every EP was validated above
    LayerConfig c = base;
    c.ep = static_cast<int>(ep);
    std::map<std::string, double> peak_of, above_of;
    try {
      auto tr = make_folded_transport(c.ep, 0);
      MoeLayer layer(c, *tr, impl);
      layer.allocate_inputs();
      fill_inputs(layer, 1234);
      for (const LayerVariant& v : variants) {
        const std::string& sn = v.label;
        layer.set_ring_options(v.accum, v.chunk_rows);
        std::vector<std::int64_t> peaks, pools, above;
        std::string top;
        try {
          std::vector<std::int64_t> base_bytes;
          for (auto& r : layer.ranks()) {
            r->mem->reset_peak();
            base_bytes.push_back(r->mem->in_use());
          }
          layer.allocate_outputs();
          const std::unique_ptr<LayerSchedule> sched = make_schedule(v.schedule);
          layer.run(*sched);
          layer.synchronize();
          for (std::size_t i = 0; i < layer.ranks().size(); ++i) {
            auto& r = layer.ranks()[i];
            peaks.push_back(r->mem->peak());
            above.push_back(r->mem->peak() - base_bytes[i]);
            pools.push_back(r->mem->pool_used_high());
          }
          std::vector<std::pair<std::int64_t, std::string>> bufs;
          for (auto& kv : layer.ranks()[0]->mem->at_peak()) bufs.push_back({kv.second, kv.first});
          std::sort(bufs.rbegin(), bufs.rend());
          for (std::size_t i = 0; i < std::min<std::size_t>(6, bufs.size()); ++i)
            top += bufs[i].second + "=" + gib(bufs[i].first) + " ";
          // prediction for rank 0 from its exact counts, with this variant's options
          const plan::BufferPlan bp = sched->memory_plan(layer.config(), layer.ranks()[0]->count_matrix, 0);
          layer.free_outputs();
          for (auto& r : layer.ranks()) r->mem->trim();
          const double mx = static_cast<double>(*std::max_element(peaks.begin(), peaks.end()));
          const double mean = static_cast<double>(std::accumulate(peaks.begin(), peaks.end(), std::int64_t{0})) / static_cast<double>(peaks.size());
          (void)mean;
          const double ab = static_cast<double>(*std::max_element(above.begin(), above.end()));
          peak_of[sn] = mx;
          above_of[sn] = ab;
          std::printf("%-4lld %-12s %13s %15s %14s %14s  %s(plan peak phase: %s)\n", static_cast<long long>(ep), sn.c_str(),
                      gib(static_cast<std::int64_t>(mx)).c_str(), gib(static_cast<std::int64_t>(ab)).c_str(),
                      gib(*std::max_element(pools.begin(), pools.end())).c_str(),
                      gib(static_cast<std::int64_t>(bp.peak_bytes)).c_str(), top.c_str(), bp.peak_phase.c_str());
        } catch (const OutOfMemory& e) {  // a size limit; any other failure ends the command
          std::printf("%-4lld %-12s does not fit on this GPU folded: %s\n", static_cast<long long>(ep), sn.c_str(), e.what());
          cudaGetLastError();
          break;
        }
        std::fflush(stdout);
      }
      for (const LayerVariant& v : variants) {
        const std::string& ring = v.label;
        if (ring != "a2a" && peak_of.count("a2a") && peak_of.count(ring))  // a2a is the baseline
          std::printf("ep=%lld a2a / %s per-rank peak: %.2fx (total), %.2fx (above inputs)\n", static_cast<long long>(ep),
                      ring.c_str(), peak_of["a2a"] / peak_of[ring], above_of["a2a"] / above_of[ring]);
      }
      std::fflush(stdout);
    } catch (const OutOfMemory& e) {
      std::printf("%-4lld inputs do not fit on this GPU folded: %s\n", static_cast<long long>(ep), e.what());
    }
  }
  std::printf("peak = tracked high-water mark per rank, inputs included (x, d_out, router and expert weights, and the "
              "experts' fp32 parameter gradient); above_inputs = peak less those; pool_high = the rank pool's "
              "cudaMemPoolAttrUsedMemHigh\n");
  return 0;
}

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
              "accumulate, bf16 out; cases round-robin, median of 20 rounds after 5 warm-up rounds; %s\n",
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
  }
  return 0;
}

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

int cmd_run(const Args& a) {
  LayerConfig c = layer_args(a, 4096, 2048, 768, 128, 8);
  c.ring_accum = from_user_input("", [&] { return parse_ring_accum(a.str("ring-accum", "fp32")); });
  c.hop_chunk_rows = a.integer("hop-chunk-rows", 0, 0, 1LL << 30);
  const std::string tname = a.str("transport", "folded");
  if (tname != "folded" && tname != "nccl") throw UsageError("--transport must be folded or nccl (got '" + tname + "')");
  // every argument is checked before the device is touched
  std::string sname = a.str("schedule", "ring");
  if (sname != "ring") {
    try {
      (void)make_schedule(sname);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--schedule: ") + e.what() + " or ring (adaptive)");
    }
  }
  const int iters = static_cast<int>(a.integer("iters", 3, 1, 1000));
  const GemmImpl impl = from_user_input("--gemm", [&] { return parse_gemm_impl(a.str("gemm", "auto")); });
  const std::string trace_dir = a.str("trace-dir", "");
  if (tname == "folded") {
    LayerConfig probe = c;
    probe.ep = static_cast<int>(a.integer("ep", 8, 1, 256));
    try {
      validate(probe);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("run: ") + e.what());
    }
  }
  std::unique_ptr<Transport> tr;
  if (tname == "nccl") {
    tr = make_nccl_transport(a.str("rendezvous", ""));
    c.ep = tr->size();
  } else {
    c.ep = static_cast<int>(a.integer("ep", 8, 1, 256));
    tr = make_folded_transport(c.ep, 0);
  }
  try {
    validate(c);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("run: ") + e.what());
  }
  const plan::ModeChoice choice = plan::choose_ring_mode(plan_problem(c));
  if (sname == "ring") sname = choice.mode == plan::RingMode::kExpert ? "ring-expert" : "ring-token";
  const std::unique_ptr<LayerSchedule> sched = make_schedule(sname);
  MoeLayer layer(c, *tr, impl);
  const int me = layer.ranks()[0]->rank;
  if (me == 0) {
    std::printf("run: %s, transport %s, EP=%d, T=%lld H=%d F=%d E=%d k=%d, gemm %s\n", sname.c_str(), tname.c_str(), c.ep,
                static_cast<long long>(c.tokens), c.hidden, c.ffn, c.experts, c.top_k, to_string(impl));
    std::printf("adaptive ring mode: %s (%s)\n", plan::to_string(choice.mode), choice.reason.c_str());
  }
  layer.allocate_inputs();
  fill_inputs(layer, 99);
  std::vector<double> totals;
  for (int it = 0; it < iters + 1; ++it) {
    for (auto& r : layer.ranks()) r->mem->reset_peak();
    layer.allocate_outputs();
    const auto t0 = std::chrono::steady_clock::now();
    layer.run(*sched);
    layer.synchronize();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (it > 0) totals.push_back(us);
    if (it < iters) layer.free_outputs();
  }
  // per-rank peak of the tracked allocator over the last iteration (inputs included)
  for (auto& r : layer.ranks()) {
    std::printf("rank %d: peak device memory of the layer %.3f GiB (tracked, inputs included)\n", r->rank,
                static_cast<double>(r->mem->peak()) / (1024.0 * 1024.0 * 1024.0));
  }
  const auto hops = layer.hop_times();
  const auto phases = layer.phase_times();
  if (me == 0) {
    std::printf("layer forward+backward (host wall, all local ranks): median %.1f us over %d iterations\n", median(totals), iters);
    std::map<std::string, std::vector<double>> by;
    for (auto& p : phases) by[p.name].push_back(p.dur_us);
    for (auto& kv : by) std::printf("  phase %-26s median over ranks %10.1f us\n", kv.first.c_str(), median(kv.second));
    std::map<std::pair<std::string, int>, std::vector<HopTime>> hb;
    for (auto& h : hops) hb[{h.pass, h.hop}].push_back(h);
    for (auto& kv : hb) {
      std::vector<double> cc, xx, hh;
      for (auto& h : kv.second) {
        cc.push_back(h.compute_us);
        xx.push_back(h.comm_us);
        hh.push_back(h.hop_us);
      }
      std::printf("  %s hop %2d: compute %9.1f us, transfer %9.1f us, hop %9.1f us (median over ranks)\n", kv.first.first.c_str(),
                  kv.first.second, median(cc), median(xx), median(hh));
    }
  }
  if (!trace_dir.empty()) {
    trace::Trace t;
    t.manifest.producer = "moehub-gpu run";
    t.manifest.device = device_name(tr->device_of(me));
    t.manifest.date = now_utc();
    t.manifest.ranks = c.ep;
    t.manifest.hidden = c.hidden;
    t.manifest.ffn = c.ffn;
    t.manifest.experts = c.experts;
    t.manifest.top_k = c.top_k;
    t.manifest.extra["schedule"] = sname;
    t.manifest.extra["transport"] = tname;
    t.manifest.extra["ep"] = std::to_string(c.ep);
    t.manifest.extra["tokens_per_rank"] = std::to_string(c.tokens);
    t.manifest.extra["gemm_impl"] = to_string(impl);
    t.manifest.extra["adaptive_mode"] = plan::to_string(choice.mode);
    t.manifest.extra["adaptive_reason"] = choice.reason;
    std::ostringstream tl;
    tl << "{\"traceEvents\":[";
    bool first = true;
    auto ev = [&](int pid, const std::string& tid, const std::string& name, double ts, double dur) {
      if (dur <= 0) return;
      tl << (first ? "" : ",") << "{\"name\":\"" << name << "\",\"ph\":\"X\",\"pid\":" << pid << ",\"tid\":\"" << tid
         << "\",\"ts\":" << ts << ",\"dur\":" << dur << "}";
      first = false;
    };
    for (auto& p : phases) ev(p.rank, p.unit == "compute" ? "phase" : p.unit, p.name, p.start_us, p.dur_us);
    for (auto& h : hops) {
      const std::string tag = h.pass + " hop " + std::to_string(h.hop);
      ev(h.rank, "compute", tag, h.compute_start_us, h.compute_us);
      if (h.comm_start_us >= 0) ev(h.rank, "copy", tag + " transfer", h.comm_start_us, h.comm_us);
    }
    tl << "]}";
    for (auto& rp : layer.ranks()) {
      Rank& r = *rp;
      trace::RankRouting rr;
      rr.rank = r.rank;
      rr.tokens = c.tokens;
      rr.top_k = c.top_k;
      rr.topk_ids = download(r.out.topk_ids, static_cast<std::size_t>(c.tokens * c.top_k), r.comp);
      rr.topk_weights = download(r.out.topk_weights, static_cast<std::size_t>(c.tokens * c.top_k), r.comp);
      t.routing.push_back(std::move(rr));
      for (auto& m : r.mem->timeline()) t.memory.push_back({r.rank, m.t_us, m.bytes_in_use, m.peak_bytes});
    }
    // The ring's last transfer (accumulators back to their owners, index ep) is counted in
    // hop ep-1's communication and duration: the trace format numbers hops 0..ranks-1.
    for (auto& h : hops) {
      if (h.hop >= c.ep && !t.hops.empty() && t.hops.back().rank == h.rank && t.hops.back().pass == h.pass) {
        t.hops.back().comm_us += h.comm_us;
        t.hops.back().hop_us += h.hop_us;
        continue;
      }
      t.hops.push_back({h.rank, h.pass, h.mode, h.hop, h.compute_us, h.comm_us, h.hop_us});
    }
    // schedules without ring hops give rows of their own (a2a: one per pass)
    for (auto& rp : layer.ranks())
      for (const HopTime& h : sched->pass_rows(phases, rp->rank))
        t.hops.push_back({h.rank, h.pass, h.mode, h.hop, h.compute_us, h.comm_us, h.hop_us});
    // GEMM table: the forward expert GEMMs at rank 0's received rows, each implementation
    {
      Rank& r = *layer.ranks()[0];
      std::vector<std::int64_t> rows;
      for (int i = 0; i < c.local_experts(); ++i) {
        rows.push_back(r.count_matrix.received_by_expert(r.rank, i));
      }
      bench_shapes("rank0", c.hidden, c.ffn, rows, t.gemm, false);
    }
    layer.free_outputs();
    if (tname == "nccl") {
      std::string d = trace_dir + "/rank" + std::to_string(me);
      trace::write_trace(d, t, tl.str());
      std::printf("rank %d: trace written to %s\n", me, d.c_str());
    } else {
      trace::write_trace(trace_dir, t, tl.str());
      const trace::Trace back = trace::read_trace(trace_dir);
      std::printf("trace written to %s and read back: %zu routing files, %zu gemm rows, %zu hop rows, %zu memory samples\n",
                  trace_dir.c_str(), back.routing.size(), back.gemm.size(), back.hops.size(), back.memory.size());
    }
  }
  return 0;
}

}  // namespace moehub::gpu
