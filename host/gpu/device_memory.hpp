// Per-rank device memory: a stream-ordered pool (cudaMemPool) per rank with a
// tracking layer that records bytes in use, the high-water mark since the last reset
// and a timeline of allocation events. The pool's own high-water mark
// (cudaMemPoolAttrUsedMemHigh) is read beside the tracked one.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace moehub::gpu {

struct MemoryEvent {
  double t_us;              ///< host time since the allocator was created
  std::int64_t bytes_in_use;
  std::int64_t peak_bytes;  ///< high-water mark since the last reset
};

class RankAllocator {
 public:
  RankAllocator(int device, cudaStream_t stream);
  ~RankAllocator();
  RankAllocator(const RankAllocator&) = delete;
  RankAllocator& operator=(const RankAllocator&) = delete;

  /// Stream-ordered allocation on the rank's stream; `name` is kept for reports.
  void* alloc(std::size_t bytes, const std::string& name);
  template <typename T> T* alloc_n(std::size_t n, const std::string& name) {
    return static_cast<T*>(alloc(n * sizeof(T), name));
  }
  void free(void* p);
  void reset_peak();
  /// Hands the pool's unused memory back to the driver (between experiments).
  void trim();
  std::int64_t in_use() const { return in_use_; }
  std::int64_t peak() const { return peak_; }
  std::int64_t pool_used_high() const;  ///< cudaMemPoolAttrUsedMemHigh since reset_peak
  const std::vector<MemoryEvent>& timeline() const { return timeline_; }
  /// The live buffers at the tracked peak, name -> bytes.
  const std::map<std::string, std::int64_t>& at_peak() const { return at_peak_; }

 private:
  struct Block { std::size_t bytes; std::string name; };
  cudaMemPool_t pool_{};
  cudaStream_t stream_;
  std::map<void*, Block> live_;
  std::map<std::string, std::int64_t> at_peak_;
  std::int64_t in_use_ = 0, peak_ = 0;
  std::vector<MemoryEvent> timeline_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace moehub::gpu
