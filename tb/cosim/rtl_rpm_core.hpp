// The clocking of one Verilated moehub_rpm_sched with the C++ buffer pool in
// front of it, for any geometry it was Verilated with (internal to the
// co-simulation library; the public class is RtlRuntimePacketManager in
// rtl_rpm.hpp, which documents the behaviour).
//
// RpmModelT<V> keeps the pool's presentation (valid, full, priority, RowID
// per slot) on the model's ports and rewrites a slot's bits only when the
// slot changes; ports of any width (integral or VlWide) are handled. Each
// geometry's model is instantiated in a generated source (tb/CMakeLists.txt)
// and listed by rpm_models().
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <verilated.h>

#include "verilated_model.hpp"

#include "rtl_rpm.hpp"

namespace moehub::cosim::detail {

/// What the pool presents for one slot.
struct RpmSlot {
  bool valid = false, full = false, prio = false;
  std::uint32_t row = 0;
  bool operator==(const RpmSlot& o) const { return valid == o.valid && full == o.full && prio == o.prio && row == o.row; }
};

class RpmModel {
 public:
  virtual ~RpmModel() = default;
  /// Presents slot `i`.
  virtual void set_slot(std::uint32_t i, const RpmSlot& s) = 0;
  /// Steps `n` clock edges with no grant taken.
  virtual void step(std::uint64_t n) = 0;
  /// With the peer-indexed `congested` mask: the slot the scheduler grants
  /// now, or -1. A grant must be followed by take() or decline().
  virtual int offer(const std::vector<std::uint8_t>& congested) = 0;
  /// The grant is taken at the clock edge that ends the current cycle, with
  /// the inputs of the offer. `withdrawn`: slots shown to the offer only,
  /// emptied after the edge (their counters become 0, as an empty slot's).
  virtual void take(const std::vector<std::uint32_t>& withdrawn) = 0;
  virtual void decline() = 0;
  /// The pool emptied slot `first` and moved the entries of slots
  /// (first, last] down one slot each: their ports and age counters move
  /// with them, and slot `last` is left empty (its counter 0, as an empty
  /// slot's).
  virtual void shift_down(std::uint32_t first, std::uint32_t last) = 0;
  /// The scheduler's age counter of `slot` (cycles).
  virtual std::uint64_t age_of(std::uint32_t slot) const = 0;
  virtual void trace_to(const std::string& fst_path) = 0;

  std::uint64_t cycle = 0;  ///< the hub cycle the model is in
  std::uint64_t simulated = 0;
  std::uint64_t forwarded = 0;  ///< cycles whose age increments were added without clocking the model
};

struct RpmModelEntry {
  RtlRpmGeometry geometry;
  std::unique_ptr<RpmModel> (*make)(const golden::RpmParams&);
};
/// The geometries this build Verilated (generated source).
const std::vector<RpmModelEntry>& rpm_models();

/// Bit `i` of a port of any width.
template <class P>
void put_bit(P& port, unsigned i, bool v) {
  if constexpr (std::is_integral_v<P>) {
    const P m = static_cast<P>(P{1} << i);
    port = static_cast<P>(v ? (port | m) : (port & static_cast<P>(~m)));
  } else {
    const EData m = 1U << (i % 32);
    port[i / 32] = v ? (port[i / 32] | m) : (port[i / 32] & ~m);
  }
}

/// Bits [lo, lo + n) of a port of any width (n <= 32).
template <class P>
void put_bits(P& port, unsigned lo, unsigned n, std::uint32_t v) {
  if constexpr (std::is_integral_v<P>) {
    const auto m = static_cast<P>(((n >= 8 * sizeof(P)) ? ~P{0} : static_cast<P>((P{1} << n) - 1)) << lo);
    port = static_cast<P>((port & static_cast<P>(~m)) | (static_cast<P>(static_cast<P>(v) << lo) & m));
  } else {
    // at most two 32-bit words
    const std::uint64_t m = ((n >= 64) ? ~0ULL : ((1ULL << n) - 1)) << (lo % 32);
    const std::uint64_t x = static_cast<std::uint64_t>(v) << (lo % 32);
    const unsigned w = lo / 32;
    port[w] = static_cast<EData>((port[w] & ~static_cast<EData>(m)) | static_cast<EData>(x & m));
    if ((m >> 32) != 0) {
      port[w + 1] = static_cast<EData>((port[w + 1] & ~static_cast<EData>(m >> 32)) | static_cast<EData>((x & m) >> 32));
    }
  }
}

/// Bits [lo, lo + n) of a port of any width (n <= 32).
template <class P>
std::uint32_t get_bits(const P& port, unsigned lo, unsigned n) {
  const std::uint64_t m = (n >= 32) ? 0xffffffffULL : ((1ULL << n) - 1);
  if constexpr (std::is_integral_v<P>) {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(port) >> lo) & m);
  } else {
    // at most two 32-bit words
    const unsigned w = lo / 32;
    std::uint64_t x = port[w];
    if ((lo % 32) + n > 32) x |= static_cast<std::uint64_t>(port[w + 1]) << 32;
    return static_cast<std::uint32_t>((x >> (lo % 32)) & m);
  }
}

/// Bits [lo + w, hi) of a port of any width move to [lo, hi - w), 32 at a
/// time; bits [hi - w, hi) become 0.
template <class P>
void shift_field_down(P& port, unsigned lo, unsigned hi, unsigned w) {
  for (unsigned pos = lo; pos + w < hi; pos += 32) {
    const unsigned n = std::min(32U, hi - w - pos);
    put_bits(port, pos, n, get_bits(port, pos + w, n));  // reads above what it writes
  }
  for (unsigned pos = hi - w; pos < hi; pos += 32) put_bits(port, pos, std::min(32U, hi - pos), 0);
}

/// Bit `i` of a port or signal of any width.
template <class P>
bool get_bit(const P& port, unsigned i) {
  if constexpr (std::is_integral_v<P>) {
    return ((port >> i) & 1U) != 0;
  } else {
    return ((port[i / 32] >> (i % 32)) & 1U) != 0;
  }
}

template <class V>
class RpmModelT final : public RpmModel, private VerilatedModel<V> {
  using VerilatedModel<V>::m_;
  using VerilatedModel<V>::trace_;

 public:
  RpmModelT(const golden::RpmParams& p, const RtlRpmGeometry& g)
      : p_(p), g_(g), shown_(static_cast<std::size_t>(g.peers) * g.entries_per_peer) {
    m_->clk_i = 0;
    m_->gnt_ready_i = 0;
    m_->congested_i = 0;
    m_->timeout_i = static_cast<std::remove_reference_t<decltype(m_->timeout_i)>>(p.timer_cycles);
    m_->drain_i = !p.hold_partial;
    for (std::uint32_t i = 0; i < shown_.size(); ++i) {  // every slot empty, as shown_ says
      put_bit(m_->entry_valid_i, i, false);
      put_bit(m_->entry_full_i, i, false);
      put_bit(m_->entry_prio_i, i, false);
      put_bits(m_->entry_row_i, i * g_.row_id_bits, g_.row_id_bits, 0);
    }
    this->reset_pulse();
  }

  void set_slot(std::uint32_t i, const RpmSlot& s) override {
    if (shown_[i] == s) return;  // the ports show it already
    shown_[i] = s;
    stale_ = true;
    put_bit(m_->entry_valid_i, i, s.valid);
    put_bit(m_->entry_full_i, i, s.full);
    put_bit(m_->entry_prio_i, i, s.prio);
    put_bits(m_->entry_row_i, i * g_.row_id_bits, g_.row_id_bits, s.row);
  }

  void step(std::uint64_t n) override {
    // Between picks no port can take a packet: every destination is shown
    // congested, so the scheduler offers nothing (an offer not taken would
    // be held, a decision the behavioural RPM does not make between picks).
    const auto all = static_cast<std::remove_reference_t<decltype(m_->congested_i)>>((1ULL << g_.peers) - 1);
    if (m_->gnt_ready_i != 0 || m_->congested_i != all) stale_ = true;
    m_->gnt_ready_i = 0;
    m_->congested_i = all;
    if (trace_) {
      for (std::uint64_t k = 0; k < n; ++k) edge();
      return;
    }
    // No grant is taken and the inputs hold: the only state that moves is the
    // age counters (valid: + 1 saturating; invalid: 0, where the pool keeps
    // an empty slot's counter: the edge that takes a grant clears it, and
    // clear_age() a slot emptied otherwise). The increments are added here,
    // without evaluating the model.
    const std::uint64_t max = (1ULL << g_.timer_bits) - 1;
    for (std::uint32_t i = 0; i < shown_.size(); ++i) {
      if (shown_[i].valid) set_age(i, std::min(max, age(i) + n));
    }
    cycle += n;
    forwarded += n;
  }

  int offer(const std::vector<std::uint8_t>& congested) override {
    unsigned cong = 0;
    for (std::int32_t g = 0; g < p_.num_gpus; ++g) {
      if (g == p_.gpu || static_cast<std::size_t>(g) >= congested.size() || congested[static_cast<std::size_t>(g)] == 0) {
        continue;
      }
      cong |= 1U << static_cast<unsigned>(g < p_.gpu ? g : g - 1);
    }
    m_->congested_i = static_cast<std::remove_reference_t<decltype(m_->congested_i)>>(cong);
    m_->gnt_ready_i = 1;
    m_->eval();
    low_pending_ = false;
    stale_ = false;
    if (!m_->gnt_valid_o) {
      m_->gnt_ready_i = 0;
      stale_ = true;
      return -1;
    }
    return static_cast<int>(m_->gnt_dest_o * g_.entries_per_peer + m_->gnt_entry_o);
  }
  void take(const std::vector<std::uint32_t>& withdrawn) override {
    edge();
    // The slots shown to the offer only leave after the edge: an empty
    // slot's counter is 0 (the RTL clears it at the edge after the slot
    // empties, and holds it there), and the pool presents them empty next.
    for (const std::uint32_t s : withdrawn) set_age(s, 0);
    m_->gnt_ready_i = 0;
  }
  void decline() override {
    m_->gnt_ready_i = 0;
    stale_ = true;
  }

  void shift_down(std::uint32_t first, std::uint32_t last) override {
    // what each slot shows moves with its entry: the ports' fields of slots
    // (first, last] are shifted down one slot as bit strings, the counters
    // and the records of what each slot shows as arrays
    const unsigned rb = g_.row_id_bits;
    shift_field_down(m_->entry_valid_i, first, last + 1, 1);
    shift_field_down(m_->entry_full_i, first, last + 1, 1);
    shift_field_down(m_->entry_prio_i, first, last + 1, 1);
    shift_field_down(m_->entry_row_i, first * rb, (last + 1) * rb, rb);
    auto& a = sched().age_q;
    std::copy(&a[first + 1], &a[last] + 1, &a[first]);
    a[last] = 0;
    std::copy(shown_.begin() + first + 1, shown_.begin() + last + 1, shown_.begin() + first);
    shown_[last] = RpmSlot{};
    stale_ = true;
  }
  std::uint64_t age_of(std::uint32_t slot) const override { return age(slot); }

  void trace_to(const std::string& fst_path) override { this->open_trace(fst_path); }

 private:
  // The scheduler's module (Verilated as a class of its own: its partitions,
  // moehub_rpm_part, are kept as modules, rpm_fast_forward.vlt).
  auto& sched() { return *m_->rootp->moehub_rpm_sched; }
  const auto& sched() const { return *m_->rootp->moehub_rpm_sched; }
  std::uint64_t age(std::uint32_t i) const { return sched().age_q[i]; }
  void set_age(std::uint32_t i, std::uint64_t v) {
    auto& a = sched().age_q;
    a[i] = static_cast<std::remove_reference_t<decltype(a[i])>>(v);
    stale_ = true;
  }
  void edge() {
    if (trace_) {
      // waveform time: 10 units per hub cycle, so cycle c is at 10 c (skipped cycles leave gaps)
      if (low_pending_) m_->eval();
      trace_->dump(cycle * 10);
      m_->clk_i = 1;
      m_->eval();
      trace_->dump(cycle * 10 + 5);
      m_->clk_i = 0;
      m_->eval();
      low_pending_ = false;
    } else {
      // The rising edge without evaluating the model twice: the scheduler's
      // flip-flops are rr_q and age_q (q <= d on every edge), and the
      // held-offer register, which stays empty here (held_q = 0; its
      // destination and entry are read only when it is full), so the edge copies the next state that the model computed
      // from the inputs of this cycle (evaluated once here unless an offer
      // already did) into them. The combinational outputs after the edge
      // are computed by the next evaluation, when the pool has presented the
      // next cycle's inputs. (With a waveform open the clock is toggled and
      // the model evaluated on both edges, above; cosim_rpm_test requires
      // both ways to give the same picks.)
      if (stale_) m_->eval();
      auto& r = sched();
      // (the held-offer flip-flops stay empty: every offer is taken in its
      // cycle or none is made)
      if (r.held_d != 0) throw std::logic_error("RTL RPM: an offer was left untaken at a clock edge");
      r.rr_q = r.rr_d;
      r.age_q = r.age_d;
      stale_ = true;
    }
    ++cycle;
    ++simulated;
  }

  golden::RpmParams p_;
  RtlRpmGeometry g_;
  std::vector<RpmSlot> shown_;  // every slot as its ports show it
  bool low_pending_ = false;  // clk_i fell after the last evaluation (waveform mode)
  bool stale_ = true;         // inputs or state changed after the last evaluation
};

}  // namespace moehub::cosim::detail
