// moehub::plan layer memory -- the device memory one rank of the GPU harness (host/gpu)
// holds over one layer, forward and backward, predicted from the routing counts alone.
//
// The plan replays the harness's allocations in the order its host thread makes them,
// as the harness's tracked allocator (host/gpu/device_memory.cpp) counts them: every
// request rounded up to kAllocGranuleBytes (a request of 0 bytes takes one granule), the
// peak taken at each allocation. The `memory` command prints the plan beside the
// measurement, and its GPU test requires the two to agree to the byte on every rank
// (tests/gpu). A change to the harness's buffers changes this file too.
//
// Per rank (T tokens, H hidden, F ffn, E experts, E_l local experts, k top-k, bf16
// activations and weights: 2 bytes; W = E_l * 3 * H * F weight elements):
//   inputs (model state and the layer's input and upstream gradient, allocated before the
//   layer and counted in its peak):
//     x T*H*2, w_router H*E*2, expert_weights W*2, d_out T*H*2, param_grad_experts W*4
//   outputs and routing (MoeLayer::allocate_outputs): probs T*E*4, topk_ids T*k*4,
//     topk_weights T*k*4, out T*H*2, d_x T*H*2, d_topk_weights T*k*4, counts E*4,
//     offsets (E+1)*4, pair_src T*k*4, pair_pos T*k*4
//   router (MoeLayer::route): router_logits T*E*4 and permute_scratch E*4, each freed
//     after its kernel; after the backward pass d_logits T*E*4
//   a2a (R = rows this rank receives): forward a2a_x_permuted T*k*H*2, a2a_x_received
//     R*H*2, (x_permuted freed) a2a_gate_up_act R*2F*2, a2a_swiglu_out R*F*2,
//     a2a_expert_out R*H*2, (swiglu_out freed) a2a_y_permuted T*k*H*2, (expert_out freed);
//     backward (y_permuted freed) a2a_dy_permuted T*k*H*2, a2a_dy_received R*H*2,
//     (dy_permuted freed) a2a_d_swiglu_out R*F*2, (dy_received, x_received freed)
//     a2a_dx_received R*H*2, (d_swiglu_out, gate_up_act freed) a2a_dx_permuted T*k*H*2
//   ring passes (every buffer of a pass allocated at its start and freed at its end;
//   c = the largest chunk of the rank's hops, at least 1 row):
//     hop buffers: hop_x c*H*2, hop_gate_up_act c*2F*2, hop_swiglu_out c*F*2, the
//       chunk's output c*H*2 (backward with chunked hops: written over hop_x, no buffer),
//       backward hop_d_out c*H*2 and hop_d_topk_weights c*4
//     expert routing: (backward, bf16 gradient partitions, chunks of N > 0 rows, an
//       expert with more than N rows in one hop) ring_split_expert_grad 3*H*F*4; two
//       slots of ring_weight_buffer W*2 (backward each followed by ring_grad_accumulator
//       W*g); with fp32 accumulators (a != 2) ring_out_accumulator or
//       ring_dx_accumulator T*H*a
//     token routing: two slots, each of ring_token_buffer x T*H*2, pair_src T*k*4,
//       topk_weights T*k*4 (backward and d_out T*H*2), then ring_out_accumulator or
//       ring_dx_accumulator T*H*a (backward and ring_d_topk_weights_accumulator T*k*4)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "moe_plan/ring_steps.hpp"

namespace moehub::plan {

/// The harness allocator's rounding (host/gpu/device_memory.cpp takes its sizes from here).
constexpr std::size_t kAllocGranuleBytes = 256;
/// The bytes an allocation of `bytes` takes: rounded up to the granule, one granule for 0.
constexpr std::size_t allocation_bytes(std::size_t bytes) {
  return bytes == 0 ? kAllocGranuleBytes : (bytes + kAllocGranuleBytes - 1) / kAllocGranuleBytes * kAllocGranuleBytes;
}

/// One allocation: its name as the harness gives it and its rounded size.
struct Buffer {
  std::string name;
  std::size_t bytes;
};
struct BufferPlan {
  std::vector<Buffer> buffers;  ///< every allocation of the layer, in order (a name may repeat)
  std::size_t peak_bytes = 0;   ///< the largest total of live allocations
  std::string peak_phase;       ///< the step in which the peak is reached
  std::vector<Buffer> at_peak;  ///< the live buffers at the peak, bytes summed per name, by name
};

/// The rank's layer under the all-to-all schedule ("a2a"). Throws std::invalid_argument
/// for an invalid routing or rank, or for the rank's pairs not adding up to T * top_k.
BufferPlan plan_a2a(const RingRouting& routing, int rank, int hidden, int ffn, int top_k);
/// The rank's layer under a ring schedule ("ring-expert", "ring-token") with the
/// harness's options (chunk_rows as LayerConfig::hop_chunk_rows: -1, 0 or N > 0;
/// accum_bytes and grad_bytes 2 or 4). Throws std::invalid_argument as plan_a2a, and for
/// options the harness does not run.
BufferPlan plan_ring(const RingRouting& routing, int rank, int hidden, int ffn, int top_k, RingMode mode,
                     const RingOptions& options);

/// Bytes of every allocation of that name in a plan; throws std::out_of_range when none.
std::size_t buffer_bytes(const BufferPlan& plan, const std::string& name);

}  // namespace moehub::plan
