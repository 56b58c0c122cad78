// The golden IngressFunction of the MoE-Hub consumer (the AAU) on top of the
// Verilated moehub_aau: a co-simulation adapter that the platform can use in
// place of golden::AddressAllocationUnit.
//
// Function: the same interface and answers as the behavioural AAU
// (systemc/golden/aau.hpp): rowsp_malloc registers a region in the lowest
// free APT slot, on_write translates a row store to BaseAddr + LocalRowID *
// RowSize + RowOffset (other opcodes keep their address), a new row in a
// full region is refused (stall policy) with a retry time, reinit_region /
// free_region flush the region. The adapter plays the device memory of the
// RTL's spill and restore channels (a spill area per region).
//
// Timing: the model is clocked at the hub clock (golden::HubClock). A write
// at `now` is offered in cycle HubClock::cycle_at(now), or when the unit is
// free again if an earlier write still holds it; cycles in which nothing is
// pending are skipped, not simulated (the model is idle then: every write
// completes before on_write returns, and a restore's memory round trip of
// restore_cycles is skipped the same way). IngressResult::cycles is the
// number of hub cycles from the write's arrival to its response, and the
// metadata bytes count spills and restore queries (spill_entry_bytes each).
//
// Limits of the RTL (checked, std::invalid_argument): the geometry is the
// one the model was Verilated with (geometry()); row sizes are powers of
// two; a region holds at most 2**LocalRowIdWidth rows; only the stall policy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "golden/aau.hpp"
#include "golden/hub_functions.hpp"

namespace moehub::cosim {

/// The parameters the Verilated model was built with.
struct RtlAauGeometry {
  std::uint32_t regions;
  std::uint32_t rat_entries;
  std::uint32_t rat_banks;
  std::uint32_t local_row_id_bits;
  std::uint32_t row_id_bits;
};

class RtlAddressAllocationUnit : public golden::IngressFunction {
 public:
  /// p.apt_regions, p.rat.entries and p.rat.banks must match geometry();
  /// p.rat.restore_cycles is the spill area's read latency.
  explicit RtlAddressAllocationUnit(const golden::AauParams& p);
  ~RtlAddressAllocationUnit() override;
  RtlAddressAllocationUnit(const RtlAddressAllocationUnit&) = delete;
  RtlAddressAllocationUnit& operator=(const RtlAddressAllocationUnit&) = delete;

  static RtlAauGeometry geometry();

  std::uint32_t rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes, std::uint64_t capacity_rows);
  void reinit_region(std::uint32_t malloc_id);
  void free_region(std::uint32_t malloc_id);

  golden::IngressResult on_write(const golden::StoreRequest& w, golden::Tick now) override;
  golden::IngressResult on_local_store(const golden::StoreRequest& w, golden::Tick now);

  /// Clock edges the model was stepped through.
  std::uint64_t cycles_simulated() const;
  /// Cycles skipped because nothing was pending.
  std::uint64_t cycles_skipped() const;
  /// Writes of the RTL's spill channel and queries of its restore channel.
  std::uint64_t spills() const;
  std::uint64_t restore_queries() const;
  /// When set, the model writes an FST waveform of every simulated cycle here.
  void trace_to(const std::string& fst_path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moehub::cosim
