// Ring execution of the MoE layer (RelayMoE): expert routing (expert
// partitions visit, tokens stay) and token routing (token partitions visit,
// experts stay), forward and backward.
//
// Every pass is the same loop on each GPU g of N, over hops h = 0..N-1, with
// part_h = the partition owned by GPU (g - h) mod N:
//   X_h (stream 1, a ring exchange: send to g+1, receive from g-1) carries the
//       current partition's payload on to the next GPU (h < N-1) together with
//       the accumulators of the previous hop's partition (h >= 1), one hop
//       behind; it waits for C_{h-1} (the buffer it reuses and the
//       accumulators it forwards);
//   C_h (stream 0) computes the token-expert pairs of part_h that meet here;
//       it waits for X_{h-1} (which brought part_h);
// and a last X_N returns the final accumulators to their owners. Payloads:
//   expert routing: the partition's weights (3 x H x F per expert, bf16);
//     backward accumulators: their fp32 weight gradients;
//   token routing: the partition's tokens (H, bf16) and routing metadata
//     (top-k ids and weights); accumulators: fp32 outputs (forward), fp32 input
//     gradients and gate-weight gradients (backward, payload with d_out).
// The backward recomputes the expert intermediates inside each hop.
#include <algorithm>
#include <stdexcept>

#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

namespace {

constexpr std::uint32_t kChunkBytes = 64 * 1024;  // transfer rows: 64 KiB chunks of a flat buffer

}  // namespace

Schedule build_ring(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions&,
                    bool token_routing) {
  const int N = r.num_gpus;
  const auto G = static_cast<std::size_t>(N);
  const std::int64_t H = m.hidden_size, F = m.expert_ffn_size;
  const double Hd = static_cast<double>(H), Fd = static_cast<double>(F), kd = m.top_k;
  const double b = m.dtype_bytes;
  // pairs[g][e]: token-expert pairs of GPU g's tokens routed to expert e
  std::vector<std::vector<std::int64_t>> pairs(G, std::vector<std::int64_t>(static_cast<std::size_t>(m.num_experts), 0));
  for (std::size_t g = 0; g < G; ++g) {
    for (const auto e : r.expert_ids[g]) ++pairs[g][static_cast<std::size_t>(e)];
  }
  const auto owner = [&](int g, int h) { return ((g - h) % N + N) % N; };
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
  // bytes of a partition's payload and accumulators in one pass
  const auto payload = [&](int part, bool backward) -> double {
    if (!token_routing) return static_cast<double>(p.experts_on(part)) * 3.0 * Hd * Fd * b;
    const double T = static_cast<double>(r.tokens_per_gpu[static_cast<std::size_t>(part)]);
    return T * (Hd * b * (backward ? 2 : 1) + kd * 8.0);  // x (and d_out) + ids and weights
  };
  const auto accum = [&](int part, bool backward) -> double {
    if (!token_routing) return backward ? static_cast<double>(p.experts_on(part)) * 3.0 * Hd * Fd * 4 : 0.0;
    const double T = static_cast<double>(r.tokens_per_gpu[static_cast<std::size_t>(part)]);
    return backward ? T * (Hd * 4.0 + kd * 4.0) : T * Hd * 4.0;
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
      const bool has_accum = N > 1 && h >= 1 && accum(0, backward) + accum(N - 1, backward) > 0;
      if (has_payload || has_accum) {
        std::vector<std::vector<std::int64_t>> counts(G, std::vector<std::int64_t>(G, 0));
        for (int g = 0; g < N; ++g) {
          double bytes = 0;
          if (has_payload) bytes += payload(owner(g, h), backward);
          if (has_accum) bytes += accum(owner(g, h - 1), backward);
          counts[static_cast<std::size_t>(g)][static_cast<std::size_t>((g + 1) % N)] =
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
