// Schedule "ring-token": token partitions (tokens, routing metadata, upstream gradient)
// circulate, experts stay (ring engine, ring_engine.hpp). At hop h rank r computes the
// pairs of the partition that started on rank (r - h) mod N routed to its own experts,
// in chunks (plan::hop_chunks); the accumulators (output forward; d_x and the gate-weight
// gradients backward) travel one hop behind their tokens and come home after the last
// hop; the experts' weight gradients stay at home in fp32. Accumulators
// (LayerConfig::ring_accum): fp32 -- output / d_x travel in fp32 and are converted at
// home; bf16 -- they travel in bf16 and come home straight into out / d_x
// (d_topk_weights always fp32).
#include <algorithm>
#include <functional>
#include <string>
#include <utility>

#include "cuda_check.hpp"
#include "ring_engine.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"

namespace moehub::gpu {
namespace {

namespace k = moehub::kernels;

class RingTokenSchedule final : public LayerSchedule {
 public:
  std::string name() const override { return "ring-token"; }
  bool ring_options() const override { return true; }

  plan::BufferPlan memory_plan(const LayerConfig& c, const CountMatrix& cm, int rank) const override {
    return plan::plan_ring(ring_routing(c, cm), rank, c.hidden, c.ffn, c.top_k, plan::RingMode::kToken,
                           ring_step_options(c, plan::RingMode::kToken));
  }

  void forward(MoeLayer& L) override {
    L.route();
    L.exchange_counts();
    pass(L, false);
  }
  void backward(MoeLayer& L) override { pass(L, true); }

 private:
  // one struct per local rank, for one pass
  struct RankState {
    std::vector<plan::HopSteps> steps;  ///< this rank's hops (plan::ring_pass_steps)
    HopBufs hop;
    std::vector<void*> owned;  ///< payload and accumulator slots
  };

  void pass(MoeLayer& L, bool bwd) {
    const LayerConfig& c = L.config();
    const Dims d = dims(c);
    const auto TH = static_cast<std::size_t>(d.T * d.H), TK = static_cast<std::size_t>(d.T * d.K);
    const bool acc16 = c.ring_accum == RingAccum::kBf16;
    const std::size_t acc_elem = acc16 ? 2 : 4;  // travelling output / d_x accumulators
    const std::string phase = bwd ? "ring_token_bwd" : "ring_token_fwd";
    std::vector<RankState> st(L.ranks().size());
    RingPass p;
    p.pass = bwd ? "bwd" : "fwd";
    p.mode = "ring-token";
    // the pass's steps (every local rank holds the same count matrix): planned once
    plan::RingPassSteps all = plan::ring_pass_steps(ring_routing(c, L.ranks()[0]->count_matrix), c.hidden, c.ffn, c.top_k,
                                                    2, plan::RingMode::kToken, bwd,
                                                    ring_step_options(c, plan::RingMode::kToken));
    for (std::size_t li = 0; li < st.size(); ++li) {
      Rank& r = *L.ranks()[li];
      RankState& s = st[li];
      L.phase_begin(r, phase, "compute", r.comp);
      s.steps = std::move(all.hops[static_cast<std::size_t>(r.rank)]);
      std::int64_t most = 0;
      for (const plan::HopSteps& hs : s.steps)
        for (const plan::ChunkSteps& ch : hs.chunks) most = std::max(most, ch.rows);
      s.hop = alloc_hop(*r.mem, d, most, bwd);
      // payload: tokens, pair list, gate weights (and d_out backward)
      std::vector<Segment> own = {{r.in.x, TH * 2}, {r.pair_src, TK * 4}, {r.out.topk_weights, TK * 4}};
      if (bwd) own.push_back({r.in.d_out, TH * 2});
      std::array<std::vector<Segment>, 2> pay, acc;
      for (std::size_t slot = 0; slot < 2; ++slot) {
        for (const Segment& o : own) {
          void* b = r.mem->alloc(o.bytes, "ring_token_buffer");
          s.owned.push_back(b);
          pay[slot].push_back({b, o.bytes});
        }
        void* a = r.mem->alloc(TH * acc_elem, bwd ? "ring_dx_accumulator" : "ring_out_accumulator");
        s.owned.push_back(a);
        acc[slot].push_back({a, TH * acc_elem});
        if (bwd) {
          void* a2 = r.mem->alloc(TK * 4, "ring_d_topk_weights_accumulator");
          s.owned.push_back(a2);
          acc[slot].push_back({a2, TK * 4});
        }
      }
      p.own.push_back(own);
      p.pay.push_back(pay);
      p.acc.push_back(acc);
      if (acc16) {  // bf16 accumulators come home straight into the outputs
        std::vector<Segment> home = {{bwd ? r.out.d_x : r.out.out, TH * 2}};
        if (bwd) home.push_back({r.out.d_topk_weights, TK * 4});
        p.acc_final.push_back(home);
      } else {
        // the accumulators come home into the slot the last hop did not use (free by then)
        p.acc_final.push_back(acc[static_cast<std::size_t>(ring_free_slot_after(c.ep))]);
      }
      // the pass's prologue and epilogue kernels are moe_plan's RingPassSteps::prologue and
      // epilogue (ring_steps.hpp), which the simulator replays: change both together
      if (bwd)
        MOEHUB_CUDA_CHECK(cudaMemsetAsync(r.out.d_w_part, 0, static_cast<std::size_t>(c.partition().elems()) * 4, r.comp));
    }
    p.compute = [&](std::size_t li, int h, const std::vector<Segment>& pay, const std::vector<Segment>& acc,
                    const std::function<void()>& wait_acc) {
      Rank& r = *L.ranks()[li];
      RankState& s = st[li];
      HopChunkIO io;
      io.x = static_cast<const bf16_t*>(pay[0].ptr);
      io.topk_weights = static_cast<const float*>(pay[2].ptr);
      if (bwd) io.dout = static_cast<const bf16_t*>(pay[3].ptr);
      io.W = r.in.w_part;
      io.dtw = s.hop.dtw;
      io.dtw_per_row = true;
      io.acc32 = acc16 ? nullptr : static_cast<float*>(acc[0].ptr);
      io.acc16 = acc16 ? static_cast<bf16_t*>(acc[0].ptr) : nullptr;
      if (bwd) io.dtw_acc = static_cast<float*>(acc[1].ptr);
      io.dw32 = r.out.d_w_part;
      io.wait_accum = wait_acc;
      for (const plan::ChunkSteps& ch : s.steps[static_cast<std::size_t>(h)].chunks) {
        io.src = static_cast<const std::int32_t*>(pay[1].ptr) + ch.pair_offset;
        run_hop_chunk(*r.gemm, L.gemm_impl(), d, ch, io, s.hop, r.comp);
      }
    };
    L.ring_pass(p);
    for (std::size_t li = 0; li < st.size(); ++li) {
      Rank& r = *L.ranks()[li];
      RankState& s = st[li];
      if (!acc16) {
        const auto& home = p.acc_final[li];
        MOEHUB_CUDA_CHECK(k::f32_to_bf16(static_cast<const float*>(home[0].ptr), d.T * d.H, bwd ? r.out.d_x : r.out.out, r.comp));
        if (bwd)
          MOEHUB_CUDA_CHECK(cudaMemcpyAsync(r.out.d_topk_weights, home[1].ptr, TK * 4, cudaMemcpyDeviceToDevice, r.comp));
      }
      free_hop(*r.mem, s.hop);
      for (void* b : s.owned) r.mem->free(b);
      L.phase_end(r, phase, r.comp);
    }
  }
};

}  // namespace

std::unique_ptr<LayerSchedule> make_ring_token_schedule() { return std::make_unique<RingTokenSchedule>(); }

}  // namespace moehub::gpu
