// A dispatch scheme's schedule: for every GPU, the ordered list of operations
// one MoE layer executes on that GPU's stream, with their host-side costs made
// explicit. Plain C++ (no SystemC): the platform executes a Schedule on the
// modelled hardware; one file per scheme builds it (megatron.cpp, ideal.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/gemm_shape.hpp"
#include "moe_plan/moe_plan.hpp"
#include "workload/routing.hpp"

namespace moehub {

/// A kernel's loop that polls a flag in memory before a group of its thread
/// blocks may start (software: the kernel's code decides these figures).
struct PollParams {
  /// Assumption: a poll loop with a short back-off (__nanosleep) re-reads the
  /// flag about once a microsecond; not measured here.
  double poll_interval_ns = 1000;
  /// Assumption: one poll (a volatile load that misses L1 plus the loop
  /// around it) keeps its SM busy for about one L2 round trip, ~100 ns;
  /// not measured here.
  double poll_sm_ns = 100;
  /// Assumption: a poll reads one 32-byte sector of the flag's line and the
  /// read reaches HBM (the flag is written by another agent); not measured.
  double poll_bytes = 32;
};

/// Kernels one phase launches: fixed + per_local_expert x (experts on the GPU),
/// rounded.
struct PhaseKernels {
  double fixed = 0;
  double per_local_expert = 0;
  /// The count for `local_experts`, at least `at_least`.
  int count(int local_experts, int at_least = 0) const;
};

/// Kernels Megatron-Core's MoE layer (all-to-all token dispatcher, experts as
/// SequentialMLP) launches per phase. Our measurement on one H200 with PyTorch
/// eager, fitted by host/scripts/fit_megatron.py --stat median to runs 9 and 10
/// (docs/results/data/megatron_h200_2026-12-02_run9-10_fit.json, docs/results/megatron-h200.md):
/// each figure is the phase's host time at host-bound sizes in units of the
/// fitted per-launch cost (host.kernel_launch_us), so it counts host work in
/// launches; a line through the two measured models (8 and 60 local experts).
/// The `megatron` schedule issues exactly these.
struct MegatronForwardKernels {
  PhaseKernels router;         ///< router GEMM, softmax, top-k, aux-loss pieces
  PhaseKernels permute;        ///< routing map to indices, counts, gather
  PhaseKernels dispatch_calls; ///< host work of the token and prob all-to-all calls
  PhaseKernels sort;           ///< sort_chunks_by_idxs: split and cat per chunk
  PhaseKernels experts;        ///< per expert fc1 GEMM, SwiGLU, prob scaling, fc2 GEMM
  PhaseKernels unsort;         ///< the reverse sort
  PhaseKernels combine_calls;  ///< host work of the combine all-to-all call
  PhaseKernels unpermute;      ///< scatter-add of the weighted expert outputs
  PhaseKernels shared_expert;  ///< fc1, SwiGLU, fc2, gate GEMM, sigmoid, product
};

struct MegatronProfile {
  /// `megatron`: the forward without gradients.
  MegatronForwardKernels forward{{11.73, 0.02}, {11.08, 0.059}, {1.95, 0.001}, {2.5, 0.072}, {6.57, 5.7},
                                 {1.92, 0.036}, {1.13, 0.005}, {2.47, 0.015}, {13.82, 0}};
  /// `megatron-train`: the forward with autograd recording (more host work per op).
  MegatronForwardKernels train_forward{{22.95, 0.029}, {12.51, 0.059}, {1.91, 0.004}, {2.84, 0.116}, {5.74, 6.583},
                                       {1.99, 0.054}, {1.18, 0.006}, {2.8, 0.02}, {18.42, 0}};
  PhaseKernels backward{33.65, 9.844};  ///< `megatron-train`: the whole backward pass
  /// Rate of the unpermutation's scatter-add, GB/s of the expert outputs it adds
  /// into the tokens (T k H 2 bytes: its time follows the element adds, whatever
  /// H and k; host/scripts/scatter_add_rate.py times 508 us for Mixtral and
  /// 503 us for Qwen1.5 at 16,384 tokens, the same T k H). Megatron-Core
  /// unpermutes with a scatter-add (atomic adds into the output), far below the
  /// HBM rate: our measurement on one H200, fitted by fit_megatron.py --stat
  /// median to runs 9 and 10 (Mixtral forward at 8,192 and 32,768 tokens, where
  /// the GPU is bound). Assumption: the rate is the GH100's (atomics at the L2),
  /// so the H100 and H800 nodes keep it.
  double unpermute_add_gbps = 457;
  /// Megatron-Core with one expert-parallel rank: its all-to-alls and count
  /// exchange are bypassed (world size 1); only their host calls remain.
  bool single_rank = false;
};

/// Parameters of the overlapped software baselines (docs/baselines.md).
struct BaselineOptions {
  /// tutel: token chunks the dispatch, experts and combine are pipelined over;
  /// 0: adaptive (the largest of 1, 2, 4, 8 that leaves every local expert at
  /// least tutel_min_rows_per_chunk rows per chunk: our stand-in for Tutel's
  /// run-time search over pipelining degrees, which measures each candidate).
  int tutel_pipeline_degree = 0;
  /// Assumption: below about 256 rows a GEMM chunk no longer fills an H100-class
  /// GPU's SMs with 128 x 128 tiles, so further chunking only adds launches.
  std::int64_t tutel_min_rows_per_chunk = 256;
  /// tutel: every expert's buffer holds capacity_factor x (k x tokens / experts)
  /// rows, padded with zeros (Tutel's static-capacity mode; assumption: 1.0,
  /// Tutel's default capacity factor).
  double tutel_capacity_factor = 1.0;
  /// comet: SMs dedicated to the communication thread blocks. Assumption: Comet
  /// adapts this per shape; 16 of 132 is in the range its paper reports.
  int comet_comm_sms = 16;
  /// comet / ccfuser: bytes per routed row of the tile-to-token layout (or
  /// remote address table) built on the GPU before the fused kernels
  /// (assumption: one int64 index and one int64 offset per row).
  double layout_bytes_per_row = 16;
};

/// Software parameters of a schedule (they belong to the library being
/// modelled, not to the hardware).
struct ScheduleOptions {
  /// SMs an all-to-all kernel occupies to issue its stores. Assumption: NCCL
  /// runs an all-to-all on its channels, one thread block (SM) each; 24 is
  /// in the range NCCL uses on 8-GPU NVSwitch nodes. At 64 B/cycle per SM this
  /// issues far faster than the links drain, so the figure matters little.
  int comm_sms = 24;
  /// a2a-uniform: how many all-to-alls run back to back (the host launches
  /// the next while the GPUs run the current one, as a timing loop does).
  int repeat = 1;
  /// ring-expert / ring-token: bytes per element of the accumulators that travel the
  /// ring one hop behind the partitions (output and input-gradient accumulators) and
  /// of the expert-weight gradient partitions, as moehub::plan::MoeProblem's
  /// accum_bytes and grad_bytes. Each in {1, 2, 4, 8}. Defaults: the GPU harness's
  /// (moehub-gpu --ring-accum bf16, host/gpu/layer.hpp LayerConfig::ring_accum,
  /// which ring_sim_settings records as 2 and 2), so that a simulated ring is the
  /// ring moehub-gpu runs; RelayMoE Table 2's fp32 accumulators are
  /// --set schedule.ring_accum_bytes=4.
  int ring_accum_bytes = 2;
  int ring_grad_bytes = 2;
  /// ring-expert / ring-token: rows per hop chunk, as moehub-gpu's --hop-chunk-rows
  /// (moe_plan's hop_chunks): 0 one chunk per hop (whole hops, as RelayMoE describes
  /// the hop), -1 one chunk per local expert, N > 0 at most N rows. Default -1, the
  /// harness's (LayerConfig::hop_chunk_rows).
  std::int64_t ring_chunk_rows = -1;
  /// Polling loops of kernels whose groups wait for a flag.
  PollParams poll;
  /// moehub*: rows a rowspMalloc region holds (0: every token of the job,
  /// the conservative static size: an expert receives each token at most once).
  std::int64_t rowsp_region_rows = 0;
  /// moehub*: bytes of one remote store of the routing kernel's threads
  /// (assumption: a warp stores 128 contiguous bytes, one NVLink packet; at
  /// most 128, the packet manager's line).
  int rowsp_store_bytes = 128;
  /// moehub*: bytes of a row's source-information column, written by a
  /// st.rowsp.nop (assumption: source GPU, token index and top-k slot in one
  /// 16-byte flit).
  int source_info_bytes = 16;
  /// megatron / megatron-train: kernels per phase of the real dispatcher.
  MegatronProfile megatron;
  /// fastermoe, tutel, comet, ccfuser.
  BaselineOptions baseline;
};

/// When the thread-block groups of a GEMM op may start.
enum class ReleaseKind {
  kLaunch,  ///< every group with the kernel
  kSignal,  ///< group g when flag release_flags[g] is set (hardware signal, no SM cost)
  kPoll,    ///< group g at the first poll of flag release_flags[g] at or after it is set
};

enum class OpKind {
  kGemm,       ///< grouped GEMM on the tensor cores (thread-block engine)
  kMemory,     ///< streaming kernel bounded by HBM bandwidth
  kAllToAll,   ///< collective: remote stores through hub, NVLink, NVSwitch
  kHostSync,   ///< host waits for the stream (device-to-host copy + synchronise)
  kRowStores,  ///< a kernel's row stores (st.rowsp or st) at per-row ready times (Schedule::row_transfers)
  kRowspMalloc,  ///< host MMIO: registers this GPU's rowsp regions (Op::regions) with its hub
};

struct Op {
  OpKind kind = OpKind::kMemory;
  std::string name;      ///< e.g. "expert_gemm1"
  std::string phase;     ///< breakdown category, e.g. "expert_compute"
  bool launch = true;    ///< the host launches it (costs host.kernel_launch_us)
  bool collective_setup = false;  ///< plus host.collective_setup_us
  std::vector<GemmShape> gemms;   ///< kGemm: one shape per group
  double bytes = 0;               ///< kMemory: bytes read + written
  /// kMemory: the kernel's own rate limit, GB/s of `bytes` (<= 0: as fast as
  /// HBM serves it); its traffic still shares HBM with the GPU's other flows.
  double max_gbps = 0;
  int collective = -1;            ///< kAllToAll: index into Schedule::collectives
  /// The GPU stream the op runs on (0: compute; 1: a copy/communication
  /// stream that overlaps with it). Ops of one stream run in list order.
  int stream = 0;
  /// Ops of the same GPU (indices into its list) that must have finished
  /// before this one starts, as CUDA events between streams express it.
  std::vector<int> after;
  /// SMs the kernel runs on: [first_sm, first_sm + num_sms) (num_sms 0: to
  /// the last SM). Kernels whose SM sets overlap queue for the shared SMs in
  /// launch order.
  int first_sm = 0;
  int num_sms = 0;
  /// kGemm: thread-block groups the tiles split into (contiguous, near-equal).
  int groups = 1;
  /// kGemm: how the groups are released.
  ReleaseKind release = ReleaseKind::kLaunch;
  /// kGemm with kSignal/kPoll: per group the flag (of this GPU) that releases
  /// it; a group without an entry, or with -1, starts at launch.
  std::vector<int> release_flags;
  /// kPoll: the polling loop's costs.
  PollParams poll;
  /// When the op finishes it sets this flag of its GPU (-1: none), so that
  /// "group g of kernel B starts when op A finishes" is A.sets_flag = f,
  /// B.release_flags[g] = f.
  int sets_flag = -1;
  /// kRowStores: index into Schedule::row_transfers (this GPU's rows of it).
  /// kGemm released by region data: the transfer whose rows it waits for.
  int row_transfer = -1;
  /// kRowspMalloc: the regions (indices into Schedule::regions) it registers.
  /// kGemm: per shape the region holding that shape's input rows; non-empty
  /// makes one thread-block group per (shape, row of output tiles), released
  /// by the region's data: kSignal by the hub's DAM Ready signals, kPoll by
  /// a software flag the producers write once all their rows are acknowledged.
  std::vector<int> regions;
  /// kRowStores: the rows become ready (RowStore::ready_frac) over the time
  /// of a streaming kernel of this many bytes from the op's start ...
  double ready_window_bytes = 0;
  /// ... or over the compute makespan of this grouped GEMM.
  std::vector<GemmShape> ready_window_gemms;
};

/// A region of rows a consumer GPU registers with rowspMalloc: the target of
/// st.rowsp stores, addressed by (MallocID, RowID, RowOffset).
struct RowRegion {
  int gpu = 0;                     ///< the consumer
  int expert = -1;                 ///< the local expert whose input rows it holds
  std::uint32_t row_bytes = 0;     ///< a row: the token's hidden vector plus its source-information column
  std::int64_t capacity_rows = 0;  ///< rows the region can hold
  std::int64_t expected_rows = 0;  ///< rows the routing sends it (the DAM's total)
};

/// One row a kernel stores.
struct RowStore {
  int dst = 0;
  /// st.rowsp: the RowID (unique within its region); st: the row's id (unique in the transfer)
  std::int64_t row_id = 0;
  int region = -1;             ///< st.rowsp: index into Schedule::regions; -1: plain st
  std::int64_t slot = 0;       ///< st: the row's slot in the destination's receive buffer
  double ready_frac = 0;       ///< when the kernel has the row: a fraction of its op's ready window, in [0, 1]
};

/// Rows stored by one kernel on every GPU (a dispatch or a combine).
struct RowTransfer {
  std::string name;
  std::uint32_t row_bytes = 0;         ///< data bytes of a row
  std::uint32_t source_info_bytes = 0; ///< st.rowsp: plus a .nop store of the source column (0: none)
  std::uint32_t store_bytes = 128;     ///< bytes per store (<= 128)
  int sms = 1;                         ///< SMs issuing the stores (store rate)
  std::vector<std::vector<RowStore>> rows;  ///< per source GPU, in the kernel's order
};

/// Which MoE-Hub units a schedule uses (it needs hub.implementation: moehub
/// when `aau` is set).
struct HubUse {
  bool aau = false;  ///< st.rowsp through the Address Allocation Unit
  bool rpm = false;  ///< Runtime Packet Manager at egress (else a plain FIFO write buffer)
  bool dam = false;  ///< Data Availability Manager signals the consumer GEMM (else nothing)
};

/// One all-to-all: which rows go from every GPU to every other.
struct AllToAll {
  std::string name;
  std::uint32_t row_bytes = 0;
  int sms = 1;
  /// A bulk transfer (large flat buffers such as a ring hop's weights):
  /// simulated at sim.bulk_granularity instead of sim.granularity.
  bool bulk = false;
  /// rows[src][dst]: global ids of the rows src sends to dst (src == dst:
  /// copied locally). Ids are unique within the collective.
  std::vector<std::vector<std::vector<std::int64_t>>> rows;
  /// GPU each row id must arrive at (index = row id).
  std::vector<std::int32_t> expected_dst;
};

/// The (token, expert) pairs a schedule with a fixed capacity per expert
/// (tutel) leaves out: a pair beyond its expert's capacity on its token's GPU
/// is dropped (not sent, not computed; its result is zero), so such a
/// schedule does less work than the routing asks for when the load is uneven.
struct CapacityDrops {
  bool limited = false;        ///< the schedule has a capacity per expert
  double capacity_factor = 0;  ///< its factor (limited only)
  std::int64_t dropped = 0;    ///< (token, expert) pairs of the routing beyond capacity
};

struct Schedule {
  std::string name;
  std::vector<std::vector<Op>> ops;  ///< per GPU
  std::vector<AllToAll> collectives;
  std::vector<RowTransfer> row_transfers;
  std::vector<RowRegion> regions;
  HubUse hub;
  CapacityDrops capacity;  ///< every pair is computed unless capacity.limited
};

/// Megatron-Core's non-overlapped expert parallelism (routing, permute, count
/// exchange with host synchronisation, all-to-all dispatch, per-expert GEMMs
/// with activation, all-to-all combine, unpermute with the weighted sum), with
/// the kernels of opt.megatron; `backward` appends the layer's backward pass.
Schedule build_megatron(const ModelConfig& model, const Routing& routing,
                        const ExpertPlacement& placement, const ScheduleOptions& opt,
                        bool backward = false);
/// The ideal layer: local routing, local expert compute, local scaling, no
/// communication and no software overhead beyond kernel launches.
Schedule build_ideal(const ModelConfig& model, const Routing& routing,
                     const ExpertPlacement& placement, const ScheduleOptions& opt);

/// Uniform all-to-alls of every GPU's token rows (equal splits), `opt.repeat`
/// of them back to back, each with the host cost of a collective: the
/// counterpart of a measured loop of all_to_all calls.
Schedule build_a2a_uniform(const ModelConfig& model, const Routing& routing,
                           const ExpertPlacement& placement, const ScheduleOptions& opt);

/// Ring execution (RelayMoE), forward and backward: expert routing
/// (`token_routing` false) or token routing (true). See ring.cpp.
Schedule build_ring(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                    const ScheduleOptions& opt, bool token_routing);

/// MoE-Hub (moehub.cpp): `variant` is "moehub" (full), "moehub-base"
/// (destination-agnostic stores, polling, plain egress), "moehub-pkt" (+ the
/// packet manager) or "moehub-dep" (+ the DAM's signals, no polling).
Schedule build_moehub(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                      const ScheduleOptions& opt, const std::string& variant);
/// FasterMoE: the dispatch split into G pairwise exchanges, each step's expert
/// GEMMs overlapping the next step's exchange (fastermoe.cpp).
Schedule build_fastermoe(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                         const ScheduleOptions& opt);
/// Tutel: capacity-padded static shapes, dispatch/experts/combine pipelined
/// over an adaptively chosen number of token chunks (tutel.cpp).
Schedule build_tutel(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                     const ScheduleOptions& opt);
/// Tutel's pipelining degree for this layer (BaselineOptions).
int tutel_pipeline_degree(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                          const BaselineOptions& opt);
/// Comet: tile-level overlap with dedicated communication SMs and flag polling (comet.cpp).
Schedule build_comet(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                     const ScheduleOptions& opt);
/// CCFuser: GEMM kernels that pull their rows from and push their results to
/// peer memory themselves (ccfuser.cpp).
Schedule build_ccfuser(const ModelConfig& model, const Routing& routing, const ExpertPlacement& placement,
                       const ScheduleOptions& opt);

/// Names accepted by build_schedule.
std::vector<std::string> schedule_names();
/// Builds the named schedule; throws std::invalid_argument for an unknown name.
Schedule build_schedule(const std::string& name, const ModelConfig& model, const Routing& routing,
                        const ExpertPlacement& placement, const ScheduleOptions& opt);

}  // namespace moehub
