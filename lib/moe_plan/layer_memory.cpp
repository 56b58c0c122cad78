// The device memory of one rank's layer as the GPU harness allocates it (layer_memory.hpp).
#include "moe_plan/layer_memory.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace moehub::plan {
namespace {

// The allocations in host order, with the running total and its peak, as the harness's
// RankAllocator counts them.
class Trace {
 public:
  /// Starts the step that the next allocations belong to (the peak's phase).
  void step(std::string name) { step_ = std::move(name); }
  std::size_t alloc(const std::string& name, std::int64_t bytes) {
    const std::size_t rounded = allocation_bytes(static_cast<std::size_t>(bytes));
    plan_.buffers.push_back({name, rounded});
    live_.push_back(true);
    in_use_ += rounded;
    if (in_use_ > plan_.peak_bytes) {
      plan_.peak_bytes = in_use_;
      plan_.peak_phase = step_;
      std::map<std::string, std::size_t> by_name;
      for (std::size_t i = 0; i < live_.size(); ++i)
        if (live_[i]) by_name[plan_.buffers[i].name] += plan_.buffers[i].bytes;
      plan_.at_peak.clear();
      for (const auto& kv : by_name) plan_.at_peak.push_back({kv.first, kv.second});
    }
    return plan_.buffers.size() - 1;
  }
  void free(std::size_t id) {
    if (!live_.at(id)) throw std::logic_error("layer memory plan: buffer freed twice");
    live_[id] = false;
    in_use_ -= plan_.buffers[id].bytes;
  }
  BufferPlan take() { return std::move(plan_); }

 private:
  BufferPlan plan_;
  std::vector<bool> live_;
  std::size_t in_use_ = 0;
  std::string step_;
};

struct Shape {
  std::int64_t T, H, F, E, El, K;
};

Shape shape_of(const RingRouting& r, int rank, int hidden, int ffn, int top_k, const char* who) {
  const auto bad = [&](const std::string& what) { throw std::invalid_argument(std::string(who) + ": " + what); };
  validate_routing(r, who);
  const int n = r.ranks();
  if (rank < 0 || rank >= n) bad("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(n) + ")");
  if (hidden < 1 || ffn < 1 || top_k < 1) bad("hidden, ffn and top_k must be >= 1");
  const auto g = static_cast<std::size_t>(rank);
  Shape s{r.tokens[g], hidden, ffn, r.first_expert.back(), r.first_expert[g + 1] - r.first_expert[g], top_k};
  if (s.E < 1) bad("the routing needs at least one expert");
  std::int64_t pairs = 0;
  for (std::int64_t c : r.pairs[g]) pairs += c;
  if (pairs != s.T * s.K)
    bad("rank " + std::to_string(rank) + " routes " + std::to_string(pairs) + " pairs, not tokens * top_k = " +
        std::to_string(s.T * s.K));
  return s;
}

/// Inputs, outputs and routing, up to the start of the schedule's first pass.
void layer_start(Trace& t, const Shape& s) {
  const std::int64_t W = s.El * 3 * s.H * s.F, TH = s.T * s.H, TK = s.T * s.K;
  t.step("inputs");
  t.alloc("x", TH * 2);
  t.alloc("w_router", s.H * s.E * 2);
  t.alloc("expert_weights", W * 2);
  t.alloc("d_out", TH * 2);
  t.alloc("param_grad_experts", W * 4);
  t.step("outputs");
  for (const auto& b : std::vector<std::pair<const char*, std::int64_t>>{{"probs", s.T * s.E * 4},
                                                                           {"topk_ids", TK * 4},
                                                                           {"topk_weights", TK * 4},
                                                                           {"out", TH * 2},
                                                                           {"d_x", TH * 2},
                                                                           {"d_topk_weights", TK * 4},
                                                                           {"counts", s.E * 4},
                                                                           {"offsets", (s.E + 1) * 4},
                                                                           {"pair_src", TK * 4},
                                                                           {"pair_pos", TK * 4}})
    t.alloc(b.first, b.second);
  t.step("router");
  t.free(t.alloc("router_logits", s.T * s.E * 4));
  t.step("permute");
  t.free(t.alloc("permute_scratch", s.E * 4));
}

void layer_end(Trace& t, const Shape& s) {
  t.step("router backward");
  t.alloc("d_logits", s.T * s.E * 4);
}

/// The per-chunk buffers of a ring pass (host/gpu/ring_hop.cpp alloc_hop).
std::vector<std::size_t> hop_buffers(Trace& t, const Shape& s, std::int64_t rows, bool backward, bool y_over_x) {
  const std::int64_t R = std::max<std::int64_t>(rows, 1);
  std::vector<std::size_t> ids = {t.alloc("hop_x", R * s.H * 2), t.alloc("hop_gate_up_act", R * 2 * s.F * 2),
                                  t.alloc("hop_swiglu_out", R * s.F * 2)};
  if (!y_over_x) ids.push_back(t.alloc(backward ? "hop_dx" : "hop_expert_out", R * s.H * 2));
  if (backward) {
    ids.push_back(t.alloc("hop_d_out", R * s.H * 2));
    ids.push_back(t.alloc("hop_d_topk_weights", R * 4));
  }
  return ids;
}

}  // namespace

BufferPlan plan_a2a(const RingRouting& routing, int rank, int hidden, int ffn, int top_k) {
  const Shape s = shape_of(routing, rank, hidden, ffn, top_k, "plan_a2a");
  const auto g = static_cast<std::size_t>(rank);
  std::int64_t R = 0;  // rows this rank's experts receive
  for (const auto& row : routing.pairs)
    for (int e = routing.first_expert[g]; e < routing.first_expert[g + 1]; ++e) R += row[static_cast<std::size_t>(e)];
  const std::int64_t TKH = s.T * s.K * s.H;
  Trace t;
  layer_start(t, s);
  t.step("fwd dispatch");
  const std::size_t xperm = t.alloc("a2a_x_permuted", TKH * 2);
  const std::size_t xrecv = t.alloc("a2a_x_received", R * s.H * 2);
  t.free(xperm);
  t.step("fwd experts");
  const std::size_t gu = t.alloc("a2a_gate_up_act", R * 2 * s.F * 2);
  const std::size_t act = t.alloc("a2a_swiglu_out", R * s.F * 2);
  const std::size_t y = t.alloc("a2a_expert_out", R * s.H * 2);
  t.free(act);
  t.step("fwd combine");
  const std::size_t yback = t.alloc("a2a_y_permuted", TKH * 2);
  t.free(y);
  t.free(yback);
  t.step("bwd dispatch");
  const std::size_t dyperm = t.alloc("a2a_dy_permuted", TKH * 2);
  const std::size_t dy = t.alloc("a2a_dy_received", R * s.H * 2);
  t.free(dyperm);
  t.step("bwd experts");
  const std::size_t da = t.alloc("a2a_d_swiglu_out", R * s.F * 2);
  t.free(dy);
  t.free(xrecv);
  const std::size_t dxrecv = t.alloc("a2a_dx_received", R * s.H * 2);
  t.free(da);
  t.free(gu);
  t.step("bwd combine");
  const std::size_t dxperm = t.alloc("a2a_dx_permuted", TKH * 2);
  t.free(dxrecv);
  t.free(dxperm);
  layer_end(t, s);
  return t.take();
}

BufferPlan plan_ring(const RingRouting& routing, int rank, int hidden, int ffn, int top_k, RingMode mode,
                     const RingOptions& o) {
  const Shape s = shape_of(routing, rank, hidden, ffn, top_k, "plan_ring");
  const auto valid = [](int b) { return b == 2 || b == 4; };
  if (o.chunk_rows < kOneExpertPerChunk || !valid(o.accum_bytes) || !valid(o.grad_bytes))
    throw std::invalid_argument("plan_ring: chunk rows must be >= -1 (-1: one expert per chunk, 0: whole hops) and "
                                "accumulator and gradient bytes 2 or 4");
  const bool expert = mode == RingMode::kExpert;
  const std::int64_t W = s.El * 3 * s.H * s.F, TH = s.T * s.H, TK = s.T * s.K;
  // the hop buffers hold the largest chunk of this rank's hops (the steps the passes run;
  // both passes cut the same chunks, only their kernels differ)
  std::int64_t most = 0;
  for (const HopSteps& hs : ring_hop_steps(routing, rank, hidden, ffn, top_k, 2, mode, false, o))
    for (const ChunkSteps& ch : hs.chunks) most = std::max(most, ch.rows);
  Trace t;
  layer_start(t, s);
  for (const bool bwd : {false, true}) {
    const std::string pass = bwd ? "bwd" : "fwd";
    t.step(pass + " ring buffers");
    std::vector<std::size_t> ids = hop_buffers(t, s, most, bwd, expert && bwd && o.chunk_rows != 0);
    if (expert) {
      if (bwd && o.grad_bytes == 2 && o.chunk_rows > 0) {
        // an expert split over several chunks sums its pieces in fp32 first
        const auto& mine = routing.pairs[static_cast<std::size_t>(rank)];
        const std::int64_t largest_expert = mine.empty() ? 0 : *std::max_element(mine.begin(), mine.end());
        if (largest_expert > o.chunk_rows) ids.push_back(t.alloc("ring_split_expert_grad", 3 * s.H * s.F * 4));
      }
      for (int slot = 0; slot < 2; ++slot) {
        ids.push_back(t.alloc("ring_weight_buffer", W * 2));
        if (bwd) ids.push_back(t.alloc("ring_grad_accumulator", W * o.grad_bytes));
      }
      if (o.accum_bytes != 2) ids.push_back(t.alloc(bwd ? "ring_dx_accumulator" : "ring_out_accumulator", TH * o.accum_bytes));
    } else {
      for (int slot = 0; slot < 2; ++slot) {
        std::vector<std::int64_t> own = {TH * 2, TK * 4, TK * 4};  // tokens, pair list, gate weights
        if (bwd) own.push_back(TH * 2);                            // d_out
        for (std::int64_t b : own) ids.push_back(t.alloc("ring_token_buffer", b));
        ids.push_back(t.alloc(bwd ? "ring_dx_accumulator" : "ring_out_accumulator", TH * o.accum_bytes));
        if (bwd) ids.push_back(t.alloc("ring_d_topk_weights_accumulator", TK * 4));
      }
    }
    for (std::size_t id : ids) t.free(id);
  }
  layer_end(t, s);
  return t.take();
}

std::size_t buffer_bytes(const BufferPlan& plan, const std::string& name) {
  std::size_t sum = 0;
  bool found = false;
  for (const Buffer& b : plan.buffers) {
    if (b.name != name) continue;
    sum += b.bytes;
    found = true;
  }
  if (!found) throw std::out_of_range("buffer plan has no buffer named " + name);
  return sum;
}

}  // namespace moehub::plan
