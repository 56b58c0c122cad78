// Allocation Pointer Table: MallocID encoding, dense atomic allocation, the
// full-region policies, reinit and free.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "golden/apt.hpp"

namespace moehub::golden {
namespace {

TEST(Apt, MallocIdNamesGpuAndRegion) {
  for (std::int32_t gpu : {0, 1, 7, 300}) {
    for (std::uint32_t region : {0u, 1u, 63u, 65535u}) {
      const std::uint32_t id = make_malloc_id(gpu, region);
      EXPECT_EQ(malloc_id_gpu(id), gpu);
      EXPECT_EQ(malloc_id_region(id), region);
    }
  }
  AllocationPointerTable apt(3, 4, RegionFullPolicy::kStall);
  const std::uint32_t a = apt.rowsp_malloc(0x10000, 256, 10);
  const std::uint32_t b = apt.rowsp_malloc(0x20000, 512, 10);
  EXPECT_EQ(a, make_malloc_id(3, 0));
  EXPECT_EQ(b, make_malloc_id(3, 1));
  EXPECT_EQ(apt.region(b).base_address, 0x20000u);
  EXPECT_EQ(apt.region(b).row_bytes, 512u);
  EXPECT_EQ(apt.region(b).capacity_rows, 10u);
}

TEST(Apt, RowPointerHandsOutDenseIdsPerRegion) {
  AllocationPointerTable apt(0, 2, RegionFullPolicy::kStall);
  const std::uint32_t a = apt.rowsp_malloc(0, 128, 100), b = apt.rowsp_malloc(1 << 20, 128, 100);
  for (std::int64_t i = 0; i < 100; ++i) {
    // interleaved: each region counts on its own
    EXPECT_EQ(apt.allocate(a), i);
    if (i % 2 == 0) {
      EXPECT_EQ(apt.allocate(b), i / 2);
    }
  }
  EXPECT_EQ(apt.region(a).row_pointer, 100u);
  EXPECT_EQ(apt.region(b).row_pointer, 50u);
}

TEST(Apt, FullRegionStallsOrThrowsAsConfigured) {
  AllocationPointerTable stall(1, 1, RegionFullPolicy::kStall);
  const std::uint32_t s = stall.rowsp_malloc(0, 64, 3);
  for (int i = 0; i < 3; ++i) EXPECT_GE(stall.allocate(s), 0);
  EXPECT_EQ(stall.allocate(s), -1);
  EXPECT_EQ(stall.allocate(s), -1);
  EXPECT_EQ(stall.full_events(), 2u);
  EXPECT_EQ(stall.region(s).row_pointer, 3u);  // a refused allocation moves nothing

  AllocationPointerTable err(1, 1, RegionFullPolicy::kError);
  const std::uint32_t e = err.rowsp_malloc(0, 64, 2);
  err.allocate(e);
  err.allocate(e);
  try {
    err.allocate(e);
    FAIL() << "no RegionFullError";
  } catch (const RegionFullError& x) {
    EXPECT_EQ(x.malloc_id(), e);
    EXPECT_NE(std::string(x.what()).find("is full"), std::string::npos);
  }
  EXPECT_EQ(err.region(e).row_pointer, 2u);
}

TEST(Apt, ReinitRestartsAndFreeReleasesTheSlot) {
  AllocationPointerTable apt(2, 2, RegionFullPolicy::kStall);
  const std::uint32_t a = apt.rowsp_malloc(0, 64, 2);
  apt.allocate(a);
  apt.allocate(a);
  EXPECT_EQ(apt.allocate(a), -1);
  apt.reinit(a);
  EXPECT_EQ(apt.allocate(a), 0);
  const std::uint32_t b = apt.rowsp_malloc(0, 64, 2);
  EXPECT_THROW(apt.rowsp_malloc(0, 64, 2), std::length_error);
  apt.free(a);
  EXPECT_FALSE(apt.active(a));
  EXPECT_THROW(apt.allocate(a), std::out_of_range);
  EXPECT_EQ(apt.rowsp_malloc(0, 64, 2), a);  // lowest free slot is reused
  EXPECT_EQ(apt.allocate(a), 0);
  EXPECT_TRUE(apt.active(b));
}

TEST(Apt, RejectsBadInputAndForeignIds) {
  EXPECT_THROW(AllocationPointerTable(0, 0, RegionFullPolicy::kStall), std::invalid_argument);
  EXPECT_THROW(AllocationPointerTable(-1, 4, RegionFullPolicy::kStall), std::invalid_argument);
  AllocationPointerTable apt(1, 4, RegionFullPolicy::kStall);
  EXPECT_THROW(apt.rowsp_malloc(0, 0, 4), std::invalid_argument);
  EXPECT_THROW(apt.rowsp_malloc(0, 64, 0), std::invalid_argument);
  const std::uint32_t a = apt.rowsp_malloc(0, 64, 4);
  EXPECT_THROW(apt.allocate(make_malloc_id(2, malloc_id_region(a))), std::out_of_range);  // GPU 2's region
  EXPECT_THROW(apt.region(make_malloc_id(1, 3)), std::out_of_range);                       // never registered
  EXPECT_EQ(region_full_policy_from("stall"), RegionFullPolicy::kStall);
  EXPECT_EQ(region_full_policy_from("error"), RegionFullPolicy::kError);
  for (const RegionFullPolicy p : {RegionFullPolicy::kStall, RegionFullPolicy::kError})
    EXPECT_EQ(region_full_policy_from(to_string(p)), p);  // the names read back
  try {
    region_full_policy_from("drop");
    FAIL();
  } catch (const std::invalid_argument& x) {
    EXPECT_NE(std::string(x.what()).find("stall, error"), std::string::npos);
  }
}

}  // namespace
}  // namespace moehub::golden
