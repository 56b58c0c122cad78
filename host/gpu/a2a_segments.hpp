// The all-to-all schedule's row layout and transfer segments as pure functions of the
// count matrix (tested without a GPU against a recording transport).
//
// A rank's sorted pairs (its tokens' top-k rows in expert order) are sent expert by
// expert; its received buffer is expert-major: for each local expert i, the rows of
// source rank 0, 1, ..., N-1 one after the other, so each local expert's rows are
// contiguous for its GEMMs.
#pragma once

#include <cstdint>
#include <vector>

#include "layout.hpp"
#include "transport.hpp"

namespace moehub::gpu {

struct A2ALayout {
  std::vector<std::int64_t> sorted_offset;              ///< [E+1] start of expert e in the rank's sorted pairs
  std::vector<std::int64_t> rows;                       ///< [El] rows received per local expert
  std::vector<std::vector<std::int64_t>> received_at;   ///< [src][i] first row of src's rows of local expert i
  std::int64_t received = 0;                            ///< rows received in all
};
A2ALayout a2a_layout(const CountMatrix& cm, int rank);

/// Per-peer segment lists of one all-to-all of rank `rank` between `sorted` (its sorted
/// pairs, row_bytes per row) and `expert_major` (its received layout): dispatch sends
/// sorted -> peers' expert_major; combine (dispatch = false) the reverse. Segment i from
/// s to d matches segment i at d from s (same bytes).
void a2a_segments(const CountMatrix& cm, const A2ALayout& lay, int rank, char* sorted, char* expert_major,
                  std::size_t row_bytes, bool dispatch, std::vector<std::vector<Segment>>& send,
                  std::vector<std::vector<Segment>>& recv);

}  // namespace moehub::gpu
