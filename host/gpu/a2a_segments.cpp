// Row layout and segments of the all-to-all schedule (a2a_segments.hpp).
#include "a2a_segments.hpp"

namespace moehub::gpu {

A2ALayout a2a_layout(const CountMatrix& cm, int rank) {
  A2ALayout s;
  const int N = cm.ranks();
  const std::int64_t E = cm.experts(), El = cm.local_experts();
  s.sorted_offset.assign(static_cast<std::size_t>(E + 1), 0);
  for (std::int64_t e = 0; e < E; ++e)
    s.sorted_offset[static_cast<std::size_t>(e + 1)] = s.sorted_offset[static_cast<std::size_t>(e)] + cm.at(rank, e);
  s.rows.assign(static_cast<std::size_t>(El), 0);
  s.received_at.assign(static_cast<std::size_t>(N), std::vector<std::int64_t>(static_cast<std::size_t>(El), 0));
  std::int64_t base = 0;
  for (std::int64_t i = 0; i < El; ++i) {
    const std::int64_t e = cm.first_expert(rank) + i;
    for (int src = 0; src < N; ++src) {
      s.received_at[static_cast<std::size_t>(src)][static_cast<std::size_t>(i)] = base;
      base += cm.at(src, e);
    }
    s.rows[static_cast<std::size_t>(i)] = cm.received_by_expert(rank, i);
  }
  s.received = base;
  return s;
}

void a2a_segments(const CountMatrix& cm, const A2ALayout& lay, int rank, char* sorted, char* expert_major,
                  std::size_t row_bytes, bool dispatch, std::vector<std::vector<Segment>>& send,
                  std::vector<std::vector<Segment>>& recv) {
  const int N = cm.ranks();
  const std::int64_t El = cm.local_experts();
  send.assign(static_cast<std::size_t>(N), {});
  recv.assign(static_cast<std::size_t>(N), {});
  const auto at = [row_bytes](char* base, std::int64_t row) { return base + static_cast<std::size_t>(row) * row_bytes; };
  for (int p = 0; p < N; ++p) {
    for (std::int64_t i = 0; i < El; ++i) {
      const std::int64_t e = cm.first_expert(p) + i;
      // my pairs routed to peer p's expert i
      const Segment mine{at(sorted, lay.sorted_offset[static_cast<std::size_t>(e)]),
                         static_cast<std::size_t>(cm.at(rank, e)) * row_bytes};
      // peer p's pairs routed to my expert i
      const Segment theirs{at(expert_major, lay.received_at[static_cast<std::size_t>(p)][static_cast<std::size_t>(i)]),
                           static_cast<std::size_t>(cm.at(p, cm.first_expert(rank) + i)) * row_bytes};
      (dispatch ? send : recv)[static_cast<std::size_t>(p)].push_back(mine);
      (dispatch ? recv : send)[static_cast<std::size_t>(p)].push_back(theirs);
    }
  }
}

}  // namespace moehub::gpu
