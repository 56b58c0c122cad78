// Address Allocation Unit (AAU): the consumer hub's ingress function of the
// MoE-Hub implementation.
//
// - st.rowsp / st.rowsp.nop: (MallocID, RowID) is translated by the RAT
//   (which allocates from the APT on a first arrival) and the write goes to
//       address = BaseAddr + LocalRowID * RowSize + RowOffset.
//   IngressResult carries the address, the LocalRowID, the cycles (RAT
//   and APT, see rat.hpp) and the spill/restore metadata bytes.
//   A new row in a full region: under the stall policy the write is not
//   accepted (accepted = false) and is to be offered again at retry_at =
//   the start of the cycle region_full_retry_cycles after the current one;
//   under the error policy RegionFullError is thrown.
// - st and flag writes bypass the AAU: the address is kept (1 cycle, the
//   same as the address-centric hub).
// - Local tokens to local experts use the same mapping through
//   on_local_store(), sharing the RAT, APT and bank timing.
//
// The hub's cycle of a write is HubClock::cycle_at(now); the RAT's bank
// timing needs the calls in non-decreasing `now` (the platform's guarantee).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "golden/apt.hpp"
#include "golden/hub_clock.hpp"
#include "golden/hub_functions.hpp"
#include "golden/rat.hpp"

namespace moehub::golden {

struct AauParams {
  std::int32_t gpu = 0;
  double clock_ghz = 1.5;
  RatParams rat;
  std::uint32_t apt_regions = 64;
  RegionFullPolicy region_full = RegionFullPolicy::kStall;
  std::uint32_t region_full_retry_cycles = 64;
};

// The platform reaches the AAU through this class (registration, local
// stores, statistics); the RTL co-simulation adapter (tb/cosim) derives from
// it and overrides the virtual members.
class AddressAllocationUnit : public IngressFunction {
 public:
  explicit AddressAllocationUnit(const AauParams& p);

  /// rowspMalloc's MMIO registration in this GPU's hub; returns the MallocID.
  virtual std::uint32_t rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                                     std::uint64_t capacity_rows);
  /// Region reused: RowPointer to 0, its RAT entries and spilled mappings dropped.
  virtual void reinit_region(std::uint32_t malloc_id);
  /// Region released: flushed as by reinit_region, then its APT entry freed.
  virtual void free_region(std::uint32_t malloc_id);

  /// A write from the fabric. Row stores must name a region of this GPU and
  /// lie within one row (std::out_of_range / std::logic_error otherwise).
  IngressResult on_write(const StoreRequest& w, Tick now) override;
  /// A row store of this GPU's own producer to its local experts: same mapping.
  virtual IngressResult on_local_store(const StoreRequest& w, Tick now);

  std::uint64_t address_of(std::uint32_t malloc_id, std::int64_t local_row_id, std::uint32_t row_offset) const;
  /// This class's own tables: an AAU that derives from it and translates
  /// elsewhere (the RTL adapter, a wrapper) leaves them empty, so the platform
  /// reads its counters through rat_stats() and stalled_writes().
  const AllocationPointerTable& apt() const { return apt_; }
  const RowAllocationTable& rat() const { return rat_; }
  const HubClock& clock() const { return clock_; }
  /// Row-store writes refused because their region was full.
  virtual std::uint64_t stalled_writes() const { return stalled_; }
  /// The RAT's counters (rat().stats() here).
  virtual RatStats rat_stats() const { return rat_.stats(); }

 private:
  IngressResult translate(const StoreRequest& w, Tick now);

  AauParams p_;
  HubClock clock_;
  AllocationPointerTable apt_;
  RowAllocationTable rat_;
  std::uint64_t stalled_ = 0;
};

/// An AAU that hands every call to another one (behavioural or RTL), for the
/// wrappers that watch or alter its answers: a wrapper overrides what it
/// watches and calls this class's member for the inner answer.
class ForwardingAau : public AddressAllocationUnit {
 public:
  ForwardingAau(std::unique_ptr<AddressAllocationUnit> inner, const AauParams& p)
      : AddressAllocationUnit(p), inner_(std::move(inner)) {}
  std::uint32_t rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                             std::uint64_t capacity_rows) override {
    return inner_->rowsp_malloc(base_address, row_bytes, capacity_rows);
  }
  void reinit_region(std::uint32_t malloc_id) override { inner_->reinit_region(malloc_id); }
  void free_region(std::uint32_t malloc_id) override { inner_->free_region(malloc_id); }
  IngressResult on_write(const StoreRequest& w, Tick now) override { return inner_->on_write(w, now); }
  IngressResult on_local_store(const StoreRequest& w, Tick now) override { return inner_->on_local_store(w, now); }
  std::uint64_t stalled_writes() const override { return inner_->stalled_writes(); }
  RatStats rat_stats() const override { return inner_->rat_stats(); }

 private:
  std::unique_ptr<AddressAllocationUnit> inner_;
};

}  // namespace moehub::golden
