// Allocation Pointer Table (APT) of the consumer's Address Allocation Unit.
//
// rowspMalloc registers a region of device memory (base address, row size,
// capacity in rows) and returns its MallocID. Per region the APT holds a
// RowPointer: the next free LocalRowID. allocate() hands out the RowPointer
// and increments it in the same step (atomic: no two callers ever get the
// same LocalRowID), so a region's LocalRowIDs are dense, 0, 1, 2, ... in
// allocation order, until reinit() or free().
//
// MallocID encoding (what the producer's TLB resolves to a peer GPU):
//   malloc_id = gpu << 16 | region      (region: the APT slot, 0..regions-1)
// so the upper 16 bits name the consumer GPU and the lower 16 bits the region.
//
// A full region (RowPointer == capacity) is an explicit condition; the
// policy decides: kStall -> allocate() returns -1 (the AAU refuses the write
// and the platform offers it again later); kError -> RegionFullError.
//
// Timing: the APT is a small CAM; one allocation is RatParams::apt_cycles
// (charged by the RAT, which calls it on a miss). rowspMalloc, reinit and
// free are MMIO operations of the driver and take no hub cycles here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace moehub::golden {

enum class RegionFullPolicy : std::uint8_t { kStall, kError };
const char* to_string(RegionFullPolicy p);
/// "stall" or "error"; anything else: std::invalid_argument naming the allowed values.
RegionFullPolicy region_full_policy_from(const std::string& name);

inline constexpr std::uint32_t kMallocRegionBits = 16;
inline constexpr std::uint32_t kMaxRegions = 1U << kMallocRegionBits;

constexpr std::uint32_t make_malloc_id(std::int32_t gpu, std::uint32_t region) {
  return (static_cast<std::uint32_t>(gpu) << kMallocRegionBits) | (region & (kMaxRegions - 1));
}
constexpr std::int32_t malloc_id_gpu(std::uint32_t malloc_id) {
  return static_cast<std::int32_t>(malloc_id >> kMallocRegionBits);
}
constexpr std::uint32_t malloc_id_region(std::uint32_t malloc_id) { return malloc_id & (kMaxRegions - 1); }

/// Thrown by allocate() on a full region under RegionFullPolicy::kError.
class RegionFullError : public std::runtime_error {
 public:
  RegionFullError(std::uint32_t malloc_id, std::uint64_t capacity_rows);
  std::uint32_t malloc_id() const { return malloc_id_; }

 private:
  std::uint32_t malloc_id_;
};

struct Region {
  bool active = false;
  std::uint64_t base_address = 0;
  std::uint32_t row_bytes = 0;
  std::uint64_t capacity_rows = 0;
  std::uint64_t row_pointer = 0;  ///< next free LocalRowID
};

class AllocationPointerTable {
 public:
  /// `gpu`: the consumer GPU this APT belongs to; `regions`: APT entries (1..65536).
  AllocationPointerTable(std::int32_t gpu, std::uint32_t regions, RegionFullPolicy policy);

  /// Registers a region in the lowest free slot; returns its MallocID.
  /// Throws std::invalid_argument for row_bytes or capacity_rows of 0, and
  /// std::length_error when every slot is taken.
  std::uint32_t rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes, std::uint64_t capacity_rows);
  /// The next LocalRowID of the region (RowPointer, then incremented); on a
  /// full region -1 (kStall) or RegionFullError (kError).
  std::int64_t allocate(std::uint32_t malloc_id);
  /// RowPointer back to 0 (the region is reused for the next layer).
  void reinit(std::uint32_t malloc_id);
  /// Releases the slot; the MallocID is unknown afterwards until reused.
  void free(std::uint32_t malloc_id);

  /// Throws std::out_of_range for a MallocID that is not an active region of this GPU.
  const Region& region(std::uint32_t malloc_id) const;
  bool active(std::uint32_t malloc_id) const;
  std::int32_t gpu() const { return gpu_; }
  RegionFullPolicy policy() const { return policy_; }
  /// allocate() calls that found their region full.
  std::uint64_t full_events() const { return full_events_; }

 private:
  Region& slot(std::uint32_t malloc_id);
  std::int32_t gpu_;
  RegionFullPolicy policy_;
  std::vector<Region> regions_;
  std::uint64_t full_events_ = 0;
};

}  // namespace moehub::golden
