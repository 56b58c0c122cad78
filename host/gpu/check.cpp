// moehub-gpu check: run the layer under each schedule on fresh seeded random inputs and
// compare every output and gradient with the float64 reference (moehub::ref).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "moe_ref.hpp"

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
  const auto eps = a.int_list("ep", "1,2,8,16", 1, 256);
  const auto scheds = a.str_list("schedules", "a2a,ring-expert,ring-token", {"a2a", "ring-expert", "ring-token"});
  const auto routings = a.str_list("routing", "uniform,skewed", {"uniform", "skewed"});
  const GemmImpl impl = parse_gemm_impl(a.str("gemm", "auto"));
  const double tol = 1e-2;
  for (std::int64_t ep : eps) {  // reject bad arguments before any output
    LayerConfig c = base;
    c.ep = static_cast<int>(ep);
    try {
      validate(c);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--ep ") + std::to_string(ep) + " with this shape: " + e.what());
    }
  }
  std::uint64_t seed = static_cast<std::uint64_t>(a.integer("seed", 0, 0, INT64_MAX));
  if (seed == 0) seed = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::printf("check: seed %llu (rerun with --seed %llu), tolerance %.0e, gemm %s\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed), tol, to_string(impl));
  int failures = 0, cases = 0;
  for (std::int64_t ep : eps) {
    for (const std::string& routing : routings) {
      LayerConfig c = base;
      c.ep = static_cast<int>(ep);
      try {
        validate(c);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("check: ") + e.what());
      }
      const std::uint64_t case_seed = seed + static_cast<std::uint64_t>(ep) * 1000003ull + (routing == "skewed" ? 7 : 0);
      const GlobalData g = make_data(c, case_seed, routing == "skewed");
      const auto N = static_cast<std::size_t>(c.ep), T = static_cast<std::size_t>(c.tokens),
                 H = static_cast<std::size_t>(c.hidden), F = static_cast<std::size_t>(c.ffn),
                 E = static_cast<std::size_t>(c.experts), K = static_cast<std::size_t>(c.top_k),
                 El = static_cast<std::size_t>(c.local_experts());
      auto transport = make_folded_transport(c.ep, 0);
      MoeLayer layer(c, *transport, impl);
      layer.allocate_inputs();
      for (auto& rp : layer.ranks()) {
        Rank& r = *rp;
        const auto R = static_cast<std::size_t>(r.rank);
        upload(r.in.x, std::vector<std::uint16_t>(g.x_b.begin() + static_cast<std::ptrdiff_t>(R * T * H),
                                                  g.x_b.begin() + static_cast<std::ptrdiff_t>((R + 1) * T * H)), r.comp);
        upload(r.in.d_out, std::vector<std::uint16_t>(g.d_out_b.begin() + static_cast<std::ptrdiff_t>(R * T * H),
                                                      g.d_out_b.begin() + static_cast<std::ptrdiff_t>((R + 1) * T * H)), r.comp);
        upload(r.in.w_router, g.w_router_b, r.comp);
        // partition layout: [Wgu: El][H][2F] (row h = [Wg[h] | Wu[h]]) | [Wd: El][F][H]
        std::vector<std::uint16_t> part;
        const std::size_t e0 = R * El;
        for (std::size_t e = e0; e < e0 + El; ++e) {
          for (std::size_t h = 0; h < H; ++h) {
            const auto row = static_cast<std::ptrdiff_t>((e * H + h) * F);
            part.insert(part.end(), g.wg_b.begin() + row, g.wg_b.begin() + row + static_cast<std::ptrdiff_t>(F));
            part.insert(part.end(), g.wu_b.begin() + row, g.wu_b.begin() + row + static_cast<std::ptrdiff_t>(F));
          }
        }
        part.insert(part.end(), g.wd_b.begin() + static_cast<std::ptrdiff_t>(e0 * F * H), g.wd_b.begin() + static_cast<std::ptrdiff_t>((e0 + El) * F * H));
        upload(r.in.w_part, part, r.comp);
      }
      // float64 reference router over all ranks' tokens
      ref::LayerShape all{static_cast<std::int64_t>(N * T), c.hidden, c.ffn, c.experts, c.top_k};
      const ref::RouterOutput rr = ref::router_forward(all, g.x, g.w_router);
      for (const std::string& sname : scheds) {
        const Schedule s = parse_schedule(sname);
        ++cases;
        layer.allocate_outputs();
        layer.run(s);
        layer.synchronize();
        // gather the GPU results of all ranks
        std::vector<double> probs, tw, out, dx, dtw, dlog, dwg(E * H * F), dwu(E * H * F), dwd(E * F * H);
        std::vector<std::int32_t> ids;
        std::int64_t zero_experts = 0;
        for (auto& rp : layer.ranks()) {
          Rank& r = *rp;
          auto app = [](std::vector<double>& dst, const std::vector<float>& src) { dst.insert(dst.end(), src.begin(), src.end()); };
          app(probs, download(r.out.probs, T * E, r.comp));
          app(tw, download(r.out.topk_weights, T * K, r.comp));
          for (std::uint16_t v : download(r.out.out, T * H, r.comp)) out.push_back(from_bf16(v));
          for (std::uint16_t v : download(r.out.d_x, T * H, r.comp)) dx.push_back(from_bf16(v));
          app(dtw, download(r.out.d_topk_weights, T * K, r.comp));
          app(dlog, download(r.out.d_logits, T * E, r.comp));
          auto id = download(r.out.topk_ids, T * K, r.comp);
          ids.insert(ids.end(), id.begin(), id.end());
          auto dw = download(r.out.d_w_part, 3 * El * H * F, r.comp);
          const std::size_t e0 = static_cast<std::size_t>(r.rank) * El;
          for (std::size_t e = 0; e < El; ++e) {
            for (std::size_t h = 0; h < H; ++h) {
              for (std::size_t f = 0; f < F; ++f) {
                dwg[((e0 + e) * H + h) * F + f] = dw[(e * H + h) * 2 * F + f];
                dwu[((e0 + e) * H + h) * F + f] = dw[(e * H + h) * 2 * F + F + f];
              }
            }
          }
          std::copy(dw.begin() + static_cast<std::ptrdiff_t>(2 * El * H * F), dw.end(), dwd.begin() + static_cast<std::ptrdiff_t>(e0 * F * H));
          if (r.rank == 0) {
            for (std::size_t e = 0; e < E; ++e) {
              std::int64_t tot = 0;
              for (std::size_t q = 0; q < N; ++q) tot += r.count_matrix[q * E + e];
              zero_experts += tot == 0;
            }
          }
        }
        // routing: ids must equal the reference except at near-ties
        std::int64_t id_mismatch = 0, near_ties = 0;
        for (std::size_t t = 0; t < N * T; ++t) {
          for (std::size_t j = 0; j < K; ++j) {
            const std::int32_t gi = ids[t * K + j], ri = rr.topk_ids[t * K + j];
            if (gi == ri) continue;
            const bool valid = gi >= 0 && gi < c.experts;
            const double gap = valid ? std::abs(rr.probs[t * E + static_cast<std::size_t>(gi)] - rr.probs[t * E + static_cast<std::size_t>(ri)]) : 1.0;
            if (gap <= 1e-5) ++near_ties; else ++id_mismatch;
          }
        }
        // reference experts on the GPU's routing (so that near-ties cannot mislead)
        bool ids_ok = id_mismatch == 0;
        for (std::int32_t v : ids) ids_ok = ids_ok && v >= 0 && v < c.experts;
        std::vector<Metric> m;
        m.push_back({"probs", ref::relative_error(probs, rr.probs)});
        if (ids_ok) {
          m.push_back({"topk_weights", near_ties ? 0.0 : ref::relative_error(tw, rr.topk_weights)});
          const std::vector<double> ref_out = ref::experts_forward(all, g.x, ids, tw, g.w);
          const ref::ExpertGrads rg = ref::experts_backward(all, g.x, ids, tw, g.w, g.d_out);
          ref::RouterOutput gr{probs, ids, tw};
          const std::vector<double> ref_dlog = ref::router_backward(all, gr, rg.d_topk_weights);
          m.push_back({"out", ref::relative_error(out, ref_out)});
          m.push_back({"d_x", ref::relative_error(dx, rg.d_x)});
          m.push_back({"d_topk_weights", ref::relative_error(dtw, rg.d_topk_weights)});
          m.push_back({"d_logits", ref::relative_error(dlog, ref_dlog)});
          m.push_back({"d_w_gate", ref::relative_error(dwg, rg.d_w_gate)});
          m.push_back({"d_w_up", ref::relative_error(dwu, rg.d_w_up)});
          m.push_back({"d_w_down", ref::relative_error(dwd, rg.d_w_down)});
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
  std::printf("check: %d of %d cases passed\n", cases - failures, cases);
  return failures == 0 ? 0 : 1;
}

}  // namespace moehub::gpu
