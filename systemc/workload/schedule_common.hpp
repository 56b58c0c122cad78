// Pieces shared by the schedule builders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "workload/schedule.hpp"

namespace moehub::schedule_detail {

/// Per-GPU token offsets: pair (gpu g, token t, slot j) has the global id
/// (token_offset[g] + t) * top_k + j.
std::vector<std::int64_t> token_offsets(const Routing& r);

/// Routed rows that each GPU's local experts receive, per local expert.
std::vector<std::vector<std::int64_t>> rows_per_local_expert(const Routing& r,
                                                             const ExpertPlacement& p);

/// Which token rows of a dispatch an all-to-all carries (the default: all).
struct RowFilter {
  /// Pairwise step: only rows from GPU s to GPU (s + shift) % G (-1: every pair).
  int shift = -1;
  /// Token chunk: only tokens t with chunk * T / chunks <= t < (chunk + 1) * T / chunks
  /// of each GPU (chunks 1: all tokens).
  int chunk = 0;
  int chunks = 1;

  /// Whether the row of token `token` (of `tokens` on GPU `src`) to GPU `dst` is carried.
  bool selects(int gpus, std::size_t src, std::size_t dst, std::int64_t token, std::int64_t tokens) const {
    if (shift >= 0 && static_cast<int>(dst) != (static_cast<int>(src) + shift) % gpus) return false;
    if (chunks > 1) {
      const std::int64_t lo = chunk * tokens / chunks;
      const std::int64_t hi = (chunk + 1) * tokens / chunks;
      if (token < lo || token >= hi) return false;
    }
    return true;
  }
};

/// The dispatch all-to-all of the rows `f` selects (token rows to the GPUs of
/// their experts, sorted by expert as a permute does) and, when `reverse`, the
/// combine all-to-all that brings them back to their tokens' GPUs.
AllToAll token_all_to_all(const std::string& name, const Routing& r, const ExpertPlacement& p,
                          std::uint32_t row_bytes, int sms, bool reverse, const RowFilter& f = {});

/// The routing-part ops every schedule starts with (router GEMM, softmax/top-k).
void append_routing_ops(std::vector<Op>& ops, const ModelConfig& m, std::int64_t tokens);
/// Grouped expert GEMMs with the SwiGLU activation between them.
void append_expert_ops(std::vector<Op>& ops, const ModelConfig& m,
                       const std::vector<std::int64_t>& rows_per_expert);
/// The shared expert, when the model has one (computed locally on every GPU).
void append_shared_expert_ops(std::vector<Op>& ops, const ModelConfig& m, std::int64_t tokens);

Op memory_op(const std::string& name, const std::string& phase, double bytes);
/// An op that takes part in collective `collective`, launched as a collective
/// (kernel launch plus collective setup on the host).
Op collective_op(const std::string& name, const std::string& phase, int collective, int stream = 0);
/// The host waits for everything this GPU was given so far (a device-to-host
/// copy and synchronisation, host.stream_sync_us); launches nothing.
Op host_sync_op(const std::string& name, const std::string& phase);
/// A grouped GEMM op (one shape per group).
Op gemm_op(const std::string& name, const std::string& phase, std::vector<GemmShape> groups);

/// An all-to-all in which GPU s sends counts[s][d] rows to GPU d (row ids
/// numbered in (s, d) order).
AllToAll all_to_all_from_counts(const std::string& name, const std::vector<std::vector<std::int64_t>>& counts,
                                std::uint32_t row_bytes, int sms);
/// A schedule whose only op on every GPU is `a`; with `host_costs` the host
/// launches it as a collective, without it every GPU starts at time 0.
Schedule single_collective(const std::string& name, AllToAll a, bool host_costs);
/// The same with `repeat` copies of `a` back to back (host costs included).
Schedule repeated_collective(const std::string& name, const AllToAll& a, int repeat);

}  // namespace moehub::schedule_detail
