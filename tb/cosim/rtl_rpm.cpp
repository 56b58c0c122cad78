#include "rtl_rpm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "Vcosim_rpm.h"

namespace moehub::cosim {

namespace {

using golden::ByteMask;
using golden::Opcode;
using golden::StoreRequest;
using golden::Tick;

constexpr std::uint32_t kPeers = MOEHUB_COSIM_RPM_DESTS;
constexpr std::uint32_t kDepth = MOEHUB_COSIM_RPM_DEPTH;
constexpr std::uint32_t kRowBits = MOEHUB_COSIM_RPM_ROW_ID_BITS;
constexpr std::uint32_t kTimerBits = MOEHUB_COSIM_RPM_TIMER_BITS;

bool is_row_store(Opcode op) { return op == Opcode::kRowStore || op == Opcode::kRowStoreNop; }
std::uint64_t line_of(const StoreRequest& s) {
  return is_row_store(s.op) ? s.row_offset / golden::kLineBytes : s.address / golden::kLineBytes;
}
std::uint32_t offset_in_line(const StoreRequest& s) {
  return is_row_store(s.op) ? s.row_offset % golden::kLineBytes
                            : static_cast<std::uint32_t>(s.address % golden::kLineBytes);
}

/// Bits [lsb, lsb + width) of a wide port.
template <class Wide>
void set_bits(Wide& w, unsigned lsb, unsigned width, std::uint32_t value) {
  for (unsigned b = 0; b < width; ++b) {
    const unsigned bit = lsb + b;
    const std::uint32_t m = 1u << (bit % 32);
    if ((value >> b) & 1u) {
      w[bit / 32] |= m;
    } else {
      w[bit / 32] &= ~m;
    }
  }
}

}  // namespace

struct RtlRuntimePacketManager::Impl {
  struct Entry {
    bool valid = false;
    StoreRequest packet;  // the first store, with the merged mask
    std::uint64_t line = 0;
    std::uint64_t created = 0;
    std::uint32_t merged = 0;
    std::vector<std::uint64_t> tags;
  };

  explicit Impl(const golden::RpmParams& params)
      : p(params), clock(params.clock_ghz), ctx(std::make_unique<VerilatedContext>()), pool(kPeers * kDepth) {
    ctx->traceEverOn(true);
    m = std::make_unique<Vcosim_rpm>(ctx.get());
    m->clk_i = 0;
    m->gnt_ready_i = 0;
    m->timeout_i = static_cast<CData>(p.timer_cycles);
    m->drain_i = !p.hold_partial;
    m->rst_ni = 1;
    m->eval();
    m->rst_ni = 0;
    m->eval();
    m->rst_ni = 1;
    present(0);
  }
  ~Impl() {
    m->final();
    if (trace) trace->close();
  }

  std::size_t partition_of(std::int32_t dst) const {
    if (dst < 0 || dst >= p.num_gpus || dst == p.gpu) {
      throw std::invalid_argument("RTL RPM of GPU " + std::to_string(p.gpu) + ": store to GPU " + std::to_string(dst));
    }
    return static_cast<std::size_t>(dst < p.gpu ? dst : dst - 1);
  }
  /// Slot `s` merges into in its partition, or -1.
  int find_merge(const StoreRequest& s) const {
    if (s.op == Opcode::kFlagWrite) return -1;
    const std::size_t part = partition_of(s.dst_gpu);
    for (std::uint32_t i = 0; i < kDepth; ++i) {
      const Entry& e = pool[part * kDepth + i];
      if (!e.valid || e.packet.op != s.op || e.packet.priority != s.priority || e.line != line_of(s)) continue;
      if (is_row_store(s.op) && (e.packet.malloc_id != s.malloc_id || e.packet.row_id != s.row_id)) continue;
      return static_cast<int>(part * kDepth + i);
    }
    return -1;
  }
  int free_slot(std::int32_t dst) const {
    const std::size_t part = partition_of(dst);
    for (std::uint32_t i = 0; i < kDepth; ++i) {
      if (!pool[part * kDepth + i].valid) return static_cast<int>(part * kDepth + i);
    }
    return -1;
  }
  bool empty() const {
    return std::none_of(pool.begin(), pool.end(), [](const Entry& e) { return e.valid; });
  }

  /// Drives the pool and `congested` (peer-indexed mask) onto the model.
  void present(unsigned congested) {
    unsigned valid = 0, full = 0, prio = 0;
    for (unsigned i = 0; i < pool.size(); ++i) {
      const Entry& e = pool[i];
      valid |= (e.valid ? 1u : 0u) << i;
      full |= (e.valid && (e.packet.mask.full() || e.packet.op == Opcode::kFlagWrite) ? 1u : 0u) << i;
      prio |= (e.valid && e.packet.priority ? 1u : 0u) << i;
      const std::uint32_t row =
          e.valid && is_row_store(e.packet.op) ? static_cast<std::uint32_t>(e.packet.row_id + 1) : 0;
      set_bits(m->entry_row_i, i * kRowBits, kRowBits, row);
    }
    m->entry_valid_i = static_cast<std::remove_reference_t<decltype(m->entry_valid_i)>>(valid);
    m->entry_full_i = static_cast<std::remove_reference_t<decltype(m->entry_full_i)>>(full);
    m->entry_prio_i = static_cast<std::remove_reference_t<decltype(m->entry_prio_i)>>(prio);
    m->congested_i = static_cast<CData>(congested);
    m->eval();
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
  /// Advances to cycle `c`: every cycle is simulated while entries are held.
  void advance_to(std::uint64_t c) {
    if (c <= cycle) return;
    if (empty()) {
      skipped += c - cycle;
      cycle = c;
      return;
    }
    m->gnt_ready_i = 0;
    present(0);
    while (cycle < c) edge();
  }

  golden::RpmParams p;
  golden::HubClock clock;
  std::unique_ptr<VerilatedContext> ctx;
  std::unique_ptr<Vcosim_rpm> m;
  std::unique_ptr<VerilatedFstC> trace;
  std::vector<Entry> pool;  // slot dest * kDepth + entry
  std::vector<std::uint64_t> last_tags;
  std::uint64_t cycle = 0, simulated = 0, skipped = 0, wave_time = 0;
};

RtlRuntimePacketManager::RtlRuntimePacketManager(const golden::RpmParams& p) {
  if (p.num_gpus < 2 || p.gpu < 0 || p.gpu >= p.num_gpus) {
    throw std::invalid_argument("RTL RPM: gpu " + std::to_string(p.gpu) + " of " + std::to_string(p.num_gpus));
  }
  if (static_cast<std::uint32_t>(p.num_gpus - 1) != kPeers || p.entries_per_peer != kDepth) {
    throw std::invalid_argument("RTL RPM: built for " + std::to_string(kPeers) + " peers of " + std::to_string(kDepth) +
                                " entries; asked for " + std::to_string(p.num_gpus - 1) + " peers of " +
                                std::to_string(p.entries_per_peer));
  }
  if (p.timer_cycles >= (1U << kTimerBits) - 1) {
    throw std::invalid_argument("RTL RPM: timer_cycles " + std::to_string(p.timer_cycles) + " outside [0, " +
                                std::to_string((1U << kTimerBits) - 2) + "]");
  }
  impl_ = std::make_unique<Impl>(p);
}

RtlRuntimePacketManager::~RtlRuntimePacketManager() = default;

RtlRpmGeometry RtlRuntimePacketManager::geometry() { return RtlRpmGeometry{kPeers, kDepth, kRowBits, kTimerBits}; }

bool RtlRuntimePacketManager::can_accept(const StoreRequest& s, Tick) const {
  return impl_->find_merge(s) >= 0 || impl_->free_slot(s.dst_gpu) >= 0;
}

void RtlRuntimePacketManager::accept(const StoreRequest& s, Tick now) {
  Impl& d = *impl_;
  if (is_row_store(s.op) && (s.row_id < 0 || static_cast<std::uint64_t>(s.row_id) + 1 >= (1ULL << kRowBits))) {
    throw std::invalid_argument("RTL RPM: RowID " + std::to_string(s.row_id) + " outside [0, " +
                                std::to_string((1ULL << kRowBits) - 2) + "]");
  }
  ByteMask mask = s.mask;
  if (mask.empty()) {
    const std::uint32_t off = offset_in_line(s);
    if (s.bytes == 0 || off + s.bytes > golden::kLineBytes) {
      throw std::invalid_argument("RTL RPM: store of " + std::to_string(s.bytes) + " bytes at offset " +
                                  std::to_string(off) + " of its 128-byte line");
    }
    mask = ByteMask::range(off, s.bytes);
  }
  d.advance_to(d.clock.cycle_at(now));
  int slot = d.find_merge(s);
  if (slot >= 0) {
    Impl::Entry& e = d.pool[static_cast<std::size_t>(slot)];
    e.packet.mask |= mask;
    e.packet.ready = std::max(e.packet.ready, s.ready);
    ++e.merged;
    e.tags.push_back(s.tag);
    return;
  }
  slot = d.free_slot(s.dst_gpu);
  if (slot < 0) throw std::logic_error("RTL RPM: partition full (accept without can_accept)");
  Impl::Entry& e = d.pool[static_cast<std::size_t>(slot)];
  e = Impl::Entry{true, s, line_of(s), d.cycle, 1, {s.tag}};
  e.packet.mask = mask;
}

bool RtlRuntimePacketManager::pick(Tick now, const std::vector<std::uint8_t>& congested, golden::EgressPick& out) {
  Impl& d = *impl_;
  d.advance_to(d.clock.cycle_at(now));
  if (d.empty()) return false;
  unsigned cong = 0;
  for (std::int32_t g = 0; g < d.p.num_gpus; ++g) {
    if (g == d.p.gpu || static_cast<std::size_t>(g) >= congested.size() || congested[static_cast<std::size_t>(g)] == 0) {
      continue;
    }
    cong |= 1u << d.partition_of(g);
  }
  d.m->gnt_ready_i = 1;
  d.present(cong);
  if (!d.m->gnt_valid_o) {
    d.m->gnt_ready_i = 0;
    return false;
  }
  const std::size_t slot = d.m->gnt_dest_o * kDepth + d.m->gnt_entry_o;
  d.edge();  // the grant is taken at this edge
  d.m->gnt_ready_i = 0;
  Impl::Entry e = std::move(d.pool[slot]);
  d.pool[slot] = Impl::Entry{};
  std::uint32_t first = 0;
  while (!((e.packet.mask.bits[first / 64] >> (first % 64)) & 1ULL)) ++first;
  if (is_row_store(e.packet.op)) {
    e.packet.row_offset = static_cast<std::uint32_t>(e.line * golden::kLineBytes) + first;
  } else {
    e.packet.address = e.line * golden::kLineBytes + first;
  }
  e.packet.bytes = e.packet.mask.count();
  out.store = e.packet;
  out.merged = e.merged;
  out.cycles = d.p.pick_cycles;
  d.last_tags = std::move(e.tags);
  return true;
}

Tick RtlRuntimePacketManager::next_event(Tick now) const {
  const Impl& d = *impl_;
  if (!d.p.hold_partial) return golden::kNever;
  std::uint64_t soonest = ~0ULL;
  for (std::uint32_t part = 0; part < kPeers; ++part) {
    bool full = true;
    for (std::uint32_t i = 0; i < kDepth; ++i) full = full && d.pool[part * kDepth + i].valid;
    for (std::uint32_t i = 0; i < kDepth; ++i) {
      const Impl::Entry& e = d.pool[part * kDepth + i];
      if (!e.valid || full || e.packet.op == Opcode::kFlagWrite || e.packet.mask.full()) continue;
      const std::uint64_t c = e.created + d.p.timer_cycles;
      if (c > d.clock.cycle_at(now)) soonest = std::min(soonest, c);
    }
  }
  return soonest == ~0ULL ? golden::kNever : d.clock.tick_of(soonest);
}

std::size_t RtlRuntimePacketManager::occupancy() const {
  return static_cast<std::size_t>(
      std::count_if(impl_->pool.begin(), impl_->pool.end(), [](const Impl::Entry& e) { return e.valid; }));
}

const std::vector<std::uint64_t>& RtlRuntimePacketManager::last_pick_tags() const { return impl_->last_tags; }
std::uint64_t RtlRuntimePacketManager::cycles_simulated() const { return impl_->simulated; }
std::uint64_t RtlRuntimePacketManager::cycles_skipped() const { return impl_->skipped; }

void RtlRuntimePacketManager::trace_to(const std::string& fst_path) {
  if (impl_->trace) impl_->trace->close();
  impl_->trace = std::make_unique<VerilatedFstC>();
  impl_->m->trace(impl_->trace.get(), 99);
  impl_->trace->open(fst_path.c_str());
}

}  // namespace moehub::cosim
