// The time-ordered storage behind the arrival queues and the credit returns:
// the ring buffer, and an ArrivalQueue fed out of order on purpose (pushes
// that fit their lane, that need another lane, and that fit no lane and go
// to the heap) still hands its entries over in (arrival, insertion) order.
// One SystemC run per process: run through CTest.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "common/arrival_queue.hpp"
#include "common/payload_pool.hpp"
#include "common/ring.hpp"
#include "common/sc_time_util.hpp"

namespace moehub {
namespace {

TEST(Ring, FifoAcrossGrowthAndWrapAround) {
  Ring<int> r;
  int next_in = 0, next_out = 0;
  // interleaved pushes and pops move the head around the buffer while it grows
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < round % 7 + 3; ++k) r.push_back(next_in++);
    for (int k = 0; k < round % 5 + 1 && !r.empty(); ++k) {
      EXPECT_EQ(r.front(), next_out++);
      r.pop_front();
    }
  }
  EXPECT_EQ(r.size(), static_cast<std::size_t>(next_in - next_out));
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_EQ(r[i], next_out + static_cast<int>(i));
}

TEST(Ring, InsertSortedIsStable) {
  Ring<std::pair<int, int>> r;  // (key, insertion)
  const auto less = [](const std::pair<int, int>& a, const std::pair<int, int>& b) { return a.first < b.first; };
  const int keys[] = {5, 3, 9, 3, 1, 9, 5, 0, 7, 3, 2, 8, 6, 4, 1, 9, 0};
  int i = 0;
  for (int k : keys) r.insert_sorted({k, i++}, less);
  ASSERT_EQ(r.size(), sizeof(keys) / sizeof(keys[0]));
  for (std::size_t j = 1; j < r.size(); ++j) {
    ASSERT_LE(r[j - 1].first, r[j].first);
    if (r[j - 1].first == r[j].first) {
      EXPECT_LT(r[j - 1].second, r[j].second) << "equal keys keep their order";
    }
  }
}

// Two lanes; lane hints that are wrong on purpose. Everything is pushed at
// time 0 with arrivals >= the lookahead, so the queue's promise holds and
// the handed-over order must be (arrival, insertion) exactly.
TEST(ArrivalQueueLanes, OutOfOrderPushesComeOutInOrder) {
  set_picosecond_resolution();
  struct Seen {
    Tick at;
    std::uint64_t id;
  };
  std::vector<Seen> seen;
  PayloadPool pool;
  std::vector<std::pair<tlm::tlm_generic_payload*, std::uint64_t>> ids;
  ArrivalQueue q(
      "q", 100000, 10000,
      [&](tlm::tlm_generic_payload& gp, Tick at, Tick&) {
        std::uint64_t id = 0;
        for (const auto& [p, i] : ids) {
          if (p == &gp) id = i;
        }
        seen.push_back({at, id});
        return true;
      },
      2);
  // (arrival, lane hint): decreasing runs force the other lane and then the heap
  const std::vector<std::pair<Tick, std::size_t>> pushes = {
      {500000, 0}, {400000, 0}, {300000, 0}, {200000, 1}, {300000, 1}, {600000, 0},
      {300000, 0}, {250000, 5}, {700000, 1}, {200000, 0}, {600000, 1}, {450000, ArrivalQueue::kAnyLane}};
  for (std::size_t i = 0; i < pushes.size(); ++i) {
    tlm::tlm_generic_payload* gp = pool.allocate();
    ids.emplace_back(gp, i);
    q.push(gp, pushes[i].first, pushes[i].second);
  }
  EXPECT_EQ(q.size(), pushes.size());
  EXPECT_GT(q.heap_pushes(), 0u) << "the pattern is meant to overflow both lanes";
  sc_core::sc_start();
  ASSERT_EQ(seen.size(), pushes.size());
  for (std::size_t j = 1; j < seen.size(); ++j) {
    const bool ordered = seen[j - 1].at < seen[j].at || (seen[j - 1].at == seen[j].at && seen[j - 1].id < seen[j].id);
    EXPECT_TRUE(ordered) << "entry " << j << ": arrival " << seen[j].at << " id " << seen[j].id << " after arrival "
                         << seen[j - 1].at << " id " << seen[j - 1].id;
  }
  for (std::size_t j = 0; j < seen.size(); ++j) EXPECT_EQ(seen[j].at, pushes[seen[j].id].first);
  EXPECT_EQ(q.reorderings(), 0u);
  EXPECT_EQ(q.handled(), pushes.size());
  for (const auto& [p, i] : ids) p->release();
}

}  // namespace
}  // namespace moehub
