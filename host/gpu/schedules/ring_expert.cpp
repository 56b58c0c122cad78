// Schedule "ring-expert": expert partitions circulate, tokens stay (ring engine,
// ring_engine.hpp). At hop h rank r computes its own pairs for the experts of the
// partition that started on rank (r - h) mod N, in chunks (plan::hop_chunks); the
// backward recomputes the expert intermediates inside each hop, and the partition's
// weight gradients travel one hop behind its weights, back to the owner after the last
// hop. Accumulators (LayerConfig::ring_accum): fp32 -- the output and d_x add into fp32
// copies converted at the end of the pass, gradient partitions travel in fp32 straight
// home into the parameter gradient; bf16 -- the hops add straight into the bf16 out /
// d_x, gradient partitions travel in bf16 and are converted at home (an expert split
// over several chunks sums its pieces in an fp32 scratch first).
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

class RingExpertSchedule final : public LayerSchedule {
 public:
  std::string name() const override { return "ring-expert"; }
  bool ring_options() const override { return true; }

  plan::BufferPlan memory_plan(const LayerConfig& c, const CountMatrix& cm, int rank) const override {
    return plan::plan_ring(ring_routing(c, cm), rank, c.hidden, c.ffn, c.top_k, plan::RingMode::kExpert,
                           ring_step_options(c, plan::RingMode::kExpert));
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
    std::vector<plan::HopSteps> steps;        ///< this rank's hops (plan::ring_pass_steps)
    HopBufs hop;
    std::array<void*, 2> weights{}, grads{};  ///< payload and accumulator slots
    float* local_acc = nullptr;               ///< fp32 out / d_x accumulator (fp32 mode)
    float* split_dw = nullptr;                ///< fp32 sum of a split expert's pieces (bf16 mode)
  };

  void pass(MoeLayer& L, bool bwd) {
    const LayerConfig& c = L.config();
    const Dims d = dims(c);
    const bool acc16 = c.ring_accum == RingAccum::kBf16;
    const PartitionLayout part = c.partition();
    const auto welems = static_cast<std::size_t>(part.elems());
    const auto wbytes = welems * 2;
    const auto gbytes = welems * (acc16 ? 2 : 4);  // travelling weight-gradient partitions
    const std::string phase = bwd ? "ring_expert_bwd" : "ring_expert_fwd";
    std::vector<RankState> st(L.ranks().size());
    RingPass p;
    p.pass = bwd ? "bwd" : "fwd";
    p.mode = "ring-expert";
    // the pass's steps (every local rank holds the same count matrix): planned once
    plan::RingPassSteps all = plan::ring_pass_steps(ring_routing(c, L.ranks()[0]->count_matrix), c.hidden, c.ffn, c.top_k,
                                                    2, plan::RingMode::kExpert, bwd,
                                                    ring_step_options(c, plan::RingMode::kExpert));
    for (std::size_t li = 0; li < st.size(); ++li) {
      Rank& r = *L.ranks()[li];
      RankState& s = st[li];
      L.phase_begin(r, phase, "compute", r.comp);
      s.steps = std::move(all.hops[static_cast<std::size_t>(r.rank)]);
      // chunked backward hops run gemm_d_x after the last reader of x (plan::ring_pass_steps)
      s.hop = alloc_hop(*r.mem, d, largest_chunk(s.steps), bwd, /*y_over_x=*/bwd && c.hop_chunk_rows != 0);
      if (bwd && acc16 && c.hop_chunk_rows > 0) {
        std::int64_t most = 0;
        for (int q = 0; q < c.ep; ++q)
          for (std::int64_t m : hop_rows(c, r.count_matrix, r.rank, q, true)) most = std::max(most, m);
        if (most > c.hop_chunk_rows)
          s.split_dw = r.mem->alloc_n<float>(static_cast<std::size_t>(part.expert_elems()), "ring_split_expert_grad");
      }
      std::array<std::vector<Segment>, 2> pay, acc;
      for (std::size_t slot = 0; slot < 2; ++slot) {
        s.weights[slot] = r.mem->alloc(wbytes, "ring_weight_buffer");
        pay[slot] = {{s.weights[slot], wbytes}};
        if (bwd) {
          s.grads[slot] = r.mem->alloc(gbytes, "ring_grad_accumulator");
          acc[slot] = {{s.grads[slot], gbytes}};
        }
      }
      p.own.push_back({{r.in.w_part, wbytes}});
      p.pay.push_back(pay);
      p.acc.push_back(acc);
      if (bwd && acc16)  // the bf16 sum comes home into the slot the last hop did not use
        p.acc_final.push_back(acc[static_cast<std::size_t>(ring_free_slot_after(c.ep))]);
      else
        p.acc_final.push_back({{r.out.d_w_part, gbytes}});
      // the pass's prologue and epilogue kernels are moe_plan's RingPassSteps::prologue and
      // epilogue (ring_steps.hpp), which the simulator replays: change both together
      if (acc16) {
        // the output (forward) or d_x (backward) is itself the accumulator
        MOEHUB_CUDA_CHECK(cudaMemsetAsync(bwd ? r.out.d_x : r.out.out, 0, static_cast<std::size_t>(d.T * d.H) * 2, r.comp));
      } else {
        // the output (forward) or d_x (backward) accumulates in fp32 within the pass
        s.local_acc = r.mem->alloc_n<float>(static_cast<std::size_t>(d.T * d.H), bwd ? "ring_dx_accumulator" : "ring_out_accumulator");
        MOEHUB_CUDA_CHECK(cudaMemsetAsync(s.local_acc, 0, static_cast<std::size_t>(d.T * d.H) * 4, r.comp));
      }
    }
    p.compute = [&](std::size_t li, int h, const std::vector<Segment>& pay, const std::vector<Segment>& acc,
                    const std::function<void()>& wait_acc) {
      Rank& r = *L.ranks()[li];
      RankState& s = st[li];
      const plan::HopSteps& hs = s.steps[static_cast<std::size_t>(h)];
      HopChunkIO io;
      io.x = r.in.x;
      io.dout = r.in.d_out;
      io.topk_weights = r.out.topk_weights;
      io.W = static_cast<const bf16_t*>(pay[0].ptr);
      io.dtw = r.out.d_topk_weights;
      io.acc32 = s.local_acc;
      io.acc16 = acc16 ? (bwd ? r.out.d_x : r.out.out) : nullptr;
      io.wait_accum = wait_acc;
      if (bwd && acc16) io.dw16 = static_cast<bf16_t*>(acc[0].ptr);
      if (bwd && !acc16) io.dw32 = static_cast<float*>(acc[0].ptr);
      const std::vector<std::int64_t> expert_rows = hop_expert_rows(hs, d.El);
      std::int64_t split_done = 0;
      for (const plan::ChunkSteps& ch : hs.chunks) {
        io.src = r.pair_src + ch.pair_offset;
        const bool piece = ch.last - ch.first == 1 && ch.rows < expert_rows[static_cast<std::size_t>(ch.first)];
        io.dw_override = nullptr;
        if (bwd && acc16 && piece)
          io.dw_override = [&](const plan::KernelStep& step) {
            add_piece_grads(r, L.gemm_impl(), d, part, ch, step, expert_rows, s, io.dw16, split_done);
          };
        run_hop_chunk(*r.gemm, L.gemm_impl(), d, ch, io, s.hop, r.comp);
      }
    };
    L.ring_pass(p);
    for (std::size_t li = 0; li < st.size(); ++li) {
      Rank& r = *L.ranks()[li];
      RankState& s = st[li];
      if (s.local_acc) {
        MOEHUB_CUDA_CHECK(k::f32_to_bf16(s.local_acc, d.T * d.H, bwd ? r.out.d_x : r.out.out, r.comp));
        r.mem->free(s.local_acc);
      }
      if (bwd && acc16)
        MOEHUB_CUDA_CHECK(k::bf16_to_f32(static_cast<const bf16_t*>(p.acc_final[li][0].ptr),
                                         static_cast<std::int64_t>(welems), r.out.d_w_part, r.comp));
      free_hop(*r.mem, s.hop);
      r.mem->free(s.split_dw);
      for (std::size_t slot = 0; slot < 2; ++slot) {
        r.mem->free(s.weights[slot]);
        if (bwd) r.mem->free(s.grads[slot]);
      }
      L.phase_end(r, phase, r.comp);
    }
  }

  static std::int64_t largest_chunk(const std::vector<plan::HopSteps>& hops) {
    std::int64_t most = 0;
    for (const plan::HopSteps& hs : hops)
      for (const plan::ChunkSteps& ch : hs.chunks) most = std::max(most, ch.rows);
    return most;
  }
  /// Rows of each local expert of the visiting partition over the hop's chunks.
  static std::vector<std::int64_t> hop_expert_rows(const plan::HopSteps& hs, std::int64_t experts) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(experts), 0);
    for (const plan::ChunkSteps& ch : hs.chunks)
      for (std::size_t i = 0; i < ch.expert_rows.size(); ++i) rows[static_cast<std::size_t>(ch.first) + i] += ch.expert_rows[i];
    return rows;
  }

  /// bf16 gradient partitions, an expert split over several chunks: each piece's weight
  /// gradient (kernel `step`) sums in the fp32 scratch s.split_dw, which enters the partition
  /// `grad` once, after the last piece's down-projection gradient (`split_done` counts the
  /// expert's rows so far).
  static void add_piece_grads(Rank& r, GemmImpl impl, const Dims& d, const PartitionLayout& part,
                              const plan::ChunkSteps& ch, const plan::KernelStep& step,
                              const std::vector<std::int64_t>& expert_rows, RankState& s, bf16_t* grad,
                              std::int64_t& split_done) {
    const HopBufs& b = s.hop;
    Dims d1 = d;  // one expert's view of the fp32 scratch: [H][2F] | [F][H]
    d1.El = 1;
    const float beta = split_done == 0 ? 0.f : 1.f;
    const bool gate_up = step.name == "gemm_d_w_gate_up";
    expert_dw(*r.gemm, impl, d1, ch.expert_rows, b.x, b.gu, b.a, b.dout, s.split_dw, beta, 0,
              gate_up ? DwPart::kGateUp : DwPart::kDown);
    if (gate_up) return;
    split_done += ch.rows;
    if (split_done == expert_rows[static_cast<std::size_t>(ch.first)]) {
      const std::int64_t e0 = ch.first;
      MOEHUB_CUDA_CHECK(k::add_f32_into_bf16(s.split_dw, part.gate_up_elems(), grad + part.gate_up(e0), r.comp));
      MOEHUB_CUDA_CHECK(k::add_f32_into_bf16(s.split_dw + part.gate_up_elems(), part.down_elems(), grad + part.down(e0),
                                             r.comp));
      split_done = 0;
    }
  }
};

}  // namespace

std::unique_ptr<LayerSchedule> make_ring_expert_schedule() { return std::make_unique<RingExpertSchedule>(); }

}  // namespace moehub::gpu
