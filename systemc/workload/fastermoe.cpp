// FasterMoE (He et al., PPoPP 2022): the all-to-all is split into G pairwise
// exchanges (step s: every GPU sends to GPU + s and receives from GPU - s,
// step 0 local), and the expert GEMMs of the rows one step delivered run while
// the next step's exchange is on the wire; each step's results go back in a
// pairwise combine as soon as its GEMMs finish. Coarse-grained: one step is a
// separate NCCL call and separate kernels, each with its host launch cost.
//
// Timing model: exchanges on stream 1, GEMMs on stream 0, joined by event
// dependencies (Op::after); the host resolves the per-expert counts first
// (count exchange plus synchronisation), as FastMoE's count exchange does.
// Expert shadowing (replicating popular experts) is not modelled.
#include "workload/baseline_common.hpp"

namespace moehub {

using namespace schedule_detail;
using namespace baseline_detail;

Schedule build_fastermoe(const ModelConfig& m, const Routing& r, const ExpertPlacement& p,
                         const ScheduleOptions& opt) {
  const int G = r.num_gpus;
  const auto row_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);
  Schedule s;
  s.name = "fastermoe";
  std::vector<int> disp(static_cast<std::size_t>(G)), comb(static_cast<std::size_t>(G));
  for (int st = 0; st < G; ++st) {
    RowFilter f;
    f.shift = st;
    disp[static_cast<std::size_t>(st)] = static_cast<int>(s.collectives.size());
    s.collectives.push_back(
        token_all_to_all("dispatch_step" + std::to_string(st), r, p, row_bytes, opt.comm_sms, false, f));
    comb[static_cast<std::size_t>(st)] = static_cast<int>(s.collectives.size());
    s.collectives.push_back(
        token_all_to_all("combine_step" + std::to_string(st), r, p, row_bytes, opt.comm_sms, true, f));
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
    // launch order (and stream 1 order): D0, D1, [GEMMs 0], C0, D2, [GEMMs 1], C1, ...
    std::vector<int> d_idx(static_cast<std::size_t>(G)), c_idx;
    auto dispatch = [&](int st) {
      d_idx[static_cast<std::size_t>(st)] = static_cast<int>(ops.size());
      ops.push_back(collective_op("dispatch_step" + std::to_string(st), "dispatch", disp[static_cast<std::size_t>(st)], 1));
    };
    dispatch(0);
    for (int st = 0; st < G; ++st) {
      if (st + 1 < G) dispatch(st + 1);
      RowFilter f;
      f.shift = st;
      const auto rows = local_rows(r, p, g, f);
      const std::string tag = "_step" + std::to_string(st);
      Op g1 = expert_gemm1(m, rows, tag);
      g1.after = {d_idx[static_cast<std::size_t>(st)]};
      ops.push_back(std::move(g1));
      ops.push_back(expert_activation(m, rows, tag));
      ops.push_back(expert_gemm2(m, rows, tag));
      const int gemm2 = static_cast<int>(ops.size()) - 1;
      Op c = collective_op("combine_step" + std::to_string(st), "combine", comb[static_cast<std::size_t>(st)], 1);
      c.after = {gemm2};
      c_idx.push_back(static_cast<int>(ops.size()));
      ops.push_back(std::move(c));
    }
    append_shared_expert_ops(ops, m, T);
    Op u = unpermute_op(m, T);
    u.after = c_idx;
    ops.push_back(std::move(u));
  }
  return s;
}

}  // namespace moehub
