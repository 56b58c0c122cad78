// Host threads for the ranks one process drives. In folded mode (several ranks on one
// GPU, one process) a single host thread launching every rank's kernels sets the pace of
// launch-heavy schedules, which a process per rank would not: H100 hosts launched
// 0.27-0.39 million empty kernels a second from one thread and 0.75-0.92 million from
// eight (scripts/gpu/launch_threads.cu, docs/results/gpu-h200.md run W19). RankThreads runs a
// function for every local rank index on a thread of its own, as a process per rank
// would, and returns when all have finished. Each rank's launches keep their order; only
// the interleaving of different ranks' launches changes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace moehub::gpu {

class RankThreads {
 public:
  /// `threads` host threads in all (at least 1): the caller of for_each and threads - 1
  /// workers. (The current CUDA device is per host thread: callers set it in fn.)
  explicit RankThreads(int threads);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  /// Calls fn(i) for every i in [0, n): item i on thread i % threads() (thread 0 is the
  /// caller), the items of one thread in increasing order. Every item runs even when an
  /// earlier one throws; once all have returned, rethrows the exception of the lowest i
  /// that threw. Not reentrant: one for_each at a time.
  void for_each(std::size_t n, const std::function<void(std::size_t)>& fn);

 private:
  void work(int t);
  void run_items(int t);

  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable wake_, done_;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  int pending_ = 0;
  std::size_t n_ = 0;
  const std::function<void(std::size_t)>* fn_ = nullptr;
  std::vector<std::exception_ptr> errors_;
};

}  // namespace moehub::gpu
