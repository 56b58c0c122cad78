#include "sim_fixture.hpp"

#include "common/config_loader.hpp"
#include "common/sc_time_util.hpp"

namespace moehub::test {

SystemConfig default_system() {
  return load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/dgx-h800.yaml");
}

ModelConfig default_model() {
  return load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/mixtral-8x7b.yaml");
}

Schedule single_all_to_all(const std::vector<std::vector<std::int64_t>>& rows, std::uint32_t row_bytes,
                           int sms) {
  const std::size_t G = rows.size();
  Schedule s;
  s.name = "test";
  AllToAll a;
  a.name = "a2a";
  a.row_bytes = row_bytes;
  a.sms = sms;
  a.rows.assign(G, std::vector<std::vector<std::int64_t>>(G));
  std::int64_t id = 0;
  for (std::size_t src = 0; src < G; ++src) {
    for (std::size_t dst = 0; dst < G; ++dst) {
      for (std::int64_t r = 0; r < rows[src][dst]; ++r) {
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
    op.name = "a2a";
    op.phase = "a2a";
    op.launch = false;
    op.collective = 0;
    ops.push_back(op);
  }
  return s;
}

std::vector<std::vector<std::int64_t>> uniform_rows(int gpus, std::int64_t n) {
  std::vector<std::vector<std::int64_t>> r(static_cast<std::size_t>(gpus),
                                           std::vector<std::int64_t>(static_cast<std::size_t>(gpus), n));
  for (int g = 0; g < gpus; ++g) r[static_cast<std::size_t>(g)][static_cast<std::size_t>(g)] = 0;
  return r;
}

std::unique_ptr<Node> run_node(const SystemConfig& sys, const Schedule& schedule) {
  static bool ran = false;
  if (ran) return nullptr;
  ran = true;
  set_picosecond_resolution();
  ModelConfig model = default_model();
  auto node = std::make_unique<Node>("node", sys, model, schedule);
  sc_core::sc_start();
  return node;
}

}  // namespace moehub::test
