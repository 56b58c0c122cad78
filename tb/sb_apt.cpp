// Scoreboard of moehub_apt (Regions = 4, RowIdWidth = 4) against the
// behavioural AllocationPointerTable (systemc/golden/apt.hpp).
//
// Every cycle the bench offers the same operation to both and compares, in
// that cycle, alloc_ok_o and alloc_row_o with what the golden APT would
// answer, and region_valid_o / region_full_o of every region with the golden
// region's state. Operations map one to one: RTL register of an inactive
// region = golden rowspMalloc (the bench registers the lowest free slot, the
// one rowspMalloc takes); RTL register of an active region with its own
// capacity = golden reinit; RTL flush = golden free; RTL alloc = golden
// allocate (stall policy: -1 on a full region).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "Vsb_apt.h"
#include "golden/apt.hpp"
#include "tb_dut.hpp"
#include "tb_scoreboard.hpp"

namespace {

using moehub::golden::AllocationPointerTable;
using moehub::golden::RegionFullPolicy;
using moehub::tb::Outcome;

constexpr unsigned kRegions = 4;
constexpr unsigned kMaxRows = 16;  // 2**RowIdWidth

struct Op {
  bool cfg = false, flush = false, alloc = false;
  unsigned cfg_region = 0, rows = 0, alloc_region = 0;
};

class AptBoard {
 public:
  explicit AptBoard(const std::string& fst) : d_(fst), g_(0, kRegions, RegionFullPolicy::kStall) {}

  /// One cycle: applies `op` to both models and compares (returns false on a mismatch).
  void cycle(Op op, Outcome& o) {
    const std::uint64_t c = d_.cycles();
    // a register of an active region keeps its capacity (golden reinit)
    if (op.cfg && !op.flush && g_.active(op.cfg_region)) {
      op.rows = static_cast<unsigned>(g_.region(op.cfg_region).capacity_rows);
    }
    d_->cfg_valid_i = op.cfg;
    d_->cfg_flush_i = op.flush;
    d_->cfg_region_i = static_cast<CData>(op.cfg_region);
    d_->cfg_rows_i = static_cast<CData>(op.rows);
    d_->alloc_i = op.alloc;
    // the fault: the RTL allocates from another region than the golden APT
    d_->alloc_region_i = static_cast<CData>(c >= fault_cycle ? op.alloc_region ^ 1u : op.alloc_region);
    d_.eval();

    for (unsigned r = 0; r < kRegions; ++r) {
      const bool valid = g_.active(r);
      const bool full = valid && g_.region(r).row_pointer >= g_.region(r).capacity_rows;
      o.expect(((d_->region_valid_o >> r) & 1u) == valid, c, [&] { return "region_valid of " + std::to_string(r); });
      o.expect(((d_->region_full_o >> r) & 1u) == full, c, [&] { return "region_full of " + std::to_string(r); });
    }
    const unsigned ar = op.alloc_region;
    const bool ok = !op.cfg && g_.active(ar) && g_.region(ar).row_pointer < g_.region(ar).capacity_rows;
    o.expect((d_->alloc_ok_o != 0) == ok, c, [&] { return "alloc_ok of region " + std::to_string(ar); });
    if (op.alloc || op.cfg) ++o.transactions;
    if (op.cfg) {
      if (op.flush) {
        if (g_.active(op.cfg_region)) g_.free(op.cfg_region);
      } else if (g_.active(op.cfg_region)) {
        g_.reinit(op.cfg_region);
      } else {
        const std::uint32_t id = g_.rowsp_malloc(0, 1, op.rows);
        o.expect(id == op.cfg_region, c, [&] { return "bench registered a slot rowspMalloc does not take"; });
      }
    } else if (op.alloc && g_.active(ar)) {
      const std::int64_t row = g_.allocate(ar);
      if (row >= 0) {
        o.expect(d_->alloc_row_o == row, c, [&] {
          return "alloc_row " + std::to_string(d_->alloc_row_o) + ", golden " + std::to_string(row);
        });
      }
    }
    d_.step();
    o.cycles = d_.cycles();
  }

  /// Lowest inactive region of the golden APT, or kRegions.
  unsigned lowest_free() const {
    for (unsigned r = 0; r < kRegions; ++r) {
      if (!g_.active(r)) return r;
    }
    return kRegions;
  }
  const AllocationPointerTable& golden() const { return g_; }
  /// Fault injection (to test the bench): from this cycle on the RTL is asked for a row of region r ^ 1.
  std::uint64_t fault_cycle = ~0ULL;

 private:
  moehub::tb::Dut<Vsb_apt> d_;
  AllocationPointerTable g_;
};

/// Constrained-random operations: allocations on most cycles, now and then a
/// register (of the lowest free region, or a reinit of an active one) or a flush.
/// Runs until `transactions` operations (allocations and configurations) were compared.
Outcome random_run(std::uint32_t seed, std::uint64_t transactions, const std::string& fst, std::uint64_t stop,
                   std::uint64_t fault_cycle = ~0ULL) {
  AptBoard b(fst);
  b.fault_cycle = fault_cycle;
  Outcome o;
  std::mt19937_64 rng(seed);
  while (o.transactions < transactions && o.cycles <= stop) {
    Op op;
    const unsigned dice = static_cast<unsigned>(rng() % 64);
    op.alloc = dice < 48 || (dice >= 60 && (rng() & 1) != 0);
    op.alloc_region = static_cast<unsigned>(rng() % kRegions);
    if (dice >= 60) {
      op.cfg = true;
      op.flush = dice == 63;
      op.cfg_region = static_cast<unsigned>(rng() % kRegions);
      if (!op.flush && !b.golden().active(op.cfg_region)) {
        op.cfg_region = b.lowest_free();
        if (op.cfg_region == kRegions) op.cfg_region = 0;
      }
      op.rows = 1 + static_cast<unsigned>(rng() % kMaxRows);
    }
    b.cycle(op, o);
  }
  return o;
}

/// Every corner once: unregistered, full, reconfiguration beside an allocation, flush.
void directed(AptBoard& b, Outcome& o) {
  b.cycle({false, false, true, 0, 0, 1}, o);  // allocation from an unregistered region
  b.cycle({true, false, false, 0, 3, 0}, o);  // register region 0 with 3 rows
  for (int i = 0; i < 4; ++i) b.cycle({false, false, true, 0, 0, 0}, o);  // 3 rows, then full
  b.cycle({true, false, true, 1, 16, 0}, o);  // register 1 while allocating from 0 (full)
  b.cycle({true, false, true, 0, 3, 1}, o);   // reinit 0 while allocating from 1 (refused)
  for (int i = 0; i < 17; ++i) b.cycle({false, false, true, 0, 0, 1}, o);  // 16 rows of region 1, then full
  b.cycle({false, false, true, 0, 0, 0}, o);
  b.cycle({true, true, false, 0, 0, 0}, o);   // flush 0
  b.cycle({false, false, true, 0, 0, 0}, o);  // refused
  b.cycle({true, false, false, 0, 5, 0}, o);  // register 0 again (lowest free)
  b.cycle({false, false, true, 0, 0, 0}, o);
}

TEST(SbApt, DirectedCorners) {
  AptBoard b("");
  Outcome o;
  directed(b, o);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  EXPECT_EQ(b.golden().full_events(), 2u);  // region 0 and region 1 found full once each
}

TEST(SbApt, RandomMillionOperations) {
  const std::string msg = moehub::tb::check("sb_apt_random", [](const std::string& fst, std::uint64_t stop) {
    return random_run(11, 1000000, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbApt, InjectedFaultFailsAndWritesWaveform) {
  EXPECT_EQ(moehub::tb::injected_fault_report("sb_apt_injected_fault",
                                              [](const std::string& fst, std::uint64_t stop) {
                                                return random_run(12, 20000, fst, stop, 2000);
                                              }),
            "");
}

TEST(SbApt, Coverage) {
  moehub::tb::coverage_tally().clear();
  {
    AptBoard b("");
    Outcome o;
    directed(b, o);
    EXPECT_EQ(o.mismatches, 0u) << o.first;
  }
  const Outcome o = random_run(12, 20000, "", ~0ULL);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  const auto missing = moehub::tb::coverage_report(
      "moehub_apt", {"cov_alloc", "cov_alloc_last_row", "cov_region_full", "cov_alloc_unknown", "cov_alloc_during_cfg",
                     "cov_register", "cov_flush"});
  EXPECT_TRUE(missing.empty()) << missing.size() << " corners uncovered (listed above)";
}

}  // namespace
