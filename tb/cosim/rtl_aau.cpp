#include "rtl_aau.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "Vcosim_aau.h"

namespace moehub::cosim {

namespace {

using golden::IngressResult;
using golden::Opcode;
using golden::StoreRequest;

constexpr std::uint32_t kRegions = MOEHUB_COSIM_REGIONS;
constexpr std::uint32_t kRatEntries = MOEHUB_COSIM_RAT_ENTRIES;
constexpr std::uint32_t kRatBanks = MOEHUB_COSIM_RAT_BANKS;
constexpr std::uint32_t kLocalBits = MOEHUB_COSIM_LOCAL_ROW_ID_BITS;
constexpr std::uint32_t kRowBits = MOEHUB_COSIM_ROW_ID_BITS;
constexpr std::uint32_t kOffsetBits = MOEHUB_COSIM_OFFSET_BITS;
constexpr std::uint32_t kAddrBits = MOEHUB_COSIM_ADDR_BITS;
constexpr std::uint64_t kMaxCycles = 1000000;  // a translation that takes longer is a model fault

bool is_row_store(Opcode op) { return op == Opcode::kRowStore || op == Opcode::kRowStoreNop; }

/// One past the last byte of the row that `w` writes (as the behavioural AAU computes it).
std::uint64_t row_extent_end(const StoreRequest& w) {
  if (w.mask.empty()) return std::uint64_t{w.row_offset} + w.bytes;
  std::uint32_t last = 0;
  for (std::uint32_t i = 0; i < golden::kLineBytes; ++i) {
    if ((w.mask.bits[i / 64] >> (i % 64)) & 1ULL) last = i;
  }
  return std::uint64_t{w.row_offset} - w.row_offset % golden::kLineBytes + last + 1;
}

}  // namespace

struct RtlAddressAllocationUnit::Impl {
  struct Region {
    bool active = false;
    std::uint64_t base = 0;
    std::uint32_t row_bytes = 0;
    std::uint32_t size_log2 = 0;
    std::uint64_t capacity = 0;
  };

  explicit Impl(const golden::AauParams& params)
      : p(params), clock(params.clock_ghz), ctx(std::make_unique<VerilatedContext>()), regions(kRegions) {
    ctx->traceEverOn(true);
    m = std::make_unique<Vcosim_aau>(ctx.get());
    m->clk_i = 0;
    m->cfg_valid_i = 0;
    m->req_valid_i = 0;
    m->rsp_ready_i = 1;
    m->spill_ready_i = 1;
    m->restore_req_ready_i = 1;
    m->restore_rsp_valid_i = 0;
    m->rst_ni = 1;
    m->eval();
    m->rst_ni = 0;
    m->eval();
    m->rst_ni = 1;
    m->eval();
  }
  ~Impl() {
    m->final();
    if (trace) trace->close();
  }

  void edge() {
    if (trace) trace->dump(wave_time);
    wave_time += 5;
    m->clk_i = 1;
    m->eval();
    if (trace) trace->dump(wave_time);
    wave_time += 5;
    m->clk_i = 0;
    m->eval();
    ++cycle;
    ++simulated;
  }
  void skip_to(std::uint64_t c) {
    if (c <= cycle) return;
    skipped += c - cycle;
    cycle = c;
  }

  void configure(std::uint32_t region, bool flush) {
    const Region& r = regions[region];
    m->cfg_valid_i = 1;
    m->cfg_flush_i = flush;
    m->cfg_region_i = static_cast<CData>(region);
    m->cfg_rows_i = static_cast<IData>(r.capacity);
    m->cfg_base_i = r.base;
    m->cfg_row_size_log2_i = static_cast<CData>(r.size_log2);
    for (std::uint64_t i = 0;; ++i) {
      if (i > kMaxCycles) throw std::logic_error("RTL AAU: configuration never completes");
      m->eval();
      const bool done = m->cfg_ready_o != 0;
      edge();
      if (done) break;
    }
    m->cfg_valid_i = 0;
    if (flush) {
      for (auto it = spill_area.begin(); it != spill_area.end();) {
        it = it->first.first == region ? spill_area.erase(it) : std::next(it);
      }
    }
  }

  struct Answer {
    bool ok;
    std::uint64_t local, address, done_cycle, spills, queries;
  };

  /// Runs one request from `arrival` until its response shows.
  Answer translate(std::uint32_t region, std::uint32_t row, std::uint32_t offset, std::uint64_t arrival) {
    skip_to(arrival);
    Answer a{false, 0, 0, 0, 0, 0};
    m->req_valid_i = 1;
    m->req_malloc_i = static_cast<CData>(region);
    m->req_row_i = static_cast<SData>(row);
    m->req_offset_i = static_cast<SData>(offset);
    bool fired = false;
    bool pending = false;  // a restore query awaits its answer
    std::pair<std::uint32_t, std::uint32_t> asked{};
    std::uint64_t answer_at = 0;
    for (std::uint64_t i = 0;; ++i) {
      if (i > kMaxCycles) throw std::logic_error("RTL AAU: no response");
      if (pending && cycle < answer_at) skip_to(answer_at);  // the unit only waits for memory
      const bool answer = pending && cycle >= answer_at;
      m->restore_rsp_valid_i = answer;
      const auto found = spill_area.find(asked);
      m->restore_rsp_found_i = answer && found != spill_area.end();
      m->restore_rsp_local_i = static_cast<SData>(answer && found != spill_area.end() ? found->second : 0);
      m->eval();
      if (fired && m->rsp_valid_o) {
        a.ok = m->rsp_ok_o != 0;
        a.local = m->rsp_local_o;
        a.address = m->rsp_addr_o;
        a.done_cycle = cycle;
        return a;  // taken (rsp_ready_i) at the next edge, whenever that comes
      }
      if (m->req_valid_i && m->req_ready_o) fired = true;
      if (m->spill_valid_o) {
        spill_area[{m->spill_malloc_o, m->spill_row_o}] = m->spill_local_o;
        ++a.spills;
        ++spills;
      }
      if (answer && m->restore_rsp_ready_o) pending = false;
      if (m->restore_req_valid_o) {
        pending = true;
        asked = {m->restore_req_malloc_o, m->restore_req_row_o};
        answer_at = cycle + (p.rat.restore_cycles == 0 ? 1 : p.rat.restore_cycles);
        ++a.queries;
        ++queries;
      }
      edge();
      if (fired) m->req_valid_i = 0;
    }
  }

  golden::AauParams p;
  golden::HubClock clock;
  std::unique_ptr<VerilatedContext> ctx;
  std::unique_ptr<Vcosim_aau> m;
  std::unique_ptr<VerilatedFstC> trace;
  std::vector<Region> regions;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> spill_area;  // the device memory's spill area
  std::uint64_t cycle = 0;  // the hub cycle the model is in
  std::uint64_t simulated = 0, skipped = 0, spills = 0, queries = 0, wave_time = 0;
};

RtlAddressAllocationUnit::RtlAddressAllocationUnit(const golden::AauParams& p) {
  if (p.apt_regions != kRegions || p.rat.entries != kRatEntries || p.rat.banks != kRatBanks) {
    throw std::invalid_argument("RTL AAU: built for " + std::to_string(kRegions) + " APT regions and a RAT of " +
                                std::to_string(kRatEntries) + " entries in " + std::to_string(kRatBanks) +
                                " banks; asked for " + std::to_string(p.apt_regions) + " regions, " +
                                std::to_string(p.rat.entries) + " entries, " + std::to_string(p.rat.banks) + " banks");
  }
  if (p.region_full != golden::RegionFullPolicy::kStall) {
    throw std::invalid_argument("RTL AAU: only the stall region-full policy (the RTL refuses, rsp_ok_o = 0)");
  }
  impl_ = std::make_unique<Impl>(p);
}

RtlAddressAllocationUnit::~RtlAddressAllocationUnit() = default;

RtlAauGeometry RtlAddressAllocationUnit::geometry() {
  return RtlAauGeometry{kRegions, kRatEntries, kRatBanks, kLocalBits, kRowBits};
}

std::uint32_t RtlAddressAllocationUnit::rowsp_malloc(std::uint64_t base_address, std::uint32_t row_bytes,
                                                     std::uint64_t capacity_rows) {
  if (row_bytes == 0 || (row_bytes & (row_bytes - 1)) != 0) {
    throw std::invalid_argument("RTL AAU: row_bytes " + std::to_string(row_bytes) + " is not a power of two");
  }
  if (row_bytes > (1ULL << kOffsetBits)) {
    throw std::invalid_argument("RTL AAU: row_bytes " + std::to_string(row_bytes) + " above the RTL's " +
                                std::to_string(1ULL << kOffsetBits));
  }
  if (base_address >= (1ULL << kAddrBits)) {
    throw std::invalid_argument("RTL AAU: base address " + std::to_string(base_address) + " outside its " +
                                std::to_string(kAddrBits) + "-bit addresses");
  }
  if (capacity_rows == 0 || capacity_rows > (1ULL << kLocalBits)) {
    throw std::invalid_argument("RTL AAU: capacity_rows " + std::to_string(capacity_rows) + " outside [1, " +
                                std::to_string(1ULL << kLocalBits) + "]");
  }
  for (std::uint32_t r = 0; r < kRegions; ++r) {
    Impl::Region& g = impl_->regions[r];
    if (g.active) continue;
    std::uint32_t log2 = 0;
    while ((1U << log2) < row_bytes) ++log2;
    g = Impl::Region{true, base_address, row_bytes, log2, capacity_rows};
    impl_->configure(r, false);
    return golden::make_malloc_id(impl_->p.gpu, r);
  }
  throw std::length_error("rowspMalloc: all " + std::to_string(kRegions) + " APT entries of the RTL AAU are in use");
}

void RtlAddressAllocationUnit::reinit_region(std::uint32_t malloc_id) {
  const std::uint32_t r = golden::malloc_id_region(malloc_id);
  if (golden::malloc_id_gpu(malloc_id) != impl_->p.gpu || r >= kRegions || !impl_->regions[r].active) {
    throw std::out_of_range("RTL AAU: MallocID " + std::to_string(malloc_id) + " is not an active region");
  }
  impl_->configure(r, true);
  impl_->configure(r, false);
}

void RtlAddressAllocationUnit::free_region(std::uint32_t malloc_id) {
  const std::uint32_t r = golden::malloc_id_region(malloc_id);
  if (golden::malloc_id_gpu(malloc_id) != impl_->p.gpu || r >= kRegions || !impl_->regions[r].active) {
    throw std::out_of_range("RTL AAU: MallocID " + std::to_string(malloc_id) + " is not an active region");
  }
  impl_->configure(r, true);
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
  const std::uint32_t region = golden::malloc_id_region(w.malloc_id);
  if (golden::malloc_id_gpu(w.malloc_id) != impl_->p.gpu || region >= kRegions || !impl_->regions[region].active) {
    throw std::out_of_range("RTL AAU: MallocID " + std::to_string(w.malloc_id) + " is not an active region of GPU " +
                            std::to_string(impl_->p.gpu));
  }
  const Impl::Region& g = impl_->regions[region];
  if (row_extent_end(w) > g.row_bytes) {
    throw std::logic_error("RTL AAU: row store at RowOffset " + std::to_string(w.row_offset) + " passes the end of its " +
                           std::to_string(g.row_bytes) + "-byte row");
  }
  if (w.row_id < 0 || static_cast<std::uint64_t>(w.row_id) >= (1ULL << kRowBits)) {
    throw std::invalid_argument("RTL AAU: RowID " + std::to_string(w.row_id) + " outside [0, " +
                                std::to_string(1ULL << kRowBits) + ")");
  }
  const std::uint64_t arrival = impl_->clock.cycle_at(now);
  const Impl::Answer a = impl_->translate(region, static_cast<std::uint32_t>(w.row_id), w.row_offset,
                                          std::max(arrival, impl_->cycle));
  IngressResult r;
  r.cycles = static_cast<std::uint32_t>(a.done_cycle - arrival);
  r.metadata_read_bytes = a.queries * impl_->p.rat.spill_entry_bytes;
  r.metadata_write_bytes = a.spills * impl_->p.rat.spill_entry_bytes;
  if (!a.ok) {
    r.accepted = false;
    const std::uint32_t retry = impl_->p.region_full_retry_cycles == 0 ? 1 : impl_->p.region_full_retry_cycles;
    r.retry_at = impl_->clock.tick_of(arrival + retry);
    return r;
  }
  r.local_row_id = static_cast<std::int64_t>(a.local);
  r.address = a.address;
  return r;
}

std::uint64_t RtlAddressAllocationUnit::cycles_simulated() const { return impl_->simulated; }
std::uint64_t RtlAddressAllocationUnit::cycles_skipped() const { return impl_->skipped; }
std::uint64_t RtlAddressAllocationUnit::spills() const { return impl_->spills; }
std::uint64_t RtlAddressAllocationUnit::restore_queries() const { return impl_->queries; }

void RtlAddressAllocationUnit::trace_to(const std::string& fst_path) {
  if (impl_->trace) impl_->trace->close();
  impl_->trace = std::make_unique<VerilatedFstC>();
  impl_->m->trace(impl_->trace.get(), 99);
  impl_->trace->open(fst_path.c_str());
}

}  // namespace moehub::cosim
