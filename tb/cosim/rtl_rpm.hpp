// The golden EgressFunction of the MoE-Hub producer (the RPM) with its
// packet scheduler on the Verilated moehub_rpm_sched: a co-simulation
// adapter that the platform can use in place of golden::RuntimePacketManager.
//
// Function: the buffer pool is C++ (the RTL leaves it out): one partition of
// entries_per_peer slots per peer, stores merged as rpm.hpp merges them (same
// line, opcode and priority; row stores also the same MallocID and RowID).
// A partition keeps its entries in arrival order from its first slot on: a
// new entry takes the first free slot, and when an entry leaves, the entries
// behind it move down one slot with their age counters (the adapter moves the
// counter values in the model). The scheduler breaks ties of age by slot
// index, so this gives the behavioural RPM's order by arrival. The pick is
// the RTL's grant: the pool presents per slot valid, full mask, priority and
// RowID (a plain st as 0, a row store as RowID + 1: the golden order puts
// st's RowID -1 first), with the congestion of the call, timeout =
// timer_cycles, drain = !hold_partial. A flag write is presented as a full
// entry (always eligible); the golden order ranks it by its actual mask, so
// with flags the orders may differ.
//
// Timing: the model is clocked at the hub clock (golden::HubClock) and its
// clock follows the picks: a pick advances it to the cycle of `now`, and a
// pick that returns a packet ends its cycle (the grant is taken at that clock
// edge; one grant per cycle). Stores may be accepted for a later cycle than
// the next pick's (the platform fills the buffer up to a quantum ahead): an
// entry is presented to the model from the cycle it was accepted in, so that
// its age counts from there as in the behavioural RPM; a pick before that
// cycle sees it as a new entry (age 0) for that decision only. Cycles with no
// entry presented are skipped; cycles with entries but no grant taken are
// clocked once and the rest of their age increments added to the model's
// counters directly (with a waveform open, every cycle is clocked).
// Limits (std::invalid_argument): the peers and entries per peer are those
// of a model the build Verilated (geometries(); tb/CMakeLists.txt);
// timer_cycles below the counter's saturation; RowIDs below 2**RowIdWidth - 1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "golden/hub_functions.hpp"
#include "golden/rpm.hpp"

namespace moehub::cosim {

namespace detail {
class RpmModel;
}

struct RtlRpmGeometry {
  std::string name;  ///< the model's name in the build (tb/CMakeLists.txt)
  std::uint32_t peers;
  std::uint32_t entries_per_peer;
  std::uint32_t row_id_bits;
  std::uint32_t timer_bits;
};

class RtlRuntimePacketManager : public golden::EgressFunction {
 public:
  explicit RtlRuntimePacketManager(const golden::RpmParams& p);
  ~RtlRuntimePacketManager() override;
  RtlRuntimePacketManager(const RtlRuntimePacketManager&) = delete;
  RtlRuntimePacketManager& operator=(const RtlRuntimePacketManager&) = delete;

  /// The geometry of the unit-test model (the first of geometries()).
  static RtlRpmGeometry geometry();
  /// Every geometry this build has a model of.
  static std::vector<RtlRpmGeometry> geometries();

  bool can_accept(const golden::StoreRequest& s, golden::Tick now) const override;
  void accept(const golden::StoreRequest& s, golden::Tick now) override;
  bool pick(golden::Tick now, const std::vector<std::uint8_t>& congested, golden::EgressPick& out) override;
  golden::Tick next_event(golden::Tick now) const override;
  std::size_t occupancy() const override;
  /// Counted by the adapter as the behavioural RPM counts them: stores
  /// accepted and merged (its pool), packets, stores, bytes and flits sent,
  /// and per partial packet of a mergeable entry picked while holding, a
  /// timer flush when the RTL's age counter of the granted slot had reached
  /// the timeout, else a pressure flush when its partition was full.
  const golden::RpmStats* rpm_stats() const override;
  std::uint32_t pick_cycles() const override;

  /// The tags of the stores the last picked packet carries, oldest first.
  const std::vector<std::uint64_t>& last_pick_tags() const;
  std::uint64_t cycles_simulated() const;
  std::uint64_t cycles_skipped() const;
  /// Cycles with entries held but no grant taken, whose age increments were
  /// added to the model's counters instead of clocking it (not while tracing).
  std::uint64_t cycles_forwarded() const;
  /// When set, the model writes an FST waveform of every simulated cycle here
  /// (10 time units per hub cycle; skipped cycles leave gaps).
  void trace_to(const std::string& fst_path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moehub::cosim
