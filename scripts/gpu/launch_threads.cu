// How fast one process launches kernels from several host threads: T threads, each with
// its own stream on one GPU, launch N empty kernels each (one block); the figure is the
// host's wall time from the start barrier until every thread has returned from its last
// launch, per launch and in launches per second over all threads. The GPU runs the empty
// kernels faster than one host thread launches them (kernel_gap.cu), so the rate is the
// host's. This is what decides whether folded ranks (one GPU, several ranks in one
// process) gain from launching each rank's kernels on a thread of its own.
//   nvcc -O2 -arch=sm_90 -o launch_threads scripts/gpu/launch_threads.cu -lpthread && ./launch_threads
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "standalone_check.h"

__global__ void empty_kernel() {}

// Wall seconds for `threads` threads to launch `n` kernels each on their own streams.
static double run(int threads, int n, std::vector<cudaStream_t>& streams) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  std::vector<double> done(static_cast<std::size_t>(threads), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      CHECK(cudaSetDevice(0));
      ready.fetch_add(1);
      while (!go.load()) {
      }
      for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, streams[static_cast<std::size_t>(t)]>>>();
      done[static_cast<std::size_t>(t)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  while (ready.load() < threads) {
  }
  const double start = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  go.store(true);
  for (auto& th : ts) th.join();
  double last = 0;
  for (double d : done) last = d > last ? d : last;
  CHECK(cudaDeviceSynchronize());
  return last - start;
}

int main() {
  CHECK(cudaSetDevice(0));
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  std::vector<cudaStream_t> streams(16);
  for (auto& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int n = 20000;
  run(1, 1000, streams);  // warm-up
  std::printf("# %s, %u host threads available\n", p.name, std::thread::hardware_concurrency());
  std::printf("threads,launches_per_thread,wall_ms,us_per_launch,launches_per_s\n");
  for (int threads : {1, 2, 4, 8, 1, 2, 4, 8}) {
    const double s = run(threads, n, streams);
    const double total = static_cast<double>(threads) * n;
    std::printf("%d,%d,%.2f,%.3f,%.0f\n", threads, n, 1e3 * s, 1e6 * s / total, total / s);
  }
  return 0;
}
