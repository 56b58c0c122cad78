// Grouped bf16 GEMMs (fp32 accumulation) for the expert layers, row-major:
//   C[M][N] = op(A)[M][K] * op(B)[K][N] (+ beta * C)
// op(A) is A ([M][K]) or A^T (A stored [K][M]); op(B) likewise. C is bf16 or fp32.
// Four implementations of one group list, chosen per call:
//   kLoop    one cublasGemmEx per group on the caller's stream
//   kStreams one cublasGemmEx per group, round-robin over side streams (fork/join by events)
//   kGrouped one cublasGemmGroupedBatchedEx call (pointer tables filled on the device)
//   kWgmma   our persistent Hopper kernels (kernels/grouped_gemm.hpp) for calls of their
//            shapes: (1) bf16 C, beta 0, A not transposed, the groups' A and C rows packed
//            one after the other and their B matrices k*n elements apart (forward and input
//            gradients); (2) the weight gradients, A transposed and B not, the groups' A and
//            B rows packed one after the other (k_g rows each, k_g may be 0), C fp32 or bf16
//            with any beta, the groups' C matrices m*n elements apart; other calls (or a
//            non-sm_90 device) run as kStreams
//   kAuto    kWgmma where it applies (on the H200 it was the fastest on every expert
//            GEMM of Mixtral-8x7B, Qwen3-30B-A3B and Qwen1.5-MoE-A2.7B, the cases timed
//            round-robin), weight gradients only with at least kWgradMinWaves output tiles
//            per multiprocessor; otherwise kLoop for at most kAutoLoopMaxGroups groups (each
//            GEMM fills the GPU), else kStreams (docs/results/gpu-h200.md)
//   kAutoCublasWgrad  kAuto, but the weight gradients (transposed A) on cuBLAS as kAuto
//            chooses it: the layer's GEMMs before the weight-gradient kernel existed
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace moehub::gpu {

enum class GemmImpl { kLoop, kStreams, kGrouped, kWgmma, kAuto, kAutoCublasWgrad };
constexpr std::size_t kAutoLoopMaxGroups = 16;
/// kAuto runs a weight-gradient call on the wgmma kernel only with at least this many
/// output tiles per multiprocessor: the kernel does not split K, so a smaller call (a ring
/// chunk of one expert: 96 and 48 tiles on 132 SMs at Qwen3's shape) leaves multiprocessors
/// idle where cuBLAS can split the reduction. (The layer timings on the H200 could not
/// separate the two: run --schedule ring-expert --ep 8 varied by 79-106 ms between calls
/// of the same GEMM path; docs/results/gpu-h200.md.)
constexpr double kWgradMinWaves = 1.0;
constexpr int kAutoStreams = 4;  ///< side streams of a runner made with the default (bench-gemm: 4, 8, 16 within noise; 4 best for 60-128 experts)
const char* to_string(GemmImpl);
GemmImpl parse_gemm_impl(const std::string&);  ///< "loop" | "streams" | "grouped" | "wgmma" | "auto" | "auto-cublas-wgrad"; throws std::invalid_argument

struct GemmGroup {
  const void* a;
  const void* b;
  void* c;
  std::int64_t m, n, k;
};

struct GemmCall {
  bool trans_a = false, trans_b = false;
  bool c_fp32 = false;
  float beta = 0.f;
  std::vector<GemmGroup> groups;
};

class GemmRunner {
 public:
  GemmRunner(cudaStream_t stream, int side_streams = kAutoStreams);
  ~GemmRunner();
  GemmRunner(const GemmRunner&) = delete;
  GemmRunner& operator=(const GemmRunner&) = delete;

  void run(const GemmCall&, GemmImpl impl);
  cudaStream_t stream() const { return stream_; }
  /// True when the last kGrouped call fell back to kLoop (cuBLAS refused the types).
  bool grouped_fallback() const { return grouped_fallback_; }
  /// Why the last kWgmma/kAuto call did not use a wgmma kernel (empty when it did).
  const std::string& wgmma_refusal() const { return wgmma_refusal_; }

 private:
  void one(cublasHandle_t h, const GemmCall& c, const GemmGroup& g);
  bool try_wgmma(const GemmCall& c, bool chosen_by_auto);
  bool try_wgmma_wgrad(const GemmCall& c, bool chosen_by_auto);
  cudaStream_t stream_;
  cublasHandle_t handle_{};
  std::vector<cudaStream_t> side_;
  std::vector<cublasHandle_t> side_handles_;
  std::vector<cudaEvent_t> side_events_;
  cudaEvent_t fork_{};
  void* tables_ = nullptr;  // device: 3 pointer tables
  bool grouped_fallback_ = false;
  std::string wgmma_refusal_;
};

}  // namespace moehub::gpu
