// Pieces the overlapped software baselines (fastermoe, tutel, comet, ccfuser)
// share: the rows each GPU's experts receive from an all-to-all restricted (by a
// schedule_detail::RowFilter) to one step of a pairwise exchange or to one chunk
// of every GPU's tokens, and the host-side address resolution (count exchange plus synchronisation)
// that every baseline built on dynamic shapes pays before its dispatch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/schedule_common.hpp"

namespace moehub::baseline_detail {

using schedule_detail::RowFilter;

/// Rows that GPU g's local experts receive among the rows `f` selects, per local expert.
std::vector<std::int64_t> local_rows(const Routing& r, const ExpertPlacement& p, int g, const RowFilter& f);

/// Appends the count exchange (an all-to-all of one row of int64 counts per
/// expert between every pair) to `s` and returns its index.
int add_count_exchange(Schedule& s, const ModelConfig& m, int gpus);

/// The count exchange op and the host's synchronisation on its result (phase
/// "address_resolution"): the host needs the counts to size the dispatch.
void append_address_resolution(std::vector<Op>& ops, int count_collective);

/// Grouped expert GEMMs (one group per local expert) for `rows`, named with `tag`.
Op expert_gemm1(const ModelConfig& m, const std::vector<std::int64_t>& rows, const std::string& tag);
Op expert_gemm2(const ModelConfig& m, const std::vector<std::int64_t>& rows, const std::string& tag);
/// The activation between them: reads 2F, writes F per row.
Op expert_activation(const ModelConfig& m, const std::vector<std::int64_t>& rows, const std::string& tag);

/// The weighted sum of each token's k expert outputs (scaling).
Op unpermute_op(const ModelConfig& m, std::int64_t tokens);

/// Rows per local expert, on average, that one chunk of a fused GEMM2 kernel
/// (comet, ccfuser) holds at least. The chunks stand for the order in which one
/// kernel's thread blocks run (source by source, so that each source's combine
/// can start early); a kernel does not split a tile row between sources, and
/// the tiles of a small chunk run alongside the next chunk's and share its
/// weight reads, whereas every chunk op of the simulator reads the experts'
/// weights anew. Assumption: two 128-row tile rows per expert, the figure of
/// Tutel's minimum chunk (BaselineOptions::tutel_min_rows_per_chunk, 256).
constexpr std::int64_t kFusedMinRowsPerChunk = 256;

/// The chunks of a fused GEMM2 kernel: consecutive steps (sources, in the
/// dispatch's order) whose rows (`step_rows[s][e]`: step s, local expert e)
/// reach kFusedMinRowsPerChunk per expert that receives rows; a remainder
/// under that joins the chunk before it. One chunk when the GPU receives fewer
/// rows than that in all.
std::vector<std::vector<int>> fused_gemm2_chunks(const std::vector<std::vector<std::int64_t>>& step_rows);

/// How a tile-level fused schedule (comet, ccfuser) runs its kernels.
struct FusedStyle {
  std::string name;
  /// SMs reserved for communication thread blocks (0: the GEMM tiles move
  /// their own rows and use every SM).
  int comm_sms = 0;
  /// How a GEMM1 group learns that its rows arrived.
  ReleaseKind release = ReleaseKind::kPoll;
  /// The GPU-side table built before the fused kernels: op name and phase.
  std::string layout_name;
  std::string layout_phase;
};

/// The fused-overlap schedule: routing, permute, the host's address
/// resolution, the layout table, then layer 0 (dispatch in G pairwise chunks,
/// local first, with GEMM1's tile groups released per chunk) and layer 1
/// (GEMM2 in chunks of whole tile rows, fused_gemm2_chunks, each source's
/// combine starting when the chunk holding its rows finishes), each layer one
/// kernel launch; the weighted sum last.
Schedule build_fused(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt,
                     const FusedStyle& style);

}  // namespace moehub::baseline_detail
