// Rows per expert for the GEMM benchmarks and tests (expert_rows.hpp).
#include "expert_rows.hpp"

#include <cmath>

namespace moehub::gpu {

std::vector<std::int64_t> balanced_rows(std::int64_t total, int groups) {
  std::vector<std::int64_t> r(static_cast<std::size_t>(groups), total / groups);
  for (std::int64_t i = 0; i < total % groups; ++i) ++r[static_cast<std::size_t>(i)];
  return r;
}

std::vector<std::int64_t> skewed_rows(std::int64_t total, int groups) {
  double sum = 0;
  for (int e = 0; e < groups; ++e) sum += std::pow(static_cast<double>(e + 1), -0.5);
  std::vector<std::int64_t> r(static_cast<std::size_t>(groups));
  std::int64_t used = 0;
  for (int e = 0; e < groups; ++e) {
    r[static_cast<std::size_t>(e)] =
        static_cast<std::int64_t>(std::floor(static_cast<double>(total) * std::pow(static_cast<double>(e + 1), -0.5) / sum));
    used += r[static_cast<std::size_t>(e)];
  }
  for (std::int64_t i = 0; i < total - used; ++i) ++r[static_cast<std::size_t>(i % groups)];
  return r;
}

}  // namespace moehub::gpu
