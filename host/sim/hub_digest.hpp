// moehub-sim --hub-digest: what the hub functions computed, as digests that
// two runs (e.g. --hub-impl moehub and --hub-impl rtl) can compare.
//
// Installs a golden::HubFunctionsObserver that wraps every hub's ingress and
// egress function with a recorder (the wrapper of an AAU is itself an
// AddressAllocationUnit that forwards every call, so the platform reaches the
// wrapped unit as before; the egress recorder forwards the packet manager's
// statistics, EgressFunction::rpm_stats). Recorded, per GPU:
// - ingress: the writes accepted, in order (opcode, source GPU, MallocID,
//   RowID, RowOffset, bytes, LocalRowID, address), as a 64-bit FNV-1a digest
//   of the sequence, and a second digest that includes each write's time;
// - egress: per destination GPU (the GPU-to-GPU link), the packets picked, in
//   order (opcode, MallocID, RowID, RowOffset or address, bytes, byte mask,
//   stores merged), and the same with each pick's time;
// - the LocalRowID of every (GPU, MallocID, RowID) row (its first
//   assignment), one digest over all rows in key order, and how many writes
//   of a row named a different LocalRowID than its first; per region its
//   row count (a digest over all regions) and whether the LocalRowIDs of
//   every region are distinct and dense.
// Beside each order digest, an order-insensitive "content" digest (the sum of
// the records' digests): the same packets, or writes without the AAU's
// answers, in any order.
// Timing is not changed: the wrappers only forward and record.
#pragma once

#include <memory>
#include <string>

namespace moehub::sim {

class HubDigest {
 public:
  HubDigest();
  ~HubDigest();
  HubDigest(const HubDigest&) = delete;
  HubDigest& operator=(const HubDigest&) = delete;

  /// Wraps the functions of every hub built from now on.
  void install();
  /// The digests as a JSON document.
  std::string to_json() const;

  struct State;  ///< what the recorders share (hub_digest.cpp)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace moehub::sim
