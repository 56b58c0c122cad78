// Schedule "a2a": tokens move. Per rank: router, permutation, counts exchange; gather the
// top-k-expanded rows (T*k), all-to-all dispatch straight into expert-major order, gate+up,
// SwiGLU, down per local expert, all-to-all combine (T*k rows), weighted unpermute.
// Saved for backward: received tokens, gate|up activations and the combined rows. The
// backward mirrors it (scaled upstream rows dispatched, dA, SwiGLU backward in place,
// weight gradients, dX, combine back, unpermute-sum). Full top-k-expanded buffers, as
// Megatron-style dispatchers.
#include <functional>
#include <string>

#include "a2a_segments.hpp"
#include "cuda_check.hpp"
#include "expert_ops.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"

namespace moehub::gpu {
namespace {

namespace k = moehub::kernels;

class A2ASchedule final : public LayerSchedule {
 public:
  std::string name() const override { return "a2a"; }

  plan::BufferPlan memory_plan(const LayerConfig& c, const CountMatrix& cm, int rank) const override {
    return plan::plan_a2a(ring_routing(c, cm), rank, c.hidden, c.ffn, c.top_k);
  }

  void forward(MoeLayer& L) override {
    L.route();
    L.exchange_counts();
    const Dims d = dims(L.config());
    st_.assign(L.ranks().size(), RankState{});
    each(L, [&](Rank& r, RankState& s) {
      s.lay = a2a_layout(r.count_matrix, r.rank);
      L.phase_begin(r, "a2a_fwd", "compute", r.comp);
      s.xperm = r.mem->alloc_n<bf16_t>(tk_rows(d) * static_cast<std::size_t>(d.H), "a2a_x_permuted");
      MOEHUB_CUDA_CHECK(k::gather_rows(r.in.x, r.pair_src, static_cast<int>(d.K), nullptr, d.T * d.K,
                                       static_cast<int>(d.H), s.xperm, r.comp));
      s.xrecv = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(s.lay.received * d.H), "a2a_x_received");
    });
    exchange(L, "a2a_dispatch", true, [](RankState& s) { return std::make_pair(s.xperm, s.xrecv); });
    each(L, [&](Rank& r, RankState& s) {
      free(r, s.xperm);
      L.phase_begin(r, "expert_fwd", "compute", r.comp);
      const auto RF = static_cast<std::size_t>(s.lay.received * d.F), RH = static_cast<std::size_t>(s.lay.received * d.H);
      s.gu = r.mem->alloc_n<bf16_t>(2 * RF, "a2a_gate_up_act");
      bf16_t* a = r.mem->alloc_n<bf16_t>(RF, "a2a_swiglu_out");
      s.y = r.mem->alloc_n<bf16_t>(RH, "a2a_expert_out");
      expert_forward(*r.gemm, L.gemm_impl(), d, s.lay.rows, s.xrecv, r.in.w_part, s.gu, a, s.y, r.comp);
      free(r, a);
      L.phase_end(r, "expert_fwd", r.comp);
      s.yback = r.mem->alloc_n<bf16_t>(tk_rows(d) * static_cast<std::size_t>(d.H), "a2a_y_permuted");
    });
    exchange(L, "a2a_combine", false, [](RankState& s) { return std::make_pair(s.yback, s.y); });
    each(L, [&](Rank& r, RankState& s) {
      free(r, s.y);
      MOEHUB_CUDA_CHECK(k::unpermute_sum(s.yback, r.pair_pos, r.out.topk_weights, d.T, static_cast<int>(d.K),
                                         static_cast<int>(d.H), r.out.out, nullptr, r.comp));
      L.phase_end(r, "a2a_fwd", r.comp);
    });
  }

  void backward(MoeLayer& L) override {
    const Dims d = dims(L.config());
    each(L, [&](Rank& r, RankState& s) {
      L.phase_begin(r, "a2a_bwd", "compute", r.comp);
      MOEHUB_CUDA_CHECK(k::pair_dot(r.in.d_out, s.yback, r.pair_pos, d.T, static_cast<int>(d.K), static_cast<int>(d.H),
                                    r.out.d_topk_weights, r.comp));
      free(r, s.yback);
      s.dyperm = r.mem->alloc_n<bf16_t>(tk_rows(d) * static_cast<std::size_t>(d.H), "a2a_dy_permuted");
      MOEHUB_CUDA_CHECK(k::gather_rows(r.in.d_out, r.pair_src, static_cast<int>(d.K), r.out.topk_weights, d.T * d.K,
                                       static_cast<int>(d.H), s.dyperm, r.comp));
      s.dy = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(s.lay.received * d.H), "a2a_dy_received");
    });
    exchange(L, "a2a_dispatch_bwd", true, [](RankState& s) { return std::make_pair(s.dyperm, s.dy); });
    each(L, [&](Rank& r, RankState& s) {
      free(r, s.dyperm);
      L.phase_begin(r, "expert_bwd", "compute", r.comp);
      const std::int64_t R = s.lay.received;
      bf16_t* da = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(R * d.F), "a2a_d_swiglu_out");
      expert_da(*r.gemm, L.gemm_impl(), d, s.lay.rows, s.dy, r.in.w_part, da);
      // in place: gu <- dGU, da <- A (recomputed, unscaled)
      MOEHUB_CUDA_CHECK(k::swiglu_backward(s.gu, da, R, static_cast<int>(d.F), nullptr, nullptr, s.gu, da, nullptr,
                                           false, r.comp));
      expert_dw(*r.gemm, L.gemm_impl(), d, s.lay.rows, s.xrecv, s.gu, da, s.dy, r.out.d_w_part, 0.f);
      free(r, s.dy);
      free(r, s.xrecv);
      s.dxrecv = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(R * d.H), "a2a_dx_received");
      expert_dx(*r.gemm, L.gemm_impl(), d, s.lay.rows, s.gu, r.in.w_part, s.dxrecv);
      free(r, da);
      free(r, s.gu);
      L.phase_end(r, "expert_bwd", r.comp);
      s.dxperm = r.mem->alloc_n<bf16_t>(tk_rows(d) * static_cast<std::size_t>(d.H), "a2a_dx_permuted");
    });
    exchange(L, "a2a_combine_bwd", false, [](RankState& s) { return std::make_pair(s.dxperm, s.dxrecv); });
    each(L, [&](Rank& r, RankState& s) {
      free(r, s.dxrecv);
      MOEHUB_CUDA_CHECK(k::unpermute_sum(s.dxperm, r.pair_pos, nullptr, d.T, static_cast<int>(d.K),
                                         static_cast<int>(d.H), r.out.d_x, nullptr, r.comp));
      free(r, s.dxperm);
      L.phase_end(r, "a2a_bwd", r.comp);
    });
  }

  // one row per pass: expert compute, dispatch + combine, whole pass
  std::vector<HopTime> pass_rows(const std::vector<PhaseTime>& phases, int rank) const override {
    std::vector<HopTime> out;
    for (const std::string pass : {"fwd", "bwd"}) {
      const std::string sfx = pass == "fwd" ? "" : "_bwd";
      double comp = 0, comm = 0, all = 0;
      for (const PhaseTime& p : phases) {
        if (p.rank != rank) continue;
        if (p.name == "expert_" + pass) comp += p.dur_us;
        if (p.name == "a2a_dispatch" + sfx || p.name == "a2a_combine" + sfx) comm += p.dur_us;
        if (p.name == "a2a_" + pass) all += p.dur_us;
      }
      out.push_back({rank, pass, "a2a", 0, comp, comm, all, 0.0, -1.0});
    }
    return out;
  }

 private:
  // one struct per local rank: the layout of its exchanges and its live buffers
  struct RankState {
    A2ALayout lay;
    bf16_t *xperm = nullptr, *xrecv = nullptr, *gu = nullptr, *y = nullptr, *yback = nullptr;
    bf16_t *dyperm = nullptr, *dy = nullptr, *dxrecv = nullptr, *dxperm = nullptr;
  };
  std::vector<RankState> st_;

  static std::size_t tk_rows(const Dims& d) { return static_cast<std::size_t>(d.T * d.K); }
  static void free(Rank& r, bf16_t*& p) {
    r.mem->free(p);
    p = nullptr;
  }
  /// f for every local rank, each on its launch thread (MoeLayer::for_each_rank).
  void each(MoeLayer& L, const std::function<void(Rank&, RankState&)>& f) {
    L.for_each_rank([&](std::size_t li) { f(*L.ranks()[li], st_[li]); });
  }
  /// One all-to-all over every local rank between its (sorted, expert-major) row buffers.
  void exchange(MoeLayer& L, const std::string& name, bool dispatch,
                const std::function<std::pair<bf16_t*, bf16_t*>(RankState&)>& bufs) {
    const auto row_bytes = static_cast<std::size_t>(L.config().hidden) * sizeof(bf16_t);
    std::vector<A2AXfer> xs;
    for (std::size_t li = 0; li < L.ranks().size(); ++li) {  // on the caller's thread: one list
      Rank& r = *L.ranks()[li];
      RankState& s = st_[li];
      L.phase_begin(r, name, "comm", r.comp);
      const auto b = bufs(s);
      A2AXfer x{r.rank, r.comp, {}, {}};
      a2a_segments(r.count_matrix, s.lay, r.rank, reinterpret_cast<char*>(b.first), reinterpret_cast<char*>(b.second),
                   row_bytes, dispatch, x.send, x.recv);
      xs.push_back(std::move(x));
    }
    L.transport().all_to_all(xs);
    for (auto& r : L.ranks()) L.phase_end(*r, name, r->comp);
  }
};

}  // namespace

std::unique_ptr<LayerSchedule> make_a2a_schedule() { return std::make_unique<A2ASchedule>(); }

}  // namespace moehub::gpu
