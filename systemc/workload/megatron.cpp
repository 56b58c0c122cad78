// Megatron-Core's expert parallelism without overlap (MoEAlltoAllTokenDispatcher,
// experts as SequentialMLP): every phase runs on its own, and the host must
// learn the per-expert token counts before it can size the dispatch, which
// costs a device-to-host synchronisation.
//
// Timing model: each phase issues the number of kernels the real dispatcher
// launches (opt.megatron, measured on an H200 and fitted by
// host/scripts/fit_megatron.py), each one costing host.kernel_launch_us on the
// host; the phase's data movement sits on its first kernel (an HBM-bound
// streaming kernel; the unpermutation's scatter-add at its own measured rate,
// MegatronProfile::unpermute_add_gbps) and the rest are small kernels. The experts run one
// expert after another (fc1 GEMM, activation, fc2 GEMM per expert), as
// SequentialMLP does. The collectives are the all-to-alls of tokens and of
// their gate probabilities, the count exchange before them and the combine;
// with `single_rank` (one expert-parallel rank) Megatron-Core bypasses them and
// only their host calls remain, as small kernels.
#include <algorithm>
#include <cmath>
#include <string>

#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

int PhaseKernels::count(int local_experts, int at_least) const {
  return std::max(at_least, static_cast<int>(std::lround(fixed + per_local_expert * local_experts)));
}

namespace {

/// `n` kernels of one phase: the first moves `bytes`, the others `small_bytes` each.
void append_phase(std::vector<Op>& ops, const std::string& phase, const std::string& name, int n, double bytes,
                  double small_bytes) {
  for (int i = 0; i < n; ++i) {
    ops.push_back(memory_op(name + "_k" + std::to_string(i), phase, i == 0 ? bytes : small_bytes));
  }
}


/// The experts phase of SequentialMLP: per expert its fc1 GEMM, activation,
/// the profile's further per-expert kernels (elementwise passes over the
/// expert's [rows][F] intermediate) and its fc2 GEMM; then the phase's fixed
/// kernels (the line's intercept: the concatenation of the experts' outputs,
/// which moves the received rows once, and small kernels), which do not scale
/// with an expert's rows.
void append_sequential_experts(std::vector<Op>& ops, const ModelConfig& m, const std::vector<std::int64_t>& rows,
                               const PhaseKernels& k, double small_bytes) {
  const double b = m.dtype_bytes;
  const double F = m.expert_ffn_size;
  const auto n = static_cast<int>(rows.size());
  const int total = k.count(n, 3 * n);
  // the per-expert kernels, spread evenly (each expert at least its three)
  // in 64 bits: of_experts x n below passes 2^31 from about 18,000 local experts
  const std::int64_t of_experts =
      std::min<std::int64_t>(total, std::max<std::int64_t>(3 * n, std::lround(k.per_local_expert * n)));
  const std::int64_t fixed = total - of_experts;
  double received = 0;
  for (const auto r : rows) received += static_cast<double>(r);
  for (int e = 0; e < n; ++e) {
    const auto r = rows[static_cast<std::size_t>(e)];
    const double rd = static_cast<double>(r);
    const std::string id = std::to_string(e);
    ops.push_back(gemm_op("expert" + id + "_fc1", "expert_compute", {{r, 2LL * m.expert_ffn_size, m.hidden_size}}));
    ops.push_back(memory_op("expert" + id + "_swiglu", "expert_compute", rd * 3 * F * b));
    const std::int64_t mine = of_experts * (e + 1) / n - of_experts * e / n;
    for (std::int64_t i = 3; i < mine; ++i) {
      ops.push_back(memory_op("expert" + id + "_k" + std::to_string(i), "expert_compute", rd * F * b));
    }
    ops.push_back(gemm_op("expert" + id + "_fc2", "expert_compute", {{r, m.hidden_size, m.expert_ffn_size}}));
  }
  for (std::int64_t i = 0; i < fixed; ++i) {
    ops.push_back(memory_op("experts_k" + std::to_string(i), "expert_compute",
                            i == 0 ? received * m.hidden_size * b * 2 : small_bytes));
  }
}

/// Backward of the routed experts: per expert the activation gradient, the data
/// gradients of fc2 and fc1 and the weight gradients of both, plus
/// `extra_per_expert` small kernels.
void append_sequential_experts_backward(std::vector<Op>& ops, const ModelConfig& m,
                                        const std::vector<std::int64_t>& rows, int extra_per_expert) {
  const double b = m.dtype_bytes;
  const double F = m.expert_ffn_size;
  const std::int64_t H = m.hidden_size;
  const std::int64_t F2 = 2LL * m.expert_ffn_size;
  for (std::size_t e = 0; e < rows.size(); ++e) {
    const auto r = rows[e];
    const double rd = static_cast<double>(r);
    const std::string id = "expert" + std::to_string(e);
    ops.push_back(gemm_op(id + "_fc2_dgrad", "backward", {{r, m.expert_ffn_size, H}}));
    ops.push_back(gemm_op(id + "_fc2_wgrad", "backward", {{H, m.expert_ffn_size, std::max<std::int64_t>(r, 1)}}));
    ops.push_back(memory_op(id + "_swiglu_bwd", "backward", rd * 5 * F * b));
    ops.push_back(gemm_op(id + "_fc1_dgrad", "backward", {{r, H, F2}}));
    ops.push_back(gemm_op(id + "_fc1_wgrad", "backward", {{F2, H, std::max<std::int64_t>(r, 1)}}));
    for (int i = 0; i < extra_per_expert; ++i) {
      ops.push_back(memory_op(id + "_bwd_k" + std::to_string(i), "backward", rd * F * b));
    }
  }
}

}  // namespace

Schedule build_megatron(const ModelConfig& m, const Routing& r, const ExpertPlacement& p,
                        const ScheduleOptions& opt, bool backward) {
  const MegatronProfile& prof = opt.megatron;
  const MegatronForwardKernels& fk = backward ? prof.train_forward : prof.forward;
  const auto G = static_cast<std::size_t>(r.num_gpus);
  const double b = m.dtype_bytes;
  const double H = m.hidden_size;
  const double k = m.top_k;
  const double E = m.num_experts;
  const auto row_bytes = static_cast<std::uint32_t>(m.hidden_size * m.dtype_bytes);

  Schedule s;
  s.name = backward ? "megatron-train" : "megatron";
  const bool comm = !prof.single_rank;
  int kDispatch = -1, kProbs = -1, kCombine = -1, kCounts = -1, kDispatchBwd = -1, kCombineBwd = -1;
  if (comm) {
    kDispatch = 0;
    kProbs = 1;
    kCombine = 2;
    kCounts = 3;
    s.collectives.push_back(token_all_to_all("dispatch", r, p, row_bytes, opt.comm_sms, false));
    s.collectives.push_back(token_all_to_all("dispatch_probs", r, p, 4, opt.comm_sms, false));
    s.collectives.push_back(token_all_to_all("combine", r, p, row_bytes, opt.comm_sms, true));
    // count exchange (an all-gather of every rank's int64 count per expert)
    const auto counts_bytes = static_cast<std::int64_t>(std::max(1, m.num_experts) * 8);
    std::vector<std::vector<std::int64_t>> one(G, std::vector<std::int64_t>(G, 1));
    s.collectives.push_back(
        all_to_all_from_counts("count_exchange", one, static_cast<std::uint32_t>(counts_bytes), 1));
    if (backward) {
      // gradients travel the reverse ways: combine's backward is a dispatch, dispatch's a combine
      kCombineBwd = 4;
      kDispatchBwd = 5;
      s.collectives.push_back(token_all_to_all("combine_bwd", r, p, row_bytes, opt.comm_sms, false));
      s.collectives.push_back(token_all_to_all("dispatch_bwd", r, p, row_bytes, opt.comm_sms, true));
    }
  }

  const auto local_rows = rows_per_local_expert(r, p);
  s.ops.resize(G);
  for (std::size_t g = 0; g < G; ++g) {
    auto& ops = s.ops[g];
    const auto T = r.tokens_per_gpu[g];
    const double Td = static_cast<double>(T);
    const int LE = p.experts_on(static_cast<int>(g));
    double received = 0;
    for (const auto x : local_rows[g]) received += static_cast<double>(x);
    const double small = Td * k * 8;  // a pass over per-row metadata (int64 per token-expert pair)

    // router: logits (GEMM, streaming the tokens), softmax, top-k, aux loss
    ops.push_back(memory_op("router_gemm", "routing", Td * H * b + H * E * b + Td * E * 4));
    append_phase(ops, "routing", "router", fk.router.count(LE, 1) - 1, Td * E * 4 * 2 + Td * k * 8, Td * E * 4);
    // permutation: routing map to indices, then gather each token k times
    append_phase(ops, "permute", "permute", fk.permute.count(LE, 1), Td * k * H * b * 2, small);
    // count exchange and the host's synchronisation on the counts
    if (comm) ops.push_back(collective_op("count_exchange", "count_exchange", kCounts));
    ops.push_back(host_sync_op("count_sync", "count_exchange"));
    // dispatch: tokens and their probabilities
    if (comm) {
      ops.push_back(collective_op("dispatch", "dispatch", kDispatch));
      ops.push_back(collective_op("dispatch_probs", "dispatch", kProbs));
    } else {
      append_phase(ops, "dispatch", "dispatch_call", fk.dispatch_calls.count(LE, 0), 0, 0);
    }
    append_phase(ops, "dispatch", "sort_chunks", fk.sort.count(LE, 1),
                 received * H * b * 2, small);
    append_sequential_experts(ops, m, local_rows[g], fk.experts, small);
    append_phase(ops, "combine", "unsort_chunks", fk.unsort.count(LE, 1),
                 received * H * b * 2, small);
    if (comm) {
      ops.push_back(collective_op("combine", "combine", kCombine));
    } else {
      append_phase(ops, "combine", "combine_call", fk.combine_calls.count(LE, 0), 0, 0);
    }
    // unpermutation: read the k expert outputs of each token and the gate weights, write the
    // weighted sum, as a scatter-add at its measured rate of element adds (the op's limit is
    // in GB/s of all the bytes it moves)
    const std::size_t unpermute_first = ops.size();
    const double added = Td * k * H * b;  // the expert outputs the scatter-add adds
    const double unpermute_bytes = added + Td * H * b + Td * k * 4;
    append_phase(ops, "unpermute", "unpermute", fk.unpermute.count(LE, 1), unpermute_bytes, small);
    if (added > 0) ops[unpermute_first].max_gbps = prof.unpermute_add_gbps * unpermute_bytes / added;
    if (m.shared_expert_ffn_size > 0) {
      const double Fs = m.shared_expert_ffn_size;
      ops.push_back(gemm_op("shared_fc1", "shared_expert", {{T, 2LL * m.shared_expert_ffn_size, m.hidden_size}}));
      ops.push_back(memory_op("shared_swiglu", "shared_expert", Td * 3 * Fs * b));
      ops.push_back(gemm_op("shared_fc2", "shared_expert", {{T, m.hidden_size, m.shared_expert_ffn_size}}));
      append_phase(ops, "shared_expert", "shared", fk.shared_expert.count(LE, 3) - 3, Td * H * b * 3, Td * 4);
    }

    if (!backward) continue;
    // Backward, in reverse: the unpermutation's gradient, the combine's
    // all-to-all, the experts' data and weight gradients, the dispatch's
    // all-to-all, the permutation's scatter and the router's gradients. Each
    // expert gets its GEMMs and activation (5 kernels) and the per-expert
    // share of the profile's count beyond them; the fixed share is split into
    // small kernels before and after the experts.
    const int total = prof.backward.count(LE, 5 * LE + 4);
    const int extra_per_expert =
        std::max(0, static_cast<int>(std::lround(prof.backward.per_local_expert)) - 5);
    const int fixed =
        std::max(2, total - LE * (5 + extra_per_expert) - (m.shared_expert_ffn_size > 0 ? 2 : 0));
    if (m.shared_expert_ffn_size > 0) {
      const auto Fs = m.shared_expert_ffn_size;
      ops.push_back(gemm_op("shared_bwd_dgrad", "backward", {{T, m.hidden_size, 3LL * Fs}}));
      ops.push_back(gemm_op("shared_bwd_wgrad", "backward", {{3LL * Fs, m.hidden_size, std::max<std::int64_t>(T, 1)}}));
    }
    const int before = std::max(1, fixed / 2);  // unpermute, combine and unsort gradients
    append_phase(ops, "backward", "bwd_a", before, Td * k * H * b * 2, small);
    if (comm) ops.push_back(collective_op("combine_bwd", "backward", kCombineBwd));
    append_sequential_experts_backward(ops, m, local_rows[g], extra_per_expert);
    if (comm) ops.push_back(collective_op("dispatch_bwd", "backward", kDispatchBwd));
    // sort, permutation and router gradients; the router's weight gradient reads the tokens again
    append_phase(ops, "backward", "bwd_b", std::max(0, fixed - before - 1), received * H * b * 2, small);
    ops.push_back(memory_op("router_wgrad", "backward", Td * H * b * 2 + Td * E * 4));
  }
  return s;
}

}  // namespace moehub
