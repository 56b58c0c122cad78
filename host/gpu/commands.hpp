// Subcommands of moehub-gpu. Each returns the process exit code; bad arguments throw
// UsageError (exit 2).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"
#include "layer.hpp"

namespace moehub::gpu {

int cmd_check(const Args&);
int cmd_memory(const Args&);
int cmd_bench_gemm(const Args&);
int cmd_bench_hop(const Args&);
int cmd_run(const Args&);

/// Rejects, before any output, an EP with which `base` is not a valid layer (UsageError
/// naming the EP and the field at fault).
inline void validate_eps(const LayerConfig& base, const std::vector<std::int64_t>& eps) {
  for (std::int64_t ep : eps) {
    LayerConfig c = base;
    c.ep = static_cast<int>(ep);
    try {
      validate(c);
    } catch (const std::invalid_argument& e) {
      throw UsageError("--ep " + std::to_string(ep) + " with this shape: " + e.what());
    }
  }
}

}  // namespace moehub::gpu
