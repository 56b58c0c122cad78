// Host-side data helpers: bf16 rounding, seeded random inputs, device copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.hpp"
#include "moe_kernels.hpp"

namespace moehub::gpu {

/// Round to the nearest bf16 (ties to even); returns the raw bits.
inline std::uint16_t to_bf16(double v) {
  const auto f = static_cast<float>(v);
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<std::uint16_t>(b >> 16);
}
inline double from_bf16(std::uint16_t h) {
  const std::uint32_t b = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

/// Fill `v` with uniform values in [-scale, scale), rounded to bf16 (so the reference
/// sees exactly what the GPU sees); returns the bf16 bits.
inline std::vector<std::uint16_t> random_bf16(std::vector<double>& v, std::size_t n, double scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-scale, scale);
  v.resize(n);
  std::vector<std::uint16_t> bits(n);
  for (std::size_t i = 0; i < n; ++i) {
    bits[i] = to_bf16(u(rng));
    v[i] = from_bf16(bits[i]);
  }
  return bits;
}

template <typename T> void upload(T* dst, const std::vector<T>& src, cudaStream_t s) {
  MOEHUB_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}
template <typename T> std::vector<T> download(const T* src, std::size_t n, cudaStream_t s) {
  std::vector<T> out(n);
  MOEHUB_CUDA_CHECK(cudaMemcpyAsync(out.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost, s));
  MOEHUB_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

}  // namespace moehub::gpu
