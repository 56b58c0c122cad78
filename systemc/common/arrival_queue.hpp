// A block's input, handled in arrival-time order.
//
// Transactions reach a block (a hub's ingress, a switch, HBM) through calls
// made at the sender's simulated time with the arrival annotated as a delay,
// so they come in call order, not in arrival order. An ArrivalQueue hands
// them to the block's handler in (arrival, insertion) order, from one
// SystemC method that wakes at most once per `quantum` (conservative
// lookahead, as in parallel discrete-event simulation):
//
//   At simulated time T the queue hands over every entry whose arrival is at
//   most T + lookahead. This is safe when every push made at a time P carries
//   an arrival >= P + lookahead (+1 ps): nothing that arrives at or before
//   T + lookahead can still come in after T.
//
// With quantum <= lookahead, an entry is handed over no later than its own
// arrival time, so the block can annotate what it does from the arrival on.
// With lookahead 0 the queue may hand an entry over after its arrival (by at
// most the quantum); the block then works from the entry's timestamps, and a
// push made during the handling with an arrival below T still comes out in
// order in the same round.
//
// A block that cannot take the head now (its input is stalled) returns false
// with a retry time; the head and everything behind it wait until then, so
// stalling never reorders. `reorderings()` counts entries handed over with an
// arrival earlier than one handed over before: the invariant is that it stays
// 0 (checked by assert in debug builds, counted in the results always).
//
// Storage: the input of a block is a merge of a few streams that are each in
// arrival order (one per input link: a link delivers in the order it sends).
// Entries go to FIFO lanes, each kept sorted by (arrival, insertion): to the
// lane the sender names (its input) when the entry fits behind that lane's
// last, otherwise to the lane whose last entry is the latest one not after
// it, and only when no lane fits to a heap. The next entry is the earliest
// of the lanes' heads and the heap's top. The order handed over is the same
// total order as with one heap; a push and a pop cost a few comparisons
// instead of a heap's log2(n) moves over entries that are mostly cold.
#pragma once

#ifndef SC_INCLUDE_DYNAMIC_PROCESSES
#define SC_INCLUDE_DYNAMIC_PROCESSES
#endif
#include <systemc>
#include <tlm>

#include <cassert>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "common/payload_pool.hpp"
#include "common/ring.hpp"
#include "common/sc_time_util.hpp"
#include "common/units.hpp"

namespace moehub {

class ArrivalQueue : public sc_core::sc_module {
 public:
  /// Handles one entry; returns false (and sets retry_at > arrival) if the
  /// block cannot take it now.
  using Handler = std::function<bool(tlm::tlm_generic_payload& gp, Tick arrival, Tick& retry_at)>;

  SC_HAS_PROCESS(ArrivalQueue);
  /// `lanes`: how many FIFO lanes (about the number of inputs, >= 1).
  ArrivalQueue(const sc_core::sc_module_name& name, Tick lookahead, Tick quantum, Handler handler,
               std::size_t lanes = 8)
      : sc_core::sc_module(name),
        lookahead_(lookahead),
        quantum_(std::max<Tick>(1, lookahead > 0 ? std::min(quantum, lookahead) : quantum)),
        handler_(std::move(handler)),
        lanes_(std::min<std::size_t>(kMaxLanes, std::max<std::size_t>(1, lanes))),
        n_lanes_(lanes_.size()) {
    SC_METHOD(drain);
    sensitive << wake_ev_;
    dont_initialize();
  }

  /// An entry that arrives at `arrival` (must not be earlier than the current
  /// simulated time plus the lookahead, see above), from input `lane` if the
  /// sender knows it (entries of one lane usually come in arrival order).
  void push(tlm::tlm_generic_payload* gp, Tick arrival, std::size_t lane = kAnyLane) {
    if (lane < n_lanes_) {
      Ring<Entry>& l = lanes_[lane];
      if (!l.empty() && l.back().t <= arrival) {
        // the usual case: behind its lane's last entry. The head stays (it
        // is no later than this lane's first), and so does its wake-up.
        l.push_back(Entry{arrival, seq_++, gp});
        ++size_;
        if (draining_) schedule();  // see push_new_lane_or_heap
        return;
      }
    }
    push_new_lane_or_heap(gp, arrival, lane);
  }

  static constexpr std::size_t kAnyLane = ~std::size_t{0};
  static constexpr std::size_t kMaxLanes = 64;

  Tick lookahead() const { return lookahead_; }
  Tick quantum() const { return quantum_; }
  std::size_t size() const { return size_; }
  /// Entries that fitted no lane (went to the heap).
  std::uint64_t heap_pushes() const { return heap_pushes_; }
  std::uint64_t handled() const { return handled_; }
  std::uint64_t reorderings() const { return reorderings_; }
  std::uint64_t wakes() const { return wakes_; }
  /// Total time entries waited behind a stalled head.
  Tick stalled() const { return stalled_; }

 private:
  /// push() of an entry that does not go behind the last of the lane named
  /// (none named, that lane empty, or its last arrives later).
  [[gnu::noinline]] void push_new_lane_or_heap(tlm::tlm_generic_payload* gp, Tick arrival, std::size_t lane) {
    const Entry e{arrival, seq_++, gp};
    if (lane >= lanes_.size() || !(lanes_[lane].empty() || lanes_[lane].back().t <= arrival)) lane = fit(arrival);
    std::size_t src = kHeap;
    if (lane < lanes_.size()) {
      lanes_[lane].push_back(e);
      if (lanes_[lane].size() == 1) order_push(lane);
      src = lane;
    } else {
      heap_.push(e);
    }
    // the head moves to this entry only if it arrives earlier (ties: the
    // older entry goes first)
    const bool new_head = size_ == 0 || arrival < head(head_src_).t;
    if (new_head) head_src_ = src;
    ++size_;
    // Outside the drain the wake-up set for an unchanged head stands (every
    // change of the head reschedules). A push made by the drain's own handler
    // (a credit return that lets a parked packet through to this input)
    // finds no wake-up set and schedules one, which runs the drain again in
    // the next delta cycle: kept, as the order of delta cycles decides which
    // process sees the time step's events first.
    if (new_head || draining_) schedule();
  }

  struct Entry {
    Tick t;
    std::uint64_t seq;
    tlm::tlm_generic_payload* gp;
    bool operator>(const Entry& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  static constexpr std::size_t kHeap = ~std::size_t{0};
  static constexpr std::size_t kPrefetchAhead = 4;

  /// The lane an entry arriving at `t` fits best (the latest last entry not
  /// after t; an empty lane if none), kAnyLane if none fits.
  std::size_t fit(Tick t) {
    std::size_t best = kAnyLane, empty = kAnyLane;
    Tick best_t = 0;
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      if (lanes_[i].empty()) {
        if (empty == kAnyLane) empty = i;
        continue;
      }
      const Tick b = lanes_[i].back().t;
      if (b <= t && (best == kAnyLane || b > best_t)) {
        best = i;
        best_t = b;
      }
    }
    if (best != kAnyLane) return best;
    if (empty == kAnyLane) ++heap_pushes_;
    return empty;
  }

  /// The non-empty lanes form a binary min-heap (order_) by their first
  /// entries, each kept in the heap beside its lane (comparisons then read
  /// no ring); a push into a non-empty lane does not change it.
  struct LaneHead {
    Tick t;
    std::uint64_t seq;
    std::size_t lane;
    bool before(const LaneHead& o) const { return t != o.t ? t < o.t : seq < o.seq; }
  };
  void order_push(std::size_t lane) {
    const Entry& f = lanes_[lane].front();
    const LaneHead h{f.t, f.seq, lane};
    std::size_t k = order_.size();
    order_.push_back(h);
    while (k > 0 && h.before(order_[(k - 1) / 2])) {
      order_[k] = order_[(k - 1) / 2];
      k = (k - 1) / 2;
    }
    order_[k] = h;
  }
  /// Restores the heap after its root changed.
  void order_sift_root() {
    const std::size_t n = order_.size();
    const LaneHead h = order_[0];
    std::size_t k = 0;
    for (;;) {
      std::size_t c = 2 * k + 1;
      if (c >= n) break;
      if (c + 1 < n && order_[c + 1].before(order_[c])) ++c;
      if (!order_[c].before(h)) break;
      order_[k] = order_[c];
      k = c;
    }
    order_[k] = h;
  }

  /// Where the earliest entry is: a lane index, or kHeap. The queue is not empty.
  std::size_t find_head() const {
    if (order_.empty()) return kHeap;
    const LaneHead& h = order_[0];
    if (heap_.empty()) return h.lane;
    const Entry& top = heap_.top();
    return top.t != h.t ? (top.t < h.t ? kHeap : h.lane) : (top.seq < h.seq ? kHeap : h.lane);
  }
  const Entry& head(std::size_t src) const { return src == kHeap ? heap_.top() : lanes_[src].front(); }
  /// Removes the head entry.
  void pop_head() {
    if (head_src_ == kHeap) {
      heap_.pop();
    } else {
      Ring<Entry>& lane = lanes_[head_src_];  // = lanes_[order_[0].lane]
      lane.pop_front();
      if (lane.empty()) {
        order_[0] = order_.back();
        order_.pop_back();
      } else {
        const Entry& f = lane.front();
        order_[0].t = f.t;
        order_[0].seq = f.seq;
        // the lane's entries are handed over in turn: fetch a few ahead
        prefetch_payload(lane[std::min<std::size_t>(kPrefetchAhead, lane.size() - 1)].gp);
      }
      if (!order_.empty()) order_sift_root();
    }
    if (--size_ > 0) head_src_ = find_head();
  }

  Tick effective(const Entry& e) const { return std::max(e.t, blocked_until_); }

  /// When the method must run for the current head.
  Tick due_for(Tick eff) const {
    Tick due = eff > lookahead_ ? eff - lookahead_ : 0;
    if (quantum_ > 1) due = ceil_div(due, quantum_) * quantum_;
    return due;
  }

  void schedule() {
    if (size_ == 0) return;
    const Tick eff = effective(head(head_src_));
    // due_for(eff) >= eff - lookahead_: no need to round (a division) when
    // that is already no earlier than the wake-up we have
    if (eff > lookahead_ && eff - lookahead_ >= wake_at_) return;
    const Tick now = now_ticks();
    const Tick due = std::max(now, due_for(eff));
    if (due < wake_at_) {
      wake_at_ = due;
      wake_ev_.notify(to_sc(due - now));  // an earlier notification overrides a later one
    }
  }

  void drain() {
    draining_ = true;
    ++wakes_;
    const Tick now = now_ticks();
    wake_at_ = kTickMax;
    const Tick horizon = now + lookahead_;
    while (size_ > 0) {
      const Entry e = head(head_src_);
      if (effective(e) > horizon) break;
      Tick retry = 0;
      if (!handler_(*e.gp, e.t, retry)) {
        assert(retry > blocked_until_);
        if (retry > std::max(e.t, blocked_until_)) stalled_ += retry - std::max(e.t, blocked_until_);
        blocked_until_ = retry;
        continue;
      }
      pop_head();
      ++handled_;
      if (e.t < last_) ++reorderings_;
      assert(e.t >= last_ && "arrival order violated");
      last_ = std::max(last_, e.t);
    }
    draining_ = false;
    schedule();
  }

  Tick lookahead_;
  Tick quantum_;
  Handler handler_;
  std::vector<Ring<Entry>> lanes_;
  std::size_t n_lanes_;  ///< = lanes_.size() (a division by the ring's size otherwise)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  std::vector<LaneHead> order_;  ///< the non-empty lanes, a min-heap by first entry
  std::size_t head_src_ = kHeap;  ///< where the earliest entry is (valid while size_ > 0)
  std::size_t size_ = 0;
  std::uint64_t heap_pushes_ = 0;
  sc_core::sc_event wake_ev_;
  Tick wake_at_ = kTickMax;
  bool draining_ = false;  ///< drain() is running (its handler may push)
  Tick blocked_until_ = 0;
  Tick last_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t handled_ = 0;
  std::uint64_t reorderings_ = 0;
  std::uint64_t wakes_ = 0;
  Tick stalled_ = 0;
};

}  // namespace moehub
