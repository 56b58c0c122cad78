// Megatron-style expert parallelism without overlap (the all-to-all token
// dispatcher with Transformer Engine kernels): every phase runs on its own,
// and the host must learn the per-expert token counts before it can size the
// dispatch, which costs a device-to-host synchronisation.
#include <algorithm>

#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

Schedule build_megatron(const ModelConfig& m, const Routing& r, const ExpertPlacement& p,
                        const ScheduleOptions& opt) {
  const auto G = static_cast<std::size_t>(r.num_gpus);
  const double b = m.dtype_bytes;
  const double H = m.hidden_size;
  const double k = m.top_k;
  const auto row_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);

  Schedule s;
  s.name = "megatron";
  s.collectives.push_back(token_all_to_all("dispatch", r, p, row_bytes, opt.comm_sms, false));
  s.collectives.push_back(token_all_to_all("combine", r, p, row_bytes, opt.comm_sms, true));
  // count exchange: every GPU tells every other how many rows it will send to
  // each of that GPU's experts (int64 per expert)
  {
    AllToAll c;
    c.name = "count_exchange";
    int max_local = 0;
    for (std::size_t g = 0; g < G; ++g) max_local = std::max(max_local, p.experts_on(static_cast<int>(g)));
    c.row_bytes = static_cast<std::uint32_t>(std::max(1, max_local) * 8);
    c.sms = 1;
    c.rows.assign(G, std::vector<std::vector<std::int64_t>>(G));
    c.expected_dst.resize(G * G);
    for (std::size_t a = 0; a < G; ++a) {
      for (std::size_t d = 0; d < G; ++d) {
        const auto id = static_cast<std::int64_t>(a * G + d);
        c.rows[a][d].push_back(id);
        c.expected_dst[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(d);
      }
    }
    s.collectives.push_back(std::move(c));
  }
  const int kDispatch = 0, kCombine = 1, kCounts = 2;

  const auto local_rows = rows_per_local_expert(r, p);
  s.ops.resize(G);
  for (std::size_t g = 0; g < G; ++g) {
    auto& ops = s.ops[g];
    const auto T = r.tokens_per_gpu[g];
    const double Td = static_cast<double>(T);
    double received = 0;
    for (const auto x : local_rows[g]) received += static_cast<double>(x);

    append_routing_ops(ops, m, T);
    // permute: routing map to per-expert indices, then gather each token k times
    ops.push_back(memory_op("permute_indices", "permute", Td * k * 12));
    ops.push_back(memory_op("permute", "permute", Td * k * H * b * 2));
    ops.push_back(collective_op("count_exchange", "count_exchange", kCounts));
    Op sync;
    sync.kind = OpKind::kHostSync;
    sync.name = "count_sync";
    sync.phase = "count_exchange";
    sync.launch = false;
    ops.push_back(sync);
    ops.push_back(collective_op("dispatch", "dispatch", kDispatch));
    ops.push_back(memory_op("sort_chunks", "dispatch", received * H * b * 2));
    append_expert_ops(ops, m, local_rows[g]);
    ops.push_back(memory_op("unsort_chunks", "combine", received * H * b * 2));
    ops.push_back(collective_op("combine", "combine", kCombine));
    // unpermute: read the k expert outputs of each token and the gate weights, write the weighted sum
    ops.push_back(memory_op("unpermute", "unpermute", Td * k * H * b + Td * H * b + Td * k * 4));
    append_shared_expert_ops(ops, m, T);
  }
  return s;
}

}  // namespace moehub
