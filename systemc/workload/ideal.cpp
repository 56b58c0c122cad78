// The ideal MoE layer (MoE-Hub paper, section II-C): only the essential
// operators on local tokens: routing, expert computation and scaling, with
// dispatch and combine fully hidden and no extra steps. Each GPU's experts
// compute the rows the routing sends them, so load imbalance still shows.
#include <stdexcept>

#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

Schedule build_ideal(const ModelConfig& m, const Routing& r, const ExpertPlacement& p,
                     const ScheduleOptions&) {
  const auto G = static_cast<std::size_t>(r.num_gpus);
  const double b = m.dtype_bytes;
  const double H = m.hidden_size;
  const double k = m.top_k;
  const auto local_rows = rows_per_local_expert(r, p);
  Schedule s;
  s.name = "ideal";
  s.ops.resize(G);
  for (std::size_t g = 0; g < G; ++g) {
    auto& ops = s.ops[g];
    const auto T = r.tokens_per_gpu[g];
    const double Td = static_cast<double>(T);
    append_routing_ops(ops, m, T);
    append_expert_ops(ops, m, local_rows[g]);
    ops.push_back(memory_op("scaling", "scaling", Td * k * H * b + Td * H * b + Td * k * 4));
    append_shared_expert_ops(ops, m, T);
  }
  return s;
}

std::vector<std::string> schedule_names() {
  return {"megatron", "megatron-train", "ideal", "a2a-uniform", "ring-expert", "ring-token", "fastermoe",
          "tutel", "comet", "ccfuser", "moehub", "moehub-base", "moehub-pkt", "moehub-dep"};
}

Schedule build_schedule(const std::string& name, const ModelConfig& model, const Routing& routing,
                        const ExpertPlacement& placement, const ScheduleOptions& opt) {
  if (name == "megatron") return build_megatron(model, routing, placement, opt);
  if (name == "megatron-train") return build_megatron(model, routing, placement, opt, true);
  if (name == "ideal") return build_ideal(model, routing, placement, opt);
  if (name == "a2a-uniform") return build_a2a_uniform(model, routing, placement, opt);
  if (name == "ring-expert") return build_ring(model, routing, placement, opt, false);
  if (name == "ring-token") return build_ring(model, routing, placement, opt, true);
  if (name == "fastermoe") return build_fastermoe(model, routing, placement, opt);
  if (name == "tutel") return build_tutel(model, routing, placement, opt);
  if (name == "comet") return build_comet(model, routing, placement, opt);
  if (name == "ccfuser") return build_ccfuser(model, routing, placement, opt);
  if (name.rfind("moehub", 0) == 0) return build_moehub(model, routing, placement, opt, name);
  std::string allowed;
  for (const auto& n : schedule_names()) allowed += (allowed.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown schedule '" + name + "' (allowed: " + allowed + ")");
}

}  // namespace moehub
