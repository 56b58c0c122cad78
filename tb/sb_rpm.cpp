// Scoreboard of moehub_rpm_sched (3 destinations of 4 entries, RowIdWidth 8,
// TimerWidth 8) against the scheduler of the behavioural
// RuntimePacketManager (systemc/golden/rpm.hpp) of GPU 0 in a 4-GPU node
// (3 peers, 4 entries per peer).
//
// The bench is the buffer pool the RTL leaves out: it feeds every store to
// the golden RPM (accept, when can_accept) and merges it the same way into
// its own slots (same line, opcode and priority, and for row stores the
// same MallocID and RowID), placing a new entry in a random free slot of its
// destination's partition. Every cycle it presents the slots to the RTL
// (valid, full mask, priority, RowID; a plain st presents RowID 0 and the
// row stores use RowIDs from 1, the golden order of "-1 first"). In every
// cycle in which the RTL decides (it holds no offer) the bench calls the
// golden pick() with the same congestion and compares: a grant offered iff
// the golden RPM picks, and the stores the picked packet carries (their
// tags) equal to those of the granted slot. An offer not taken (the pool's
// ready low) is that decision, made: the golden RPM has picked the packet,
// and the RTL must hold the same grant, whatever the congestion, until the
// pool takes it; no golden pick is made meanwhile. The pool keeps the
// offered entry as it is (no store merges into it; the golden RPM no longer
// holds it), and a store that finds its partition full apart from the
// offered entry waits, where the golden RPM would have room.
// Entries enter both models at the start of the next cycle (age 0 there).
// At most one store arrives per cycle, so no two entries share an age;
// entries never grow older than the RTL's 255-cycle age counter (checked).
// Not compared: flag writes (they never merge and the pool would present
// them as full entries, where the golden order uses their actual mask),
// pick_cycles.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "Vsb_rpm.h"
#include "golden/merge_rule.hpp"
#include "golden/rpm.hpp"
#include "tb_dut.hpp"
#include "tb_scoreboard.hpp"

namespace {

using moehub::golden::ByteMask;
using moehub::golden::EgressPick;
using moehub::golden::Opcode;
using moehub::golden::RpmParams;
using moehub::golden::RuntimePacketManager;
using moehub::golden::StoreRequest;
using moehub::golden::is_row_store;
using moehub::tb::Outcome;

constexpr unsigned kDests = 3;
constexpr unsigned kDepth = 4;
constexpr unsigned kRowBits = 8;
constexpr std::uint64_t kMaxAge = 250;  // below the 8-bit counter's saturation

struct Slot {
  bool valid = false;
  Opcode op = Opcode::kStore;
  bool prio = true;
  std::uint32_t malloc_id = 0;
  std::int64_t row = -1;
  std::uint64_t line = 0;
  moehub::golden::MergeKey key;  // of its first store (golden/merge_rule.hpp)
  ByteMask mask;
  std::uint64_t created = 0;
  std::vector<std::uint64_t> tags;
  bool offered = false;  // the RTL holds a grant of it (the golden RPM picked it)
};


class RpmBoard {
 public:
  RpmBoard(const std::string& fst, unsigned timer_cycles, bool hold_partial) : d_(fst) {
    RpmParams p;
    p.gpu = 0;
    p.num_gpus = kDests + 1;
    p.entries_per_peer = kDepth;
    p.timer_cycles = timer_cycles;
    p.hold_partial = hold_partial;
    g_ = std::make_unique<RuntimePacketManager>(p);
    timer_ = timer_cycles;
    drain_ = !hold_partial;
  }

  /// Offers `s` to the pool (entering at the next cycle); false if the golden RPM cannot take it.
  bool store(StoreRequest s, Outcome& o) {
    const std::uint64_t c = d_.cycles();  // the cycle it enters in (the last one has stepped)
    const moehub::golden::Tick next = tick(c);
    s.tag = next_tag_++;
    const unsigned p = static_cast<unsigned>(s.dst_gpu - 1);
    const moehub::golden::MergeKey key = moehub::golden::merge_key(s);
    Slot* merge = nullptr;
    std::vector<unsigned> free;
    for (unsigned i = 0; i < kDepth; ++i) {
      Slot& e = pool_[p * kDepth + i];
      if (!e.valid) {
        free.push_back(i);
        continue;
      }
      if (e.offered) continue;  // no store merges into an offered entry
      if (moehub::golden::mergeable(s) && e.key == key) merge = &e;
    }
    const bool held_here = held_ >= 0 && static_cast<unsigned>(held_) / kDepth == p;
    if (held_here && merge == nullptr && free.empty()) return false;  // waits for the offered entry to leave
    const bool can = g_->can_accept(s, next);
    o.expect(can == (merge != nullptr || !free.empty()), c, [] { return "golden can_accept differs from the pool"; });
    if (!can || (merge == nullptr && free.empty())) return false;  // (the latter only after a mismatch)
    g_->accept(s, next);
    if (merge == nullptr) {
      merge = &pool_[p * kDepth + free[rng_() % free.size()]];
      *merge = Slot{true, s.op, s.priority, s.malloc_id, s.row_id, key.line, key, ByteMask{}, c, {}};
    }
    merge->mask |= moehub::golden::line_mask(s, "sb_rpm");
    merge->tags.push_back(s.tag);
    return true;
  }

  /// One cycle: presents the pool, compares the grant with the golden pick
  /// (if `ready`), removes the granted entry. Returns true on a grant taken.
  bool cycle(unsigned congested, bool ready, Outcome& o) {
    const std::uint64_t c = d_.cycles();
    const unsigned row_flip = c >= fault_cycle ? 0xFFu : 0u;
    unsigned valid = 0, full = 0, prio = 0;
    for (unsigned i = 0; i < kDests * kDepth; ++i) {
      const Slot& e = pool_[i];
      valid |= (e.valid ? 1u : 0u) << i;
      full |= (e.valid && e.mask.full() ? 1u : 0u) << i;
      prio |= (e.valid && e.prio ? 1u : 0u) << i;
      const unsigned row = (e.valid && is_row_store(e.op) ? static_cast<unsigned>(e.row) : 0) ^ row_flip;
      moehub::tb::set_bits(d_->entry_row_i, i * kRowBits, kRowBits, row);
      if (e.valid) {
        o.expect(c - e.created < kMaxAge, c, [] { return "an entry outgrew the age counter (bench constraint)"; });
      }
    }
    d_->entry_valid_i = static_cast<SData>(valid);
    d_->entry_full_i = static_cast<SData>(full);
    d_->entry_prio_i = static_cast<SData>(prio);
    d_->congested_i = static_cast<CData>(congested);
    d_->timeout_i = static_cast<CData>(timer_);
    d_->drain_i = drain_;
    d_->gnt_ready_i = ready;
    d_.eval();
    const bool offer = d_->gnt_valid_o != 0;
    const unsigned slot = d_->gnt_dest_o * kDepth + d_->gnt_entry_o;
    o.expect(d_->gnt_o == (offer ? 1u << slot : 0u), c, [] { return "gnt_o not one-hot on gnt_dest_o/gnt_entry_o"; });
    bool taken = false;
    if (held_ >= 0) {
      // the RTL holds its offer: the same slot, whatever the congestion
      o.expect(offer && slot == static_cast<unsigned>(held_), c, [&] {
        return "the grant of slot " + std::to_string(held_) + " was not held (offer " + std::to_string(offer) +
               ", slot " + std::to_string(slot) + ")";
      });
      if (ready) {
        pool_[static_cast<unsigned>(held_)] = Slot{};
        held_ = -1;
        taken = true;
      }
    } else {
      std::vector<std::uint8_t> cong(kDests + 1, 0);
      for (unsigned p = 0; p < kDests; ++p) cong[p + 1] = static_cast<std::uint8_t>((congested >> p) & 1u);
      EgressPick pick;
      const bool picked = g_->pick(tick(c), cong, pick);
      o.expect(picked == offer, c, [&] {
        return std::string("gnt_valid_o ") + (offer ? "1" : "0") + ", golden pick " + (picked ? "1" : "0");
      });
      if (picked && offer) {
        ++o.transactions;
        o.expect(g_->last_pick_tags() == pool_[slot].tags, c, [&] {
          return "granted slot " + std::to_string(slot) + " (dest " + std::to_string(d_->gnt_dest_o) + ", row " +
                 std::to_string(pool_[slot].row) + ") is not the golden pick (dest GPU " +
                 std::to_string(pick.store.dst_gpu) + ", row " + std::to_string(pick.store.row_id) + ")";
        });
        if (ready) {
          pool_[slot] = Slot{};
          taken = true;
        } else {
          pool_[slot].offered = true;  // decided: held until the pool takes it
          held_ = static_cast<int>(slot);
        }
      }
    }
    d_.step();
    o.cycles = d_.cycles();
    return taken;
  }

  std::size_t occupancy() const { return g_->occupancy(); }
  /// Fault injection (to test the bench): from this cycle on the RowIDs are presented inverted.
  std::uint64_t fault_cycle = ~0ULL;

 private:
  moehub::golden::Tick tick(std::uint64_t cycle) const { return clock_.tick_of(cycle); }

  moehub::tb::Dut<Vsb_rpm> d_;
  std::unique_ptr<RuntimePacketManager> g_;
  moehub::golden::HubClock clock_{1.5};
  std::array<Slot, kDests * kDepth> pool_{};
  unsigned timer_ = 0;
  bool drain_ = false;
  int held_ = -1;  // the slot the RTL holds an offer of, or -1
  std::uint64_t next_tag_ = 1;
  std::mt19937 rng_{7};
};

StoreRequest row_store(int dst, unsigned row, unsigned offset, unsigned bytes, bool nop = false) {
  StoreRequest s;
  s.op = nop ? Opcode::kRowStoreNop : Opcode::kRowStore;
  s.priority = !nop;
  s.dst_gpu = dst;
  s.malloc_id = 0;
  s.row_id = row;
  s.row_offset = offset;
  s.bytes = bytes;
  return s;
}

/// A random store: row stores (RowIDs 1..6, two MallocIDs, two lines per
/// row), .nop row stores and plain stores (4 lines), of 32, 64 or 128
/// aligned bytes, to a random peer.
StoreRequest random_store(std::mt19937_64& rng) {
  const unsigned bytes = 32u << (rng() % 3);
  const unsigned off = static_cast<unsigned>(rng() % (128 / bytes)) * bytes;
  const int dst = 1 + static_cast<int>(rng() % kDests);
  const unsigned kind = static_cast<unsigned>(rng() % 4);
  if (kind == 3) {
    StoreRequest s;
    s.op = Opcode::kStore;
    s.dst_gpu = dst;
    s.address = 128 * (rng() % 4) + off;
    s.bytes = bytes;
    return s;
  }
  StoreRequest s = row_store(dst, 1 + static_cast<unsigned>(rng() % 6), 128 * static_cast<unsigned>(rng() % 2) + off,
                             bytes, kind == 2);
  s.malloc_id = static_cast<std::uint32_t>(rng() % 2);
  return s;
}

/// Constrained-random: a store offered in 3 cycles of 4, each destination
/// congested a quarter of the time, the grant taken 7 times in 8.
/// Runs until `grants` grants were compared.
Outcome random_run(std::uint32_t seed, std::uint64_t grants, unsigned timer, bool hold, const std::string& fst,
                   std::uint64_t stop, std::uint64_t fault_cycle = ~0ULL) {
  RpmBoard b(fst, timer, hold);
  b.fault_cycle = fault_cycle;
  Outcome o;
  std::mt19937_64 rng(seed);
  while (o.transactions < grants && o.cycles <= stop) {
    unsigned congested = 0;
    for (unsigned p = 0; p < kDests; ++p) congested |= (rng() % 4 == 0 ? 1u : 0u) << p;
    b.cycle(congested, rng() % 8 != 0, o);
    if (rng() % 4 != 0) b.store(random_store(rng), o);
  }
  return o;
}

void directed(Outcome& o) {
  {
    RpmBoard b("", 6, true);
    b.store(row_store(1, 5, 0, 32), o);   // partial: held
    b.cycle(0, true, o);
    b.store(row_store(1, 3, 0, 128, true), o);  // full .nop
    b.cycle(0, true, o);
    b.store(row_store(1, 4, 0, 128), o);  // full priority: before the .nop
    for (int i = 0; i < 3; ++i) b.cycle(0, true, o);
    for (int i = 0; i < 8; ++i) b.cycle(0, true, o);  // timer expiry of row 5
  }
  {
    RpmBoard b("", 20, true);
    for (unsigned r = 1; r <= 4; ++r) b.store(row_store(2, r, 0, 32), o), b.cycle(7, true, o);  // all congested
    b.store(row_store(2, 9, 0, 32), o);   // the partition is full: refused
    for (int i = 0; i < 3; ++i) b.cycle(7, true, o);  // nothing may leave
    b.cycle(0, false, o);                 // offered, not taken
    b.cycle(0, true, o);                  // pressure: the full partition drains
    for (unsigned d = 1; d <= 3; ++d) b.store(row_store(static_cast<int>(d), 1, 0, 128), o), b.cycle(2, true, o);
    for (int i = 0; i < 30; ++i) b.cycle(0, true, o);  // round robin, then the timer
  }
  {
    RpmBoard b("", 50, false);  // no holding: drain
    b.store(row_store(3, 2, 64, 32), o);
    for (int i = 0; i < 3; ++i) b.cycle(0, true, o);
  }
}

TEST(SbRpm, DirectedCorners) {
  Outcome o;
  directed(o);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  EXPECT_GE(o.transactions, 8u);
}

TEST(SbRpm, RandomMillionGrants) {
  const std::string msg = moehub::tb::check("sb_rpm_random", [](const std::string& fst, std::uint64_t stop) {
    return random_run(41, 1000000, 6, true, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbRpm, RandomNoHolding) {
  const std::string msg = moehub::tb::check("sb_rpm_random_drain", [](const std::string& fst, std::uint64_t stop) {
    return random_run(42, 100000, 6, false, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbRpm, RandomTimerZero) {  // every entry expired at once: oldest first
  const std::string msg = moehub::tb::check("sb_rpm_random_t0", [](const std::string& fst, std::uint64_t stop) {
    return random_run(43, 100000, 0, true, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

// The bench can fail: RowIDs presented wrongly from cycle 2000 on give
// mismatches, and the failing run is re-run into an FST waveform.
TEST(SbRpm, InjectedFaultFailsAndWritesWaveform) {
  EXPECT_EQ(moehub::tb::injected_fault_report("sb_rpm_injected_fault",
                                              [](const std::string& fst, std::uint64_t stop) {
                                                return random_run(45, 20000, 6, true, fst, stop, 2000);
                                              }),
            "");
}

TEST(SbRpm, Coverage) {
  moehub::tb::coverage_tally().clear();
  Outcome o;
  directed(o);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  const Outcome r = random_run(44, 20000, 6, true, "", ~0ULL);
  EXPECT_EQ(r.mismatches, 0u) << r.first;
  const auto missing = moehub::tb::coverage_report(
      "moehub_rpm_sched", {"cov_grant_full", "cov_timer_expiry", "cov_pressure", "cov_drain", "cov_all_congested",
                           "cov_congested_skip", "cov_rr_wrap", "cov_grant_held", "cov_held_partial"});
  EXPECT_TRUE(missing.empty()) << missing.size() << " corners uncovered (listed above)";
}

}  // namespace
