#include "workload/baseline_common.hpp"

#include <algorithm>

namespace moehub::baseline_detail {

using namespace schedule_detail;

std::vector<std::int64_t> local_rows(const Routing& r, const ExpertPlacement& p, int g, const RowFilter& f) {
  const auto gi = static_cast<std::size_t>(g);
  const int first = p.first_expert[gi];
  std::vector<std::int64_t> rows(static_cast<std::size_t>(p.first_expert[gi + 1] - first), 0);
  const auto k = static_cast<std::int64_t>(r.top_k);
  for (std::size_t s = 0; s < static_cast<std::size_t>(r.num_gpus); ++s) {
    const auto& ids = r.expert_ids[s];
    const std::int64_t T = r.tokens_per_gpu[s];
    for (std::int64_t i = 0; i < T * k; ++i) {
      const int e = ids[static_cast<std::size_t>(i)];
      if (p.owner[static_cast<std::size_t>(e)] != g || !f.selects(r.num_gpus, s, gi, i / k, T)) continue;
      ++rows[static_cast<std::size_t>(e - first)];
    }
  }
  return rows;
}

int add_count_exchange(Schedule& s, const ModelConfig& m, int gpus) {
  const auto G = static_cast<std::size_t>(gpus);
  std::vector<std::vector<std::int64_t>> one(G, std::vector<std::int64_t>(G, 1));
  s.collectives.push_back(all_to_all_from_counts(
      "count_exchange", one, static_cast<std::uint32_t>(std::max(1, m.num_experts) * 8), 1));
  return static_cast<int>(s.collectives.size()) - 1;
}

void append_address_resolution(std::vector<Op>& ops, int count_collective) {
  ops.push_back(collective_op("count_exchange", "address_resolution", count_collective));
  ops.push_back(host_sync_op("count_sync", "address_resolution"));
}

Op expert_gemm1(const ModelConfig& m, const std::vector<std::int64_t>& rows, const std::string& tag) {
  std::vector<GemmShape> g;
  g.reserve(rows.size());
  for (const auto r : rows) g.push_back({r, 2LL * m.expert_ffn_size, m.hidden_size});
  return gemm_op("expert_gemm1" + tag, "expert_compute", std::move(g));
}

Op expert_gemm2(const ModelConfig& m, const std::vector<std::int64_t>& rows, const std::string& tag) {
  std::vector<GemmShape> g;
  g.reserve(rows.size());
  for (const auto r : rows) g.push_back({r, m.hidden_size, m.expert_ffn_size});
  return gemm_op("expert_gemm2" + tag, "expert_compute", std::move(g));
}

Op expert_activation(const ModelConfig& m, const std::vector<std::int64_t>& rows, const std::string& tag) {
  double n = 0;
  for (const auto r : rows) n += static_cast<double>(r);
  return memory_op("swiglu" + tag, "expert_compute", n * 3.0 * m.expert_ffn_size * m.dtype_bytes);
}

Op unpermute_op(const ModelConfig& m, std::int64_t tokens) {
  const double T = static_cast<double>(tokens);
  const double H = m.hidden_size;
  const double b = m.dtype_bytes;
  return memory_op("unpermute", "unpermute", T * m.top_k * H * b + T * H * b + T * m.top_k * 4);
}

std::vector<std::vector<int>> fused_gemm2_chunks(const std::vector<std::vector<std::int64_t>>& step_rows) {
  std::vector<std::vector<int>> chunks;
  if (step_rows.empty()) return chunks;
  const std::size_t E = step_rows[0].size();
  std::vector<std::int64_t> total(E, 0);
  for (const auto& v : step_rows) {
    for (std::size_t e = 0; e < E; ++e) total[e] += v[e];
  }
  const auto busy = static_cast<std::int64_t>(
      std::count_if(total.begin(), total.end(), [](std::int64_t x) { return x > 0; }));
  const std::int64_t target = kFusedMinRowsPerChunk * std::max<std::int64_t>(1, busy);
  std::vector<int> cur;
  std::int64_t rows = 0;
  for (std::size_t st = 0; st < step_rows.size(); ++st) {
    cur.push_back(static_cast<int>(st));
    for (const auto x : step_rows[st]) rows += x;
    if (rows >= target) {
      chunks.push_back(cur);
      cur.clear();
      rows = 0;
    }
  }
  if (!cur.empty()) {
    // a remainder under the target joins the chunk before it
    if (chunks.empty()) {
      chunks.push_back(cur);
    } else {
      chunks.back().insert(chunks.back().end(), cur.begin(), cur.end());
    }
  }
  return chunks;
}

Schedule build_fused(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt,
                     const FusedStyle& style) {
  const int G = r.num_gpus;
  const auto row_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);
  const int comm_sms = style.comm_sms > 0 ? style.comm_sms : opt.comm_sms;
  Schedule s;
  s.name = style.name;
  std::vector<int> disp, comb;
  for (int st = 0; st < G; ++st) {
    RowFilter f;
    f.shift = st;
    disp.push_back(static_cast<int>(s.collectives.size()));
    s.collectives.push_back(
        token_all_to_all("dispatch_chunk" + std::to_string(st), r, p, row_bytes, comm_sms, false, f));
    comb.push_back(static_cast<int>(s.collectives.size()));
    s.collectives.push_back(
        token_all_to_all("combine_chunk" + std::to_string(st), r, p, row_bytes, comm_sms, true, f));
  }
  const int counts = add_count_exchange(s, m, G);

  s.ops.resize(static_cast<std::size_t>(G));
  for (int g = 0; g < G; ++g) {
    auto& ops = s.ops[static_cast<std::size_t>(g)];
    const auto T = r.tokens_per_gpu[static_cast<std::size_t>(g)];
    const double Td = static_cast<double>(T);
    append_routing_ops(ops, m, T);
    ops.push_back(memory_op("permute", "permute", Td * m.top_k * m.hidden_size * m.dtype_bytes * 2));
    append_address_resolution(ops, counts);
    double received = 0;
    std::vector<std::vector<std::int64_t>> step_rows;
    for (int st = 0; st < G; ++st) {
      RowFilter f;
      f.shift = st;
      step_rows.push_back(local_rows(r, p, g, f));
      for (const auto x : step_rows.back()) received += static_cast<double>(x);
    }
    ops.push_back(memory_op(style.layout_name, style.layout_phase,
                            (Td * m.top_k + received) * opt.baseline.layout_bytes_per_row));

    // layer 0: the dispatch chunks (one kernel: launched with the first)
    for (int st = 0; st < G; ++st) {
      Op d = collective_op("dispatch_chunk" + std::to_string(st), "dispatch", disp[static_cast<std::size_t>(st)], 1);
      d.launch = st == 0;
      d.collective_setup = st == 0;
      d.sets_flag = st;
      ops.push_back(std::move(d));
    }
    // GEMM1 over all received rows, its tile groups released chunk by chunk
    std::vector<std::int64_t> all(step_rows.empty() ? 0 : step_rows[0].size(), 0);
    for (const auto& v : step_rows) {
      for (std::size_t e = 0; e < v.size(); ++e) all[e] += v[e];
    }
    Op g1 = expert_gemm1(m, all, "");
    g1.first_sm = style.comm_sms;
    g1.groups = G;
    g1.release = style.release;
    for (int st = 0; st < G; ++st) g1.release_flags.push_back(st);
    g1.poll = opt.poll;
    ops.push_back(std::move(g1));
    Op act = expert_activation(m, all, "");
    act.launch = false;  // the activation is GEMM1's epilogue
    ops.push_back(std::move(act));
    // layer 1: GEMM2 chunk by chunk (one kernel), each source's combine as soon
    // as the chunk holding its rows is done; a chunk is whole tile rows
    // (fused_gemm2_chunks), so the kernel reads its weights once per chunk
    const auto chunks = fused_gemm2_chunks(step_rows);
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      std::vector<std::int64_t> rows(all.size(), 0);
      for (const int st : chunks[c]) {
        for (std::size_t e = 0; e < rows.size(); ++e) rows[e] += step_rows[static_cast<std::size_t>(st)][e];
      }
      Op g2 = expert_gemm2(m, rows, "_chunk" + std::to_string(c));
      g2.first_sm = style.comm_sms;
      g2.launch = c == 0;
      ops.push_back(std::move(g2));
      const int g2_index = static_cast<int>(ops.size()) - 1;
      for (const int st : chunks[c]) {
        Op cb = collective_op("combine_chunk" + std::to_string(st), "combine", comb[static_cast<std::size_t>(st)], 1);
        cb.after = {g2_index};
        cb.launch = st == 0;
        cb.collective_setup = st == 0;
        ops.push_back(std::move(cb));
      }
    }
    append_shared_expert_ops(ops, m, T);
    Op u = unpermute_op(m, T);
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (ops[static_cast<std::size_t>(i)].phase == "combine") u.after.push_back(i);
    }
    ops.push_back(std::move(u));
  }
  return s;
}

}  // namespace moehub::baseline_detail
