// Ring execution of the MoE layer (RelayMoE): expert routing (expert
// partitions visit, tokens stay) and token routing (token partitions visit,
// experts stay), forward and backward.
//
// Every pass is the same loop on each GPU g of N, over hops h = 0..N-1, with
// part_h = the partition GPU g computes with at hop h (moe_plan's
// ring_partition_at_hop: the one owned by GPU (g - h) mod N):
//   X_h (stream 1, a ring exchange: send to moe_plan's ring_send_peer g+1,
//       receive from g-1) carries the current partition's payload on to the
//       next GPU (h < N-1) together with the accumulators of the previous hop's
//       partition (h >= 1), one hop behind; it waits for C_{h-1} (the buffer it
//       reuses and the accumulators it forwards);
//   C_h (stream 0) computes the token-expert pairs of part_h that meet here;
//       it waits for X_{h-1} (which brought part_h);
// and a last X_N returns the final accumulators to their owners. The bytes of
// a partition's payload and accumulators are moe_plan's hop_parts (their sum is
// its per-hop volume, RelayMoE Table 2), with the accumulator types of
// ScheduleOptions (moe_plan's defaults: fp32 output and input-gradient
// accumulators, bf16 weight-gradient partitions):
//   expert routing: the partition's weights (3 x H x F per expert); backward
//     accumulators: their weight gradients;
//   token routing: the partition's tokens (H, and d_out in the backward) and
//     routing metadata (top-k ids and weights); accumulators: outputs
//     (forward), input gradients and gate-weight gradients (backward).
// Transfers move in 64 KiB rows, the last one rounded up.
// The backward recomputes the expert intermediates inside each hop.
#include <algorithm>
#include <array>
#include <stdexcept>

#include "moe_plan/moe_plan.hpp"
#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

namespace {

constexpr std::uint32_t kChunkBytes = 64 * 1024;  // transfer rows: 64 KiB chunks of a flat buffer

// moe_plan's payload and accumulator bytes of partition `part` in one pass. The
// partition is described to moe_plan as a problem in which every rank holds as
// much as its owner: its tokens and its experts (token routing: the most
// experts a GPU holds, which do not enter the token volumes; expert routing:
// at least one token, top_k at most its experts, which do not enter the weights).
plan::HopParts partition_parts(const ModelConfig& m, const Routing& r, const ExpertPlacement& p,
                               const ScheduleOptions& opt, bool token_routing, bool backward, int part) {
  const int n = r.num_gpus;
  const std::int64_t tokens = r.tokens_per_gpu[static_cast<std::size_t>(part)];
  const int experts = token_routing ? (m.num_experts + n - 1) / n : p.experts_on(part);
  if (token_routing ? tokens == 0 : experts == 0) return {0.0, 0.0};  // an empty partition moves nothing
  plan::MoeProblem q;
  q.tokens_per_rank = std::max<std::int64_t>(tokens, 1);
  q.hidden = m.hidden_size;
  q.ffn = m.expert_ffn_size;
  q.experts = experts * n;
  q.top_k = token_routing ? m.top_k : std::min(m.top_k, q.experts);
  q.ep = n;
  q.dtype_bytes = m.dtype_bytes;
  q.accum_bytes = opt.ring_accum_bytes;
  q.grad_bytes = opt.ring_grad_bytes;
  return plan::hop_parts(q, token_routing ? plan::RingMode::kToken : plan::RingMode::kExpert, backward);
}

}  // namespace

Schedule build_ring(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt,
                    bool token_routing) {
  const int N = r.num_gpus;
  const auto G = static_cast<std::size_t>(N);
  const std::int64_t H = m.hidden_size, F = m.expert_ffn_size;
  const double Hd = static_cast<double>(H), Fd = static_cast<double>(F);
  const double b = m.dtype_bytes;
  // pairs[g][e]: token-expert pairs of GPU g's tokens routed to expert e
  std::vector<std::vector<std::int64_t>> pairs(G, std::vector<std::int64_t>(static_cast<std::size_t>(m.num_experts), 0));
  for (std::size_t g = 0; g < G; ++g) {
    for (const auto e : r.expert_ids[g]) ++pairs[g][static_cast<std::size_t>(e)];
  }
  const auto owner = [&](int g, int h) { return plan::ring_partition_at_hop(g, h, N); };
  // rows per expert GPU g computes at hop h
  const auto hop_rows = [&](int g, int h) {
    std::vector<std::int64_t> rows;
    if (token_routing) {  // visiting tokens of owner(g, h), resident experts of g
      for (int e = p.first_expert[static_cast<std::size_t>(g)]; e < p.first_expert[static_cast<std::size_t>(g) + 1]; ++e)
        rows.push_back(pairs[static_cast<std::size_t>(owner(g, h))][static_cast<std::size_t>(e)]);
    } else {  // resident tokens of g, visiting experts of owner(g, h)
      const auto o = static_cast<std::size_t>(owner(g, h));
      for (int e = p.first_expert[o]; e < p.first_expert[o + 1]; ++e)
        rows.push_back(pairs[static_cast<std::size_t>(g)][static_cast<std::size_t>(e)]);
    }
    return rows;
  };
  // bytes of every partition's payload and accumulators, per pass: parts[backward][partition]
  std::array<std::vector<plan::HopParts>, 2> parts;
  for (const bool backward : {false, true}) {
    for (int q = 0; q < N; ++q) parts[backward].push_back(partition_parts(m, r, p, opt, token_routing, backward, q));
  }
  const auto payload = [&](int part, bool backward) {
    return parts[backward][static_cast<std::size_t>(part)].payload_bytes;
  };
  const auto accum = [&](int part, bool backward) {
    return parts[backward][static_cast<std::size_t>(part)].accum_bytes;
  };
  const auto any_accum = [&](bool backward) {
    return std::any_of(parts[backward].begin(), parts[backward].end(),
                       [](const plan::HopParts& x) { return x.accum_bytes > 0; });
  };

  Schedule s;
  s.name = token_routing ? "ring-token" : "ring-expert";
  s.ops.resize(G);
  for (std::size_t g = 0; g < G; ++g) append_routing_ops(s.ops[g], m, r.tokens_per_gpu[g]);

  for (const bool backward : {false, true}) {
    const std::string pass = backward ? "bwd" : "fwd";
    std::vector<int> last_c(G, -1), last_x(G, -1);  // index of the latest C / X per GPU
    for (int h = 0; h <= N; ++h) {
      const std::vector<int> prev_x = last_x;  // X_{h-1}: brought this hop's partition
      // X_h: does any GPU move anything at this hop?
      const bool has_payload = h < N - 1;
      const bool has_accum = N > 1 && h >= 1 && any_accum(backward);
      if (has_payload || has_accum) {
        std::vector<std::vector<std::int64_t>> counts(G, std::vector<std::int64_t>(G, 0));
        for (int g = 0; g < N; ++g) {
          double bytes = 0;
          if (has_payload) bytes += payload(owner(g, h), backward);
          if (has_accum) bytes += accum(owner(g, h - 1), backward);
          counts[static_cast<std::size_t>(g)][static_cast<std::size_t>(plan::ring_send_peer(g, N))] =
              static_cast<std::int64_t>((bytes + kChunkBytes - 1) / kChunkBytes);
        }
        const int c = static_cast<int>(s.collectives.size());
        s.collectives.push_back(all_to_all_from_counts(pass + "_hop" + std::to_string(h) + "_transfer", counts,
                                                       kChunkBytes, 8));
        s.collectives.back().bulk = true;
        for (std::size_t g = 0; g < G; ++g) {
          Op x = collective_op(pass + " hop " + std::to_string(h) + " transfer", "ring_transfer", c, 1);
          if (last_c[g] >= 0) x.after.push_back(last_c[g]);
          last_x[g] = static_cast<int>(s.ops[g].size());
          s.ops[g].push_back(x);
        }
      } else {
        for (auto& lx : last_x) lx = -1;
      }
      if (h == N) break;
      // C_h
      for (int g = 0; g < N; ++g) {
        auto& ops = s.ops[static_cast<std::size_t>(g)];
        const auto rows = hop_rows(g, h);
        double m_rows = 0;
        std::vector<GemmShape> g1, g2, dh, dwd, dwgu, dx;
        for (const auto n : rows) {
          m_rows += static_cast<double>(n);
          g1.push_back({n, 2 * F, H});    // gate and up (recomputed in backward)
          g2.push_back({n, H, F});        // down
          dh.push_back({n, F, H});        // d(act) = d_out x Wd^T
          dwd.push_back({n ? F : 0, H, n});   // Wd gradient = act^T x d_out
          dwgu.push_back({n ? H : 0, 2 * F, n});  // Wg|Wu gradient = x^T x d(gate|up)
          dx.push_back({n, H, 2 * F});    // input gradient
        }
        const std::string tag = pass + " hop " + std::to_string(h);
        const std::size_t first = ops.size();
        ops.push_back(memory_op(tag + " gather", "ring_compute", m_rows * Hd * b * (backward ? 4 : 2)));
        if (!backward) {
          ops.push_back(gemm_op(tag + " gemm1", "ring_compute", g1));
          ops.push_back(memory_op(tag + " swiglu", "ring_compute", m_rows * 3.0 * Fd * b));
          ops.push_back(gemm_op(tag + " gemm2", "ring_compute", g2));
          ops.push_back(memory_op(tag + " scatter-add", "ring_compute", m_rows * Hd * (b + 8.0)));
        } else {
          ops.push_back(gemm_op(tag + " recompute gemm1", "ring_compute", g1));
          ops.push_back(memory_op(tag + " recompute swiglu", "ring_compute", m_rows * 3.0 * Fd * b));
          ops.push_back(gemm_op(tag + " dact", "ring_compute", dh));
          ops.push_back(gemm_op(tag + " dWd", "ring_compute", dwd));
          ops.push_back(memory_op(tag + " swiglu backward", "ring_compute", m_rows * 6.0 * Fd * b));
          ops.push_back(gemm_op(tag + " dWgu", "ring_compute", dwgu));
          ops.push_back(gemm_op(tag + " dx", "ring_compute", dx));
          ops.push_back(memory_op(tag + " scatter-add dx", "ring_compute", m_rows * Hd * (b + 8.0)));
        }
        // the hop's first kernel waits for the transfer that brought its partition
        if (h >= 1 && prev_x[static_cast<std::size_t>(g)] >= 0) ops[first].after.push_back(prev_x[static_cast<std::size_t>(g)]);
        last_c[static_cast<std::size_t>(g)] = static_cast<int>(ops.size()) - 1;
      }
    }
  }
  return s;
}

}  // namespace moehub
