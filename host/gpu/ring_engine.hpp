// The ring engine shared by the ring schedules (expert and token routing): every hop of
// one pass over all local ranks (MoeLayer::ring_pass), with the slot arithmetic as pure
// functions (tested without a GPU).
//
// Hop h (0 <= h < n): rank r computes with the payload that started on rank (r - h) mod n.
// Payload: hop 0 uses the rank's own buffers (`own`); the transfer of hop h (copy stream,
// started as soon as compute h-1 has released the target buffer) prefetches hop h+1's
// payload into receive slot h % 2, and compute h reads slot (h - 1) % 2. Accumulators
// travel one hop behind: compute h adds into slot h % 2 (zeroed at hop 0), the transfer
// of hop h also sends slot (h - 1) % 2 (finished by compute h-1) into slot h % 2, and
// compute h waits for it (wait_acc) only right before it adds. After the last hop one
// more transfer returns slot (n - 1) % 2 to its owner (`acc_final`), which may be slot
// n % 2, free by then.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "transport.hpp"

namespace moehub::gpu {

/// Receive slot compute h reads its payload from (h >= 1; hop 0 reads the own buffers).
inline int ring_payload_slot(int hop) { return (hop - 1) % 2; }
/// Receive slot the transfer of hop h fills with hop h+1's payload.
inline int ring_prefetch_slot(int hop) { return hop % 2; }
/// Accumulator slot compute h adds into (and the transfer of hop h receives into).
inline int ring_acc_slot(int hop) { return hop % 2; }
/// Accumulator slot the transfer of hop h sends (the one compute h-1 finished; h >= 1).
inline int ring_acc_send_slot(int hop) { return (hop - 1) % 2; }
/// The accumulator slot that is free after the last hop of an n-rank ring (the final
/// return may land there).
inline int ring_free_slot_after(int n) { return n % 2; }
/// Whether the transfer of hop h carries a payload (hops 0..n-2) / accumulators (h >= 1).
inline bool ring_sends_payload(int hop, int n) { return hop + 1 < n; }
inline bool ring_sends_acc(int hop, bool has_acc) { return has_acc && hop >= 1; }

/// The segments of one rank's transfer at hop h (the ring_exchange part of one local
/// rank): payload send/receive and accumulator send/receive, in that order.
struct RingHopSegments {
  std::vector<Segment> send, recv;
};
RingHopSegments ring_hop_segments(int hop, int n, const std::vector<Segment>& own,
                                  const std::array<std::vector<Segment>, 2>& pay,
                                  const std::array<std::vector<Segment>, 2>& acc);

/// One pass (forward or backward) of a ring schedule over the local ranks.
struct RingPass {
  std::string pass, mode;
  std::vector<std::vector<Segment>> own;                 // [local rank] hop-0 payload
  std::vector<std::array<std::vector<Segment>, 2>> pay;  // [local rank] receive slots
  std::vector<std::array<std::vector<Segment>, 2>> acc;  // [local rank] accumulator slots (may be empty)
  std::vector<std::vector<Segment>> acc_final;           // [local rank] owner's destination
  /// Compute of local rank `li` at hop `hop`: its payload, its accumulator slot and the
  /// wait for the accumulator's arrival (call before the first add into it).
  std::function<void(std::size_t li, int hop, const std::vector<Segment>& pay, const std::vector<Segment>& acc,
                     const std::function<void()>& wait_acc)>
      compute;
};

}  // namespace moehub::gpu
