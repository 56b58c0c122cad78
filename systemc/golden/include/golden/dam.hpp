// Data Availability Manager (DAM): the consumer hub's completion function of
// the MoE-Hub implementation.
//
// Dependency table: per consumer kernel, the address range of its input rows
// and its tiling: thread-block group g depends on LocalRowIDs
// [g * rows_per_group, (g + 1) * rows_per_group), i.e. on the bytes
// [base + g * rows_per_group * row_bytes, + rows_per_group * row_bytes).
// Several kernels may cover the same addresses; every matching entry counts.
//
// Counters: a completed write adds the bytes it wrote (its mask, relative to
// its 128-byte window; or [address, address + bytes) without a mask) to the
// counter of every group they fall in, and to the kernel's global counter.
// A group is released (ReadySignal{kernel, group}) when its counter reaches
// its threshold:
// - while the kernel's total is unknown: rows_per_group * row_bytes (a full
//   group);
// - once the total expected bytes are known (from the routing, at
//   registration or later through set_expected_bytes): the group's share of
//   the total, min(rows_per_group, rows - g * rows_per_group) * row_bytes
//   with rows = total / row_bytes. The AAU allocates LocalRowIDs densely, so
//   the rows fill groups 0, 1, ... in order and only the last non-empty group
//   is partial; groups past the total have threshold 0.
// AllReady: when the global counter reaches the known total, every group
// still waiting is resolved: a group with threshold 0 (never receives rows)
// is retired, never released; then ReadySignal{kernel, kAllReadyGroup} is
// appended. Each group is released at most once and retired groups never.
// A counter passing its threshold, or the global counter passing the total,
// is a conservation error (std::logic_error).
//
// Timing: the table lookup and counter update are not on the write's path;
// the platform adds its configured latency to the Ready signal.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "golden/hub_functions.hpp"

namespace moehub::golden {

/// ReadySignal::group of the AllReady signal of a kernel.
inline constexpr std::int32_t kAllReadyGroup = -1;

struct KernelDependency {
  std::int32_t kernel = 0;
  std::uint64_t base_address = 0;   ///< LocalRowID 0 of the kernel's input region
  std::uint32_t row_bytes = 0;
  std::uint32_t rows_per_group = 0;
  std::uint32_t groups = 0;         ///< thread-block groups the compiler allocated (conservative)
  std::optional<std::uint64_t> expected_bytes;  ///< total input bytes, if known at registration
};

enum class GroupState : std::uint8_t { kWaiting, kReleased, kRetired };

struct DamStats {
  std::uint64_t completions = 0;
  std::uint64_t unmatched_completions = 0;  ///< writes outside every kernel's range
  std::uint64_t counted_bytes = 0;
  std::uint64_t groups_released = 0;
  std::uint64_t groups_retired = 0;
  std::uint64_t all_ready = 0;
};

class DataAvailabilityManager : public CompletionFunction {
 public:
  /// Throws std::invalid_argument for zero sizes, a kernel already registered,
  /// or expected_bytes not a multiple of row_bytes or beyond the groups' capacity.
  void add_kernel(const KernelDependency& k, std::vector<ReadySignal>& ready);
  /// The kernel's total becomes known; may release the partial last group and signal AllReady.
  void set_expected_bytes(std::int32_t kernel, std::uint64_t bytes, std::vector<ReadySignal>& ready);
  void remove_kernel(std::int32_t kernel);

  void on_write_complete(const StoreRequest& w, Tick now, std::vector<ReadySignal>& ready) override;

  GroupState group_state(std::int32_t kernel, std::uint32_t group) const;
  std::uint64_t group_bytes(std::int32_t kernel, std::uint32_t group) const;
  std::uint64_t threshold_bytes(std::int32_t kernel, std::uint32_t group) const;
  std::uint64_t received_bytes(std::int32_t kernel) const;
  bool all_ready(std::int32_t kernel) const;
  const DamStats& stats() const { return stats_; }

 private:
  struct Kernel {
    KernelDependency dep;
    std::vector<std::uint64_t> bytes;
    std::vector<GroupState> state;
    std::uint64_t received = 0;
    bool all_ready = false;
    std::uint64_t group_span() const { return std::uint64_t{dep.rows_per_group} * dep.row_bytes; }
    std::uint64_t end() const { return dep.base_address + group_span() * dep.groups; }
  };
  Kernel& find(std::int32_t kernel);
  const Kernel& find(std::int32_t kernel) const;
  static std::uint64_t threshold(const Kernel& k, std::uint32_t g);
  static void check_expected(const KernelDependency& dep, std::uint64_t bytes);
  /// Counts [start, start + len) into k's groups; widens [g_lo, g_hi) to the groups touched.
  void add_bytes(Kernel& k, std::uint64_t start, std::uint64_t len, std::uint32_t& g_lo, std::uint32_t& g_hi);
  /// Releases the groups of [g_lo, g_hi) that reached their threshold, then checks AllReady.
  void resolve(Kernel& k, std::uint32_t g_lo, std::uint32_t g_hi, std::vector<ReadySignal>& ready);

  std::vector<Kernel> kernels_;  ///< registration order
  DamStats stats_;
};

}  // namespace moehub::golden
