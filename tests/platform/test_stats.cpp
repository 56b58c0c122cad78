// The statistics registry: counters, values and fixed-bin histograms per
// block, their errors, and a JSON whose order does not depend on the order of
// the reports.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/stats.hpp"

namespace {

using moehub::BlockStats;
using moehub::Histogram;
using moehub::StatsRegistry;

TEST(Stats, CountersAddAndValuesKeepTheLastReport) {
  StatsRegistry reg;
  reg.block("gpu0_hub").add("ingress.writes").add("ingress.writes", 4).set("occupancy", 0.25);
  reg.block("gpu0_hub").set("occupancy", 0.75);
  const BlockStats* b = reg.find("gpu0_hub");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->counter("ingress.writes"), 5u);
  EXPECT_DOUBLE_EQ(b->value("occupancy"), 0.75);
  EXPECT_EQ(reg.find("gpu1_hub"), nullptr);
  EXPECT_EQ(reg.size(), 1u);
}

TEST(Stats, ANameHoldsOneKindOfEntry) {
  StatsRegistry reg;
  BlockStats& b = reg.block("port");
  b.add("packets", 3);
  b.set("busy_us", 1.5);
  b.histogram("latency_ns", 0, 100, 4);
  EXPECT_THROW(b.set("packets", 1.0), std::logic_error);
  EXPECT_THROW(b.add("busy_us"), std::logic_error);
  EXPECT_THROW(b.add("latency_ns"), std::logic_error);
  EXPECT_THROW(b.histogram("packets", 0, 1, 1), std::logic_error);
  EXPECT_THROW(b.histogram("latency_ns", 0, 100, 5), std::logic_error) << "other bins";
  EXPECT_THROW(b.value("packets"), std::logic_error);
  EXPECT_THROW((void)b.counter("absent"), std::out_of_range);
  EXPECT_THROW((void)b.histogram("absent"), std::out_of_range);
  EXPECT_EQ(b.counter("packets"), 3u) << "a rejected report changes nothing";
}

TEST(Stats, HistogramBinsAndTheirEdges) {
  Histogram h(0.0, 1.0, 4);  // bins of 0.25
  for (const double v : {0.0, 0.1, 0.25, 0.5, 0.74, 0.99, 1.0}) h.add(v);
  h.add(-0.5);
  h.add(1.5, 3);
  h.add(std::numeric_limits<double>::quiet_NaN());
  const std::vector<std::uint64_t> want = {2, 1, 2, 2};  // 1.0 joins the last bin
  EXPECT_EQ(h.counts(), want);
  EXPECT_EQ(h.underflow(), 1u);
  EXPECT_EQ(h.overflow(), 4u) << "3 x 1.5 and the NaN";
  EXPECT_EQ(h.samples(), 12u);
  EXPECT_DOUBLE_EQ(h.sum(), 0.1 + 0.25 + 0.5 + 0.74 + 0.99 + 1.0 - 0.5 + 4.5);
  EXPECT_THROW(Histogram(1.0, 1.0, 4), std::invalid_argument);
  EXPECT_THROW(Histogram(0.0, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(Histogram(0.0, std::numeric_limits<double>::infinity(), 2), std::invalid_argument);
}

TEST(Stats, JsonIsSortedByBlockAndEntryWhateverTheReportOrder) {
  StatsRegistry a, b;
  a.block("sw0_to_gpu1").add("packets", 2).set("busy_us", 0.5);
  a.block("gpu0_hub").add("responses_sent", 1).add("data_packets_sent", 7);
  a.block("gpu0_hub").histogram("rows", 0, 8, 2).add(3);
  b.block("gpu0_hub").histogram("rows", 0, 8, 2).add(3);
  b.block("gpu0_hub").add("data_packets_sent", 7).add("responses_sent", 1);
  b.block("sw0_to_gpu1").set("busy_us", 0.5).add("packets", 2);
  EXPECT_EQ(a.to_json().dump(), b.to_json().dump());
  EXPECT_EQ(a.to_json().dump(),
            R"({"gpu0_hub":{"data_packets_sent":7,"responses_sent":1,)"
            R"("rows":{"lo":0.0,"hi":8.0,"counts":[1,0],"underflow":0,"overflow":0,"samples":1,"sum":3.0}},)"
            R"("sw0_to_gpu1":{"busy_us":0.5,"packets":2}})");
  EXPECT_EQ(StatsRegistry{}.to_json().dump(), "{}");
}

}  // namespace
