// Pieces shared by the schedule builders.
#pragma once

#include <cstdint>
#include <vector>

#include "workload/schedule.hpp"

namespace moehub::schedule_detail {

/// Per-GPU token offsets: pair (gpu g, token t, slot j) has the global id
/// (token_offset[g] + t) * top_k + j.
std::vector<std::int64_t> token_offsets(const Routing& r);

/// Routed rows that each GPU's local experts receive, per local expert.
std::vector<std::vector<std::int64_t>> rows_per_local_expert(const Routing& r,
                                                             const ExpertPlacement& p);

/// The dispatch all-to-all (token rows to the GPUs of their experts, sorted by
/// expert as a permute does) and, when `reverse`, the combine all-to-all that
/// brings every row back to its token's GPU.
AllToAll token_all_to_all(const std::string& name, const Routing& r, const ExpertPlacement& p,
                          std::uint32_t row_bytes, int sms, bool reverse);

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
