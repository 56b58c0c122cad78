#include "golden/aau.hpp"

#include <stdexcept>
#include <string>

namespace moehub::golden {

namespace {

/// One past the last byte, relative to the row start, that `w` writes: the
/// mask (relative to the 128-byte window containing row_offset) if it is set,
/// else [row_offset, row_offset + bytes).
std::uint64_t row_extent_end(const StoreRequest& w) {
  if (w.mask.empty()) return std::uint64_t{w.row_offset} + w.bytes;
  // the highest set bit of the (non-empty) mask
  const std::uint32_t last = w.mask.bits[1] != 0
                                 ? 127U - static_cast<std::uint32_t>(__builtin_clzll(w.mask.bits[1]))
                                 : 63U - static_cast<std::uint32_t>(__builtin_clzll(w.mask.bits[0]));
  return std::uint64_t{w.row_offset} - w.row_offset % kLineBytes + last + 1;
}

}  // namespace

AddressAllocationUnit::AddressAllocationUnit(const AauParams& p)
    : p_(p), clock_(p.clock_ghz), apt_(p.gpu, p.apt_regions, p.region_full), rat_(p.rat, apt_) {}

std::uint32_t AddressAllocationUnit::rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                                                  std::uint64_t capacity_rows) {
  return apt_.rowsp_malloc(base_address, row_bytes, capacity_rows);
}

void AddressAllocationUnit::reinit_region(std::uint32_t malloc_id) {
  apt_.reinit(malloc_id);
  rat_.flush(malloc_id);
}

void AddressAllocationUnit::free_region(std::uint32_t malloc_id) {
  reinit_region(malloc_id);
  apt_.free(malloc_id);
}

std::uint64_t AddressAllocationUnit::address_of(std::uint32_t malloc_id, std::int64_t local_row_id,
                                                std::uint32_t row_offset) const {
  const Region& r = apt_.region(malloc_id);
  return r.base_address + static_cast<std::uint64_t>(local_row_id) * r.row_bytes + row_offset;
}

IngressResult AddressAllocationUnit::on_write(const StoreRequest& w, Tick now) {
  if (!is_row_store(w.op)) {
    IngressResult r;
    r.address = w.address;
    return r;
  }
  return translate(w, now);
}

IngressResult AddressAllocationUnit::on_local_store(const StoreRequest& w, Tick now) {
  if (!is_row_store(w.op)) {
    throw std::logic_error(std::string("AAU: local store with opcode ") + to_string(w.op) + " (only st.rowsp)");
  }
  return translate(w, now);
}

IngressResult AddressAllocationUnit::translate(const StoreRequest& w, Tick now) {
  if (malloc_id_gpu(w.malloc_id) != p_.gpu) {
    throw std::logic_error("AAU of GPU " + std::to_string(p_.gpu) + ": row store for MallocID " +
                           std::to_string(w.malloc_id) + " of GPU " + std::to_string(malloc_id_gpu(w.malloc_id)));
  }
  const Region& region = apt_.region(w.malloc_id);
  if (row_extent_end(w) > region.row_bytes) {
    throw std::logic_error("AAU: row store at RowOffset " + std::to_string(w.row_offset) + " of " +
                           std::to_string(w.bytes) + " bytes passes the end of its " +
                           std::to_string(region.row_bytes) + "-byte row");
  }
  const std::uint64_t cycle = clock_.cycle_at(now);
  const RatResult t = rat_.lookup(w.malloc_id, w.row_id, cycle);
  IngressResult r;
  r.cycles = t.cycles;
  r.metadata_read_bytes = t.metadata_read_bytes;
  r.metadata_write_bytes = t.metadata_write_bytes;
  if (!t.ok) {
    ++stalled_;
    r.accepted = false;
    r.retry_at = clock_.tick_of(cycle + (p_.region_full_retry_cycles == 0 ? 1 : p_.region_full_retry_cycles));
    return r;
  }
  r.local_row_id = t.local_row_id;
  r.address = region.base_address + static_cast<std::uint64_t>(t.local_row_id) * region.row_bytes + w.row_offset;
  return r;
}

}  // namespace moehub::golden
