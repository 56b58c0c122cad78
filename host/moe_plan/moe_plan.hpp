// moehub::plan -- host-side planning of one MoE layer over an expert-parallel group:
// the ring schedule, the per-hop communication volumes of the two ring modes and the
// choice between them, and the device-buffer plans (bytes per rank) of the ring and of
// the all-to-all baseline with their predicted peaks.
//
// Notation (all per rank): T = tokens_per_rank, H = hidden, F = ffn, E = experts,
// k = top_k, N = ep, E_l = E / N (local experts), d = dtype_bytes (activations and
// weights, bf16 = 2), a = accum_bytes (output / input-gradient accumulators, fp32 = 4),
// g = grad_bytes (weight-gradient partitions that travel the ring).
// One expert's weight partition on this rank: W = 3 * H * (F / etp) elements
// (gate [H][F], up [H][F], down [F][H]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moehub::plan {

struct MoeProblem {
  std::int64_t tokens_per_rank;  ///< T, tokens entering the MoE block on each rank
  int hidden;                    ///< H
  int ffn;                       ///< F, width of one expert
  int experts;                   ///< E, routed experts in the layer
  int top_k;                     ///< k
  int ep;                        ///< N, expert-parallel ranks (experts % ep == 0)
  int dtype_bytes = 2;           ///< d, activations and weights (bf16)
  int etp = 1;                   ///< expert tensor parallelism (F % etp == 0)
  int accum_bytes = 4;           ///< a, output and d_x accumulators (fp32)
  /// g, expert-weight gradient partitions that travel the ring (expert routing). bf16 as
  /// the weights, as in RelayMoE Table 2 (backward moves 2 x E_local x W per hop); each hop
  /// adds its fp32 GEMM result into them (one rounding per hop). 4 = fp32 partial sums.
  int grad_bytes = 2;
};

/// Throws std::invalid_argument naming the field and its allowed range when the
/// problem is not valid (non-positive sizes, top_k > experts, experts % ep, ffn % etp,
/// dtype/accum/grad bytes not in {1, 2, 4, 8}).
void validate(const MoeProblem&);

enum class RingMode { kExpert, kToken };
const char* to_string(RingMode);  ///< "expert" / "token"

// Per-hop bytes each rank sends (RelayMoE Table 2):
//   expert_fwd = E_l * W * d
//   expert_bwd = E_l * W * (d + g)            weights of the next partition merged with the
//                                              accumulated weight gradients of the previous one
//   token_fwd  = T*H*d + T*k*(4 + 4) + T*H*a   tokens, routing metadata (int32 ids + fp32
//                                              weights per top-k slot), output accumulators
//   token_bwd  = 2*T*H*d + T*k*(4 + 4) + T*H*a + T*k*4
//                                              tokens, d_out, routing metadata, accumulated
//                                              d_x and accumulated d_topk_weights
struct HopVolumes { double expert_fwd_bytes, expert_bwd_bytes, token_fwd_bytes, token_bwd_bytes; };
HopVolumes hop_volumes(const MoeProblem&);

// The two parts of a hop's volume (their sum is the hop_volumes entry): the payload of the
// partition that moves on to the next rank, and the accumulators of the previous hop's
// partition, which travel one hop behind it (so the first hop of a pass carries only a
// payload, and one transfer after the last hop only accumulators, back to their owner):
//   expert: payload E_l*W*d; accumulators 0 (fwd), E_l*W*g (bwd)
//   token:  payload T*H*d + T*k*(4 + 4) (fwd), 2*T*H*d + T*k*(4 + 4) (bwd);
//           accumulators T*H*a (fwd), T*H*a + T*k*4 (bwd)
struct HopParts { double payload_bytes, accum_bytes; };
HopParts hop_parts(const MoeProblem&, RingMode, bool backward);

struct ModeChoice { RingMode mode; HopVolumes volumes; std::string reason; };  // reason: one human line with both volumes
/// The smaller forward+backward per-hop volume wins (ties -> expert routing).
ModeChoice choose_ring_mode(const MoeProblem&);

// Ring schedule: at hop h in [0, n), rank r computes with the partition owned by (r - h) mod n,
// receives the next one from (r - 1) mod n and sends its current one to (r + 1) mod n.
// Throws std::invalid_argument unless 0 <= rank < n, 0 <= hop < n, n >= 1.
int ring_partition_at_hop(int rank, int hop, int n);
int ring_send_peer(int rank, int n);
int ring_recv_peer(int rank, int n);

// Hop chunks: a hop's matched rows, grouped by local expert (rows_per_expert[i] rows for
// local expert i, consecutive), are processed in chunks of at most max_rows_per_chunk rows:
// consecutive whole experts while they fit, and an expert with more rows than the limit
// split into the fewest near-equal pieces that fit, one chunk each (its weight gradient then
// accumulates over its pieces). max_rows_per_chunk = 0 means one chunk for the whole hop;
// kOneExpertPerChunk (-1) one chunk per expert with rows, never split (an empty expert joins
// the chunk before it, or the next when it leads), so the buffers hold the largest expert.
// Returns the chunks in order, covering every row once; expert_rows[i] is the rows of local
// expert first + i in the chunk (none when there are no experts). Throws
// std::invalid_argument for a limit below -1.
constexpr std::int64_t kOneExpertPerChunk = -1;
struct HopChunk {
  int first, last;  ///< local experts [first, last)
  std::int64_t rows;
  std::vector<std::int64_t> expert_rows;  ///< last - first entries
};
std::vector<HopChunk> hop_chunks(const std::vector<std::int64_t>& rows_per_expert, std::int64_t max_rows_per_chunk);
/// The largest chunk's rows (0 when there are no rows).
std::int64_t max_chunk_rows(const std::vector<std::int64_t>& rows_per_expert, std::int64_t max_rows_per_chunk);

// Device-buffer plans (bytes) per rank for one layer forward and backward, from exact per-rank routing counts;
// each named buffer with its size, and the predicted peak (max over the phases of the sum of live buffers).
//
// Both plans count what the layer holds on the device from its input to its input
// gradient: the input, routing and output the caller provides or receives are counted
// (they are live during the layer), persistent model state (the rank's own expert
// weights and their gradients) is not.
//
// All-to-all plan (R_s = rows_sent = T*k token-expert rows this rank dispatches,
// R_r = rows_received for its local experts):
//   input            T*H*d         routing        T*k*(4+4)
//   permuted_input   R_s*H*d       top-k-expanded input sorted by destination rank
//   received         R_r*H*d       dispatched rows for the local experts
//   expert_gate_up   R_r*2F*d      x Wg | x Wu (2F per row)
//   expert_act       R_r*F*d       silu(gate) * up
//   expert_output    R_r*H*d       act Wd
//   combine_buffer   R_s*H*d       expert outputs returned to the tokens' rank
//   output           T*H*d         unpermute with the weighted sum
//   d_output         T*H*d         d_permuted      R_s*H*d     d_received  R_r*H*d
//   d_act            R_r*F*d       d_gate_up       R_r*2F*d    d_expert_input R_r*H*d
//   d_dispatch_back  R_s*H*d       d_input         T*H*d       d_topk_weights T*k*4
// Forward keeps received, expert_gate_up, expert_act and combine_buffer for backward
// (the tensors the standard path saves); every other buffer is freed once its consumer
// ran. Phases (live set = input, routing and the saved tensors so far, plus):
//   fwd permute: permuted_input | dispatch: permuted_input, received | gate/up GEMM,
//   activation, down GEMM: their inputs and outputs | combine: expert_output,
//   combine_buffer | unpermute: output.
//   bwd (output and d_output live throughout): unpermute: d_permuted | combine
//   (d_out to the experts): d_permuted, d_received | down GEMM: d_received, d_act |
//   activation: d_act, d_gate_up | gate/up GEMM: d_gate_up, d_expert_input | dispatch
//   back: d_expert_input, d_dispatch_back | permute back: d_dispatch_back, d_input.
// The peak is normally "bwd combine": the saved expanded tensors plus the two expanded
// gradient buffers of the exchange.
// max_rows_per_local_expert is checked (<= R_r <= E_l * it) but does not change the
// peak: all local experts run in one grouped GEMM over the R_r rows.
//
// Ring plan (m = max_rows_matched_in_one_hop, the largest number of token-expert rows
// one rank computes in one hop; c = max_rows_in_one_chunk, the largest hop chunk (see
// hop_chunks), or m when the hop is not chunked (argument < 0): the per-hop buffers below
// hold one chunk, c rows, and are reused by the hop's chunks):
//   input            T*H*d         routing        T*k*(4+4)      output  T*H*d
//   output_accum     T*H*a         (forward; freed when the output is written)
//   d_output         T*H*d         d_input_accum  T*H*a          d_topk_weights T*k*4
//   (expert mode with a == d: the hops add straight into output / d_input, rounding once
//   per add; there is no separate accumulator)
//   expert mode:  weights_current, weights_prefetch   E_l*W*d each
//                 wgrad_accum, wgrad_inflight          E_l*W*g each (backward)
//                 after the last hop the owner receives its partition's gradient sum into
//                 the free wgrad buffer and converts it into the (fp32, persistent) parameter
//                 gradient: phase "bwd weight gradient home" (when g = 4 it is received
//                 straight into the parameter gradient and the phase holds only the sender)
//   token mode:   tokens_current, tokens_prefetch      T*(H*d + k*8 + H*a) each (forward)
//                                                       T*(2H*d + k*8 + H*a + k*4) each (backward)
//   per hop:      hop_x m*H*d, hop_gate_up m*2F*d, hop_act m*F*d, hop_y m*H*d (forward);
//                 hop_dy m*H*d, hop_d_act m*F*d, hop_d_gate_up m*2F*d, hop_d_x m*H*d (backward)
// freed before the next hop. Inside a hop each intermediate is freed after its last use:
//   fwd: gather hop_x | gate/up GEMM: hop_x, hop_gate_up | activation: hop_gate_up,
//        hop_act | down GEMM: hop_act, hop_y (scattered with the gate weights into the
//        accumulator)
//   bwd (recomputation): gather hop_x, hop_dy | recompute hop_gate_up, hop_act |
//        down GEMM: + hop_d_act (dy Wd^T; d_topk_weights = dot(dy Wd^T, act); dWd) |
//        activation: hop_x, hop_gate_up, hop_d_act, hop_d_gate_up | gate/up GEMM:
//        hop_x, hop_d_gate_up, hop_d_x (dWg, dWu; scatter-add into d_input_accum).
// Expert routing, backward: the weight-gradient GEMMs of a hop accumulate into the
// partial sums received from the previous rank (wgrad_accum), while the sums of the
// previous hop leave (wgrad_inflight) together with the next weights.
struct Buffer { std::string name; std::size_t bytes; };
struct BufferPlan { std::vector<Buffer> buffers; std::size_t peak_bytes;
                    std::string peak_phase;  ///< the phase at which the peak occurs
};
BufferPlan plan_a2a(const MoeProblem&, std::int64_t rows_sent, std::int64_t rows_received, std::int64_t max_rows_per_local_expert);
BufferPlan plan_ring(const MoeProblem&, RingMode, std::int64_t max_rows_matched_in_one_hop,
                     std::int64_t max_rows_in_one_chunk = -1);

/// Bytes of the named buffer in a plan; throws std::out_of_range when absent.
std::size_t buffer_bytes(const BufferPlan&, const std::string& name);

}  // namespace moehub::plan
