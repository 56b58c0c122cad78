// moehub::plan -- host-side planning of one MoE layer over an expert-parallel group:
// the ring schedule, the per-hop communication volumes of the two ring modes and the
// choice between them, and hop chunks. The steps of a ring pass are in ring_steps.hpp,
// the device memory a rank of the GPU harness holds in layer_memory.hpp.
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

}  // namespace moehub::plan
