// Tutel (Hwang et al., MLSys 2023): static, capacity-padded shapes (every
// expert's buffer holds capacity_factor x k x tokens / experts rows from each
// GPU, zero-padded), so no host synchronisation on the counts; the dispatch
// all-to-all, the expert GEMMs and the combine are pipelined over a number of
// token chunks that Tutel picks at run time among 1, 2, 4 and 8.
//
// Timing model: chunk c's dispatch (stream 1), GEMMs (stream 0, after it) and
// combine (stream 1, after its GEMMs); the pipelining degree comes from
// BaselineOptions (0: the adaptive rule documented there). The all-to-all
// algorithm: inside one NVSwitch node the linear (direct) all-to-all, which
// Tutel's adaptive choice takes there; its 2D-hierarchical algorithm pays off
// across nodes only. The padding is real traffic and real GEMM rows; its zero
// fill and Tutel's encode/decode kernels are explicit memory ops. The pairs
// beyond an expert's capacity on their token's GPU are dropped (Tutel drops
// them); the schedule counts them (Schedule::capacity), since at an uneven load
// it then computes fewer pairs than the routing asks for.
#include <algorithm>
#include <cmath>

#include "workload/baseline_common.hpp"

namespace moehub {

using namespace schedule_detail;
using namespace baseline_detail;

namespace {

std::int64_t capacity(const ModelConfig& m, std::int64_t tokens, double factor) {
  const double c = factor * static_cast<double>(m.top_k) * static_cast<double>(tokens) / m.num_experts;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(c)));
}

}  // namespace

int tutel_pipeline_degree(const ModelConfig& m, const Routing& r, const ExpertPlacement& p,
                          const BaselineOptions& o) {
  if (o.tutel_pipeline_degree > 0) return o.tutel_pipeline_degree;
  // rows per local expert (all sources) of the least-loaded GPU
  std::int64_t rows = -1;
  for (int g = 0; g < r.num_gpus; ++g) {
    if (p.experts_on(g) == 0) continue;
    std::int64_t n = 0;
    for (int src = 0; src < r.num_gpus; ++src) {
      n += capacity(m, r.tokens_per_gpu[static_cast<std::size_t>(src)], o.tutel_capacity_factor);
    }
    rows = rows < 0 ? n : std::min(rows, n);
  }
  int degree = 1;
  for (const int c : {2, 4, 8}) {
    if (rows / c >= o.tutel_min_rows_per_chunk) degree = c;
  }
  return degree;
}

Schedule build_tutel(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt) {
  const int G = r.num_gpus;
  const auto GS = static_cast<std::size_t>(G);
  const auto row_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);
  const int C = tutel_pipeline_degree(m, r, p, opt.baseline);
  Schedule s;
  s.name = "tutel";
  // pairs beyond capacity: per source GPU and expert, the pairs over its slots
  s.capacity.limited = true;
  s.capacity.capacity_factor = opt.baseline.tutel_capacity_factor;
  for (std::size_t src = 0; src < GS; ++src) {
    const auto cap = capacity(m, r.tokens_per_gpu[src], opt.baseline.tutel_capacity_factor);
    std::vector<std::int64_t> count(static_cast<std::size_t>(m.num_experts), 0);
    for (const auto e : r.expert_ids[src]) ++count[static_cast<std::size_t>(e)];
    for (const auto n : count) s.capacity.dropped += std::max<std::int64_t>(0, n - cap);
  }
  // rows[c][src][dst]: chunk c of the capacity slots GPU src fills for GPU dst's experts
  std::vector<std::vector<std::vector<std::int64_t>>> chunk_rows(
      static_cast<std::size_t>(C), std::vector<std::vector<std::int64_t>>(GS, std::vector<std::int64_t>(GS, 0)));
  for (std::size_t src = 0; src < GS; ++src) {
    const auto cap = capacity(m, r.tokens_per_gpu[src], opt.baseline.tutel_capacity_factor);
    for (std::size_t dst = 0; dst < GS; ++dst) {
      const std::int64_t slots = cap * p.experts_on(static_cast<int>(dst));
      for (int c = 0; c < C; ++c) {
        chunk_rows[static_cast<std::size_t>(c)][src][dst] = slots * (c + 1) / C - slots * c / C;
      }
    }
  }
  std::vector<int> disp, comb;
  for (int c = 0; c < C; ++c) {
    const auto& cr = chunk_rows[static_cast<std::size_t>(c)];
    disp.push_back(static_cast<int>(s.collectives.size()));
    s.collectives.push_back(all_to_all_from_counts("dispatch_chunk" + std::to_string(c), cr, row_bytes, opt.comm_sms));
    std::vector<std::vector<std::int64_t>> back(GS, std::vector<std::int64_t>(GS, 0));
    for (std::size_t a = 0; a < GS; ++a) {
      for (std::size_t b = 0; b < GS; ++b) back[b][a] = cr[a][b];
    }
    comb.push_back(static_cast<int>(s.collectives.size()));
    s.collectives.push_back(all_to_all_from_counts("combine_chunk" + std::to_string(c), back, row_bytes, opt.comm_sms));
  }

  s.ops.resize(GS);
  for (std::size_t g = 0; g < GS; ++g) {
    auto& ops = s.ops[g];
    const auto T = r.tokens_per_gpu[g];
    const double H = m.hidden_size;
    const double b = m.dtype_bytes;
    const auto cap = capacity(m, T, opt.baseline.tutel_capacity_factor);
    append_routing_ops(ops, m, T);
    // zero-filled capacity buffers, then the encode kernel scatters each token k times into them
    ops.push_back(memory_op("capacity_zero_fill", "padding", static_cast<double>(cap * m.num_experts) * H * b));
    ops.push_back(memory_op("encode", "permute", static_cast<double>(T) * m.top_k * H * b * 2));
    std::vector<int> d_idx(static_cast<std::size_t>(C)), c_idx;
    auto dispatch = [&](int c) {
      d_idx[static_cast<std::size_t>(c)] = static_cast<int>(ops.size());
      ops.push_back(collective_op("dispatch_chunk" + std::to_string(c), "dispatch", disp[static_cast<std::size_t>(c)], 1));
    };
    dispatch(0);
    for (int c = 0; c < C; ++c) {
      if (c + 1 < C) dispatch(c + 1);
      // each local expert computes its capacity slots of this chunk from every source
      std::vector<std::int64_t> rows(static_cast<std::size_t>(p.experts_on(static_cast<int>(g))), 0);
      for (std::size_t src = 0; src < GS; ++src) {
        const auto cs = capacity(m, r.tokens_per_gpu[src], opt.baseline.tutel_capacity_factor);
        for (auto& x : rows) x += cs * (c + 1) / C - cs * c / C;
      }
      const std::string tag = "_chunk" + std::to_string(c);
      Op g1 = expert_gemm1(m, rows, tag);
      g1.after = {d_idx[static_cast<std::size_t>(c)]};
      ops.push_back(std::move(g1));
      ops.push_back(expert_activation(m, rows, tag));
      ops.push_back(expert_gemm2(m, rows, tag));
      Op cb = collective_op("combine_chunk" + std::to_string(c), "combine", comb[static_cast<std::size_t>(c)], 1);
      cb.after = {static_cast<int>(ops.size()) - 1};
      c_idx.push_back(static_cast<int>(ops.size()));
      ops.push_back(std::move(cb));
    }
    append_shared_expert_ops(ops, m, T);
    // decode: gather each token's k slots and take the weighted sum
    Op u = unpermute_op(m, T);
    u.name = "decode";
    u.after = c_idx;
    ops.push_back(std::move(u));
  }
  return s;
}

}  // namespace moehub
