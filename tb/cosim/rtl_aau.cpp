#include "rtl_aau.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "rtl_aau_core.hpp"

namespace moehub::cosim {

namespace {

using golden::IngressResult;
using golden::Opcode;
using golden::StoreRequest;


/// One past the last byte of the row that `w` writes (as the behavioural AAU computes it).
std::uint64_t row_extent_end(const StoreRequest& w) {
  if (w.mask.empty()) return std::uint64_t{w.row_offset} + w.bytes;
  std::uint32_t last = 0;
  for (std::uint32_t i = 0; i < golden::kLineBytes; ++i) {
    if ((w.mask.bits[i / 64] >> (i % 64)) & 1ULL) last = i;
  }
  return std::uint64_t{w.row_offset} - w.row_offset % golden::kLineBytes + last + 1;
}

const detail::AauModelEntry& model_for(const golden::AauParams& p) {
  std::string built;
  for (const auto& e : detail::aau_models()) {
    const RtlAauGeometry& g = e.geometry;
    if (g.regions == p.apt_regions && g.rat_entries == p.rat.entries && g.rat_banks == p.rat.banks &&
        g.alloc_cycles == p.rat.apt_cycles) {
      return e;
    }
    built += (built.empty() ? "" : ", ") + std::to_string(g.regions) + " regions/" + std::to_string(g.rat_entries) +
             " entries/" + std::to_string(g.rat_banks) + " banks/" + std::to_string(g.alloc_cycles) + " alloc cycles";
  }
  throw std::invalid_argument("RTL AAU: no model Verilated for " + std::to_string(p.apt_regions) +
                              " APT regions, a RAT of " + std::to_string(p.rat.entries) + " entries in " +
                              std::to_string(p.rat.banks) + " banks and apt_alloc_cycles " +
                              std::to_string(p.rat.apt_cycles) + " (built: " + built + "; tb/CMakeLists.txt)");
}

}  // namespace

struct RtlAddressAllocationUnit::Impl {
  struct Region {
    bool active = false;
    std::uint32_t row_bytes = 0;
    detail::AauRegionCfg cfg;
  };

  Impl(const golden::AauParams& params, const detail::AauModelEntry& e)
      : p(params), clock(params.clock_ghz), g(e.geometry), model(e.make(params)), regions(g.regions) {}

  golden::AauParams p;
  golden::HubClock clock;
  RtlAauGeometry g;
  std::unique_ptr<detail::AauModel> model;
  std::vector<Region> regions;
  golden::RatStats stats;
};

RtlAddressAllocationUnit::RtlAddressAllocationUnit(const golden::AauParams& p) : golden::AddressAllocationUnit(p) {
  const detail::AauModelEntry& e = model_for(p);
  if (p.region_full != golden::RegionFullPolicy::kStall) {
    throw std::invalid_argument("RTL AAU: only the stall region-full policy (the RTL refuses, rsp_ok_o = 0)");
  }
  impl_ = std::make_unique<Impl>(p, e);
}

RtlAddressAllocationUnit::~RtlAddressAllocationUnit() = default;

RtlAauGeometry RtlAddressAllocationUnit::geometry() { return detail::aau_models().front().geometry; }

std::vector<RtlAauGeometry> RtlAddressAllocationUnit::geometries() {
  std::vector<RtlAauGeometry> v;
  for (const auto& e : detail::aau_models()) v.push_back(e.geometry);
  return v;
}

const RtlAauGeometry& RtlAddressAllocationUnit::model_geometry() const { return impl_->g; }

std::uint32_t RtlAddressAllocationUnit::rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                                                     std::uint64_t capacity_rows) {
  const RtlAauGeometry& geo = impl_->g;
  if (row_bytes == 0) throw std::invalid_argument("RTL AAU: row_bytes 0");
  // the RTL's row size is a power of two: a row of another size is laid out
  // in the RTL at the next power of two and its address formed here
  std::uint32_t log2 = 0;
  while ((1ULL << log2) < row_bytes) ++log2;
  if ((1ULL << log2) > (1ULL << geo.offset_bits)) {
    throw std::invalid_argument("RTL AAU: row_bytes " + std::to_string(row_bytes) + " above the RTL's " +
                                std::to_string(1ULL << geo.offset_bits));
  }
  if (base_address >= (1ULL << geo.addr_bits)) {
    throw std::invalid_argument("RTL AAU: base address " + std::to_string(base_address) + " outside its " +
                                std::to_string(geo.addr_bits) + "-bit addresses");
  }
  if (capacity_rows == 0 || capacity_rows > (1ULL << geo.local_row_id_bits)) {
    throw std::invalid_argument("RTL AAU: capacity_rows " + std::to_string(capacity_rows) + " outside [1, " +
                                std::to_string(1ULL << geo.local_row_id_bits) + "]");
  }
  for (std::uint32_t r = 0; r < geo.regions; ++r) {
    Impl::Region& reg = impl_->regions[r];
    if (reg.active) continue;
    reg = Impl::Region{true, row_bytes, detail::AauRegionCfg{base_address, log2, capacity_rows}};
    impl_->model->configure(r, false, reg.cfg);
    return golden::make_malloc_id(impl_->p.gpu, r);
  }
  throw std::length_error("rowspMalloc: all " + std::to_string(geo.regions) + " APT entries of the RTL AAU are in use");
}

void RtlAddressAllocationUnit::reinit_region(std::uint32_t malloc_id) {
  const std::uint32_t r = golden::malloc_id_region(malloc_id);
  if (golden::malloc_id_gpu(malloc_id) != impl_->p.gpu || r >= impl_->g.regions || !impl_->regions[r].active) {
    throw std::out_of_range("RTL AAU: MallocID " + std::to_string(malloc_id) + " is not an active region");
  }
  impl_->model->configure(r, true, impl_->regions[r].cfg);
  impl_->model->configure(r, false, impl_->regions[r].cfg);
}

void RtlAddressAllocationUnit::free_region(std::uint32_t malloc_id) {
  const std::uint32_t r = golden::malloc_id_region(malloc_id);
  if (golden::malloc_id_gpu(malloc_id) != impl_->p.gpu || r >= impl_->g.regions || !impl_->regions[r].active) {
    throw std::out_of_range("RTL AAU: MallocID " + std::to_string(malloc_id) + " is not an active region");
  }
  impl_->model->configure(r, true, impl_->regions[r].cfg);
  impl_->regions[r] = Impl::Region{};
}

IngressResult RtlAddressAllocationUnit::on_write(const StoreRequest& w, golden::Tick now) {
  if (!is_row_store(w.op)) {
    IngressResult r;
    r.address = w.address;
    return r;
  }
  return on_local_store(w, now);
}

IngressResult RtlAddressAllocationUnit::on_local_store(const StoreRequest& w, golden::Tick now) {
  if (!is_row_store(w.op)) throw std::logic_error("RTL AAU: local store that is not st.rowsp");
  Impl& d = *impl_;
  const std::uint32_t region = golden::malloc_id_region(w.malloc_id);
  if (golden::malloc_id_gpu(w.malloc_id) != d.p.gpu || region >= d.g.regions || !d.regions[region].active) {
    throw std::out_of_range("RTL AAU: MallocID " + std::to_string(w.malloc_id) + " is not an active region of GPU " +
                            std::to_string(d.p.gpu));
  }
  const Impl::Region& reg = d.regions[region];
  if (row_extent_end(w) > reg.row_bytes) {
    throw std::logic_error("RTL AAU: row store at RowOffset " + std::to_string(w.row_offset) + " passes the end of its " +
                           std::to_string(reg.row_bytes) + "-byte row");
  }
  if (w.row_id < 0 || static_cast<std::uint64_t>(w.row_id) >= (1ULL << d.g.row_id_bits)) {
    throw std::invalid_argument("RTL AAU: RowID " + std::to_string(w.row_id) + " outside [0, " +
                                std::to_string(1ULL << d.g.row_id_bits) + ")");
  }
  const std::uint64_t arrival = d.clock.cycle_at(now);
  const detail::AauAnswer a = d.model->translate(region, static_cast<std::uint32_t>(w.row_id), w.row_offset,
                                                 std::max(arrival, d.model->cycle));
  IngressResult r;
  r.cycles = static_cast<std::uint32_t>(a.done_cycle - arrival);
  r.metadata_read_bytes = a.queries * d.p.rat.spill_entry_bytes;
  r.metadata_write_bytes = a.spills * d.p.rat.spill_entry_bytes;
  d.stats.spills += a.spills;
  d.stats.evictions += a.spills;
  if (!a.ok) {
    ++d.stats.stalls;
    r.accepted = false;
    const std::uint32_t retry = d.p.region_full_retry_cycles == 0 ? 1 : d.p.region_full_retry_cycles;
    r.retry_at = d.clock.tick_of(arrival + retry);
    return r;
  }
  if (a.hit) {
    ++d.stats.hits;
  } else {
    ++d.stats.misses;
    ++(a.restored ? d.stats.restores : d.stats.allocations);
    if (!a.restored) d.stats.empty_queries += a.queries;  // asked the spill area, found nothing
  }
  r.local_row_id = static_cast<std::int64_t>(a.local);
  r.address = reg.row_bytes == (1U << reg.cfg.size_log2)
                  ? a.address
                  : reg.cfg.base + a.local * std::uint64_t{reg.row_bytes} + w.row_offset;
  return r;
}

std::uint64_t RtlAddressAllocationUnit::stalled_writes() const { return impl_->stats.stalls; }
golden::RatStats RtlAddressAllocationUnit::rat_stats() const { return impl_->stats; }
std::uint64_t RtlAddressAllocationUnit::cycles_simulated() const { return impl_->model->simulated; }
std::uint64_t RtlAddressAllocationUnit::cycles_skipped() const { return impl_->model->skipped; }
std::uint64_t RtlAddressAllocationUnit::spills() const { return impl_->model->spills; }
std::uint64_t RtlAddressAllocationUnit::restore_queries() const { return impl_->model->queries; }
void RtlAddressAllocationUnit::trace_to(const std::string& fst_path) { impl_->model->trace_to(fst_path); }

}  // namespace moehub::cosim
