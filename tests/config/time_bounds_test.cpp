// Tests of the overflow-checked conversions to simulated time (units.hpp) and
// of the bounded utilisation bins of a bandwidth server (server.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "common/server.hpp"
#include "common/units.hpp"

namespace moehub {
namespace {

TEST(Time, ConversionsRoundAsBefore) {
  EXPECT_EQ(ns_to_ticks(250), 250000u);
  EXPECT_EQ(ns_to_ticks(0.0004), 0u);
  EXPECT_EQ(ns_to_ticks(0.0005), 1u);  // half away from zero
  EXPECT_EQ(us_to_ticks(1.5), 1500000u);
  EXPECT_EQ(transfer_ticks(144, 50), 2880u);  // a 144-byte packet at 50 GB/s
  EXPECT_EQ(transfer_ticks(1, 3), 334u);      // rounded up
  EXPECT_EQ(transfer_ticks(0, 1e-3), 0u);
}

// Durations too long for any run saturate at kTickNever (past every allowed
// time limit); values that are no time at all throw.
TEST(Time, HugeDurationsSaturateAndNonTimesThrow) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ns_to_ticks(inf), kTickNever);
  for (const double ns : {-inf, nan, -1.0}) {
    SCOPED_TRACE(ns);
    EXPECT_THROW(ns_to_ticks(ns), TimeOverflow);
  }
  EXPECT_EQ(ns_to_ticks(1e308), kTickNever);
  EXPECT_EQ(ns_to_ticks(2e15), kTickNever);  // 2e18 ps > 2^60
  EXPECT_EQ(ns_to_ticks(1e15), 1000000000000000000u);  // 1e18 ps < 2^60
  EXPECT_EQ(us_to_ticks(1e300), kTickNever);
  EXPECT_EQ(transfer_ticks(1e12, 1e-7), kTickNever);  // 1e22 ps
  EXPECT_EQ(transfer_ticks(1e300, 1e-300), kTickNever);  // inf ps
  EXPECT_THROW(transfer_ticks(128, 0), TimeOverflow);
  EXPECT_THROW(transfer_ticks(128, -1), TimeOverflow);
  EXPECT_THROW(transfer_ticks(-128, 1), TimeOverflow);
  EXPECT_THROW(transfer_ticks(128, nan), TimeOverflow);
  EXPECT_EQ(saturating_add(kTickMax - 1, 2), kTickMax);
  EXPECT_EQ(saturating_add(kTickMax - 2, 2), kTickMax);
  EXPECT_EQ(saturating_add(5, 7), 12u);
  try {
    ns_to_ticks(-1);
    ADD_FAILURE() << "no exception";
  } catch (const TimeOverflow& e) {
    EXPECT_EQ(std::string(e.what()).rfind(kTimeOverflowTag, 0), 0u) << e.what();
  }
}

TEST(Time, ServerClockSaturatesInsteadOfWrapping) {
  BandwidthServer s("s", 1e-3, 0);
  const Tick late = kTickMax - 1000;
  const auto slot = s.serve(late, 128);  // 128 B at 1 MB/s is 1.28e11 ps
  EXPECT_EQ(slot.finish, kTickMax);
  EXPECT_GE(slot.done, slot.finish);
}

// A server never holds more than max_bins counters: the bins coarsen by two as
// often as needed, and the counters still add up to the busy time.
TEST(ServerBins, CoarsenPastTheLimitAndKeepTheBusyTime) {
  BandwidthServer s("s", 1, 0);  // 1 GB/s: 1 byte per 1000 ps
  s.set_bin(1000, 4);
  s.serve(0, 0.5);  // [0, 500)
  EXPECT_EQ(s.bin_ticks(), 1000u);
  s.serve(9000, 0.5);  // [9000, 9500): bin 9 of 1000 ps is past 4 bins
  EXPECT_EQ(s.bin_ticks(), 4000u);
  ASSERT_EQ(s.bins().size(), 3u);
  EXPECT_EQ(s.bins()[0], 500u);
  EXPECT_EQ(s.bins()[1], 0u);
  EXPECT_EQ(s.bins()[2], 500u);

  // a long span: a million bins' worth of service stays within the bound
  s.serve(20000, 1e6);  // 1e9 ps
  EXPECT_LE(s.bins().size(), 4u);
  EXPECT_EQ(std::accumulate(s.bins().begin(), s.bins().end(), Tick{0}), s.busy());
  for (const Tick b : s.bins()) EXPECT_LE(b, s.bin_ticks());
}

TEST(ServerBins, DefaultBoundHoldsOverAHugeSpan) {
  BandwidthServer s("s", 1e-3, 0);
  s.set_bin(us_to_ticks(1));
  for (int i = 0; i < 100; ++i) s.serve(s.next_free(), 1e6);  // 100 x 1e12 ps: 1e8 bins of 1 us
  EXPECT_LE(s.bins().size(), BandwidthServer::kDefaultMaxBins);
  EXPECT_EQ(std::accumulate(s.bins().begin(), s.bins().end(), Tick{0}), s.busy());
}

}  // namespace
}  // namespace moehub
