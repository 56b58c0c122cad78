// Scoreboard of moehub_rat (8 entries: 2 banks of one set of 4 ways,
// MallocIdWidth 2, RowIdWidth 8, LocalRowIdWidth 8) against the behavioural
// RowAllocationTable (systemc/golden/rat.hpp, 8 entries in 2 banks).
//
// One set per bank is the golden organisation (each bank fully associative,
// FIFO replacement), so from reset on every lookup compares: hit_o with the
// golden hit, hit_local_o with the LocalRowID the row was given, a new entry
// in the spill register (on the spill channel the cycle after the fill) with
// the golden spill (metadata write) of that fill, and the spilled entry (its
// LocalRowID, and that the golden RAT no longer holds it). On a miss the
// bench fills the RTL with the golden answer: a restored mapping (clean, the
// row's LocalRowID) or the APT's next row (dirty); a miss that the golden
// model stalls (region full) is a lookup without fill. A held request
// (spill back-pressure) may only wait for the spill register.
//
// After a region flush the organisations part (the RTL refills the holes a
// flush leaves before evicting the oldest entry; the golden RAT keeps strict
// FIFO order): from then on only LocalRowIDs are compared. The random runs
// without flushes restart both models (reset) every few thousand lookups.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "Vsb_rat.h"
#include "golden/apt.hpp"
#include "golden/rat.hpp"
#include "tb_dut.hpp"
#include "tb_scoreboard.hpp"

namespace {

using moehub::golden::AllocationPointerTable;
using moehub::golden::RatParams;
using moehub::golden::RegionFullPolicy;
using moehub::golden::RowAllocationTable;
using moehub::tb::Outcome;

constexpr unsigned kRegions = 4;
using Key = std::pair<unsigned, unsigned>;  // (MallocID, RowID)

RatParams rat_params() {
  RatParams p;
  p.entries = 8;
  p.banks = 2;
  return p;
}

class RatBoard {
 public:
  explicit RatBoard(const std::string& fst) : d_(fst) { restart({256, 256, 256, 256}); }

  /// Both models empty; the golden APT's regions registered with `rows` rows.
  void restart(const std::array<unsigned, kRegions>& rows) {
    d_->req_valid_i = 0;
    d_->flush_valid_i = 0;
    d_.reset();
    prev_spill_valid_ = prev_spill_ready_ = golden_spilled_ = false;
    apt_ = std::make_unique<AllocationPointerTable>(0, kRegions, RegionFullPolicy::kStall);
    for (unsigned r = 0; r < kRegions; ++r) apt_->rowsp_malloc(0, 1, rows[r]);
    rat_ = std::make_unique<RowAllocationTable>(rat_params(), *apt_);
    mirror_.clear();
    diverged_ = false;
  }

  /// One cycle offering lookup `k` (if `valid`); returns true if the RTL took it.
  bool cycle(bool valid, Key k, bool spill_ready, Outcome& o) {
    const std::uint64_t c = d_.cycles();
    const auto known = mirror_.find(k);
    const bool golden_hit = rat_->cached(k.first, k.second);
    const auto& region = apt_->region(k.first);
    bool fill = true, dirty = true;
    unsigned fill_local = static_cast<unsigned>(region.row_pointer);
    if (known != mirror_.end()) {
      fill_local = static_cast<unsigned>(known->second);
      dirty = golden_hit;  // not cached in the golden RAT: restored from its spill area
    } else if (region.row_pointer >= region.capacity_rows) {
      fill = false;  // the golden RAT stalls: a lookup without fill
    }
    d_->req_valid_i = valid;
    d_->req_malloc_i = static_cast<CData>(k.first);
    d_->req_row_i = static_cast<CData>(k.second);
    d_->req_fill_i = fill;
    // the fault: the RTL is given another LocalRowID to fill than the golden RAT allocates
    d_->req_fill_local_i = static_cast<CData>(c >= fault_cycle ? fill_local ^ 1u : fill_local);
    d_->req_fill_dirty_i = dirty;
    d_->spill_ready_i = spill_ready;
    d_.eval();
    check_spill_register(c, o);

    const bool fire = valid && d_->req_ready_o;
    if (valid) {
      if (!diverged_) {
        o.expect((d_->hit_o != 0) == golden_hit, c, [&] { return "hit_o of row " + std::to_string(k.second); });
      }
      if (d_->hit_o) {
        o.expect(known != mirror_.end() && d_->hit_local_o == known->second, c,
                 [&] { return "hit_local_o " + std::to_string(d_->hit_local_o) + " of row " + std::to_string(k.second); });
      }
      if (!fire) {
        o.expect(d_->spill_valid_o && !spill_ready, c, [&] { return "request refused without a spill to wait for"; });
      }
    }
    golden_spilled_ = false;
    if (fire) {
      ++o.transactions;
      const auto r = rat_->lookup(k.first, k.second, c);
      golden_spilled_ = r.metadata_write_bytes > 0;  // the RTL's spill register shows it next cycle
      if (!diverged_) {
        o.expect(r.hit == (d_->hit_o != 0), c, [&] { return "golden hit differs"; });
        o.expect(r.restored == (fill && !dirty && !golden_hit), c, [&] { return "golden restore differs"; });
      }
      o.expect(r.ok == fill, c, [&] { return "golden stall differs"; });
      if (r.ok) {
        o.expect(static_cast<unsigned>(r.local_row_id) == (d_->hit_o ? d_->hit_local_o : fill_local), c,
                 [&] { return "LocalRowID " + std::to_string(r.local_row_id) + " golden"; });
        mirror_[k] = r.local_row_id;
      }
    }
    end_cycle();
    o.cycles = d_.cycles();
    return fire;
  }

  /// Flushes region `m` in the RTL (requests idle) and in the golden RAT (and reinitialises its APT pointer).
  void flush(unsigned m, Outcome& o) {
    d_->req_valid_i = 0;
    d_->flush_valid_i = 1;
    d_->flush_malloc_i = static_cast<CData>(m);
    d_->spill_ready_i = 1;
    for (int i = 0;; ++i) {
      d_.eval();
      check_spill_register(d_.cycles(), o);
      golden_spilled_ = false;
      const bool done = d_->flush_ready_o != 0;
      end_cycle();
      if (done) break;
      if (!o.expect(i < 8, d_.cycles(), [] { return "flush never completes"; })) break;
    }
    d_->flush_valid_i = 0;
    rat_->flush(m);
    apt_->reinit(m);
    for (auto it = mirror_.begin(); it != mirror_.end();) it = it->first.first == m ? mirror_.erase(it) : std::next(it);
    diverged_ = true;
    ++o.transactions;
  }

  bool diverged() const { return diverged_; }

  /// The spill channel in this cycle (after eval): an entry that is new in
  /// the spill register (the channel was empty or taken in the last cycle)
  /// is the golden spill of the last cycle's fill and a mapping the bench
  /// saw handed out; an entry not taken stays (the RTL's assertion checks
  /// it is unchanged).
  void check_spill_register(std::uint64_t c, Outcome& o) {
    const bool shown = d_->spill_valid_o != 0;
    const bool fresh = shown && (!prev_spill_valid_ || prev_spill_ready_);
    if (!diverged_) {
      o.expect(fresh == golden_spilled_, c, [&] {
        return std::string("new spill ") + (fresh ? "1" : "0") + ", golden spill of the last fill " +
               (golden_spilled_ ? "1" : "0");
      });
    }
    if (!fresh) return;
    const Key spilled{d_->spill_malloc_o, d_->spill_row_o};
    const unsigned spilled_local = d_->spill_local_o;
    if (!diverged_) {
      o.expect(!rat_->cached(spilled.first, spilled.second), c, [&] { return "spilled entry still in golden RAT"; });
    }
    const auto it = mirror_.find(spilled);
    o.expect(it != mirror_.end() && it->second == spilled_local, c, [&] {
      return "spilled (" + std::to_string(spilled.first) + ", " + std::to_string(spilled.second) + ") -> " +
             std::to_string(spilled_local) + " was never mapped so";
    });
    ++spills;
  }
  unsigned spills = 0;
  /// Fault injection (to test the bench): from this cycle on the RTL fills the LocalRowID with its low bit flipped.
  std::uint64_t fault_cycle = ~0ULL;

 private:
  moehub::tb::Dut<Vsb_rat> d_;
  std::unique_ptr<AllocationPointerTable> apt_;
  std::unique_ptr<RowAllocationTable> rat_;
  std::map<Key, std::int64_t> mirror_;  // every mapping handed out since the region's last flush
  bool diverged_ = false;
  bool prev_spill_valid_ = false, prev_spill_ready_ = false;  // the spill channel in the last cycle
  bool golden_spilled_ = false;                                // the last cycle's fill spilled (golden)

  void end_cycle() {
    prev_spill_valid_ = d_->spill_valid_o != 0;
    prev_spill_ready_ = d_->spill_ready_i != 0;
    d_.step();
  }
};

/// Offers `k` until taken (spill ready from the 2nd cycle on).
void lookup(RatBoard& b, Key k, Outcome& o, bool ready_first = true) {
  bool ready = ready_first;
  for (int i = 0; i < 4 && !b.cycle(true, k, ready, o); ++i) ready = true;
}

/// Constrained-random lookups: rows from a window of 10 that slides, over
/// regions 0..3 (region 3 small, so it fills), spill ready 3 cycles in 4.
/// `flushes`: now and then a region flush; else a restart every 4096 lookups.
Outcome random_run(std::uint32_t seed, std::uint64_t lookups, bool flushes, const std::string& fst,
                   std::uint64_t stop, std::uint64_t fault_cycle = ~0ULL) {
  RatBoard b(fst);
  b.fault_cycle = fault_cycle;
  Outcome o;
  std::mt19937_64 rng(seed);
  std::uint64_t done = 0;
  Key k{};
  bool pending = false;
  while (done < lookups && o.cycles <= stop) {
    if (!pending) {
      if (!flushes && done % 4096 == 0) b.restart({256, 256, 256, 5 + static_cast<unsigned>(rng() % 20)});
      if (flushes && rng() % 512 == 0) {
        b.flush(static_cast<unsigned>(rng() % kRegions), o);
        continue;
      }
      const unsigned m = static_cast<unsigned>(rng() % 8) < 5 ? static_cast<unsigned>(rng() % 2)
                                                                : 2 + static_cast<unsigned>(rng() % 2);
      const unsigned base = static_cast<unsigned>((done / 64) % 256);
      k = Key{m, (base + static_cast<unsigned>(rng() % 10)) % 256};
      pending = rng() % 8 != 0;  // an idle cycle now and then
      if (!pending) {
        b.cycle(false, k, true, o);
        continue;
      }
    }
    if (b.cycle(true, k, rng() % 4 != 0, o)) {
      pending = false;
      ++done;
    }
  }
  return o;
}

void directed(RatBoard& b, Outcome& o) {
  b.restart({256, 256, 256, 2});
  lookup(b, {0, 0}, o);              // miss: free way of bank 0
  lookup(b, {0, 0}, o);              // hit
  lookup(b, {0, 2}, o);              // the same bank again
  lookup(b, {0, 4}, o);
  lookup(b, {0, 6}, o);              // bank 0 full
  lookup(b, {0, 8}, o, false);       // evicts row 0 (dirty): spill, first refused
  lookup(b, {0, 0}, o);              // restore of the evicted row (clean fill), evicts row 2
  for (unsigned r : {10u, 12u, 14u, 16u}) lookup(b, {0, r}, o);  // ... evicts the restored row 0 (clean)
  lookup(b, {3, 1}, o);
  lookup(b, {3, 3}, o);
  lookup(b, {3, 5}, o);              // region 3 full: lookup without fill
  lookup(b, {3, 1}, o);              // a known row of the full region still hits
  b.flush(0, o);
  lookup(b, {0, 8}, o);              // after the flush: a new row
  lookup(b, {3, 3}, o);
}

TEST(SbRat, DirectedCorners) {
  RatBoard b("");
  Outcome o;
  directed(b, o);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  EXPECT_GE(b.spills, 1u);
}

TEST(SbRat, RandomMillionLookups) {
  const std::string msg = moehub::tb::check("sb_rat_random", [](const std::string& fst, std::uint64_t stop) {
    return random_run(21, 1000000, false, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbRat, RandomWithFlushes) {
  const std::string msg = moehub::tb::check("sb_rat_random_flush", [](const std::string& fst, std::uint64_t stop) {
    return random_run(22, 200000, true, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbRat, InjectedFaultFailsAndWritesWaveform) {
  EXPECT_EQ(moehub::tb::injected_fault_report("sb_rat_injected_fault",
                                              [](const std::string& fst, std::uint64_t stop) {
                                                return random_run(24, 20000, false, fst, stop, 2000);
                                              }),
            "");
}

TEST(SbRat, Coverage) {
  moehub::tb::coverage_tally().clear();
  {
    RatBoard b("");
    Outcome o;
    directed(b, o);
    EXPECT_EQ(o.mismatches, 0u) << o.first;
  }
  const Outcome o = random_run(23, 20000, true, "", ~0ULL);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  const auto missing = moehub::tb::coverage_report(
      "moehub_rat", {"cov_hit", "cov_miss_free_way", "cov_evict_dirty", "cov_evict_clean", "cov_spill_stall",
                     "cov_restore_fill", "cov_miss_no_fill", "cov_same_bank", "cov_flush_done"});
  EXPECT_TRUE(missing.empty()) << missing.size() << " corners uncovered (listed above)";
}

}  // namespace
