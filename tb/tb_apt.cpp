// Directed test of moehub_apt (Regions = 4, RowIdWidth = 4): allocation order,
// the full flag, flush and re-registration, configuration over allocation.
#include <gtest/gtest.h>

#include "Vmoehub_apt.h"
#include "tb_dut.hpp"

namespace {

using Apt = moehub::tb::Dut<Vmoehub_apt>;

void idle(Apt& d) {
  d->cfg_valid_i = 0;
  d->alloc_i = 0;
}

void configure(Apt& d, unsigned region, bool flush, unsigned rows) {
  idle(d);
  d->cfg_valid_i = 1;
  d->cfg_flush_i = flush ? 1 : 0;
  d->cfg_region_i = static_cast<CData>(region);
  d->cfg_rows_i = static_cast<CData>(rows);
  d.step();
  idle(d);
  d.eval();
}

/// Allocates from `region`; returns the row or -1 when the APT refuses.
int allocate(Apt& d, unsigned region) {
  idle(d);
  d->alloc_i = 1;
  d->alloc_region_i = static_cast<CData>(region);
  d.eval();
  const int row = d->alloc_ok_o ? static_cast<int>(d->alloc_row_o) : -1;
  d.step();
  idle(d);
  d.eval();
  return row;
}

TEST(RtlApt, NothingAllocatesAfterReset) {
  Apt d;
  for (unsigned r = 0; r < 4; ++r) EXPECT_EQ(allocate(d, r), -1) << "region " << r;
  EXPECT_EQ(d->region_valid_o, 0u);
}

TEST(RtlApt, RowsAreHandedOutInOrderUntilFull) {
  Apt d;
  configure(d, 1, false, 3);
  EXPECT_EQ(d->region_valid_o, 0x2u);
  EXPECT_EQ(allocate(d, 1), 0);
  EXPECT_EQ(allocate(d, 1), 1);
  EXPECT_EQ(d->region_full_o, 0u);
  EXPECT_EQ(allocate(d, 1), 2);
  EXPECT_EQ(d->region_full_o, 0x2u);
  EXPECT_EQ(allocate(d, 1), -1);
  EXPECT_EQ(allocate(d, 2), -1);  // other regions are untouched
}

TEST(RtlApt, RegionsCountIndependently) {
  Apt d;
  configure(d, 0, false, 16);
  configure(d, 3, false, 16);
  EXPECT_EQ(allocate(d, 0), 0);
  EXPECT_EQ(allocate(d, 3), 0);
  EXPECT_EQ(allocate(d, 0), 1);
  EXPECT_EQ(allocate(d, 0), 2);
  EXPECT_EQ(allocate(d, 3), 1);
}

TEST(RtlApt, AFullSizeRegionUsesEveryRowId) {
  Apt d;
  configure(d, 2, false, 16);  // 2**RowIdWidth rows
  for (int i = 0; i < 16; ++i) EXPECT_EQ(allocate(d, 2), i);
  EXPECT_EQ(allocate(d, 2), -1);
  EXPECT_EQ(d->region_full_o, 0x4u);
}

TEST(RtlApt, FlushInvalidatesAndReRegisterRestarts) {
  Apt d;
  configure(d, 1, false, 8);
  EXPECT_EQ(allocate(d, 1), 0);
  EXPECT_EQ(allocate(d, 1), 1);
  configure(d, 1, true, 0);
  EXPECT_EQ(d->region_valid_o, 0u);
  EXPECT_EQ(allocate(d, 1), -1);
  configure(d, 1, false, 8);
  EXPECT_EQ(allocate(d, 1), 0);
}

TEST(RtlApt, ConfigurationWinsOverAllocationInTheSameCycle) {
  Apt d;
  configure(d, 0, false, 8);
  EXPECT_EQ(allocate(d, 0), 0);
  d->alloc_i = 1;
  d->alloc_region_i = 0;
  d->cfg_valid_i = 1;
  d->cfg_flush_i = 0;
  d->cfg_region_i = 0;
  d->cfg_rows_i = 8;
  d.eval();
  EXPECT_EQ(d->alloc_ok_o, 0);
  d.step();
  idle(d);
  EXPECT_EQ(allocate(d, 0), 0);  // re-registered: the pointer restarted
}

}  // namespace
