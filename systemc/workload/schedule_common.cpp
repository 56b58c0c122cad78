#include "workload/schedule_common.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace moehub::schedule_detail {

std::vector<std::int64_t> token_offsets(const Routing& r) {
  std::vector<std::int64_t> off(static_cast<std::size_t>(r.num_gpus) + 1, 0);
  for (int g = 0; g < r.num_gpus; ++g) {
    off[static_cast<std::size_t>(g) + 1] = off[static_cast<std::size_t>(g)] + r.tokens_per_gpu[static_cast<std::size_t>(g)];
  }
  return off;
}

std::vector<std::vector<std::int64_t>> rows_per_local_expert(const Routing& r,
                                                             const ExpertPlacement& p) {
  const auto load = r.expert_load();
  std::vector<std::vector<std::int64_t>> out(static_cast<std::size_t>(r.num_gpus));
  for (int g = 0; g < r.num_gpus; ++g) {
    for (int e = p.first_expert[static_cast<std::size_t>(g)]; e < p.first_expert[static_cast<std::size_t>(g) + 1]; ++e) {
      out[static_cast<std::size_t>(g)].push_back(load[static_cast<std::size_t>(e)]);
    }
  }
  return out;
}

AllToAll token_all_to_all(const std::string& name, const Routing& r, const ExpertPlacement& p,
                          std::uint32_t row_bytes, int sms, bool reverse, const RowFilter& f) {
  const auto G = static_cast<std::size_t>(r.num_gpus);
  const auto k = static_cast<std::int64_t>(r.top_k);
  const auto off = token_offsets(r);
  AllToAll a;
  a.name = name;
  a.row_bytes = row_bytes;
  a.sms = sms;
  a.rows.assign(G, std::vector<std::vector<std::int64_t>>(G));
  a.expected_dst.assign(static_cast<std::size_t>(off[G] * k), -1);
  for (std::size_t s = 0; s < G; ++s) {
    const auto& ids = r.expert_ids[s];
    const std::int64_t T = r.tokens_per_gpu[s];
    // pairs of this GPU sorted by expert (stable in token order), as a permute lays them out
    std::vector<std::int64_t> order(static_cast<std::size_t>(T * k));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
      return ids[static_cast<std::size_t>(x)] < ids[static_cast<std::size_t>(y)];
    });
    for (const std::int64_t local : order) {
      const int expert = ids[static_cast<std::size_t>(local)];
      const auto owner = static_cast<std::size_t>(p.owner[static_cast<std::size_t>(expert)]);
      if (!f.selects(r.num_gpus, s, owner, local / k, T)) continue;
      const std::int64_t id = off[s] * k + local;
      const std::size_t from = reverse ? owner : s;
      const std::size_t to = reverse ? s : owner;
      a.rows[from][to].push_back(id);
      a.expected_dst[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(to);
    }
  }
  return a;
}

Op memory_op(const std::string& name, const std::string& phase, double bytes) {
  Op op;
  op.kind = OpKind::kMemory;
  op.name = name;
  op.phase = phase;
  op.bytes = bytes;
  return op;
}

Op host_sync_op(const std::string& name, const std::string& phase) {
  Op op;
  op.kind = OpKind::kHostSync;
  op.name = name;
  op.phase = phase;
  op.launch = false;
  return op;
}

AllToAll all_to_all_from_counts(const std::string& name, const std::vector<std::vector<std::int64_t>>& counts,
                                std::uint32_t row_bytes, int sms) {
  const std::size_t G = counts.size();
  AllToAll a;
  a.name = name;
  a.row_bytes = row_bytes;
  a.sms = sms;
  a.rows.assign(G, std::vector<std::vector<std::int64_t>>(G));
  std::int64_t id = 0;
  for (std::size_t src = 0; src < G; ++src) {
    for (std::size_t dst = 0; dst < G; ++dst) {
      for (std::int64_t i = 0; i < counts[src][dst]; ++i) {
        a.rows[src][dst].push_back(id++);
        a.expected_dst.push_back(static_cast<std::int32_t>(dst));
      }
    }
  }
  return a;
}

Schedule single_collective(const std::string& name, AllToAll a, bool host_costs) {
  const std::size_t G = a.rows.size();
  Schedule s;
  s.name = name;
  Op op = collective_op(a.name, a.name, 0);
  op.launch = host_costs;
  op.collective_setup = host_costs;
  s.collectives.push_back(std::move(a));
  s.ops.assign(G, std::vector<Op>{op});
  return s;
}

Schedule repeated_collective(const std::string& name, const AllToAll& a, int repeat) {
  Schedule s = single_collective(name, a, true);
  const Op first = s.ops[0][0];
  for (int i = 1; i < repeat; ++i) {
    s.collectives.push_back(a);
    Op op = first;
    op.collective = i;
    for (auto& ops : s.ops) ops.push_back(op);
  }
  return s;
}

Op collective_op(const std::string& name, const std::string& phase, int collective, int stream) {
  Op op;
  op.kind = OpKind::kAllToAll;
  op.name = name;
  op.phase = phase;
  op.collective = collective;
  op.collective_setup = true;
  op.stream = stream;
  return op;
}

Op gemm_op(const std::string& name, const std::string& phase, std::vector<GemmShape> groups) {
  Op op;
  op.kind = OpKind::kGemm;
  op.name = name;
  op.phase = phase;
  op.gemms = std::move(groups);
  return op;
}

void append_routing_ops(std::vector<Op>& ops, const ModelConfig& m, std::int64_t tokens) {
  const auto T = static_cast<double>(tokens);
  const auto E = static_cast<double>(m.num_experts);
  const auto k = static_cast<double>(m.top_k);
  // The router GEMM (T x H by H x E, E <= a few hundred) does about E/2 flop
  // per byte it reads, far below the ridge of any GPU here: it is a streaming
  // kernel over the tokens (bf16) and the router weights, writing fp32 logits.
  const auto H = static_cast<double>(m.hidden_size);
  ops.push_back(memory_op("router_gemm", "routing", T * H * m.dtype_bytes + H * E * m.dtype_bytes + T * E * 4));
  // fp32 logits read, probabilities written, top-k ids and weights written
  ops.push_back(memory_op("router_softmax_topk", "routing", T * E * 4 * 2 + T * k * 8));
}

void append_expert_ops(std::vector<Op>& ops, const ModelConfig& m,
                       const std::vector<std::int64_t>& rows_per_expert) {
  const double b = m.dtype_bytes;
  const double F = m.expert_ffn_size;
  std::vector<GemmShape> g1, g2;
  double rows = 0;
  for (const auto r : rows_per_expert) {
    g1.push_back({r, 2LL * m.expert_ffn_size, m.hidden_size});  // gate and up projections
    g2.push_back({r, m.hidden_size, m.expert_ffn_size});        // down projection
    rows += static_cast<double>(r);
  }
  ops.push_back(gemm_op("expert_gemm1", "expert_compute", std::move(g1)));
  ops.push_back(memory_op("swiglu", "expert_compute", rows * (2 * F + F) * b));
  ops.push_back(gemm_op("expert_gemm2", "expert_compute", std::move(g2)));
}

void append_shared_expert_ops(std::vector<Op>& ops, const ModelConfig& m, std::int64_t tokens) {
  if (m.shared_expert_ffn_size <= 0) return;
  const double b = m.dtype_bytes;
  const double Fs = m.shared_expert_ffn_size;
  ops.push_back(gemm_op("shared_gemm1", "shared_expert", {{tokens, 2LL * m.shared_expert_ffn_size, m.hidden_size}}));
  ops.push_back(memory_op("shared_swiglu", "shared_expert", static_cast<double>(tokens) * 3 * Fs * b));
  ops.push_back(gemm_op("shared_gemm2", "shared_expert", {{tokens, m.hidden_size, m.shared_expert_ffn_size}}));
}

}  // namespace moehub::schedule_detail
