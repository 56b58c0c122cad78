// Value types for the layer's index arithmetic, shared by the schedules, the commands and
// the tests (pure host code, no CUDA):
//   PartitionLayout  where one expert's matrices sit in a rank's partition
//                    [Wgu: El][H][2F] | [Wd: El][F][H] (elements; the same offsets hold
//                    for the bf16 weights and the fp32 or bf16 gradients)
//   CountMatrix      the all-ranks routing counts [N][E]: at(src, e) = pairs of rank
//                    src's tokens routed to expert e, with the row sums and prefix
//                    offsets the schedules need
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace moehub::gpu {

struct PartitionLayout {
  std::int64_t local_experts, hidden, ffn;  ///< El, H, F

  std::int64_t gate_up_elems() const { return hidden * 2 * ffn; }  ///< one expert's Wgu
  std::int64_t down_elems() const { return ffn * hidden; }        ///< one expert's Wd
  std::int64_t expert_elems() const { return gate_up_elems() + down_elems(); }
  std::int64_t elems() const { return local_experts * expert_elems(); }
  /// Offset of local expert e's Wgu ([H][2F], row h = [Wg[h] | Wu[h]]).
  std::int64_t gate_up(std::int64_t e) const { return e * gate_up_elems(); }
  /// Offset of local expert e's Wd ([F][H]), after all the Wgu blocks.
  std::int64_t down(std::int64_t e) const { return local_experts * gate_up_elems() + e * down_elems(); }
};

class CountMatrix {
 public:
  CountMatrix() = default;
  /// `counts` is rank-major [ranks][experts]; experts % ranks == 0.
  CountMatrix(int ranks, int experts, std::vector<std::int32_t> counts)
      : n_(ranks), e_(experts), c_(std::move(counts)) {
    if (ranks < 1 || experts < 1 || experts % ranks || c_.size() != static_cast<std::size_t>(ranks) * static_cast<std::size_t>(experts))
      throw std::invalid_argument("CountMatrix: " + std::to_string(c_.size()) + " counts for " + std::to_string(ranks) +
                                  " ranks x " + std::to_string(experts) + " experts");
  }
  int ranks() const { return n_; }
  int experts() const { return e_; }
  int local_experts() const { return e_ / n_; }
  bool empty() const { return c_.empty(); }
  const std::vector<std::int32_t>& raw() const { return c_; }

  /// Pairs of rank `src`'s tokens routed to (global) expert `e`.
  std::int64_t at(int src, std::int64_t e) const {
    return c_[static_cast<std::size_t>(src) * static_cast<std::size_t>(e_) + static_cast<std::size_t>(e)];
  }
  /// First global expert of rank `owner`'s partition.
  std::int64_t first_expert(int owner) const { return static_cast<std::int64_t>(owner) * local_experts(); }
  /// Pairs rank `src` routes to experts [0, e): the start of expert e's rows in src's
  /// expert-sorted pairs.
  std::int64_t sorted_offset(int src, std::int64_t e) const {
    std::int64_t s = 0;
    for (std::int64_t i = 0; i < e; ++i) s += at(src, i);
    return s;
  }
  /// Pairs rank `src` sends in all (T * k).
  std::int64_t sent(int src) const { return sorted_offset(src, e_); }
  /// Pairs of every rank routed to rank `owner`'s local expert i.
  std::int64_t received_by_expert(int owner, std::int64_t i) const {
    std::int64_t s = 0;
    for (int src = 0; src < n_; ++src) s += at(src, first_expert(owner) + i);
    return s;
  }
  std::int64_t received(int owner) const {
    std::int64_t s = 0;
    for (std::int64_t i = 0; i < local_experts(); ++i) s += received_by_expert(owner, i);
    return s;
  }
  /// Rows rank `src`'s tokens send to each local expert of rank `owner` (El entries).
  std::vector<std::int64_t> block(int src, int owner) const {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(local_experts()));
    for (std::int64_t i = 0; i < local_experts(); ++i) rows[static_cast<std::size_t>(i)] = at(src, first_expert(owner) + i);
    return rows;
  }

 private:
  int n_ = 0, e_ = 0;
  std::vector<std::int32_t> c_;
};

}  // namespace moehub::gpu
