// moehub-gpu: runs the MoE layer (all-to-all and ring schedules) on NVIDIA GPUs, checks
// it against the float64 reference, measures memory and time, and writes traces.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <exception>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "cuda_check.hpp"
#include "errors.hpp"
#include "schedule.hpp"
#include "transport.hpp"

namespace {

const char* kUsage =
    "usage: moehub-gpu <command> [--key value ...]\n"
    "commands:\n"
    "  check       compare every schedule with the float64 reference (folded ranks)\n"
    "              --ep 1,2,8,16 --routing uniform,skewed --schedules {SCHEDULES,}\n"
    "              --tokens 96 --hidden 256 --ffn 128 --experts 32 --top-k 4 --seed N --gemm auto|loop|streams|grouped|wgmma|auto-cublas-wgrad\n"
    "              (then the weight-gradient grouped GEMM alone on uneven groups, lines gemm-wgrad)\n"
    "              --transport nccl (one rank per process, EP = the number of processes) --rendezvous DIR\n"
    "              --ring-accum fp32,bf16 --hop-chunk-rows -1,0,8,40 (ring variants: each ring schedule runs with each)\n"
    "              --launch-threads 0 (host threads launching the folded ranks' work: 0 = one per rank, 1 = all on one)\n"
    "  memory      per-rank peak device memory of the layer, folded ranks, vs the planner's prediction\n"
    "              --ep 8 --tokens 49152 --hidden 2048 --ffn 768 --experts 128 --top-k 8 --schedules ...\n"
    "              --ring-accum bf16|fp32[,...] --hop-chunk-rows -1[,N...] (ring rows per variant; a2a once)\n"
    "  bench-gemm  expert GEMM throughput (loop, streams, grouped, wgmma, auto) vs a dense GEMM of the same FLOPs,\n"
    "              forward and weight gradients (wgrad-*)\n"
    "              --tokens 16384 --models mixtral-8x7b,qwen3-30b-a3b,qwen1.5-moe-a2.7b --routing balanced|skewed\n"
    "  bench-hop   one ring-expert hop: compute, copy, and both overlapped\n"
    "              --ep 8 --tokens 49152 --hidden 2048 --ffn 768 --experts 128 --top-k 8\n"
    "  run         time the layer and optionally write a trace\n"
    "              --schedule {SCHEDULES|}|ring --transport folded|nccl --ep 8 --iters 3\n"
    "              --trace-dir DIR --rendezvous DIR (nccl without MPI) and the shape options\n"
    "              --ring-accum bf16|fp32 --hop-chunk-rows N (default bf16, -1 = one expert per chunk; 0 = whole hop)\n"
    "              --launch-threads 0 (host threads launching the folded ranks' work: 0 = one per rank, 1 = all on one)\n";

/// The usage text with the registered schedules' names (schedule.hpp).
std::string usage() {
  std::string u = kUsage, comma, bar;
  for (const std::string& n : moehub::gpu::schedule_names()) {
    comma += (comma.empty() ? "" : ",") + n;
    bar += (bar.empty() ? "" : "|") + n;
  }
  for (auto [key, val] : {std::pair<std::string, std::string>{"{SCHEDULES,}", comma}, {"{SCHEDULES|}", bar}})
    for (std::size_t at; (at = u.find(key)) != std::string::npos;) u.replace(at, key.size(), val);
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moehub::gpu;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  // hidden test options (not in the usage text): --fail-rank R [--fail-at init|layer]
  // makes rank R fail on purpose, so that tests can see the other ranks give up
  const std::set<std::string> failure = {"fail-rank", "fail-at"};
  const std::set<std::string> shape = {"tokens", "hidden", "ffn", "experts", "top-k", "gemm"};
  auto with = [&](std::set<std::string> extra) {
    extra.insert(shape.begin(), shape.end());
    extra.insert(failure.begin(), failure.end());
    return extra;
  };
  try {
    int rc;
    for (int i = 2; i + 1 < argc; ++i) {
      if (!std::strcmp(argv[i], "--fail-rank")) {
        InjectedFailure f;
        f.rank = std::atoi(argv[i + 1]);
        for (int j = 2; j + 1 < argc; ++j)
          if (!std::strcmp(argv[j], "--fail-at")) f.at = argv[j + 1];
        if (f.at != "init" && f.at != "layer") throw UsageError("--fail-at must be init or layer (got '" + f.at + "')");
        set_injected_failure(f);
      }
    }
    if (cmd == "check") {
      rc = cmd_check(Args(argc, argv, 2, with({"ep", "routing", "schedules", "seed", "transport", "rendezvous",
                                       "ring-accum", "hop-chunk-rows", "launch-threads"})));
    } else if (cmd == "memory") {
      rc = cmd_memory(Args(argc, argv, 2, with({"ep", "schedules", "ring-accum", "hop-chunk-rows"})));
    } else if (cmd == "bench-gemm") {
      rc = cmd_bench_gemm(Args(argc, argv, 2, {"tokens", "models", "routing"}));
    } else if (cmd == "bench-hop") {
      rc = cmd_bench_hop(Args(argc, argv, 2, with({"ep"})));
    } else if (cmd == "run") {
      rc = cmd_run(Args(argc, argv, 2, with({"schedule", "transport", "ep", "iters", "trace-dir", "rendezvous", "ring-accum",
                                  "hop-chunk-rows", "launch-threads"})));
    } else {
      std::fprintf(stderr, "moehub-gpu: unknown command '%s'\n%s", cmd.c_str(), usage().c_str());
      return 2;
    }
    return rc;
  } catch (const std::exception& e) {
    // UsageError: exit 2 and the message alone; anything else (an internal
    // std::invalid_argument included) is an error, exit 1 (errors.hpp)
    const int status = exit_status_of(e);
    // a failure on a machine without a usable device says so first: the call that
    // failed (often the first CUDA call of the command) names only its own error
    int devices = 0;
    const cudaError_t probe = status == 2 ? cudaSuccess : cudaGetDeviceCount(&devices);
    if (status != 2 && (probe != cudaSuccess || devices == 0)) {
      std::fprintf(stderr,
                   "moehub-gpu %s: error: no usable CUDA device (cudaGetDeviceCount: %s); this command needs an "
                   "NVIDIA GPU and its driver. The failing call: %s\n",
                   cmd.c_str(), probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices", e.what());
      return status;
    }
    std::fprintf(stderr, "moehub-gpu %s: %s%s\n", cmd.c_str(), status == 2 ? "" : "error: ", e.what());
    return status;
  }
}
