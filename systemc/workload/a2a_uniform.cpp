// A single uniform all-to-all, as a collective library's all_to_all with equal
// splits: every GPU sends its tokens' rows split evenly over all GPUs (its own
// share is copied locally). It is the simulator's side of an all-to-all
// measured on real GPUs (scripts/gpu/p2p_bench.py) and the check of its link
// calibration.
#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

Schedule build_a2a_uniform(const ModelConfig& m, const Routing& r, const ExpertPlacement&,
                           const ScheduleOptions& opt) {
  const auto G = static_cast<std::size_t>(r.num_gpus);
  Schedule s;
  s.name = "a2a-uniform";
  AllToAll a;
  a.name = "all_to_all";
  a.row_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);
  a.sms = opt.comm_sms;
  a.rows.assign(G, std::vector<std::vector<std::int64_t>>(G));
  std::int64_t id = 0;
  for (std::size_t src = 0; src < G; ++src) {
    const std::int64_t n = r.tokens_per_gpu[src];
    for (std::size_t dst = 0; dst < G; ++dst) {
      // rows [n*dst/G, n*(dst+1)/G) of src go to dst
      const std::int64_t lo = n * static_cast<std::int64_t>(dst) / static_cast<std::int64_t>(G);
      const std::int64_t hi = n * static_cast<std::int64_t>(dst + 1) / static_cast<std::int64_t>(G);
      for (std::int64_t i = lo; i < hi; ++i) {
        a.rows[src][dst].push_back(id++);
        a.expected_dst.push_back(static_cast<std::int32_t>(dst));
      }
    }
  }
  s.collectives.push_back(std::move(a));
  s.ops.resize(G);
  for (auto& ops : s.ops) {
    Op op;
    op.kind = OpKind::kAllToAll;
    op.name = "all_to_all";
    op.phase = "all_to_all";
    op.collective = 0;
    op.collective_setup = true;
    ops.push_back(op);
  }
  return s;
}

}  // namespace moehub
