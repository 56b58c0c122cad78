// Ring schedule, per-hop volumes, routing-mode choice and buffer plans. See moe_plan.hpp.
#include "moe_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace moehub::plan {
namespace {

void require(bool ok, const std::string& field, const std::string& range, long long value) {
  if (!ok)
    throw std::invalid_argument("MoeProblem." + field + " = " + std::to_string(value) +
                                " is outside the allowed range " + range);
}

bool valid_bytes(int b) { return b == 1 || b == 2 || b == 4 || b == 8; }

std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

using Phase = std::pair<std::string, std::vector<std::string>>;

// Builds a plan from the buffer sizes and the phases (each with its live buffers).
BufferPlan evaluate(std::vector<Buffer> buffers, const std::vector<Phase>& phases) {
  std::map<std::string, std::size_t> size_of;
  for (const Buffer& b : buffers) size_of[b.name] = b.bytes;
  BufferPlan plan{std::move(buffers), 0, ""};
  for (const Phase& ph : phases) {
    std::size_t live = 0;
    for (const std::string& name : ph.second) {
      const auto it = size_of.find(name);
      if (it == size_of.end()) throw std::logic_error("phase " + ph.first + " names unknown buffer " + name);
      live += it->second;
    }
    if (live > plan.peak_bytes || plan.peak_phase.empty()) {
      plan.peak_bytes = live;
      plan.peak_phase = ph.first;
    }
  }
  return plan;
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::size_t bytes(std::int64_t rows, std::int64_t width, int elem_bytes) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(width) *
         static_cast<std::size_t>(elem_bytes);
}

}  // namespace

void validate(const MoeProblem& p) {
  require(p.tokens_per_rank >= 1, "tokens_per_rank", "[1, inf)", p.tokens_per_rank);
  require(p.hidden >= 1, "hidden", "[1, inf)", p.hidden);
  require(p.ffn >= 1, "ffn", "[1, inf)", p.ffn);
  require(p.experts >= 1, "experts", "[1, inf)", p.experts);
  require(p.top_k >= 1 && p.top_k <= p.experts, "top_k", "[1, experts]", p.top_k);
  require(p.ep >= 1 && p.ep <= p.experts, "ep", "[1, experts]", p.ep);
  require(p.experts % p.ep == 0, "experts", "a multiple of ep", p.experts);
  require(p.etp >= 1 && p.ffn % p.etp == 0, "etp", "[1, ffn] dividing ffn", p.etp);
  require(valid_bytes(p.dtype_bytes), "dtype_bytes", "{1, 2, 4, 8}", p.dtype_bytes);
  require(valid_bytes(p.accum_bytes), "accum_bytes", "{1, 2, 4, 8}", p.accum_bytes);
  require(valid_bytes(p.grad_bytes), "grad_bytes", "{1, 2, 4, 8}", p.grad_bytes);
}

const char* to_string(RingMode m) { return m == RingMode::kExpert ? "expert" : "token"; }

HopParts hop_parts(const MoeProblem& p, RingMode mode, bool backward) {
  validate(p);
  const double T = static_cast<double>(p.tokens_per_rank), H = p.hidden, k = p.top_k;
  const double e_local = static_cast<double>(p.experts / p.ep);
  const double w_elems = 3.0 * H * (static_cast<double>(p.ffn) / p.etp);
  const double d = p.dtype_bytes, a = p.accum_bytes, g = p.grad_bytes;
  const double meta = T * k * (4.0 + 4.0);  // int32 id + fp32 weight per top-k slot
  if (mode == RingMode::kExpert) return {e_local * w_elems * d, backward ? e_local * w_elems * g : 0.0};
  if (!backward) return {T * H * d + meta, T * H * a};
  return {2.0 * T * H * d + meta, T * H * a + T * k * 4.0};
}

HopVolumes hop_volumes(const MoeProblem& p) {
  const auto sum = [&](RingMode m, bool bwd) {
    const HopParts h = hop_parts(p, m, bwd);
    return h.payload_bytes + h.accum_bytes;
  };
  return {sum(RingMode::kExpert, false), sum(RingMode::kExpert, true), sum(RingMode::kToken, false),
          sum(RingMode::kToken, true)};
}

ModeChoice choose_ring_mode(const MoeProblem& p) {
  const HopVolumes v = hop_volumes(p);
  const double expert = v.expert_fwd_bytes + v.expert_bwd_bytes;
  const double token = v.token_fwd_bytes + v.token_bwd_bytes;
  ModeChoice c{expert <= token ? RingMode::kExpert : RingMode::kToken, v, ""};
  c.reason = std::string(c.mode == RingMode::kExpert ? "expert" : "token") +
             " routing: per-hop volume expert " + mib(v.expert_fwd_bytes) + " fwd + " +
             mib(v.expert_bwd_bytes) + " bwd = " + mib(expert) + (expert <= token ? " <= " : " > ") +
             "token " + mib(v.token_fwd_bytes) + " fwd + " + mib(v.token_bwd_bytes) +
             " bwd = " + mib(token);
  return c;
}

int ring_partition_at_hop(int rank, int hop, int n) {
  if (n < 1) throw std::invalid_argument("ring size n = " + std::to_string(n) + " must be >= 1");
  if (rank < 0 || rank >= n)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(n) + ")");
  if (hop < 0 || hop >= n)
    throw std::invalid_argument("hop " + std::to_string(hop) + " is outside [0, " + std::to_string(n) + ")");
  return ((rank - hop) % n + n) % n;
}

int ring_send_peer(int rank, int n) {
  ring_partition_at_hop(rank, 0, n);  // validates rank and n
  return (rank + 1) % n;
}

int ring_recv_peer(int rank, int n) {
  ring_partition_at_hop(rank, 0, n);
  return (rank - 1 + n) % n;
}

std::vector<HopChunk> hop_chunks(const std::vector<std::int64_t>& rows, std::int64_t max_rows) {
  if (max_rows < kOneExpertPerChunk)
    throw std::invalid_argument("hop_chunks: max_rows_per_chunk = " + std::to_string(max_rows) +
                                " must be >= -1 (0 = the whole hop, -1 = one expert per chunk)");
  std::vector<HopChunk> out;
  HopChunk cur{-1, -1, 0, {}};
  auto flush = [&] {
    if (cur.first >= 0) out.push_back(cur);
    cur = HopChunk{-1, -1, 0, {}};
  };
  for (int e = 0; e < static_cast<int>(rows.size()); ++e) {
    const std::int64_t r = rows[static_cast<std::size_t>(e)];
    if (max_rows > 0 && r > max_rows) {
      flush();
      const std::int64_t pieces = (r + max_rows - 1) / max_rows, base = r / pieces, extra = r % pieces;
      for (std::int64_t i = 0; i < pieces; ++i) {
        const std::int64_t pr = base + (i < extra ? 1 : 0);
        out.push_back(HopChunk{e, e + 1, pr, {pr}});
      }
      continue;
    }
    if (cur.first >= 0 && max_rows > 0 && cur.rows + r > max_rows) flush();
    if (cur.first >= 0 && max_rows == kOneExpertPerChunk && cur.rows > 0 && r > 0) flush();
    if (cur.first < 0) cur.first = e;
    cur.last = e + 1;
    cur.rows += r;
    cur.expert_rows.push_back(r);
  }
  flush();
  return out;
}

std::int64_t max_chunk_rows(const std::vector<std::int64_t>& rows, std::int64_t max_rows) {
  std::int64_t mx = 0;
  for (const HopChunk& c : hop_chunks(rows, max_rows)) mx = std::max(mx, c.rows);
  return mx;
}

BufferPlan plan_a2a(const MoeProblem& p, std::int64_t rows_sent, std::int64_t rows_received,
                    std::int64_t max_rows_per_local_expert) {
  validate(p);
  const std::int64_t T = p.tokens_per_rank, H = p.hidden, F = p.ffn / p.etp, k = p.top_k;
  const std::int64_t e_local = p.experts / p.ep;
  const int d = p.dtype_bytes;
  if (rows_sent != T * k)
    throw std::invalid_argument("plan_a2a: rows_sent = " + std::to_string(rows_sent) +
                                " must equal tokens_per_rank * top_k = " + std::to_string(T * k));
  if (max_rows_per_local_expert < 0 || rows_received < max_rows_per_local_expert ||
      rows_received > e_local * max_rows_per_local_expert)
    throw std::invalid_argument(
        "plan_a2a: need 0 <= max_rows_per_local_expert <= rows_received <= experts/ep * "
        "max_rows_per_local_expert (got " + std::to_string(max_rows_per_local_expert) + ", " +
        std::to_string(rows_received) + ")");
  const std::int64_t Rs = rows_sent, Rr = rows_received;
  std::vector<Buffer> buf = {
      {"input", bytes(T, H, d)},
      {"routing", bytes(T, k, 8)},
      {"permuted_input", bytes(Rs, H, d)},
      {"received", bytes(Rr, H, d)},
      {"expert_gate_up", bytes(Rr, 2 * F, d)},
      {"expert_act", bytes(Rr, F, d)},
      {"expert_output", bytes(Rr, H, d)},
      {"combine_buffer", bytes(Rs, H, d)},
      {"output", bytes(T, H, d)},
      {"d_output", bytes(T, H, d)},
      {"d_permuted", bytes(Rs, H, d)},
      {"d_received", bytes(Rr, H, d)},
      {"d_act", bytes(Rr, F, d)},
      {"d_gate_up", bytes(Rr, 2 * F, d)},
      {"d_expert_input", bytes(Rr, H, d)},
      {"d_dispatch_back", bytes(Rs, H, d)},
      {"d_input", bytes(T, H, d)},
      {"d_topk_weights", bytes(T, k, 4)},
  };
  const std::vector<std::string> base = {"input", "routing"};
  const std::vector<std::string> saved = {"received", "expert_gate_up", "expert_act", "combine_buffer"};
  const auto bwd_base = cat(cat(base, saved), {"output", "d_output", "d_topk_weights"});
  const std::vector<Phase> phases = {
      {"fwd permute", cat(base, {"permuted_input"})},
      {"fwd dispatch", cat(base, {"permuted_input", "received"})},
      {"fwd gate/up GEMM", cat(base, {"received", "expert_gate_up"})},
      {"fwd activation", cat(base, {"received", "expert_gate_up", "expert_act"})},
      {"fwd down GEMM", cat(base, {"received", "expert_gate_up", "expert_act", "expert_output"})},
      {"fwd combine", cat(cat(base, saved), {"expert_output"})},
      {"fwd unpermute", cat(cat(base, saved), {"output"})},
      {"bwd unpermute", cat(bwd_base, {"d_permuted"})},
      {"bwd combine", cat(bwd_base, {"d_permuted", "d_received"})},
      {"bwd down GEMM", cat(cat(base, {"received", "expert_gate_up", "expert_act", "output",
                                       "d_output", "d_topk_weights"}), {"d_received", "d_act"})},
      {"bwd activation", cat(base, {"received", "expert_gate_up", "output", "d_output",
                                    "d_topk_weights", "d_act", "d_gate_up"})},
      {"bwd gate/up GEMM", cat(base, {"received", "output", "d_output", "d_topk_weights",
                                      "d_gate_up", "d_expert_input"})},
      {"bwd dispatch", cat(base, {"output", "d_output", "d_topk_weights", "d_expert_input",
                                  "d_dispatch_back"})},
      {"bwd permute", cat(base, {"output", "d_output", "d_topk_weights", "d_dispatch_back",
                                 "d_input"})},
  };
  return evaluate(std::move(buf), phases);
}

BufferPlan plan_ring(const MoeProblem& p, RingMode mode, std::int64_t max_rows_matched_in_one_hop,
                     std::int64_t max_rows_in_one_chunk) {
  validate(p);
  const std::int64_t T = p.tokens_per_rank, H = p.hidden, F = p.ffn / p.etp, k = p.top_k;
  const std::int64_t e_local = p.experts / p.ep;
  const std::int64_t m = max_rows_matched_in_one_hop;
  const int d = p.dtype_bytes, a = p.accum_bytes, g = p.grad_bytes;
  const std::int64_t max_m = mode == RingMode::kExpert ? T * k : T * std::min<std::int64_t>(k, e_local);
  if (m < 0 || m > max_m)
    throw std::invalid_argument("plan_ring: max_rows_matched_in_one_hop = " + std::to_string(m) +
                                " is outside [0, " + std::to_string(max_m) + "]");
  if (max_rows_in_one_chunk > m)
    throw std::invalid_argument("plan_ring: max_rows_in_one_chunk = " + std::to_string(max_rows_in_one_chunk) +
                                " exceeds max_rows_matched_in_one_hop = " + std::to_string(m));
  const std::int64_t c = max_rows_in_one_chunk < 0 ? m : max_rows_in_one_chunk;  // rows of the per-hop buffers
  // expert mode accumulating in the output's own type: no separate accumulators
  const bool in_place = mode == RingMode::kExpert && a == d;
  const std::int64_t w_elems = 3 * H * F;  // one expert's gate, up and down on this rank
  std::vector<Buffer> buf = {
      {"input", bytes(T, H, d)},
      {"routing", bytes(T, k, 8)},
      {"output", bytes(T, H, d)},
      {"d_output", bytes(T, H, d)},
      {"d_input", bytes(T, H, d)},
      {"d_topk_weights", bytes(T, k, 4)},
      {"hop_x", bytes(c, H, d)},
      {"hop_gate_up", bytes(c, 2 * F, d)},
      {"hop_act", bytes(c, F, d)},
      {"hop_y", bytes(c, H, d)},
      {"hop_dy", bytes(c, H, d)},
      {"hop_d_act", bytes(c, F, d)},
      {"hop_d_gate_up", bytes(c, 2 * F, d)},
      {"hop_d_x", bytes(c, H, d)},
  };
  std::vector<std::string> fwd_res, bwd_res;  // live through every hop of the pass
  if (mode == RingMode::kExpert) {
    if (!in_place) {
      buf.push_back({"output_accum", bytes(T, H, a)});
      buf.push_back({"d_input_accum", bytes(T, H, a)});
    }
    buf.push_back({"weights_current", bytes(e_local, w_elems, d)});
    buf.push_back({"weights_prefetch", bytes(e_local, w_elems, d)});
    buf.push_back({"wgrad_accum", bytes(e_local, w_elems, g)});
    buf.push_back({"wgrad_inflight", bytes(e_local, w_elems, g)});
    const std::string out_acc = in_place ? "output" : "output_accum";
    const std::string dx_acc = in_place ? "d_input" : "d_input_accum";
    fwd_res = {"input", "routing", out_acc, "weights_current", "weights_prefetch"};
    bwd_res = {"input", "routing", "output", "d_output", dx_acc, "d_topk_weights",
               "weights_current", "weights_prefetch", "wgrad_accum", "wgrad_inflight"};
  } else {
    const std::int64_t fwd_row = H * d + k * 8 + H * a;                // tokens, metadata, accumulators
    const std::int64_t bwd_row = 2 * H * d + k * 8 + H * a + k * 4;   // + d_out, d_topk_weights
    buf.push_back({"tokens_current", bytes(T, fwd_row, 1)});
    buf.push_back({"tokens_prefetch", bytes(T, fwd_row, 1)});
    buf.push_back({"grads_current", bytes(T, bwd_row, 1)});
    buf.push_back({"grads_prefetch", bytes(T, bwd_row, 1)});
    fwd_res = {"input", "routing", "tokens_current", "tokens_prefetch"};
    bwd_res = {"input", "routing", "output", "d_output", "grads_current", "grads_prefetch"};
  }
  std::vector<Phase> phases = {
      {"fwd hop gather", cat(fwd_res, {"hop_x"})},
      {"fwd hop gate/up GEMM", cat(fwd_res, {"hop_x", "hop_gate_up"})},
      {"fwd hop activation", cat(fwd_res, {"hop_gate_up", "hop_act"})},
      {"fwd hop down GEMM", cat(fwd_res, {"hop_act", "hop_y"})},
      {"bwd hop gather", cat(bwd_res, {"hop_x", "hop_dy"})},
      {"bwd hop recompute gate/up", cat(bwd_res, {"hop_x", "hop_dy", "hop_gate_up"})},
      {"bwd hop recompute activation", cat(bwd_res, {"hop_x", "hop_dy", "hop_gate_up", "hop_act"})},
      {"bwd hop down GEMM", cat(bwd_res, {"hop_x", "hop_dy", "hop_gate_up", "hop_act", "hop_d_act"})},
      {"bwd hop activation", cat(bwd_res, {"hop_x", "hop_gate_up", "hop_d_act", "hop_d_gate_up"})},
      {"bwd hop gate/up GEMM", cat(bwd_res, {"hop_x", "hop_d_gate_up", "hop_d_x"})},
  };
  if (mode == RingMode::kExpert && in_place) {
    // the gradient sums come home (the receiving buffer is the free wgrad one unless they
    // are fp32, received straight into the parameter gradient) and are converted to fp32
    std::vector<std::string> home = {"input", "routing", "output", "d_output", "d_input", "d_topk_weights",
                                     "wgrad_inflight"};
    if (g != 4) home.push_back("wgrad_accum");
    phases.push_back({"bwd weight gradient home", home});
  } else if (mode == RingMode::kExpert) {
    phases.push_back({"fwd output", {"input", "routing", "output_accum", "output"}});
    std::vector<std::string> home = {"input", "routing", "output", "d_output", "d_input_accum", "d_topk_weights",
                                     "wgrad_inflight"};
    if (g != 4) home.push_back("wgrad_accum");
    phases.push_back({"bwd weight gradient home", home});
    phases.push_back({"bwd input gradient", {"input", "routing", "output", "d_output",
                                             "d_input_accum", "d_topk_weights", "d_input"}});
  } else {
    // the own token partition is back home with its accumulators
    phases.push_back({"fwd output", {"input", "routing", "tokens_current", "output"}});
    phases.push_back({"bwd input gradient", {"input", "routing", "output", "d_output",
                                             "grads_current", "d_topk_weights", "d_input"}});
  }
  return evaluate(std::move(buf), phases);
}

std::size_t buffer_bytes(const BufferPlan& plan, const std::string& name) {
  for (const Buffer& b : plan.buffers)
    if (b.name == name) return b.bytes;
  throw std::out_of_range("buffer plan has no buffer named " + name);
}

}  // namespace moehub::plan
