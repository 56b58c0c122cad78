// Directed test of moehub_rpm_sched (Dests = 4, Depth = 4, RowIdWidth = 8,
// TimerWidth = 4): priority before .nop, full before partial, smallest RowID;
// expired entries first and oldest first; partial entries held until their
// timer, a full partition or a drain; round robin over destinations,
// congested destinations skipped, a held grant under back-pressure that
// stays the same until taken.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "Vmoehub_rpm_sched.h"
#include "tb_dut.hpp"

namespace {

using Sched = moehub::tb::Dut<Vmoehub_rpm_sched>;
constexpr unsigned kDests = 4;
constexpr unsigned kDepth = 4;
constexpr unsigned kRowBits = 8;

struct Entry {
  bool valid = false, full = false, prio = true;
  unsigned row = 0;
};
using Pool = std::array<Entry, kDests * kDepth>;  // index dest * kDepth + entry

struct Grant {
  bool valid;
  unsigned dest, entry;
};

/// Presents `pool` for one cycle; returns the grant offered (taken if `ready`).
Grant cycle(Sched& d, const Pool& pool, bool ready = true, unsigned congested = 0, bool drain = false) {
  unsigned valid = 0, full = 0, prio = 0;
  for (unsigned i = 0; i < pool.size(); ++i) {
    valid |= (pool[i].valid ? 1u : 0u) << i;
    full |= (pool[i].full ? 1u : 0u) << i;
    prio |= (pool[i].prio ? 1u : 0u) << i;
    moehub::tb::set_bits(d->entry_row_i, i * kRowBits, kRowBits, pool[i].row);
  }
  d->entry_valid_i = static_cast<SData>(valid);
  d->entry_full_i = static_cast<SData>(full);
  d->entry_prio_i = static_cast<SData>(prio);
  d->congested_i = static_cast<CData>(congested);
  d->drain_i = drain ? 1 : 0;
  d->gnt_ready_i = ready ? 1 : 0;
  d.eval();
  const Grant g{d->gnt_valid_o != 0, d->gnt_dest_o, d->gnt_entry_o};
  if (g.valid) {
    EXPECT_EQ(d->gnt_o, 1u << (g.dest * kDepth + g.entry)) << "grant vector and indices disagree";
  } else {
    EXPECT_EQ(d->gnt_o, 0u);
  }
  d.step();
  return g;
}

void set_timeout(Sched& d, unsigned timeout_cycles) { d->timeout_i = static_cast<CData>(timeout_cycles); }

TEST(RtlRpmSched, PriorityBeforeNopThenSmallestRow) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  p[0] = {true, true, true, 5};
  p[1] = {true, true, true, 3};
  p[2] = {true, true, false, 1};  // .nop: smaller RowID but goes last
  p[3] = {true, false, true, 0};  // partial: waits for its timer
  Grant g = cycle(d, p);
  ASSERT_TRUE(g.valid);
  EXPECT_EQ(g.dest, 0u);
  EXPECT_EQ(g.entry, 1u);
  p[1].valid = false;
  g = cycle(d, p);
  EXPECT_EQ(g.entry, 0u);
  p[0].valid = false;
  g = cycle(d, p);
  EXPECT_EQ(g.entry, 2u);
  p[2].valid = false;
  EXPECT_FALSE(cycle(d, p).valid);
}

TEST(RtlRpmSched, RoundRobinOverDestinations) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  for (unsigned dst = 0; dst < kDests; ++dst) p[dst * kDepth + dst] = {true, true, true, 10};
  std::vector<unsigned> order;
  for (int i = 0; i < 6; ++i) order.push_back(cycle(d, p).dest);
  EXPECT_EQ(order, (std::vector<unsigned>{0, 1, 2, 3, 0, 1}));
}

TEST(RtlRpmSched, CongestedDestinationsAreSkipped) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  for (unsigned dst = 0; dst < kDests; ++dst) p[dst * kDepth] = {true, true, true, 10};
  std::vector<unsigned> order;
  for (int i = 0; i < 5; ++i) order.push_back(cycle(d, p, true, 0x2).dest);
  EXPECT_EQ(order, (std::vector<unsigned>{0, 2, 3, 0, 2}));
  EXPECT_FALSE(cycle(d, p, true, 0xF).valid);
}

TEST(RtlRpmSched, GrantHoldsUnderBackPressure) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  p[1 * kDepth + 2] = {true, true, true, 7};
  p[3 * kDepth + 0] = {true, true, true, 1};
  for (int i = 0; i < 3; ++i) {
    const Grant g = cycle(d, p, false);
    EXPECT_EQ(g.dest, 1u);  // the pointer does not move while the grant waits
    EXPECT_EQ(g.entry, 2u);
  }
  EXPECT_EQ(cycle(d, p, true).dest, 1u);
  EXPECT_EQ(cycle(d, p, true).dest, 3u);
}

// Once offered, the grant stays the same until taken: a better entry that
// arrives meanwhile, and congestion of the granted destination, move it
// neither (the decision waits for the take).
TEST(RtlRpmSched, OfferedGrantStaysUntilTaken) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  p[1 * kDepth + 2] = {true, true, true, 7};
  Grant g = cycle(d, p, false);
  ASSERT_TRUE(g.valid);
  ASSERT_EQ(g.entry, 2u);
  p[1 * kDepth + 0] = {true, true, true, 3};  // would win now: a smaller RowID
  p[2 * kDepth + 1] = {true, true, true, 1};  // another destination
  for (unsigned congested : {0u, 0x2u, 0xFu}) {
    g = cycle(d, p, false, congested);
    EXPECT_TRUE(g.valid) << "the grant was withdrawn (congested " << congested << ")";
    EXPECT_EQ(g.dest, 1u);
    EXPECT_EQ(g.entry, 2u);
  }
  g = cycle(d, p, true, 0x2);  // taken while its destination is congested
  EXPECT_TRUE(g.valid && g.dest == 1 && g.entry == 2);
  p[1 * kDepth + 2] = Entry{};
  g = cycle(d, p, true);  // the next decision: round robin past destination 1
  EXPECT_EQ(g.dest, 2u);
  g = cycle(d, p, true);
  EXPECT_EQ(g.dest, 1u);
  EXPECT_EQ(g.entry, 0u);
}

// A pool that merges into an offered entry breaks the rule that it keeps it
// as it is: the bench fails with the assertion's name.
TEST(RtlRpmSched, MergeIntoOfferedEntryFailsNamedAssertion) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  p[0] = {true, false, true, 7};
  cycle(d, p, false, 0, true);  // offered (drain), not taken
  p[0].full = true;             // a store merged into it
  try {
    cycle(d, p, false, 0, true);
    FAIL() << "the merge into the offered entry went unnoticed";
  } catch (const moehub::tb::AssertionFailure& e) {
    ASSERT_FALSE(e.names().empty());
    EXPECT_NE(e.names()[0].find("RpmGntEntryKept"), std::string::npos) << e.what();
  }
}

TEST(RtlRpmSched, PartialEntryLeavesAfterTimeout) {
  Sched d;
  set_timeout(d, 3);
  Pool p{};
  p[2 * kDepth + 3] = {true, false, false, 4};
  EXPECT_FALSE(cycle(d, p).valid);  // age 0
  EXPECT_FALSE(cycle(d, p).valid);  // age 1
  EXPECT_FALSE(cycle(d, p).valid);  // age 2
  const Grant g = cycle(d, p);      // age 3 = timeout
  ASSERT_TRUE(g.valid);
  EXPECT_EQ(g.dest, 2u);
  EXPECT_EQ(g.entry, 3u);
  EXPECT_FALSE(cycle(d, p).valid);  // the slot's timer restarted with the grant
}

TEST(RtlRpmSched, DrainReleasesPartialEntries) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  p[5] = {true, false, true, 9};
  EXPECT_FALSE(cycle(d, p).valid);
  const Grant g = cycle(d, p, true, 0, true);
  ASSERT_TRUE(g.valid);
  EXPECT_EQ(g.dest, 1u);
  EXPECT_EQ(g.entry, 1u);
}

TEST(RtlRpmSched, AFullPartitionDrainsItsPartialEntries) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  for (unsigned e = 0; e < kDepth; ++e) p[kDepth + e] = {true, false, e != 2, 20 - e};
  const Grant g = cycle(d, p);  // all four are partial: priority, then the smallest RowID
  ASSERT_TRUE(g.valid);
  EXPECT_EQ(g.dest, 1u);
  EXPECT_EQ(g.entry, 3u);
  p[kDepth + 3].valid = false;  // no longer full: the rest wait for their timers
  EXPECT_FALSE(cycle(d, p).valid);
}

TEST(RtlRpmSched, ExpiredEntriesGoFirstOldestFirst) {
  Sched d;
  set_timeout(d, 3);
  Pool p{};
  p[0] = {true, false, false, 50};     // A: partial .nop, the oldest
  cycle(d, p, false);                  // ages: A 0
  p[1] = {true, false, true, 40};      // B: partial, one cycle younger
  cycle(d, p, false);                  // A 1, B 0
  cycle(d, p, false);                  // A 2, B 1
  EXPECT_EQ(cycle(d, p, false).entry, 0u);  // A 3: expired and offered, not taken
  p[2] = {true, true, true, 1};        // C: full, priority, smallest RowID, not expired
  Grant g = cycle(d, p);               // A 4, B 3: both expired
  EXPECT_EQ(g.entry, 0u);
  p[0].valid = false;
  g = cycle(d, p);
  EXPECT_EQ(g.entry, 1u);
  p[1].valid = false;
  g = cycle(d, p);
  EXPECT_EQ(g.entry, 2u);
}

TEST(RtlRpmSched, FullBeforePartialAmongUnexpired) {
  Sched d;
  set_timeout(d, 15);
  Pool p{};
  p[0] = {true, false, true, 1};  // partial, smaller RowID
  p[1] = {true, true, true, 9};
  p[2] = {true, true, true, 8};
  p[3] = {true, true, false, 0};  // the partition is full: all eligible
  EXPECT_EQ(cycle(d, p).entry, 2u);
}

}  // namespace
