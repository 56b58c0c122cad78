// Host logic of the GPU harness that needs no GPU: the exit status of each error type and
// the polling wait that lets a rank give up when another one failed.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>

#include "errors.hpp"
#include "poll_wait.hpp"

namespace {

using namespace moehub::gpu;
using namespace std::chrono_literals;

TEST(GpuErrors, OnlyUsageErrorsExitWithTwo) {
  EXPECT_EQ(exit_status_of(UsageError("--ep must be ...")), 2);
  // an internal invalid_argument (e.g. a planner precondition) is an error, not bad usage
  EXPECT_EQ(exit_status_of(std::invalid_argument("max_rows_matched_in_one_hop < 0")), 1);
  EXPECT_EQ(exit_status_of(OutOfMemory("cudaMallocFromPoolAsync")), 1);
  EXPECT_EQ(exit_status_of(RankAborted("rank 1 failed")), 1);
  EXPECT_EQ(exit_status_of(std::runtime_error("x")), 1);
}

TEST(GpuErrors, UserInputParsersBecomeUsageErrors) {
  EXPECT_THROW(from_user_input("--gemm", []() -> int { throw std::invalid_argument("bad name"); }), UsageError);
  try {
    from_user_input("--gemm", []() -> int { throw std::invalid_argument("bad name"); });
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--gemm: bad name");
  }
  EXPECT_EQ(from_user_input("", [] { return 7; }), 7);
  // other exceptions pass through unchanged
  EXPECT_THROW(from_user_input("", []() -> int { throw std::runtime_error("device"); }), std::runtime_error);
}

PollTiming fast() {
  PollTiming t;
  t.failure_check_interval = 200us;
  t.spin = 100us;
  t.sleep = 50us;
  return t;
}

TEST(GpuPollWait, ReturnsWhenTheWorkCompletes) {
  int polls = 0, checks = 0;
  PollHooks h;
  h.done = [&] { return ++polls >= 50; };
  h.failure = [&] {
    ++checks;
    return std::string();
  };
  EXPECT_EQ(poll_until_done(h, fast()), "");
  EXPECT_EQ(polls, 50);
}

TEST(GpuPollWait, GivesUpWithinMillisecondsWhenAnotherRankFailed) {
  // the work never completes (a send to a dead peer); the failure appears after 20 ms
  const auto t0 = std::chrono::steady_clock::now();
  PollHooks h;
  h.done = [] { return false; };
  h.failure = [&] {
    return std::chrono::steady_clock::now() - t0 > 20ms ? std::string("another rank failed: rank 1") : std::string();
  };
  const std::string why = poll_until_done(h, fast());
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(why, "another rank failed: rank 1");
  EXPECT_GE(waited, 20ms);
  EXPECT_LT(waited, 2s);
}

TEST(GpuPollWait, TimesOutWithoutAFailureReport) {
  PollHooks h;
  h.done = [] { return false; };
  h.failure = [] { return std::string(); };
  PollTiming t = fast();
  t.timeout = 30ms;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = poll_until_done(h, t);
  EXPECT_NE(why.find("no completion after 30 ms"), std::string::npos) << why;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
}

TEST(GpuPollWait, CompletedWorkIsNotReportedAsFailed) {
  // the failure is reported at the check where the work has just completed
  int polls = 0;
  PollHooks h;
  h.done = [&] { return ++polls > 1; };  // false at the first poll, true from then on
  h.failure = [] { return std::string("late notice"); };
  PollTiming t = fast();
  t.failure_check_interval = 0us;
  EXPECT_EQ(poll_until_done(h, t), "");
}

TEST(GpuPollWait, ChecksForFailuresAtTheGivenInterval) {
  std::atomic<int> checks{0};
  const auto t0 = std::chrono::steady_clock::now();
  PollHooks h;
  h.done = [&] { return std::chrono::steady_clock::now() - t0 > 50ms; };
  h.failure = [&] {
    ++checks;
    return std::string();
  };
  PollTiming t = fast();
  t.failure_check_interval = 10ms;
  EXPECT_EQ(poll_until_done(h, t), "");
  EXPECT_GE(checks.load(), 3);
  EXPECT_LE(checks.load(), 6);
}

}  // namespace
