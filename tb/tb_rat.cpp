// Directed test of moehub_rat (Entries = 8, Banks = 2, Ways = 2, so 2 sets
// per bank; a row goes to bank row % 2, set (row / 2) % 2): hit and miss,
// FIFO eviction into the spill register and onto the spill channel (held
// under back-pressure, a second eviction waiting for it), restore by a clean
// fill (dropped without a spill when evicted), bank independence, and a
// region flush.
#include <gtest/gtest.h>

#include <optional>

#include "Vmoehub_rat.h"
#include "tb_dut.hpp"

namespace {

using Rat = moehub::tb::Dut<Vmoehub_rat>;

struct Spill {
  unsigned malloc_id, row, local;
};

void idle(Rat& d) {
  d->req_valid_i = 0;
  d->req_fill_i = 0;
  d->req_fill_dirty_i = 1;
  d->flush_valid_i = 0;
  d->spill_ready_i = 1;
}

/// Looks (malloc, row) up; returns its LocalRowID or nothing.
std::optional<unsigned> lookup(Rat& d, unsigned m, unsigned row) {
  idle(d);
  d->req_valid_i = 1;
  d->req_malloc_i = static_cast<CData>(m);
  d->req_row_i = static_cast<CData>(row);
  d.eval();
  EXPECT_EQ(d->req_ready_o, 1);
  std::optional<unsigned> r;
  if (d->hit_o) r = d->hit_local_o;
  d.step();
  idle(d);
  return r;
}

/// Fills (malloc, row) -> local on a miss (dirty: a new mapping; clean: a
/// restored one); returns the entry it sent to the spill area (the spill
/// register shows it from the next cycle on; the next edge takes it).
std::optional<Spill> fill(Rat& d, unsigned m, unsigned row, unsigned local, bool dirty = true) {
  idle(d);
  d->req_valid_i = 1;
  d->req_fill_i = 1;
  d->req_fill_dirty_i = dirty ? 1 : 0;
  d->req_malloc_i = static_cast<CData>(m);
  d->req_row_i = static_cast<CData>(row);
  d->req_fill_local_i = static_cast<CData>(local);
  d.eval();
  EXPECT_EQ(d->hit_o, 0) << "fill of a row already present";
  EXPECT_EQ(d->req_ready_o, 1);
  d.step();
  idle(d);
  d.eval();
  std::optional<Spill> s;
  if (d->spill_valid_o) s = Spill{d->spill_malloc_o, d->spill_row_o, d->spill_local_o};
  return s;
}

TEST(RtlRat, MissThenHitAfterFill) {
  Rat d;
  EXPECT_FALSE(lookup(d, 1, 0).has_value());
  EXPECT_FALSE(fill(d, 1, 0, 10).has_value());
  EXPECT_EQ(lookup(d, 1, 0), 10u);
  EXPECT_FALSE(lookup(d, 2, 0).has_value());  // same row, other MallocID
  EXPECT_FALSE(lookup(d, 1, 4).has_value());  // same set, other row
}

TEST(RtlRat, FullSetEvictsOldestOntoSpill) {
  Rat d;
  // rows 0, 4, 8, 12 all map to bank 0, set 0 (two ways)
  EXPECT_FALSE(fill(d, 1, 0, 10).has_value());
  EXPECT_FALSE(fill(d, 1, 4, 11).has_value());
  const auto s1 = fill(d, 1, 8, 12);
  ASSERT_TRUE(s1.has_value());
  EXPECT_EQ(s1->malloc_id, 1u);
  EXPECT_EQ(s1->row, 0u);
  EXPECT_EQ(s1->local, 10u);
  EXPECT_FALSE(lookup(d, 1, 0).has_value());
  EXPECT_EQ(lookup(d, 1, 4), 11u);
  EXPECT_EQ(lookup(d, 1, 8), 12u);
  const auto s2 = fill(d, 1, 12, 13);  // FIFO: row 4 is now the oldest
  ASSERT_TRUE(s2.has_value());
  EXPECT_EQ(s2->row, 4u);
  EXPECT_EQ(s2->local, 11u);
  const auto s3 = fill(d, 1, 0, 10, false);  // restore of row 0 evicts row 8
  ASSERT_TRUE(s3.has_value());
  EXPECT_EQ(s3->row, 8u);
  EXPECT_EQ(lookup(d, 1, 0), 10u);
  EXPECT_EQ(lookup(d, 1, 12), 13u);
  // the oldest is now row 12 (dirty), then the restored row 0 (clean)
  const auto s4 = fill(d, 1, 16, 14);
  ASSERT_TRUE(s4.has_value());
  EXPECT_EQ(s4->row, 12u);
  EXPECT_FALSE(fill(d, 1, 20, 15).has_value()) << "a restored entry is dropped, not spilled again";
  EXPECT_FALSE(lookup(d, 1, 0).has_value());
  EXPECT_EQ(lookup(d, 1, 16), 14u);
  EXPECT_EQ(lookup(d, 1, 20), 15u);
}

/// Offers a fill of (0, row) -> local with the spill channel not ready.
void offer_fill(Rat& d, unsigned row, unsigned local) {
  idle(d);
  d->req_valid_i = 1;
  d->req_fill_i = 1;
  d->req_malloc_i = 0;
  d->req_row_i = static_cast<CData>(row);
  d->req_fill_local_i = static_cast<CData>(local);
  d->spill_ready_i = 0;
}

TEST(RtlRat, SpillIsHeldAndASecondEvictionWaits) {
  Rat d;
  fill(d, 0, 0, 1);
  fill(d, 0, 4, 2);
  // row 8 evicts row 0 (dirty) into the empty spill register: taken at once
  offer_fill(d, 8, 3);
  d.eval();
  EXPECT_EQ(d->req_ready_o, 1);
  EXPECT_EQ(d->spill_valid_o, 0);
  d.step();
  // row 12 would evict row 4 (dirty): it waits while the register is full and
  // not taken; the spill stays offered, the same entry
  offer_fill(d, 12, 4);
  for (int i = 0; i < 3; ++i) {
    d.eval();
    EXPECT_EQ(d->spill_valid_o, 1);
    EXPECT_EQ(d->spill_row_o, 0u);
    EXPECT_EQ(d->spill_local_o, 1u);
    EXPECT_EQ(d->req_ready_o, 0);
    d.step();
  }
  // the spill is taken: the waiting fill goes in the same cycle, its
  // victim into the register behind it
  d->spill_ready_i = 1;
  d.eval();
  EXPECT_EQ(d->req_ready_o, 1);
  d.step();
  idle(d);
  d->spill_ready_i = 0;
  d.eval();
  EXPECT_EQ(d->spill_valid_o, 1);
  EXPECT_EQ(d->spill_row_o, 4u);
  EXPECT_EQ(d->spill_local_o, 2u);
  // a fill into a free way (bank 1) needs no spill: taken while the register is full
  offer_fill(d, 1, 5);
  d.eval();
  EXPECT_EQ(d->req_ready_o, 1);
  d.step();
  idle(d);
  EXPECT_EQ(lookup(d, 0, 8), 3u);
  EXPECT_EQ(lookup(d, 0, 12), 4u);
  EXPECT_EQ(lookup(d, 0, 1), 5u);
  EXPECT_FALSE(lookup(d, 0, 0).has_value());
  EXPECT_FALSE(lookup(d, 0, 4).has_value());
}

// A requester that withdraws a request the table did not take breaks the
// channel's rule: the bench fails with the assertion's name.
TEST(RtlRat, WithdrawnRequestFailsNamedAssertion) {
  Rat d;
  fill(d, 0, 0, 1);
  fill(d, 0, 4, 2);
  offer_fill(d, 8, 3);
  d.step();  // row 0 into the spill register, not taken
  offer_fill(d, 12, 4);
  d.eval();
  ASSERT_EQ(d->req_ready_o, 0);
  d.step();
  idle(d);
  d->spill_ready_i = 0;  // withdrawn before it was taken
  try {
    d.eval();
    FAIL() << "the withdrawn request went unnoticed";
  } catch (const moehub::tb::AssertionFailure& e) {
    ASSERT_EQ(e.names().size(), 1u) << e.what();
    EXPECT_NE(e.names()[0].find("RatReqHeld"), std::string::npos) << e.what();
  }
}

TEST(RtlRat, BanksAndSetsAreIndependent) {
  Rat d;
  // rows 0..7 cover both banks and both sets twice: eight entries, no spill
  for (unsigned r = 0; r < 8; ++r) EXPECT_FALSE(fill(d, 3, r, 100 + r).has_value()) << r;
  for (unsigned r = 0; r < 8; ++r) EXPECT_EQ(lookup(d, 3, r), 100 + r) << r;
  EXPECT_TRUE(fill(d, 3, 9, 109).has_value());  // bank 1 set 0 was full
}

TEST(RtlRat, FlushClearsOneRegionOnly) {
  Rat d;
  fill(d, 1, 0, 10);
  fill(d, 2, 1, 20);
  fill(d, 1, 3, 11);
  fill(d, 2, 2, 21);
  idle(d);
  d->flush_valid_i = 1;
  d->flush_malloc_i = 1;
  int cycles = 0;
  for (;;) {
    d.eval();
    const bool done = d->flush_ready_o;
    d.step();
    ++cycles;
    ASSERT_LT(cycles, 10) << "flush never completes";
    if (done) break;
  }
  idle(d);
  EXPECT_EQ(cycles, 3);  // start, then one cycle per set (2 sets)
  EXPECT_FALSE(lookup(d, 1, 0).has_value());
  EXPECT_FALSE(lookup(d, 1, 3).has_value());
  EXPECT_EQ(lookup(d, 2, 1), 20u);
  EXPECT_EQ(lookup(d, 2, 2), 21u);
  EXPECT_FALSE(fill(d, 1, 4, 12).has_value());  // the freed way takes it
}

}  // namespace
