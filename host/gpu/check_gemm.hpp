// moehub-gpu check, GEMM part: the weight-gradient grouped GEMMs against a float64
// reference (check_gemm.cpp).
#pragma once

#include <cstdint>

#include "gemm.hpp"

namespace moehub::gpu {

/// Runs the weight-gradient grouped GEMM cases (uneven groups with empty ones, fp32 C with
/// beta 0 and 1, bf16 C with beta 1; shapes (hidden, 2 ffn) and (ffn, hidden)) with `impl`
/// (kWgmma for kAuto),
/// compares each with a float64 reference (relative error at most `tol`, NaN fails, a guard
/// band after C untouched), prints one line per case, adds the cases to `cases` and returns
/// the number that failed.
int check_wgrad_gemms(GemmImpl impl, std::uint64_t seed, int hidden, int ffn, double tol, int& cases);

}  // namespace moehub::gpu
