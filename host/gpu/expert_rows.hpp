// Rows per expert for the GEMM benchmarks and tests: an even split and a fixed skew.
#pragma once

#include <cstdint>
#include <vector>

namespace moehub::gpu {

/// total rows over `groups` experts, the remainder one row each to the first experts.
std::vector<std::int64_t> balanced_rows(std::int64_t total, int groups);
/// Rows of expert e proportional to (e + 1)^-0.5, rounded down, the remainder one row each
/// to the first experts: a fixed, reproducible imbalance (128 experts: the largest gets
/// 6.0x the mean, the smallest 0.53x). scripts/gpu/torch_grouped_mm.py --routing skewed
/// computes the same rows.
std::vector<std::int64_t> skewed_rows(std::int64_t total, int groups);

}  // namespace moehub::gpu
