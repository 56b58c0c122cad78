// The GPU's own cost per kernel: N kernels back to back on one stream, launched one by one
// (the host may set the pace) and as one CUDA graph (the host launches once), timed with
// events around all N. Kernels: empty (one block), and a copy of B bytes (bandwidth-bound
// when B is large). Prints one CSV row per case: kernel, bytes, n, stream us per kernel,
// graph us per kernel, and the copy's time at the device's own best rate (the largest
// size's graph rate).
//   nvcc -O2 -arch=sm_90 -o kernel_gap scripts/gpu/kernel_gap.cu && ./kernel_gap
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "standalone_check.h"

__global__ void empty_kernel() {}

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += static_cast<long>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

struct Case {
  long bytes;  // 0: the empty kernel
};

static void launch(const Case& c, const uint4* src, uint4* dst, cudaStream_t s, int sms) {
  if (c.bytes == 0) {
    empty_kernel<<<1, 32, 0, s>>>();
  } else {
    const long n = c.bytes / 16;
    long blocks = (n + 255) / 256;
    if (blocks > 8L * sms) blocks = 8L * sms;
    copy_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(src, dst, n);
  }
}

int main() {
  int dev = 0, sms = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, dev));
  const long max_bytes = 256L << 20;
  uint4 *src, *dst;
  CHECK(cudaMalloc(&src, max_bytes));
  CHECK(cudaMalloc(&dst, max_bytes));
  CHECK(cudaMemset(src, 1, max_bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::printf("# %s, %d SMs\n", p.name, sms);
  std::printf("kernel,bytes,n,stream_us_per_kernel,graph_us_per_kernel\n");
  const std::vector<Case> cases = {{0}, {4096}, {65536}, {1L << 20}, {16L << 20}, {256L << 20}};
  for (const Case& c : cases) {
    const int n = c.bytes >= (16L << 20) ? 100 : 1000;
    // warm-up
    for (int i = 0; i < 10; ++i) launch(c, src, dst, s, sms);
    CHECK(cudaStreamSynchronize(s));
    // one by one
    float stream_ms = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK(cudaEventRecord(a, s));
      for (int i = 0; i < n; ++i) launch(c, src, dst, s, sms);
      CHECK(cudaEventRecord(b, s));
      CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (ms < stream_ms) stream_ms = ms;
    }
    // as one graph
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < n; ++i) launch(c, src, dst, s, sms);
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    float graph_ms = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
      CHECK(cudaEventRecord(a, s));
      CHECK(cudaGraphLaunch(ge, s));
      CHECK(cudaEventRecord(b, s));
      CHECK(cudaEventSynchronize(b));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (ms < graph_ms) graph_ms = ms;
    }
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));
    std::printf("%s,%ld,%d,%.3f,%.3f\n", c.bytes ? "copy" : "empty", c.bytes, n, 1e3 * stream_ms / n, 1e3 * graph_ms / n);
  }
  return 0;
}
