// A single uniform all-to-all, as a collective library's all_to_all with equal
// splits: every GPU sends its tokens' rows split evenly over all GPUs (its own
// share is copied locally). It is the simulator's side of an all-to-all
// measured on real GPUs (scripts/gpu/p2p_bench.py) and the check of its link
// calibration.
#include <algorithm>

#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

Schedule build_a2a_uniform(const ModelConfig& m, const Routing& r, const ExpertPlacement&,
                           const ScheduleOptions& opt) {
  const auto G = static_cast<std::int64_t>(r.num_gpus);
  std::vector<std::vector<std::int64_t>> counts(static_cast<std::size_t>(G));
  for (std::int64_t src = 0; src < G; ++src) {
    const std::int64_t n = r.tokens_per_gpu[static_cast<std::size_t>(src)];
    for (std::int64_t dst = 0; dst < G; ++dst) {
      // rows [n*dst/G, n*(dst+1)/G) of src go to dst
      counts[static_cast<std::size_t>(src)].push_back(n * (dst + 1) / G - n * dst / G);
    }
  }
  return repeated_collective(
      "a2a-uniform",
      all_to_all_from_counts("all_to_all", counts, static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes), opt.comm_sms),
      std::max(1, opt.repeat));
}

}  // namespace moehub
