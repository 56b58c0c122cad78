// moehub-gpu check: run the layer under each schedule on fresh seeded random inputs and
// compare every output and gradient with the float64 reference (moehub::ref); then the
// weight-gradient grouped GEMM alone on uneven groups (check_gemm.cpp).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "check_gemm.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "schedule.hpp"
#include "moe_ref/moe_ref.hpp"

namespace moehub::gpu {

namespace {

struct GlobalData {
  // all ranks, concatenated: rank r's tokens are rows r*T .. r*T+T-1
  std::vector<double> x, d_out, w_router;
  ref::ExpertWeights w;
  std::vector<std::uint16_t> x_b, d_out_b, w_router_b, wg_b, wu_b, wd_b;
};

GlobalData make_data(const LayerConfig& c, std::uint64_t seed, bool skewed) {
  std::mt19937_64 rng(seed);
  GlobalData g;
  const auto N = static_cast<std::size_t>(c.ep), T = static_cast<std::size_t>(c.tokens),
             H = static_cast<std::size_t>(c.hidden), F = static_cast<std::size_t>(c.ffn),
             E = static_cast<std::size_t>(c.experts);
  g.x_b = random_bf16(g.x, N * T * H, 1.0, rng);
  g.d_out_b = random_bf16(g.d_out, N * T * H, 1.0, rng);
  g.w_router_b = random_bf16(g.w_router, H * E, 1.0 / std::sqrt(static_cast<double>(H)), rng);
  g.wg_b = random_bf16(g.w.w_gate, E * H * F, 1.0 / std::sqrt(static_cast<double>(H)), rng);
  g.wu_b = random_bf16(g.w.w_up, E * H * F, 1.0 / std::sqrt(static_cast<double>(H)), rng);
  g.wd_b = random_bf16(g.w.w_down, E * F * H, 1.0 / std::sqrt(static_cast<double>(F)), rng);
  if (skewed) {
    // Feature 0 of every token is 1, and row 0 of the router adds a per-expert bias:
    // every 4th expert is favoured, the last quarter of the experts can never win.
    for (std::size_t t = 0; t < N * T; ++t) {
      g.x_b[t * H] = to_bf16(1.0);
      g.x[t * H] = 1.0;
    }
    for (std::size_t e = 0; e < E; ++e) {
      const double b = e >= E - E / 4 ? -30.0 : (e % 4 == 1 ? 2.0 : 0.0);
      g.w_router_b[e] = to_bf16(b);
      g.w_router[e] = from_bf16(g.w_router_b[e]);
    }
  }
  return g;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

struct Metric {
  std::string name;
  double err;
};

}  // namespace

int cmd_check(const Args& a) {
  LayerConfig base;
  base.tokens = a.integer("tokens", 96, 1, 1 << 16);
  base.hidden = static_cast<int>(a.integer("hidden", 256, 8, 8192));
  base.ffn = static_cast<int>(a.integer("ffn", 128, 8, 8192));
  base.experts = static_cast<int>(a.integer("experts", 32, 1, 1024));
  base.top_k = static_cast<int>(a.integer("top-k", 4, 1, 32));
  const std::string tname = a.str("transport", "folded");
  if (tname != "folded" && tname != "nccl") throw UsageError("--transport must be folded or nccl (got '" + tname + "')");
  auto eps = a.int_list("ep", "1,2,8,16", 1, 256);
  const std::vector<std::string> registered = schedule_names();
  const auto scheds = a.str_list("schedules", join(registered), {registered.begin(), registered.end()});
  const auto routings = a.str_list("routing", "uniform,skewed", {"uniform", "skewed"});
  const GemmImpl impl = from_user_input("--gemm", [&] { return parse_gemm_impl(a.str("gemm", "auto")); });
  // ring variants: every ring schedule runs with each accumulator type and hop chunk limit
  // (the defaults add bf16 accumulators and chunks below one hop's and one expert's rows)
  const auto accums = a.str_list("ring-accum", "fp32,bf16", {"fp32", "bf16"});
  const auto chunks = a.int_list("hop-chunk-rows", "-1,0,8,40", -1, 1LL << 30);
  const int launch_threads = static_cast<int>(a.integer("launch-threads", 0, 0, 1024));
  const double tol = 1e-2;
  std::unique_ptr<Transport> nccl;
  if (tname == "nccl") {  // one EP: the number of processes
    nccl = make_nccl_transport(a.str("rendezvous", ""));
    eps = {nccl->size()};
  }
  validate_eps(base, eps);
  std::uint64_t seed = static_cast<std::uint64_t>(a.integer("seed", 0, 0, INT64_MAX));
  if (seed == 0) seed = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  int me = 0;
  if (nccl) {  // every rank draws the same data: take rank 0's seed
    cudaStream_t s;
    MOEHUB_CUDA_CHECK(cudaStreamCreate(&s));
    std::uint64_t* d = nullptr;
    MOEHUB_CUDA_CHECK(cudaMalloc(&d, sizeof seed));
    MOEHUB_CUDA_CHECK(cudaMemcpy(d, &seed, sizeof seed, cudaMemcpyHostToDevice));
    const std::vector<char> all = nccl->all_gather_host({d}, sizeof seed, {s});
    std::memcpy(&seed, all.data(), sizeof seed);
    MOEHUB_CUDA_CHECK(cudaFree(d));
    MOEHUB_CUDA_CHECK(cudaStreamDestroy(s));
    me = nccl->local_ranks()[0];
  }
  std::printf("check: seed %llu (rerun with --seed %llu), tolerance %.0e, gemm %s, transport %s%s\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), tol, to_string(impl),
              tname.c_str(), nccl ? (", rank " + std::to_string(me)).c_str() : "");
  std::printf("check: ring schedules with accumulators %s x hop chunk rows %s (0 = whole hop); a ring case "
              "other than fp32 / 0 is named schedule/accumulators/c<rows>\n",
              join(accums).c_str(), join(chunks).c_str());
  int failures = 0, cases = 0;
  for (std::int64_t ep : eps) {
    for (const std::string& routing : routings) {
      LayerConfig c = base;
      c.ep = static_cast<int>(ep);
      const std::uint64_t case_seed = seed + static_cast<std::uint64_t>(ep) * 1000003ull + (routing == "skewed" ? 7 : 0);
      const GlobalData g = make_data(c, case_seed, routing == "skewed");
      const auto N = static_cast<std::size_t>(c.ep), T = static_cast<std::size_t>(c.tokens),
                 H = static_cast<std::size_t>(c.hidden), F = static_cast<std::size_t>(c.ffn),
                 E = static_cast<std::size_t>(c.experts), K = static_cast<std::size_t>(c.top_k),
                 El = static_cast<std::size_t>(c.local_experts());
      std::unique_ptr<Transport> folded;
      if (!nccl) folded = make_folded_transport(c.ep, 0);
      Transport& transport = nccl ? *nccl : *folded;
      MoeLayer layer(c, transport, impl);
      layer.set_launch_threads(launch_threads);
      layer.allocate_inputs();
      for (auto& rp : layer.ranks()) {
        Rank& r = *rp;
        const auto R = static_cast<std::size_t>(r.rank);
        upload(r.in.x, std::vector<std::uint16_t>(g.x_b.begin() + static_cast<std::ptrdiff_t>(R * T * H),
                                                  g.x_b.begin() + static_cast<std::ptrdiff_t>((R + 1) * T * H)), r.comp);
        upload(r.in.d_out, std::vector<std::uint16_t>(g.d_out_b.begin() + static_cast<std::ptrdiff_t>(R * T * H),
                                                      g.d_out_b.begin() + static_cast<std::ptrdiff_t>((R + 1) * T * H)), r.comp);
        upload(r.in.w_router, g.w_router_b, r.comp);
        // the rank's experts in the partition layout (PartitionLayout: Wgu rows [Wg[h] | Wu[h]], then Wd)
        const PartitionLayout lay = c.partition();
        std::vector<std::uint16_t> part(static_cast<std::size_t>(lay.elems()));
        const std::size_t e0 = R * El;
        for (std::size_t e = 0; e < El; ++e) {
          const auto gu = static_cast<std::size_t>(lay.gate_up(static_cast<std::int64_t>(e)));
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t f = 0; f < F; ++f) {
              part[gu + h * 2 * F + f] = g.wg_b[((e0 + e) * H + h) * F + f];
              part[gu + h * 2 * F + F + f] = g.wu_b[((e0 + e) * H + h) * F + f];
            }
          const auto dn = static_cast<std::size_t>(lay.down(static_cast<std::int64_t>(e)));
          for (std::size_t i = 0; i < F * H; ++i) part[dn + i] = g.wd_b[(e0 + e) * F * H + i];
        }
        upload(r.in.w_part, part, r.comp);
      }
      // float64 reference router over all ranks' tokens
      ref::LayerShape all{static_cast<std::int64_t>(N * T), c.hidden, c.ffn, c.experts, c.top_k};
      const ref::RouterOutput rr = ref::router_forward(all, g.x, g.w_router);
      const std::vector<LayerVariant> variants = layer_variants(scheds, accums, chunks);
      // the float64 expert reference depends only on the routing the GPU chose: computed
      // once per routing seen
      std::vector<std::int32_t> cached_ids;
      std::vector<float> cached_tw;
      bool have_ref = false;
      ref::ExpertGrads rg;
      std::vector<double> ref_out, ref_dlog;
      for (const LayerVariant& var : variants) {
        const std::string& sname = var.label;
        const std::unique_ptr<LayerSchedule> sched = make_schedule(var.schedule);
        ++cases;
        layer.set_ring_options(var.accum, var.chunk_rows);
        layer.allocate_outputs();
        layer.run(*sched);
        layer.synchronize();
        // the GPU routing of every rank (the reference experts run on it)
        std::vector<const void*> ids_dev, tw_dev;
        std::vector<cudaStream_t> streams;
        for (auto& rp : layer.ranks()) {
          ids_dev.push_back(rp->out.topk_ids);
          tw_dev.push_back(rp->out.topk_weights);
          streams.push_back(rp->comp);
        }
        const std::vector<char> ids_raw = transport.all_gather_host(ids_dev, T * K * 4, streams);
        const std::vector<char> tw_raw = transport.all_gather_host(tw_dev, T * K * 4, streams);
        std::vector<std::int32_t> ids(N * T * K);
        std::vector<float> twf(N * T * K);
        std::memcpy(ids.data(), ids_raw.data(), ids_raw.size());
        std::memcpy(twf.data(), tw_raw.data(), tw_raw.size());
        const std::vector<double> tw_all = to_double(twf);
        std::int64_t zero_experts = 0;
        {
          const auto& cm = layer.ranks()[0]->count_matrix;
          for (std::size_t e = 0; e < E; ++e) {
            std::int64_t tot = 0;
            for (std::size_t q = 0; q < N; ++q) tot += cm.at(static_cast<int>(q), static_cast<std::int64_t>(e));
            zero_experts += tot == 0;
          }
        }
        // routing: ids must equal the reference except at near-ties
        std::int64_t id_mismatch = 0, near_ties = 0;
        bool ids_ok = true;
        for (std::size_t t = 0; t < N * T; ++t) {
          for (std::size_t j = 0; j < K; ++j) {
            const std::int32_t gi = ids[t * K + j], ri = rr.topk_ids[t * K + j];
            const bool valid = gi >= 0 && gi < c.experts;
            ids_ok = ids_ok && valid;
            if (gi == ri) continue;
            const double gap = valid ? std::abs(rr.probs[t * E + static_cast<std::size_t>(gi)] - rr.probs[t * E + static_cast<std::size_t>(ri)]) : 1.0;
            if (gap <= 1e-5) ++near_ties; else ++id_mismatch;
          }
        }
        ids_ok = ids_ok && id_mismatch == 0;
        std::vector<Metric> m;
        // this process's ranks: GPU results and the matching slices of the reference
        std::vector<double> probs, probs_ref, tw, tw_ref, out, dx, dtw, dlog, dwg, dwu, dwd;
        std::vector<double> out_ref, dx_ref, dtw_ref, dlog_ref, dwg_ref, dwu_ref, dwd_ref;
        if (ids_ok && !(have_ref && ids == cached_ids && twf == cached_tw)) {
          have_ref = true;
          cached_ids = ids;
          cached_tw = twf;
          ref_out = ref::experts_forward(all, g.x, ids, tw_all, g.w);
          rg = ref::experts_backward(all, g.x, ids, tw_all, g.w, g.d_out);
          // router backward on the GPU's routing; only the probabilities are not needed by it
          ref::RouterOutput gr{rr.probs, ids, tw_all};
          ref_dlog = ref::router_backward(all, gr, rg.d_topk_weights);
        }
        auto slice = [](std::vector<double>& dst, const std::vector<double>& src, std::size_t from, std::size_t n) {
          dst.insert(dst.end(), src.begin() + static_cast<std::ptrdiff_t>(from), src.begin() + static_cast<std::ptrdiff_t>(from + n));
        };
        for (auto& rp : layer.ranks()) {
          Rank& r = *rp;
          const auto R = static_cast<std::size_t>(r.rank);
          auto app = [](std::vector<double>& dst, const std::vector<float>& src) { dst.insert(dst.end(), src.begin(), src.end()); };
          app(probs, download(r.out.probs, T * E, r.comp));
          slice(probs_ref, rr.probs, R * T * E, T * E);
          app(tw, download(r.out.topk_weights, T * K, r.comp));
          slice(tw_ref, rr.topk_weights, R * T * K, T * K);
          if (!ids_ok) continue;
          for (std::uint16_t v : download(r.out.out, T * H, r.comp)) out.push_back(from_bf16(v));
          for (std::uint16_t v : download(r.out.d_x, T * H, r.comp)) dx.push_back(from_bf16(v));
          app(dtw, download(r.out.d_topk_weights, T * K, r.comp));
          app(dlog, download(r.out.d_logits, T * E, r.comp));
          slice(out_ref, ref_out, R * T * H, T * H);
          slice(dx_ref, rg.d_x, R * T * H, T * H);
          slice(dtw_ref, rg.d_topk_weights, R * T * K, T * K);
          slice(dlog_ref, ref_dlog, R * T * E, T * E);
          const PartitionLayout lay = c.partition();
          const auto dw = download(r.out.d_w_part, static_cast<std::size_t>(lay.elems()), r.comp);
          const std::size_t e0 = R * El;
          for (std::size_t e = 0; e < El; ++e) {
            const auto gu = static_cast<std::size_t>(lay.gate_up(static_cast<std::int64_t>(e)));
            for (std::size_t h = 0; h < H; ++h) {
              for (std::size_t f = 0; f < F; ++f) {
                dwg.push_back(dw[gu + h * 2 * F + f]);
                dwu.push_back(dw[gu + h * 2 * F + F + f]);
              }
            }
            const auto dn = static_cast<std::ptrdiff_t>(lay.down(static_cast<std::int64_t>(e)));
            dwd.insert(dwd.end(), dw.begin() + dn, dw.begin() + dn + static_cast<std::ptrdiff_t>(F * H));
          }
          slice(dwg_ref, rg.d_w_gate, e0 * H * F, El * H * F);
          slice(dwu_ref, rg.d_w_up, e0 * H * F, El * H * F);
          slice(dwd_ref, rg.d_w_down, e0 * F * H, El * F * H);
        }
        m.push_back({"probs", ref::relative_error(probs, probs_ref)});
        if (ids_ok) {
          m.push_back({"topk_weights", near_ties ? 0.0 : ref::relative_error(tw, tw_ref)});
          m.push_back({"out", ref::relative_error(out, out_ref)});
          m.push_back({"d_x", ref::relative_error(dx, dx_ref)});
          m.push_back({"d_topk_weights", ref::relative_error(dtw, dtw_ref)});
          m.push_back({"d_logits", ref::relative_error(dlog, dlog_ref)});
          m.push_back({"d_w_gate", ref::relative_error(dwg, dwg_ref)});
          m.push_back({"d_w_up", ref::relative_error(dwu, dwu_ref)});
          m.push_back({"d_w_down", ref::relative_error(dwd, dwd_ref)});
        }
        bool ok = ids_ok;
        double worst = 0;
        std::string worst_name;
        for (auto& x : m) {
          if (!(x.err <= tol)) ok = false;
          if (!(x.err <= worst)) {
            worst = x.err;
            worst_name = x.name;
          }
        }
        if (routing == "skewed" && zero_experts == 0) ok = false;  // the case must exercise empty experts
        std::printf("%-4s ep=%-3d %-7s %-11s ids_mismatch=%lld near_ties=%lld empty_experts=%lld worst=%s %.3e\n",
                    ok ? "PASS" : "FAIL", c.ep, routing.c_str(), sname.c_str(), static_cast<long long>(id_mismatch),
                    static_cast<long long>(near_ties), static_cast<long long>(zero_experts), worst_name.c_str(), worst);
        if (!ok) {
          for (auto& x : m) std::printf("      %-15s %.3e%s\n", x.name.c_str(), x.err, x.err <= tol ? "" : "  <-- over tolerance");
          ++failures;
        }
        std::fflush(stdout);
        layer.free_outputs();
      }
    }
  }
  // the weight-gradient grouped GEMM on its own, uneven groups, against float64
  failures += check_wgrad_gemms(impl, seed, base.hidden, base.ffn, tol, cases);
  std::printf("check: %d of %d cases passed%s\n", cases - failures, cases, nccl ? (" on rank " + std::to_string(me)).c_str() : "");
  return failures == 0 ? 0 : 1;
}

}  // namespace moehub::gpu
