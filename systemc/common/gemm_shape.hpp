// Shape of one GEMM (or one group of a grouped GEMM).
#pragma once

#include <cstdint>

namespace moehub {

struct GemmShape {
  std::int64_t m = 0;  ///< rows (tokens)
  std::int64_t n = 0;  ///< output columns
  std::int64_t k = 0;  ///< reduction dimension
};

}  // namespace moehub
