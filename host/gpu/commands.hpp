// Subcommands of moehub-gpu. Each returns the process exit code; bad arguments throw
// UsageError (exit 2).
#pragma once

#include "cli.hpp"

namespace moehub::gpu {

int cmd_check(const Args&);
int cmd_memory(const Args&);
int cmd_bench_gemm(const Args&);
int cmd_bench_hop(const Args&);
int cmd_run(const Args&);

}  // namespace moehub::gpu
