// Waiting for a rank's GPU work without hanging when another rank has failed: the wait
// polls for completion and, between polls, for a failure (an asynchronous NCCL error,
// another rank's abort notice, a time limit). Pure host logic, tested without a GPU.
//
// NCCL itself never fails a send whose peer died; a process that waits with
// cudaStreamSynchronize on such a send waits forever (nccl-tests' testStreamSynchronize
// polls for the same reason).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace moehub::gpu {

struct PollHooks {
  /// True when the awaited work is complete (e.g. cudaStreamQuery == cudaSuccess); may
  /// throw for a device error.
  std::function<bool()> done;
  /// Non-empty when the wait must give up (the reason); called at most every
  /// `failure_check_interval` so that it may read files or query NCCL.
  std::function<std::string()> failure;
};

struct PollTiming {
  std::chrono::microseconds failure_check_interval{1000};
  /// 0: no time limit.
  std::chrono::milliseconds timeout{0};
  /// Polls spin (yield) this long before sleeping `sleep` between polls.
  std::chrono::microseconds spin{2000};
  std::chrono::microseconds sleep{100};
};

/// Polls until `done()` (returns "") or `failure()` gives a reason or the timeout passes
/// (returns the reason). Checks done() once more after a failure report, so that work that
/// completed is never reported as failed.
std::string poll_until_done(const PollHooks& hooks, const PollTiming& timing);

}  // namespace moehub::gpu
