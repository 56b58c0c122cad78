#include "device_memory.hpp"

#include <cstdint>
#include <stdexcept>

#include "cuda_check.hpp"
#include "moe_plan/layer_memory.hpp"

namespace moehub::gpu {

RankAllocator::RankAllocator(int device, cudaStream_t stream) : stream_(stream), t0_(std::chrono::steady_clock::now()) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  MOEHUB_CUDA_CHECK(cudaMemPoolCreate(&pool_, &props));
  std::uint64_t keep = UINT64_MAX;  // never hand memory back to the driver mid-layer
  MOEHUB_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep));
}

RankAllocator::~RankAllocator() {
  cudaStreamSynchronize(stream_);
  for (auto& kv : live_) cudaFreeAsync(kv.first, stream_);
  cudaStreamSynchronize(stream_);
  cudaMemPoolDestroy(pool_);
}

void* RankAllocator::alloc(std::size_t bytes, const std::string& name) {
  void* p = nullptr;
  const std::size_t rounded = plan::allocation_bytes(bytes);  // the memory plans count the same
  const cudaError_t e = cudaMallocFromPoolAsync(&p, rounded, pool_, stream_);
  if (e != cudaSuccess) {
    const std::string what = "device allocation of " + std::to_string(rounded) + " bytes for '" + name +
                             "' failed (" + cudaGetErrorString(e) + "); " + std::to_string(in_use_) +
                             " bytes in use by this rank";
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory(what);
    }
    throw std::runtime_error(what);
  }
  live_[p] = Block{rounded, name};
  in_use_ += static_cast<std::int64_t>(rounded);
  if (in_use_ > peak_) {
    peak_ = in_use_;
    at_peak_.clear();
    for (auto& kv : live_) at_peak_[kv.second.name] += static_cast<std::int64_t>(kv.second.bytes);
  }
  const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  timeline_.push_back({t, in_use_, peak_});
  return p;
}

void RankAllocator::free(void* p) {
  if (!p) return;
  auto it = live_.find(p);
  if (it == live_.end()) throw std::runtime_error("RankAllocator::free of an unknown pointer");
  in_use_ -= static_cast<std::int64_t>(it->second.bytes);
  live_.erase(it);
  MOEHUB_CUDA_CHECK(cudaFreeAsync(p, stream_));
  const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  timeline_.push_back({t, in_use_, peak_});
}

void RankAllocator::reset_peak() {
  peak_ = in_use_;
  at_peak_.clear();
  for (auto& kv : live_) at_peak_[kv.second.name] += static_cast<std::int64_t>(kv.second.bytes);
  timeline_.clear();
  std::uint64_t zero = 0;
  MOEHUB_CUDA_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
}

void RankAllocator::trim() {
  MOEHUB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  MOEHUB_CUDA_CHECK(cudaMemPoolTrimTo(pool_, 0));
}

std::int64_t RankAllocator::pool_used_high() const {
  std::uint64_t v = 0;
  MOEHUB_CUDA_CHECK(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &v));
  return static_cast<std::int64_t>(v);
}

}  // namespace moehub::gpu
