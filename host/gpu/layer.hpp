// The MoE layer on GPUs: the ranks this process drives and the steps a schedule
// (schedule.hpp; one file per schedule under schedules/) is built from -- routing, the
// counts exchange, the ring engine, named phases -- above the Transport interface.
// Each local rank owns its streams (compute, copy), its memory pool, its cuBLAS runner,
// its inputs (tokens, router weights, its partition of the experts, the upstream
// gradient) and its outputs.
//
// Layouts (row-major): x, d_out [T][H] bf16; w_router [H][E] bf16; a rank's expert
// partition w_part = [Wgu: El][H][2F] | [Wd: El][F][H] bf16, where row h of Wgu_e is
// [Wg_e[h][0..F) | Wu_e[h][0..F)] (El = E / N experts, rank r owns experts
// r*El .. r*El+El-1); gradients d_w_part the same in fp32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device_memory.hpp"
#include "gemm.hpp"
#include "layout.hpp"
#include "moe_plan/moe_plan.hpp"
#include "moe_kernels.hpp"
#include "rank_threads.hpp"
#include "transport.hpp"

namespace moehub::gpu {

using kernels::bf16_t;

/// Type of the ring schedules' accumulators (a2a has none). kFp32: ring-expert adds the
/// output and d_x into fp32 copies converted at the end of the pass, and its travelling
/// weight-gradient partitions are fp32; ring-token's travelling output / d_x accumulators
/// are fp32. kBf16: ring-expert adds straight into the bf16 out / d_x (fp32 arithmetic, one
/// rounding per add), its gradient partitions travel in bf16 (the dW GEMMs add into them,
/// one rounding per hop) and are converted into the fp32 parameter gradient at home;
/// ring-token's output / d_x accumulators travel in bf16 (d_topk_weights stay fp32).
enum class RingAccum { kFp32, kBf16 };
const char* to_string(RingAccum);      ///< "fp32", "bf16"
RingAccum parse_ring_accum(const std::string&);  ///< throws std::invalid_argument naming --ring-accum

struct LayerConfig {
  std::int64_t tokens = 0;  ///< T, tokens per rank
  int hidden = 0, ffn = 0, experts = 0, top_k = 0;
  int ep = 1;               ///< N, ranks
  /// default bf16: with one-expert chunks, the ring's memory target (docs/results/gpu-h200.md)
  RingAccum ring_accum = RingAccum::kBf16;
  /// Ring schedules: a hop's matched rows are processed in chunks of at most this many
  /// rows (consecutive whole local experts while they fit; an expert with more rows is
  /// split into near-equal pieces; plan::hop_chunks); the hop buffers hold the largest
  /// chunk. 0: the whole hop; -1 (plan::kOneExpertPerChunk, the default): one local expert
  /// per chunk, never split, so the hop buffers hold the largest expert's rows.
  std::int64_t hop_chunk_rows = -1;
  int local_experts() const { return experts / ep; }
  PartitionLayout partition() const { return {local_experts(), hidden, ffn}; }
};
/// Throws std::invalid_argument naming the field and its allowed range.
void validate(const LayerConfig&);
/// The ring's settings as moehub-sim's schedule keys and values (ring_accum_bytes,
/// ring_grad_bytes, ring_chunk_rows): what a trace records so that the simulator replays
/// the same ring (--set schedule.KEY=VALUE).
std::vector<std::pair<std::string, std::string>> ring_sim_settings(const LayerConfig&);

/// The planner's problem for this configuration (moe_plan's default byte sizes).
plan::MoeProblem plan_problem(const LayerConfig&);

/// The rows rank `rank` computes at the hop where partition `partition` visits, per local
/// expert, from the all-ranks count matrix [N][E]: ring-expert (the rank's own pairs for
/// the visiting partition's experts) or ring-token (the visiting partition's pairs for the
/// rank's experts). `start`, when given, receives their first position in the owning
/// rank's expert-sorted pairs.
std::vector<std::int64_t> hop_rows(const LayerConfig& c, const CountMatrix& count_matrix, int rank,
                                   int partition, bool expert_mode, std::int64_t* start = nullptr);

/// One configuration of the layer that check and memory run: a schedule with the ring's
/// options. A schedule without ring options (a2a) gives one variant; each ring schedule
/// one per (accumulators, chunk rows), labelled by its name for fp32 / whole hops and
/// "schedule/accum/c<rows>" otherwise.
struct LayerVariant {
  std::string label;
  std::string schedule;  ///< a name in the registry (schedule.hpp)
  RingAccum accum;
  std::int64_t chunk_rows;
};
/// Throws std::invalid_argument for an unknown schedule or accumulator name.
std::vector<LayerVariant> layer_variants(const std::vector<std::string>& schedules,
                                         const std::vector<std::string>& accums,
                                         const std::vector<std::int64_t>& chunk_rows);

struct RankInputs {
  bf16_t* x = nullptr;
  bf16_t* w_router = nullptr;
  bf16_t* w_part = nullptr;
  bf16_t* d_out = nullptr;
};
struct RankOutputs {
  float* probs = nullptr;          ///< [T][E]
  std::int32_t* topk_ids = nullptr;///< [T][k]
  float* topk_weights = nullptr;   ///< [T][k]
  bf16_t* out = nullptr;           ///< [T][H] (the ring accumulates in fp32 within its pass)
  bf16_t* d_x = nullptr;           ///< [T][H] (likewise)
  float* d_topk_weights = nullptr; ///< [T][k]
  float* d_logits = nullptr;       ///< [T][E]
  /// As w_part, fp32: the parameter gradient of the rank's experts. Model state, like the
  /// weights: allocated with the inputs (outside the measured layer), poisoned per run.
  float* d_w_part = nullptr;
};

/// CUDA-event timings of one hop (or, for a2a, of one phase), read after the layer.
struct HopTime {
  int rank;
  std::string pass, mode;
  int hop;
  double compute_us, comm_us, hop_us;
  double compute_start_us, comm_start_us;  ///< relative to the rank's layer start (comm: -1 when none)
};
/// Named phase timings (router, permute, counts exchange, dispatch, ...).
struct PhaseTime {
  int rank;
  std::string name;
  double start_us, dur_us;  ///< start relative to the rank's layer start
  std::string unit;         ///< "compute" or "comm" or "host"
};

struct Rank {
  Rank(int rank, int device);
  ~Rank();
  Rank(const Rank&) = delete;
  Rank& operator=(const Rank&) = delete;
  int rank;
  cudaStream_t comp{}, copy{};
  std::unique_ptr<RankAllocator> mem;
  std::unique_ptr<GemmRunner> gemm;
  RankInputs in;
  RankOutputs out;
  // routing state, valid from the forward pass to the end of the backward pass
  std::int32_t* counts = nullptr;    ///< [E] device
  std::int32_t* offsets = nullptr;   ///< [E+1] device
  std::int32_t* pair_src = nullptr;  ///< [T*k]
  std::int32_t* pair_pos = nullptr;  ///< [T*k]
  CountMatrix count_matrix;          ///< host [N][E], all ranks' counts (exchange_counts)
  double counts_sync_us = 0;         ///< host time of the counts exchange (named host sync)
  // timing
  struct EventRec { std::string pass, mode; int hop; cudaEvent_t c0, c1, x0, x1; bool has_x; };
  std::vector<EventRec> hop_events;
  struct PhaseRec { std::string name, unit; cudaEvent_t a, b; };
  std::vector<PhaseRec> phase_events;
  cudaEvent_t t0{};
  std::vector<cudaEvent_t> event_pool;
  std::size_t events_used = 0;
  cudaEvent_t ev();
};

class LayerSchedule;
struct RingPass;

class MoeLayer {
 public:
  MoeLayer(const LayerConfig&, Transport&, GemmImpl);
  ~MoeLayer();
  const LayerConfig& config() const { return cfg_; }
  std::vector<std::unique_ptr<Rank>>& ranks() { return ranks_; }
  Transport& transport() { return tr_; }
  GemmImpl gemm_impl() const { return impl_; }
  /// Allocates the inputs and the parameter gradient of every local rank (outside the
  /// measured region).
  void allocate_inputs();
  /// Allocates the outputs and poisons them (all bits set: NaN in bf16 and fp32).
  void allocate_outputs();
  void free_outputs();
  /// The schedule's forward, its backward, then the router backward; leaves the outputs
  /// on the device.
  void run(LayerSchedule&);
  /// Waits for every local rank's streams (Transport::wait: NCCL waits poll for failures).
  void synchronize();
  std::vector<HopTime> hop_times();
  std::vector<PhaseTime> phase_times();
  /// Changes the ring options (accumulator type, hop chunk rows) for the next runs;
  /// validated like the configuration.
  void set_ring_options(RingAccum accum, std::int64_t hop_chunk_rows);
  /// Host threads that launch the local ranks' work (rank_threads.hpp): 0 (the default)
  /// one per local rank, as a process per rank would; 1 every rank from the caller's
  /// thread; n, the ranks spread over n threads. Throws std::invalid_argument below 0.
  void set_launch_threads(int n);
  int launch_threads() const { return threads_->threads(); }
  /// fn(li) for every local rank index li, each on its launch thread with its rank's device
  /// current; returns when all have returned (RankThreads::for_each: the first failure is
  /// rethrown after every rank's call). Work of different ranks only: fn must touch no
  /// state another rank's call writes.
  void for_each_rank(const std::function<void(std::size_t)>& fn);

  // ---- steps a schedule is built from --------------------------------------------------
  /// Router (logits, softmax, top-k) and the permutation into expert order, every rank.
  void route();
  /// All-gathers the routing counts into every rank's count_matrix: the layer's one host
  /// synchronisation, timed twice: counts_exchange_host_sync is the host's wall time in the
  /// call (its wait for the routing kernels included), counts_exchange the gap it leaves
  /// on the GPU (routing done to host back). Schedules that need host row
  /// counts (cuBLAS, the ring's hop sizes) call it after route().
  void exchange_counts();
  /// The ring engine (ring_engine.hpp): every hop of one pass over all local ranks.
  void ring_pass(RingPass&);
  /// Named phase timing on a rank's stream.
  void phase_begin(Rank& r, const std::string& name, const std::string& unit, cudaStream_t s);
  void phase_end(Rank& r, const std::string& name, cudaStream_t s);

 private:
  void router_backward(Rank&);

  LayerConfig cfg_;
  Transport& tr_;
  GemmImpl impl_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unique_ptr<RankThreads> threads_;
};

}  // namespace moehub::gpu
