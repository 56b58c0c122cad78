// MoE-Hub (ISCA 2026) and its ablations as schedules.
//
// Every GPU, per layer:
//   rowsp_malloc   host MMIO at layer start: one region per local expert on
//                  this GPU's hub (capacity: ScheduleOptions::rowsp_region_rows)
//   router_gemm, router_softmax_topk   the routing kernels
//   dispatch       (stream 1, from the top-k kernel's start) its thread blocks
//                  store each token's row with st.rowsp (MallocID of the
//                  expert's region, RowID = the (token, slot) pair's id) as
//                  soon as the token's expert is known: rows become ready in
//                  token order over the top-k kernel's time; a .nop store
//                  writes the row's source-information column. Local tokens
//                  to local experts take the same mapping (on_local_store).
//   expert_gemm1   one thread-block group per (expert, row of output tiles):
//                  released by the DAM's Ready signals (moehub, moehub-dep) or
//                  by polling its own flag, which software raises per step
//                  once the group's rows are in memory and counted (the
//                  producers add each acknowledged row to its group's
//                  counter: moehub-base, moehub-pkt; RowTransfers)
//   swiglu, expert_gemm2
//   combine        (stream 1, from GEMM2's start) each expert result goes home
//                  with a plain st to the slot its source column names, ready
//                  as GEMM2's rows of tiles complete (overlapped with them)
//   scaling        the weighted sum of the k results of every token
//   shared expert  when the model has one
//
// Approximations (docs/moehub-units.md): the DAM learns each region's total
// rows from the routing at registration (the simulator's GEMM needs its shape
// up front); a combine row is ready at its position among its expert's rows in
// source order, spread over GEMM2's compute makespan, not at its tile's own
// end; the expert reads the source column as part of its GEMM2 traffic.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

namespace {

HubUse hub_use_of(const std::string& variant) {
  if (variant == "moehub") return {true, true, true};
  if (variant == "moehub-base") return {true, false, false};
  if (variant == "moehub-pkt") return {true, true, false};
  if (variant == "moehub-dep") return {true, false, true};
  throw std::invalid_argument("unknown MoE-Hub variant '" + variant +
                              "' (allowed: moehub, moehub-base, moehub-pkt, moehub-dep)");
}

}  // namespace

Schedule build_moehub(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt,
                      const std::string& variant) {
  const auto G = static_cast<std::size_t>(r.num_gpus);
  const double b = m.dtype_bytes;
  const double H = m.hidden_size;
  const auto k = static_cast<std::int64_t>(r.top_k);
  const auto data_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);
  if (opt.rowsp_store_bytes < 1 || opt.rowsp_store_bytes > 128) {
    throw std::invalid_argument("rowsp_store_bytes must be in [1, 128]");
  }
  if (opt.source_info_bytes < 1 || opt.source_info_bytes > 128) {
    throw std::invalid_argument("source_info_bytes must be in [1, 128]");
  }
  const auto src_bytes = static_cast<std::uint32_t>(opt.source_info_bytes);
  const auto off = token_offsets(r);
  const std::int64_t total_tokens = off[G];
  const auto load = r.expert_load();

  Schedule s;
  s.name = variant;
  s.hub = hub_use_of(variant);
  const bool dam = s.hub.dam;

  // regions: one per expert, on its owner
  std::vector<int> region_of_expert(static_cast<std::size_t>(m.num_experts), -1);
  for (int e = 0; e < m.num_experts; ++e) {
    RowRegion rg;
    rg.gpu = p.owner[static_cast<std::size_t>(e)];
    rg.expert = e;
    rg.row_bytes = data_bytes + src_bytes;
    rg.capacity_rows = opt.rowsp_region_rows > 0 ? opt.rowsp_region_rows : total_tokens;
    rg.expected_rows = load[static_cast<std::size_t>(e)];
    region_of_expert[static_cast<std::size_t>(e)] = static_cast<int>(s.regions.size());
    s.regions.push_back(rg);
  }

  // dispatch: st.rowsp of every (token, slot) pair in token order
  RowTransfer dispatch;
  dispatch.name = "dispatch";
  dispatch.row_bytes = data_bytes;
  dispatch.source_info_bytes = src_bytes;
  dispatch.store_bytes = static_cast<std::uint32_t>(opt.rowsp_store_bytes);
  dispatch.sms = opt.comm_sms;
  dispatch.rows.resize(G);
  // combine: plain st of every pair's result back to its token's GPU, in the
  // order the experts' GEMM2 produces them (expert by expert, sources in order)
  RowTransfer combine;
  combine.name = "combine";
  combine.row_bytes = data_bytes;
  combine.store_bytes = static_cast<std::uint32_t>(opt.rowsp_store_bytes);
  combine.sms = opt.comm_sms;
  combine.rows.resize(G);
  std::vector<std::vector<std::vector<RowStore>>> by_expert(G);  // [gpu][local expert] combine rows
  for (std::size_t g = 0; g < G; ++g) by_expert[g].resize(static_cast<std::size_t>(p.experts_on(static_cast<int>(g))));
  for (std::size_t src = 0; src < G; ++src) {
    const std::int64_t T = r.tokens_per_gpu[src];
    const auto& ids = r.expert_ids[src];
    for (std::int64_t t = 0; t < T; ++t) {
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t local = t * k + j;
        const int e = ids[static_cast<std::size_t>(local)];
        const int owner = p.owner[static_cast<std::size_t>(e)];
        RowStore d;
        d.dst = owner;
        d.row_id = off[src] * k + local;  // unique within the region (unique in the job)
        d.region = region_of_expert[static_cast<std::size_t>(e)];
        d.ready_frac = static_cast<double>(t + 1) / static_cast<double>(T);
        dispatch.rows[src].push_back(d);
        RowStore c;
        c.dst = static_cast<int>(src);
        c.row_id = off[src] * k + local;
        c.slot = local;
        const auto le = static_cast<std::size_t>(e - p.first_expert[static_cast<std::size_t>(owner)]);
        by_expert[static_cast<std::size_t>(owner)][le].push_back(c);
      }
    }
  }
  for (std::size_t g = 0; g < G; ++g) {
    std::int64_t total = 0;
    for (const auto& rows : by_expert[g]) total += static_cast<std::int64_t>(rows.size());
    std::int64_t i = 0;
    for (auto& rows : by_expert[g]) {
      for (RowStore& c : rows) {
        c.ready_frac = static_cast<double>(++i) / static_cast<double>(std::max<std::int64_t>(1, total));
        combine.rows[g].push_back(c);
      }
    }
  }
  s.row_transfers.push_back(std::move(dispatch));
  s.row_transfers.push_back(std::move(combine));
  const int kDispatch = 0, kCombine = 1;

  const auto local_rows = rows_per_local_expert(r, p);
  s.ops.resize(G);
  for (std::size_t g = 0; g < G; ++g) {
    auto& ops = s.ops[g];
    const auto T = r.tokens_per_gpu[g];
    const double Td = static_cast<double>(T);
    const int first = p.first_expert[g], last = p.first_expert[g + 1];

    Op malloc_op;
    malloc_op.kind = OpKind::kRowspMalloc;
    malloc_op.name = "rowsp_malloc";
    malloc_op.phase = "setup";
    malloc_op.launch = false;
    for (int e = first; e < last; ++e) malloc_op.regions.push_back(region_of_expert[static_cast<std::size_t>(e)]);
    ops.push_back(malloc_op);

    append_routing_ops(ops, m, T);
    const int router_gemm = static_cast<int>(ops.size()) - 2;
    const double topk_bytes = ops.back().bytes;

    Op disp;
    disp.kind = OpKind::kRowStores;
    disp.name = "dispatch";
    disp.phase = "dispatch";
    disp.stream = 1;
    disp.launch = false;  // the top-k kernel's own thread blocks store the rows
    disp.row_transfer = kDispatch;
    disp.after = {router_gemm};
    disp.ready_window_bytes = topk_bytes;
    ops.push_back(disp);

    // expert GEMMs (append_expert_ops' shapes), GEMM1 released by data
    std::vector<Op> expert;
    append_expert_ops(expert, m, local_rows[g]);
    Op gemm1 = expert[0];
    gemm1.release = dam ? ReleaseKind::kSignal : ReleaseKind::kPoll;
    gemm1.poll = opt.poll;
    gemm1.row_transfer = kDispatch;
    for (int e = first; e < last; ++e) gemm1.regions.push_back(region_of_expert[static_cast<std::size_t>(e)]);
    ops.push_back(gemm1);
    ops.push_back(expert[1]);  // swiglu
    const int swiglu = static_cast<int>(ops.size()) - 1;
    ops.push_back(expert[2]);  // gemm2

    Op comb;
    comb.kind = OpKind::kRowStores;
    comb.name = "combine";
    comb.phase = "combine";
    comb.stream = 1;
    comb.launch = false;  // GEMM2's epilogue stores the results
    comb.row_transfer = kCombine;
    comb.after = {swiglu};
    comb.ready_window_gemms = expert[2].gemms;
    ops.push_back(comb);
    const int comb_idx = static_cast<int>(ops.size()) - 1;

    Op scaling = memory_op("scaling", "scaling", Td * static_cast<double>(k) * H * b + Td * H * b +
                                                     Td * static_cast<double>(k) * 4);
    scaling.after = {comb_idx};
    ops.push_back(scaling);
    append_shared_expert_ops(ops, m, T);
  }
  return s;
}

}  // namespace moehub
