// A block's input, handled in arrival-time order.
//
// Transactions reach a block (a hub's ingress, a switch, HBM) through calls
// made at the sender's simulated time with the arrival annotated as a delay,
// so they come in call order, not in arrival order. An ArrivalQueue holds
// them in a heap ordered by (arrival, insertion) and hands them to the
// block's handler in that order, from one SystemC method that wakes at most
// once per `quantum` (conservative lookahead, as in parallel discrete-event
// simulation):
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
#include <vector>

#include "common/sc_time_util.hpp"
#include "common/units.hpp"

namespace moehub {

class ArrivalQueue : public sc_core::sc_module {
 public:
  /// Handles one entry; returns false (and sets retry_at > arrival) if the
  /// block cannot take it now.
  using Handler = std::function<bool(tlm::tlm_generic_payload& gp, Tick arrival, Tick& retry_at)>;

  SC_HAS_PROCESS(ArrivalQueue);
  ArrivalQueue(const sc_core::sc_module_name& name, Tick lookahead, Tick quantum, Handler handler)
      : sc_core::sc_module(name),
        lookahead_(lookahead),
        quantum_(std::max<Tick>(1, lookahead > 0 ? std::min(quantum, lookahead) : quantum)),
        handler_(std::move(handler)) {
    SC_METHOD(drain);
    sensitive << wake_ev_;
    dont_initialize();
  }

  /// An entry that arrives at `arrival` (must not be earlier than the current
  /// simulated time plus the lookahead, see above).
  void push(tlm::tlm_generic_payload* gp, Tick arrival) {
    heap_.push(Entry{arrival, seq_++, gp});
    schedule();
  }

  Tick lookahead() const { return lookahead_; }
  Tick quantum() const { return quantum_; }
  std::size_t size() const { return heap_.size(); }
  std::uint64_t handled() const { return handled_; }
  std::uint64_t reorderings() const { return reorderings_; }
  std::uint64_t wakes() const { return wakes_; }
  /// Total time entries waited behind a stalled head.
  Tick stalled() const { return stalled_; }

 private:
  struct Entry {
    Tick t;
    std::uint64_t seq;
    tlm::tlm_generic_payload* gp;
    bool operator>(const Entry& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  Tick effective(const Entry& e) const { return std::max(e.t, blocked_until_); }

  /// When the method must run for the current head.
  Tick due_for(Tick eff) const {
    Tick due = eff > lookahead_ ? eff - lookahead_ : 0;
    if (quantum_ > 1) due = ceil_div(due, quantum_) * quantum_;
    return due;
  }

  void schedule() {
    if (heap_.empty()) return;
    const Tick now = now_ticks();
    const Tick due = std::max(now, due_for(effective(heap_.top())));
    if (due < wake_at_) {
      wake_at_ = due;
      wake_ev_.notify(to_sc(due - now));  // an earlier notification overrides a later one
    }
  }

  void drain() {
    ++wakes_;
    const Tick now = now_ticks();
    wake_at_ = kTickMax;
    const Tick horizon = now + lookahead_;
    while (!heap_.empty() && effective(heap_.top()) <= horizon) {
      const Entry e = heap_.top();
      Tick retry = 0;
      if (!handler_(*e.gp, e.t, retry)) {
        assert(retry > blocked_until_);
        if (retry > std::max(e.t, blocked_until_)) stalled_ += retry - std::max(e.t, blocked_until_);
        blocked_until_ = retry;
        continue;
      }
      heap_.pop();
      if (!heap_.empty()) __builtin_prefetch(heap_.top().gp);  // the next one is likely cold
      ++handled_;
      if (e.t < last_) ++reorderings_;
      assert(e.t >= last_ && "arrival order violated");
      last_ = std::max(last_, e.t);
    }
    schedule();
  }

  Tick lookahead_;
  Tick quantum_;
  Handler handler_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
  sc_core::sc_event wake_ev_;
  Tick wake_at_ = kTickMax;
  Tick blocked_until_ = 0;
  Tick last_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t handled_ = 0;
  std::uint64_t reorderings_ = 0;
  std::uint64_t wakes_ = 0;
  Tick stalled_ = 0;
};

}  // namespace moehub
