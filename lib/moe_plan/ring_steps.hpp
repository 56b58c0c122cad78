// moehub::plan ring steps -- the one description of a ring pass (expert or token
// routing, forward or backward) that the GPU harness executes and the simulator's ring
// schedules replay: per rank and hop, the visiting partition, its matched rows split into
// chunks (hop_chunks), the bytes of the hop's transfer (payload and accumulators, the
// hop_parts split) and each chunk's kernels in launch order with their GEMM shapes,
// memory traffic and accumulator element size.
//
// Kernels of one chunk (n_e = the chunk's rows of local expert e, M = sum n_e):
//   forward:   gather_x          M*H*d*2 bytes (read + write)
//              gemm1_gate_up     {n_e, 2F, H} per expert
//              swiglu            M*3F*d
//              gemm2_down        {n_e, H, F}
//              wait_accum        (token routing: the output accumulator that arrives
//                                 with this hop's transfer; no work)
//              scatter_out       M*H*(d + 2a): read y, read + write the accumulator (a
//                                 = accumulator bytes), weighted by the gate weights
//   backward (the intermediates are recomputed in the hop):
//              gather_x_d_out    M*H*d*4 (the rows of x and of d_out: two kernels)
//              gemm1_gate_up     {n_e, 2F, H}
//              gemm_d_act        {n_e, F, H}       dA' = d_out Wd^T (unscaled)
//              swiglu_backward   M*6F*d            recomputes the activation, gives dGU,
//                                                  A and the gate-weight gradient
//   expert routing, whole hops (chunk_rows 0): gemm_d_x {n_e, H, 2F}, scatter_d_x
//              (M*H*(d + 2a), into the rank's own accumulator), wait_accum (the
//              weight-gradient partition arrives with this hop's transfer), gemm_d_w
//              {H, 2F, n_e} and {F, H, n_e} into it (g bytes); chunked hops: wait_accum,
//              gemm_d_w, gemm_d_x, scatter_d_x (the weight gradients first, so that the
//              d_x rows can overwrite the gathered x)
//   token routing: gemm_d_x, gemm_d_w into the resident fp32 parameter gradient, wait_accum,
//              scatter_d_x (into the travelling accumulator), scatter_d_topk_weights
//              (M*4*3)
// A hop's transfer (ring_exchange: send to (r+1) mod N, receive from (r-1) mod N) carries
// the payload of the partition computed now on to the next rank (hops 0..N-2) and the
// accumulators of the partition computed at the previous hop (hops >= 1); the compute of
// hop h waits for the transfer of hop h-1 (its payload) before its first kernel and for
// the transfer of hop h before the kernel after wait_accum. One more transfer after the
// last hop returns each accumulator to its owner.
//
// Around the hops each rank runs a few memory kernels of its own (T = the rank's tokens,
// W = its experts x 3HF weight elements; the parameter gradient is fp32), as the GPU
// harness's ring schedules issue them (host/gpu/schedules/ring_expert.cpp, ring_token.cpp):
//   prologue, before the pass's first transfer:
//     expert routing: zero_accum   T*H*a (the output / d_x itself when a = d, else an
//                                  a-byte accumulator)
//     token routing, backward: zero_d_w   W*4 (the resident parameter gradient)
//   epilogue, after the pass's last transfer (the accumulators are home):
//     accum_to_output      T*H*(a + d), when a != d (the accumulator rounded into the
//                          output / d_x)
//     expert routing, backward, g != 4: grad_to_param   W*(g + 4) (the partition's
//                          gradient widened into the parameter gradient)
//     token routing, backward, a != d: copy_d_topk_weights   T*k*4*2
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "moe_plan/moe_plan.hpp"

namespace moehub::plan {

/// Routing of one layer as the ring sees it: ranks own contiguous expert ranges.
struct RingRouting {
  std::vector<int> first_expert;                  ///< [N+1]: rank g owns experts [first_expert[g], first_expert[g+1])
  std::vector<std::int64_t> tokens;               ///< [N] tokens per rank
  std::vector<std::vector<std::int64_t>> pairs;   ///< [N][E] pairs of rank g's tokens routed to expert e
  int ranks() const { return static_cast<int>(tokens.size()); }
};
/// Every rank owns E / N experts (E % N == 0) and `tokens` tokens; counts rank-major [N][E].
RingRouting uniform_ring_routing(int ranks, int experts, std::int64_t tokens, const std::vector<std::int32_t>& counts);
/// Throws std::invalid_argument("<who>: ...") unless the routing is consistent: N >= 1
/// ranks, N + 1 non-decreasing expert bounds from 0, no negative token count, N rows of
/// E pair counts, none negative.
void validate_routing(const RingRouting& routing, const std::string& who);

struct RingOptions {
  std::int64_t chunk_rows = 0;  ///< hop_chunks limit (0: one chunk per hop)
  int accum_bytes = 4;          ///< output / d_x accumulators (a)
  int grad_bytes = 4;           ///< travelling weight-gradient partitions (g, expert routing)
};

struct GemmDims { std::int64_t m, n, k; };
struct KernelStep {
  std::string name;               ///< gather_x, gemm1_gate_up, ... (list above)
  std::vector<GemmDims> gemms;    ///< GEMM kernels: one group per expert of the chunk
  double bytes = 0;               ///< memory kernels: bytes read + written
  int accum_bytes = 0;            ///< element bytes of the accumulator the kernel adds into (0: none)
  bool is_gemm() const { return !gemms.empty(); }
  bool is_wait() const { return name == "wait_accum"; }
};
struct ChunkSteps {
  int first, last;                        ///< local experts [first, last) of the visiting partition (token: of the rank)
  std::int64_t rows;
  std::int64_t pair_offset;               ///< first pair in the pair order (hop_rows start + previous chunks)
  std::vector<std::int64_t> expert_rows;  ///< last - first entries
  std::vector<KernelStep> kernels;
};
struct HopSteps {
  int rank, hop;
  int partition;                  ///< ring_partition_at_hop(rank, hop, N)
  double payload_bytes = 0;       ///< this hop's transfer: payload sent on (0 at the last hop)
  double accum_bytes = 0;         ///< this hop's transfer: the previous hop's accumulators (0 at hop 0)
  std::vector<ChunkSteps> chunks;
};
struct RingPassSteps {
  RingMode mode;
  bool backward;
  std::vector<std::vector<HopSteps>> hops;  ///< [rank][hop]
  std::vector<double> final_accum_bytes;    ///< [rank] the transfer after the last hop
  std::vector<std::vector<KernelStep>> prologue;  ///< [rank] memory kernels before the pass's first transfer
  std::vector<std::vector<KernelStep>> epilogue;  ///< [rank] memory kernels after its last transfer
};

/// The steps of one ring pass. `dtype_bytes` is d (bf16: 2). Throws std::invalid_argument
/// for inconsistent routing (sizes, a negative count) or options.
RingPassSteps ring_pass_steps(const RingRouting& routing, int hidden, int ffn, int top_k, int dtype_bytes, RingMode mode,
                              bool backward, const RingOptions& options);
/// One rank's hops of that pass: `ring_pass_steps(...).hops[rank]`, without the other
/// ranks' (N times less work). Throws std::invalid_argument as ring_pass_steps does, and
/// for a rank outside [0, N).
std::vector<HopSteps> ring_hop_steps(const RingRouting& routing, int rank, int hidden, int ffn, int top_k, int dtype_bytes,
                                     RingMode mode, bool backward, const RingOptions& options);

}  // namespace moehub::plan
