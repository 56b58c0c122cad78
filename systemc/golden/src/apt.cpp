#include "golden/apt.hpp"

#include <string>

namespace moehub::golden {

const char* to_string(RegionFullPolicy p) { return p == RegionFullPolicy::kStall ? "stall" : "error"; }

RegionFullPolicy region_full_policy_from(const std::string& name) {
  if (name == "stall") return RegionFullPolicy::kStall;
  if (name == "error") return RegionFullPolicy::kError;
  throw std::invalid_argument("region-full policy '" + name + "' unknown (allowed: stall, error)");
}

RegionFullError::RegionFullError(std::uint32_t malloc_id, std::uint64_t capacity_rows)
    : std::runtime_error("rowsp region " + std::to_string(malloc_id_region(malloc_id)) + " of GPU " +
                         std::to_string(malloc_id_gpu(malloc_id)) + " (MallocID " + std::to_string(malloc_id) +
                         ") is full: all " + std::to_string(capacity_rows) + " rows allocated"),
      malloc_id_(malloc_id) {}

AllocationPointerTable::AllocationPointerTable(std::int32_t gpu, std::uint32_t regions, RegionFullPolicy policy)
    : gpu_(gpu), policy_(policy) {
  if (gpu < 0 || gpu >= (1 << 15)) {
    throw std::invalid_argument("APT: gpu " + std::to_string(gpu) + " outside [0, 32767]");
  }
  if (regions == 0 || regions > kMaxRegions) {
    throw std::invalid_argument("APT: regions " + std::to_string(regions) + " outside [1, 65536]");
  }
  regions_.resize(regions);
}

std::uint32_t AllocationPointerTable::rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                                                   std::uint64_t capacity_rows) {
  if (row_bytes == 0) throw std::invalid_argument("rowspMalloc: row_bytes must be >= 1");
  if (capacity_rows == 0) throw std::invalid_argument("rowspMalloc: capacity_rows must be >= 1");
  for (std::uint32_t i = 0; i < regions_.size(); ++i) {
    if (regions_[i].active) continue;
    regions_[i] = Region{true, base_address, row_bytes, capacity_rows, 0};
    return make_malloc_id(gpu_, i);
  }
  throw std::length_error("rowspMalloc: all " + std::to_string(regions_.size()) + " APT entries of GPU " +
                          std::to_string(gpu_) + " are in use");
}

bool AllocationPointerTable::active(std::uint32_t malloc_id) const {
  const std::uint32_t r = malloc_id_region(malloc_id);
  return malloc_id_gpu(malloc_id) == gpu_ && r < regions_.size() && regions_[r].active;
}

const Region& AllocationPointerTable::region(std::uint32_t malloc_id) const {
  if (!active(malloc_id)) {
    throw std::out_of_range(
        "MallocID " + std::to_string(malloc_id) + " (GPU " + std::to_string(malloc_id_gpu(malloc_id)) + ", region " +
        std::to_string(malloc_id_region(malloc_id)) + ") is not an active region of GPU " + std::to_string(gpu_));
  }
  return regions_[malloc_id_region(malloc_id)];
}

Region& AllocationPointerTable::slot(std::uint32_t malloc_id) {
  return const_cast<Region&>(static_cast<const AllocationPointerTable*>(this)->region(malloc_id));
}

std::int64_t AllocationPointerTable::allocate(std::uint32_t malloc_id) {
  Region& r = slot(malloc_id);
  if (r.row_pointer >= r.capacity_rows) {
    ++full_events_;
    if (policy_ == RegionFullPolicy::kError) throw RegionFullError(malloc_id, r.capacity_rows);
    return -1;
  }
  return static_cast<std::int64_t>(r.row_pointer++);
}

void AllocationPointerTable::reinit(std::uint32_t malloc_id) { slot(malloc_id).row_pointer = 0; }

void AllocationPointerTable::free(std::uint32_t malloc_id) { slot(malloc_id) = Region{}; }

}  // namespace moehub::golden
