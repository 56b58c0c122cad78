// Runtime Packet Manager (RPM): the producer hub's egress function of the
// MoE-Hub implementation.
//
// Buffer pool: one fully associative partition of `entries_per_peer`
// entries per peer GPU (every GPU but this one). A store is a packet of at
// most one 128-byte line; its line is
//   st / flag:  address rounded down to 128 bytes,
//   st.rowsp:   (MallocID, RowID, RowOffset / 128): lines of the row itself,
// and its ByteMask bit i stands for byte i of that line (a store with an
// empty mask gets the mask of [offset in line, + bytes), which must not
// cross the line). A store merges into an entry of its partition with the
// same line, opcode and priority: masks are OR-ed (a later store's bytes
// replace overlapping earlier ones) and the entry counts the stores it
// carries. Flag writes never merge. can_accept() is false when the
// destination's partition is full and the store cannot merge.
//
// Scheduler (one packet per pick() call, `pick_cycles` hub cycles):
// - Round robin over the partitions in GPU order, starting after the one
//   served last; a partition whose ports are congested, or that holds no
//   eligible entry, is skipped.
// - Eligible: with hold_partial (the default) a mergeable entry whose mask
//   is not full waits for more stores; it becomes eligible when its timer
//   expires (it has existed timer_cycles hub cycles: cycle_at(now) >=
//   creation cycle + timer_cycles) or while its partition is full (so a pool
//   of one entry still drains). Full entries and flags are always eligible.
//   Without hold_partial every entry is eligible.
// - Within a partition, expired entries go first, oldest first (the timer
//   bypass); then priority before .nop, full masks before partial, smallest
//   RowID (st: the row it carries; -1 first), oldest first.
// Progress: an entry is eligible at the latest timer_cycles after it was
// created and then precedes every unexpired entry of its partition; only the
// at most entries_per_peer - 1 older expired entries go before it, and its
// partition is served at least once in every (peers) picks in which it is
// not congested. With one pick per cycle and no congestion an entry leaves
// within timer_cycles + entries_per_peer * peers cycles of its creation.
// next_event() is the start of the cycle in which the next held entry expires.
// timer_cycles = 0 makes every entry expired at once: the order degenerates
// to oldest first.
//
// Implementation: no call scans a partition. Each keeps its entries in slots
// and indexes over them, updated by accept() and pick(): the merge key in a
// hash table (find_merge), the scheduler's order of the entries eligible at
// once and of the held ones (the best is the first), age and creation cycle
// (the oldest expired entry, next_event). The picks equal those of the
// linear scan the rules describe (tests/golden/test_rpm_reference.cpp).
//
// The RPM does not order a flag after earlier data to the same peer: a
// schedule that needs it fences (waits for the acknowledgements) first, as
// GPUs do with membar.sys.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "golden/hub_clock.hpp"
#include "golden/hub_functions.hpp"
#include "golden/merge_rule.hpp"

namespace moehub::golden {

namespace rpm_detail {
/// A small ordered set in one vector with a free stretch before its first
/// element: an insert or erase moves the shorter side, so taking the first
/// element (a pick) or adding past the last (a new store) moves nothing.
template <class T>
class SortedRun {
 public:
  const T* begin() const { return v_.data() + head_; }
  const T* end() const { return v_.data() + v_.size(); }
  bool empty() const { return head_ == v_.size(); }
  const T& front() const { return v_[head_]; }
  /// Position of the first element not less than x.
  const T* lower_bound(const T& x) const;
  void insert(const T& x);
  /// Throws std::logic_error if no element equals x.
  void erase(const T& x);

 private:
  std::vector<T> v_;
  std::size_t head_ = 0;  ///< v_[0, head_) is free
};
}  // namespace rpm_detail

struct RpmParams {
  std::int32_t gpu = 0;
  std::int32_t num_gpus = 2;
  double clock_ghz = 1.5;
  std::uint32_t entries_per_peer = 64;
  std::uint32_t timer_cycles = 64;
  bool hold_partial = true;
  std::uint32_t pick_cycles = 1;
};

struct RpmStats {
  std::uint64_t stores_accepted = 0;
  std::uint64_t stores_merged = 0;     ///< stores that joined an existing entry
  std::uint64_t stores_sent = 0;       ///< stores carried by the packets sent
  std::uint64_t packets_sent = 0;
  std::uint64_t bytes_sent = 0;        ///< valid bytes of the packets sent
  std::uint64_t full_packets = 0;      ///< packets with a full 128-byte mask
  std::uint64_t timer_flushes = 0;     ///< partial packets sent because their timer expired
  std::uint64_t pressure_flushes = 0;  ///< partial, unexpired packets sent because their partition was full
  /// packets by size in 16-byte flits: index = ceil(valid bytes / 16), 0..8
  std::array<std::uint64_t, 9> packet_flits{};
  /// stores per packet sent (1 = no merging)
  double merge_ratio() const {
    return packets_sent == 0 ? 0.0 : static_cast<double>(stores_sent) / static_cast<double>(packets_sent);
  }
};

class RuntimePacketManager : public EgressFunction {
 public:
  /// Throws std::invalid_argument for num_gpus < 2, gpu outside [0, num_gpus) or entries_per_peer 0.
  explicit RuntimePacketManager(const RpmParams& p);

  bool can_accept(const StoreRequest& s, Tick now) const override;
  void accept(const StoreRequest& s, Tick now) override;
  bool pick(Tick now, const std::vector<std::uint8_t>& congested, EgressPick& out) override;
  Tick next_event(Tick now) const override;
  std::size_t occupancy() const override;

  /// Entries held for GPU `peer`.
  std::size_t occupancy(std::int32_t peer) const;
  /// The tags of the stores the last picked packet carries, oldest first.
  const std::vector<std::uint64_t>& last_pick_tags() const { return last_tags_; }
  const RpmStats& stats() const { return stats_; }
  const RpmStats* rpm_stats() const override { return &stats_; }
  std::uint32_t pick_cycles() const override { return p_.pick_cycles; }
  const RpmParams& params() const { return p_; }

 private:
  struct Entry {
    StoreRequest packet;  ///< the first store, with the merged mask
    std::uint64_t line = 0;  ///< line address (st) or line index within the row (st.rowsp)
    std::uint64_t created_cycle = 0;
    std::uint64_t seq = 0;
    std::uint32_t merged = 1;
    std::vector<std::uint64_t> tags;
  };
  /// Order of unexpired entries: priority before .nop, full before partial, smallest RowID, oldest.
  struct OrderKey {
    std::uint8_t nop = 0;
    std::uint8_t partial = 0;
    std::int64_t row_id = 0;
    std::uint64_t seq = 0;
    std::uint32_t slot = 0;
    bool operator<(const OrderKey& o) const;
  };
  /// Entries by creation cycle (ties: oldest first).
  struct TimeKey {
    std::uint64_t created_cycle = 0;
    std::uint64_t seq = 0;
    std::uint32_t slot = 0;
    bool operator<(const TimeKey& o) const;
  };
  /// Entries by age (seq), with their creation cycle at hand.
  struct AgeKey {
    std::uint64_t seq = 0;
    std::uint64_t created_cycle = 0;
    std::uint32_t slot = 0;
    bool operator<(const AgeKey& o) const { return seq < o.seq; }
  };
  /// A cell of the merge index: an entry's slot and its key's hash (kNoSlot: empty).
  struct MergeCell {
    std::uint32_t slot = ~0U;
    std::uint32_t hash = 0;
  };
  /// One peer's entries in slots, with sorted indexes over them kept up to
  /// date by accept() and pick(), so that neither scans the partition.
  struct Partition {
    std::vector<Entry> slots;
    std::vector<std::uint32_t> free_slots;
    std::size_t size = 0;                       ///< entries held
    rpm_detail::SortedRun<AgeKey> fifo;           ///< every entry
    rpm_detail::SortedRun<TimeKey> by_time;       ///< every entry
    rpm_detail::SortedRun<OrderKey> ready;        ///< eligible at once (flags, full masks; all without hold_partial)
    rpm_detail::SortedRun<OrderKey> held;         ///< partial mergeable entries that wait (hold_partial)
    rpm_detail::SortedRun<TimeKey> held_by_time;  ///< the held entries
    /// Mergeable entries by merge key: open addressing with linear probing
    /// over at least twice entries_per_peer cells.
    std::vector<MergeCell> merge_cells;
  };
  std::size_t partition_of(std::int32_t dst) const;
  /// An entry's merge key (golden/merge_rule.hpp): that of its first store.
  static MergeKey entry_key(const Entry& e) { return merge_key(e.packet); }
  void merge_insert(Partition& part, std::uint32_t slot);
  void merge_erase(Partition& part, std::uint32_t slot);
  static OrderKey order_key(const Entry& e, std::uint32_t slot);
  /// Slot of the entry `s` merges into, or kNoSlot.
  std::uint32_t find_merge(const Partition& part, const StoreRequest& s) const;
  bool expired(const Entry& e, std::uint64_t cycle) const { return cycle >= e.created_cycle + p_.timer_cycles; }
  /// A partial mergeable entry that waits for stores until its timer expires or its partition fills.
  bool waits(const Entry& e) const { return p_.hold_partial && mergeable(e.packet) && !e.packet.mask.full(); }
  /// Adds the entry in `slot` to (removes it from) the order indexes.
  void index_order(Partition& part, std::uint32_t slot);
  void unindex_order(Partition& part, std::uint32_t slot);
  /// Slot of the entry the scheduler picks in `part`, or kNoSlot.
  std::uint32_t best_in(const Partition& part, std::uint64_t cycle) const;

  static constexpr std::uint32_t kNoSlot = ~0U;
  RpmParams p_;
  HubClock clock_;
  std::vector<Partition> parts_;
  std::size_t occupancy_ = 0;
  std::vector<std::int32_t> peers_;
  std::size_t rr_ = 0;
  std::uint64_t seq_ = 0;
  std::vector<std::uint64_t> last_tags_;
  RpmStats stats_;
};

}  // namespace moehub::golden
