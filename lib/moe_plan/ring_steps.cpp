// The steps of a ring pass (ring_steps.hpp).
#include "moe_plan/ring_steps.hpp"

#include <stdexcept>
#include <string>

namespace moehub::plan {

RingRouting uniform_ring_routing(int ranks, int experts, std::int64_t tokens, const std::vector<std::int32_t>& counts) {
  if (ranks < 1 || experts < 1 || experts % ranks || tokens < 0 ||
      counts.size() != static_cast<std::size_t>(ranks) * static_cast<std::size_t>(experts))
    throw std::invalid_argument("uniform_ring_routing: need ranks >= 1 dividing experts, tokens >= 0 and ranks x experts counts");
  RingRouting r;
  for (int g = 0; g <= ranks; ++g) r.first_expert.push_back(g * (experts / ranks));
  r.tokens.assign(static_cast<std::size_t>(ranks), tokens);
  for (int g = 0; g < ranks; ++g)
    r.pairs.emplace_back(counts.begin() + static_cast<std::ptrdiff_t>(g) * experts,
                         counts.begin() + static_cast<std::ptrdiff_t>(g + 1) * experts);
  return r;
}

void validate_routing(const RingRouting& r, const std::string& who) {
  const int n = r.ranks();
  auto bad = [&](const std::string& what) { throw std::invalid_argument(who + ": " + what); };
  if (n < 1) bad("no ranks");
  if (r.first_expert.size() != static_cast<std::size_t>(n) + 1 || r.first_expert[0] != 0) bad("first_expert must have N+1 entries from 0");
  for (int g = 0; g < n; ++g)
    if (r.first_expert[static_cast<std::size_t>(g) + 1] < r.first_expert[static_cast<std::size_t>(g)]) bad("first_expert must not decrease");
  for (std::int64_t t : r.tokens)
    if (t < 0) bad("negative token count");
  const auto E = static_cast<std::size_t>(r.first_expert.back());
  if (r.pairs.size() != static_cast<std::size_t>(n)) bad("pairs must have N rows");
  for (const auto& row : r.pairs) {
    if (row.size() != E) bad("pairs rows must have E entries");
    for (std::int64_t c : row)
      if (c < 0) bad("negative pair count");
  }
}

namespace {

void check(const RingRouting& r, int hidden, int ffn, int top_k, int d, const RingOptions& o, const std::string& who) {
  validate_routing(r, who);
  auto bad = [&](const std::string& what) { throw std::invalid_argument(who + ": " + what); };
  if (hidden < 1 || ffn < 1 || top_k < 1 || d < 1) bad("hidden, ffn, top_k and dtype bytes must be >= 1");
  if (o.chunk_rows < kOneExpertPerChunk || o.accum_bytes < 1 || o.grad_bytes < 1)
    bad("chunk rows >= -1 (-1: one expert per chunk), accumulator and gradient bytes >= 1");
}

/// What every rank's steps of one pass share: the routing, shapes and options.
struct Pass {
  const RingRouting& r;
  int hidden, ffn, top_k, d;
  bool expert, backward;
  const RingOptions& o;

  int experts_on(int q) const {
    return r.first_expert[static_cast<std::size_t>(q) + 1] - r.first_expert[static_cast<std::size_t>(q)];
  }
  // the payload and accumulators of partition q (an empty partition moves nothing)
  double payload(int q) const {
    const double W = 3.0 * hidden * ffn, T = static_cast<double>(r.tokens[static_cast<std::size_t>(q)]);
    if (expert) return experts_on(q) * W * d;
    return T * hidden * d * (backward ? 2.0 : 1.0) + T * top_k * 8.0;
  }
  double accum(int q) const {
    const double W = 3.0 * hidden * ffn, T = static_cast<double>(r.tokens[static_cast<std::size_t>(q)]);
    if (expert) return backward ? experts_on(q) * W * o.grad_bytes : 0.0;
    return T * hidden * o.accum_bytes + (backward ? T * top_k * 4.0 : 0.0);
  }
  std::vector<HopSteps> hops_of(int rank) const;
};

std::vector<HopSteps> Pass::hops_of(int rank) const {
  const int n = r.ranks();
  const double H = hidden, F = ffn, db = d, a = o.accum_bytes;
  std::vector<HopSteps> hops;
  for (int h = 0; h < n; ++h) {
    HopSteps hs;
    hs.rank = rank;
    hs.hop = h;
    hs.partition = ring_partition_at_hop(rank, h, n);
    if (h + 1 < n) hs.payload_bytes = payload(hs.partition);
    if (h >= 1) hs.accum_bytes = accum(ring_partition_at_hop(rank, h - 1, n));
    // expert routing: the rank's own pairs for the visiting experts; token routing: the
    // visiting tokens' pairs for the rank's experts
    const int src = expert ? rank : hs.partition, owner = expert ? hs.partition : rank;
    const auto& row = r.pairs[static_cast<std::size_t>(src)];
    std::vector<std::int64_t> rows;
    std::int64_t offset = 0;
    for (int e = 0; e < r.first_expert[static_cast<std::size_t>(owner)]; ++e) offset += row[static_cast<std::size_t>(e)];
    for (int e = r.first_expert[static_cast<std::size_t>(owner)]; e < r.first_expert[static_cast<std::size_t>(owner) + 1]; ++e)
      rows.push_back(row[static_cast<std::size_t>(e)]);
    for (const HopChunk& ch : hop_chunks(rows, o.chunk_rows)) {
      ChunkSteps cs{ch.first, ch.last, ch.rows, offset, ch.expert_rows, {}};
      offset += ch.rows;
      const double M = static_cast<double>(ch.rows);
      auto gemm = [&](const std::string& name, auto shape, int acc = 0) {
        KernelStep ks{name, {}, 0.0, acc};
        for (std::int64_t ne : ch.expert_rows) ks.gemms.push_back(shape(ne));
        cs.kernels.push_back(ks);
      };
      auto mem = [&](const std::string& name, double bytes, int acc = 0) { cs.kernels.push_back({name, {}, bytes, acc}); };
      const std::int64_t Hi = hidden, Fi = ffn;
      if (!backward) {
        mem("gather_x", M * H * db * 2.0);
        gemm("gemm1_gate_up", [&](std::int64_t ne) { return GemmDims{ne, 2 * Fi, Hi}; });
        mem("swiglu", M * 3.0 * F * db);
        gemm("gemm2_down", [&](std::int64_t ne) { return GemmDims{ne, Hi, Fi}; });
        if (!expert) mem("wait_accum", 0.0);
        mem("scatter_out", M * H * (db + 2.0 * a), o.accum_bytes);
      } else {
        mem("gather_x_d_out", M * H * db * 4.0);
        gemm("gemm1_gate_up", [&](std::int64_t ne) { return GemmDims{ne, 2 * Fi, Hi}; });
        gemm("gemm_d_act", [&](std::int64_t ne) { return GemmDims{ne, Fi, Hi}; });
        mem("swiglu_backward", M * 6.0 * F * db);
        auto dx = [&] { gemm("gemm_d_x", [&](std::int64_t ne) { return GemmDims{ne, Hi, 2 * Fi}; }); };
        auto dw = [&](int acc) {
          gemm("gemm_d_w_gate_up", [&](std::int64_t ne) { return GemmDims{ne ? Hi : 0, 2 * Fi, ne}; }, acc);
          gemm("gemm_d_w_down", [&](std::int64_t ne) { return GemmDims{ne ? Fi : 0, Hi, ne}; }, acc);
        };
        if (expert && o.chunk_rows != 0) {
          // chunked hops: the weight gradients first, so that x is dead and gemm_d_x writes
          // its rows over the gathered x (one [rows][H] hop buffer less); only a hop's first
          // chunk can wait for the accumulator
          mem("wait_accum", 0.0);
          dw(o.grad_bytes);
          dx();
          mem("scatter_d_x", M * H * (db + 2.0 * a), o.accum_bytes);
        } else if (expert) {
          // whole hops: d_x before the accumulator wait, which then overlaps the hop's
          // d_x GEMM and scatter
          dx();
          mem("scatter_d_x", M * H * (db + 2.0 * a), o.accum_bytes);
          mem("wait_accum", 0.0);
          dw(o.grad_bytes);
        } else {
          dx();
          dw(4);  // the resident fp32 parameter gradient
          mem("wait_accum", 0.0);
          mem("scatter_d_x", M * H * (db + 2.0 * a), o.accum_bytes);
          mem("scatter_d_topk_weights", M * 4.0 * 3.0, 4);
        }
      }
      hs.chunks.push_back(std::move(cs));
    }
    hops.push_back(std::move(hs));
  }
  return hops;
}

}  // namespace

RingPassSteps ring_pass_steps(const RingRouting& r, int hidden, int ffn, int top_k, int d, RingMode mode, bool backward,
                              const RingOptions& o) {
  check(r, hidden, ffn, top_k, d, o, "ring_pass_steps");
  const int n = r.ranks();
  const bool expert = mode == RingMode::kExpert;
  const Pass pass{r, hidden, ffn, top_k, d, expert, backward, o};
  const double H = hidden, F = ffn, k = top_k, db = d, a = o.accum_bytes, g = o.grad_bytes;
  RingPassSteps out{mode, backward, {}, {}, {}, {}};
  for (int rank = 0; rank < n; ++rank) {
    out.hops.push_back(pass.hops_of(rank));
    out.final_accum_bytes.push_back(pass.accum(ring_partition_at_hop(rank, n - 1, n)));
    // the kernels around the hops (see the header)
    const double T = static_cast<double>(r.tokens[static_cast<std::size_t>(rank)]);
    const double W = pass.experts_on(rank) * 3.0 * H * F;
    std::vector<KernelStep> pro, epi;
    const bool into_output = o.accum_bytes == d;  // the hops add straight into the output / d_x
    if (expert) pro.push_back({"zero_accum", {}, T * H * a, 0});
    if (!expert && backward) pro.push_back({"zero_d_w", {}, W * 4.0, 0});
    if (!into_output) epi.push_back({"accum_to_output", {}, T * H * (a + db), 0});
    if (expert && backward && o.grad_bytes != 4) epi.push_back({"grad_to_param", {}, W * (g + 4.0), 0});
    if (!expert && backward && !into_output) epi.push_back({"copy_d_topk_weights", {}, T * k * 4.0 * 2.0, 0});
    out.prologue.push_back(std::move(pro));
    out.epilogue.push_back(std::move(epi));
  }
  return out;
}

std::vector<HopSteps> ring_hop_steps(const RingRouting& r, int rank, int hidden, int ffn, int top_k, int d, RingMode mode,
                                     bool backward, const RingOptions& o) {
  check(r, hidden, ffn, top_k, d, o, "ring_hop_steps");
  if (rank < 0 || rank >= r.ranks())
    throw std::invalid_argument("ring_hop_steps: rank " + std::to_string(rank) + " outside [0, " +
                                std::to_string(r.ranks() - 1) + "]");
  return Pass{r, hidden, ffn, top_k, d, mode == RingMode::kExpert, backward, o}.hops_of(rank);
}

}  // namespace moehub::plan
