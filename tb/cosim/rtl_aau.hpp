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
// The RTL answers a hit one cycle after the request and a response that
// needed the APT AllocCycles cycles later still; the model used is the one
// whose AllocCycles is the configuration's apt_alloc_cycles
// (AauParams::rat.apt_cycles), so that with rat_lookup_cycles = 1 the timing
// is the behavioural AAU's.
//
// Stands in for the behavioural AAU: derives from golden::AddressAllocationUnit
// (whose platform-facing members are virtual) so that the platform's
// registration, local stores and statistics reach the RTL; the base class's
// own RAT and APT stay unused (apt(), rat(), address_of() describe them, not
// the RTL).
//
// Limits of the RTL (checked, std::invalid_argument): the geometry is one
// the build Verilated (geometries(): APT regions, RAT entries and banks;
// tb/CMakeLists.txt); a region holds at most 2**LocalRowIdWidth rows; only
// the stall policy. The RTL's row size is a power of two: a region whose
// rows are not (the moehub schedules' rows carry 16 bytes beside the hidden
// vector) is registered with the next power of two, and for it the address
// BaseAddr + LocalRowID * RowSize + RowOffset is formed here from the RTL's
// LocalRowID (the RTL's own address output, of the padded layout, is unused).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "golden/aau.hpp"
#include "golden/hub_functions.hpp"

namespace moehub::cosim {

namespace detail {
class AauModel;
}

/// The parameters a Verilated model was built with.
struct RtlAauGeometry {
  std::string name;  ///< the model's name in the build (tb/CMakeLists.txt)
  std::uint32_t regions;
  std::uint32_t rat_entries;
  std::uint32_t rat_banks;
  std::uint32_t local_row_id_bits;
  std::uint32_t row_id_bits;
  std::uint32_t offset_bits;
  std::uint32_t addr_bits;
  std::uint32_t alloc_cycles;  ///< the RTL's AllocCycles (the behavioural AAU's rat.apt_cycles)
};

class RtlAddressAllocationUnit : public golden::AddressAllocationUnit {
 public:
  /// p.apt_regions, p.rat.entries, p.rat.banks and p.rat.apt_cycles must be
  /// those of one of geometries(); p.rat.restore_cycles is the spill area's
  /// read latency.
  explicit RtlAddressAllocationUnit(const golden::AauParams& p);
  ~RtlAddressAllocationUnit() override;
  RtlAddressAllocationUnit(const RtlAddressAllocationUnit&) = delete;
  RtlAddressAllocationUnit& operator=(const RtlAddressAllocationUnit&) = delete;

  /// The geometry of the unit-test model (the first of geometries()).
  static RtlAauGeometry geometry();
  /// Every geometry this build has a model of.
  static std::vector<RtlAauGeometry> geometries();
  /// The geometry this unit runs.
  const RtlAauGeometry& model_geometry() const;

  std::uint32_t rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                             std::uint64_t capacity_rows) override;
  void reinit_region(std::uint32_t malloc_id) override;
  void free_region(std::uint32_t malloc_id) override;

  golden::IngressResult on_write(const golden::StoreRequest& w, golden::Tick now) override;
  golden::IngressResult on_local_store(const golden::StoreRequest& w, golden::Tick now) override;
  std::uint64_t stalled_writes() const override;
  /// Counted from the RTL's responses and channels: hits, misses (new rows
  /// and restores), allocations, restores, spills (= evictions of dirty
  /// entries; clean evictions are not visible at the ports), stalls.
  golden::RatStats rat_stats() const override;

  /// Clock edges the model was stepped through.
  std::uint64_t cycles_simulated() const;
  /// Cycles skipped because nothing was pending.
  std::uint64_t cycles_skipped() const;
  /// Writes of the RTL's spill channel and queries of its restore channel.
  std::uint64_t spills() const;
  std::uint64_t restore_queries() const;
  /// When set, the model writes an FST waveform of every simulated cycle here
  /// (10 time units per hub cycle; skipped cycles leave gaps).
  void trace_to(const std::string& fst_path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moehub::cosim
