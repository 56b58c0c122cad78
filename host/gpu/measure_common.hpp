// Helpers shared by the measuring commands (memory, bench-gemm, bench-hop, run): shape
// options, seeded device inputs, CUDA-event timing (medians, round-robin rounds), row
// splits (expert_rows.hpp) and the expert-GEMM benchmark of one shape set.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli.hpp"
#include "expert_rows.hpp"
#include "layer.hpp"
#include "trace/trace.hpp"

namespace moehub::gpu {

/// Shape options (--tokens --hidden --ffn --experts --top-k) over the given defaults.
LayerConfig layer_args(const Args& a, std::int64_t t, int h, int f, int e, int k);
/// Seeded random inputs of every local rank (bf16 in [-1, 1), weights scaled by 1/sqrt(fan-in)).
void fill_inputs(MoeLayer& layer, std::uint64_t seed);
/// Bytes as GiB with three decimals.
std::string gib(std::int64_t b);
std::string now_utc();
std::string device_name(int dev);
double median(std::vector<double> v);
/// Median time (us) of each of `fns` enqueued on `s`: `warm` rounds, then `reps` timed
/// rounds, one call of each function per round (round-robin, so that the GPU's clock drift
/// over the measurement is shared by all of them), CUDA events around each call. Each round
/// calls them in a new order (seeded, the same in every run), so that no case always
/// follows the same neighbour: after a case that draws little power the GPU runs the next
/// one at a higher clock (docs/results/gpu-h200.md, runs W10a and W29).
std::vector<double> round_robin_us(cudaStream_t s, int warm, int reps, const std::vector<std::function<void()>>& fns);
/// Median time (us) of `fn` enqueued on `s`, over `reps` runs after `warm` warm-ups.
double time_us(cudaStream_t s, int warm, int reps, const std::function<void()>& fn);
/// Times the forward expert GEMMs (gate+up, then down) of one shape set with each
/// implementation and a dense GEMM of the same FLOPs; appends to `out`.
void bench_shapes(const std::string& label, int H, int F, const std::vector<std::int64_t>& rows,
                  std::vector<trace::GemmTiming>& out, bool print);

}  // namespace moehub::gpu
