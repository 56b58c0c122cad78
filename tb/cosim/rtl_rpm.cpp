#include "rtl_rpm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "golden/merge_rule.hpp"
#include "rtl_rpm_core.hpp"

namespace moehub::cosim {

namespace {

using golden::ByteMask;
using golden::is_row_store;
using golden::Opcode;
using golden::StoreRequest;
using golden::Tick;

const detail::RpmModelEntry& model_for(const golden::RpmParams& p) {
  std::string built;
  for (const auto& e : detail::rpm_models()) {
    const RtlRpmGeometry& g = e.geometry;
    if (static_cast<std::int64_t>(g.peers) == p.num_gpus - 1 && g.entries_per_peer == p.entries_per_peer) return e;
    built += (built.empty() ? "" : ", ") + std::to_string(g.peers) + " peers of " + std::to_string(g.entries_per_peer);
  }
  throw std::invalid_argument("RTL RPM: no model Verilated for " + std::to_string(p.num_gpus - 1) + " peers of " +
                              std::to_string(p.entries_per_peer) + " entries (built: " + built +
                              " entries; tb/CMakeLists.txt)");
}

}  // namespace

struct RtlRuntimePacketManager::Impl {
  struct Entry {
    bool valid = false;
    StoreRequest packet;  // the first store, with the merged mask
    std::uint64_t line = 0;
    std::uint64_t created = 0;  // hub cycle of the accept (the behavioural RPM's creation cycle)
    bool presented = false;     // valid on the model (its age counts from presented_at)
    std::uint64_t presented_at = 0;
    std::uint32_t merged = 0;
    std::vector<std::uint64_t> tags;
  };

  Impl(const golden::RpmParams& params, const detail::RpmModelEntry& e)
      : p(params), clock(params.clock_ghz), g(e.geometry), model(e.make(params)),
        pool(static_cast<std::size_t>(g.peers) * g.entries_per_peer), count(g.peers, 0) {}

  std::size_t partition_of(std::int32_t dst) const {
    if (dst < 0 || dst >= p.num_gpus || dst == p.gpu) {
      throw std::invalid_argument("RTL RPM of GPU " + std::to_string(p.gpu) + ": store to GPU " + std::to_string(dst));
    }
    return static_cast<std::size_t>(dst < p.gpu ? dst : dst - 1);
  }
  /// Slot `s` merges into in its partition, or -1.
  int find_merge(const StoreRequest& s) const {
    if (!golden::mergeable(s)) return -1;
    const std::size_t part = partition_of(s.dst_gpu);
    const golden::MergeKey k = golden::merge_key(s);
    for (std::uint32_t i = 0; i < count[part]; ++i) {  // the valid entries
      const Entry& e = pool[part * g.entries_per_peer + i];
      if (golden::merge_key(e.packet) == k) return static_cast<int>(part * g.entries_per_peer + i);
    }
    return -1;
  }
  /// The first free slot of `dst`'s partition (its entries are kept in
  /// arrival order from the partition's first slot on), or -1.
  int free_slot(std::int32_t dst) const {
    const std::size_t part = partition_of(dst);
    return count[part] < g.entries_per_peer ? static_cast<int>(part * g.entries_per_peer + count[part]) : -1;
  }
  /// Slot `slot` was emptied: the entries behind it move down one slot, with
  /// what the model shows for them and their age counters, so that slot
  /// order stays arrival order.
  void compact(std::size_t slot) {
    const std::size_t part = slot / g.entries_per_peer;
    const std::size_t last = part * g.entries_per_peer + count[part];  // the last valid slot before the take
    pool.shift_down(slot, last);
    model->shift_down(static_cast<std::uint32_t>(slot), static_cast<std::uint32_t>(last));
    for (std::size_t& k : deferred) {
      if (k > slot && k <= last) --k;
    }
  }

  /// Marks a moved-from entry free (its other fields are not read while it is).
  static void vacate(Entry& e) {
    e.valid = false;
    e.presented = false;
    e.tags.clear();
  }
  /// Presents slot `i` of the pool on the model (valid only once presented).
  void present(std::size_t i) {
    const Entry& e = pool[i];
    const bool v = e.valid && e.presented;
    detail::RpmSlot s;
    s.valid = v;
    s.full = v && (e.packet.mask.full() || e.packet.op == Opcode::kFlagWrite);
    s.prio = v && e.packet.priority;
    s.row = v && is_row_store(e.packet.op) ? static_cast<std::uint32_t>(e.packet.row_id + 1) : 0;
    model->set_slot(static_cast<std::uint32_t>(i), s);
  }
  void make_presented(std::size_t i) {
    Entry& e = pool[i];
    e.presented = true;
    e.presented_at = model->cycle;
    ++shown;
    present(i);
  }
  /// Presents the deferred entries created at or before the model's cycle.
  void present_due() {
    for (std::size_t k = 0; k < deferred.size();) {
      if (pool[deferred[k]].created <= model->cycle) {
        make_presented(deferred[k]);
        deferred[k] = deferred.back();
        deferred.pop_back();
      } else {
        ++k;
      }
    }
  }
  /// Advances to cycle `c`: every cycle is simulated while entries are
  /// presented (their age counters count); deferred entries appear at their
  /// creation cycle; with nothing presented the cycles are skipped.
  void advance_to(std::uint64_t c) {
    present_due();
    while (model->cycle < c) {
      std::uint64_t next = c;
      for (const std::size_t i : deferred) next = std::min(next, pool[i].created);
      if (shown == 0) {
        skipped += next - model->cycle;
        model->cycle = next;
      } else {
        model->step(next - model->cycle);
      }
      present_due();
    }
  }

  /// The entries by slot (dest * entries_per_peer + entry): a slot names an
  /// entry of a fixed store, so compaction moves indices, not entries.
  class Pool {
   public:
    explicit Pool(std::size_t n) : entries_(n), at_(n) {
      for (std::size_t i = 0; i < n; ++i) at_[i] = static_cast<std::uint32_t>(i);
    }
    Entry& operator[](std::size_t slot) { return entries_[at_[slot]]; }
    const Entry& operator[](std::size_t slot) const { return entries_[at_[slot]]; }
    /// Slots (first, last] take the entries of the slot above them; slot
    /// `last` takes the entry of slot `first`.
    void shift_down(std::size_t first, std::size_t last) {
      const std::uint32_t x = at_[first];
      std::move(at_.begin() + static_cast<std::ptrdiff_t>(first) + 1, at_.begin() + static_cast<std::ptrdiff_t>(last) + 1,
                at_.begin() + static_cast<std::ptrdiff_t>(first));
      at_[last] = x;
    }

   private:
    std::vector<Entry> entries_;
    std::vector<std::uint32_t> at_;
  };

  golden::RpmParams p;
  golden::HubClock clock;
  RtlRpmGeometry g;
  std::unique_ptr<detail::RpmModel> model;
  Pool pool;
  std::size_t held = 0;     // valid slots
  std::vector<std::uint32_t> count;  // valid slots per partition (its first count slots)
  std::size_t shown = 0;    // valid slots presented on the model
  std::vector<std::size_t> deferred;  // valid slots created after the model's cycle, not yet presented
  std::vector<std::uint32_t> withdrawn;  // deferred slots shown to the last offer only
  std::vector<std::uint64_t> last_tags;
  std::uint64_t skipped = 0;
  golden::RpmStats stats;
};

RtlRuntimePacketManager::RtlRuntimePacketManager(const golden::RpmParams& p) {
  if (p.num_gpus < 2 || p.gpu < 0 || p.gpu >= p.num_gpus) {
    throw std::invalid_argument("RTL RPM: gpu " + std::to_string(p.gpu) + " of " + std::to_string(p.num_gpus));
  }
  const detail::RpmModelEntry& e = model_for(p);
  if (p.timer_cycles >= (1U << e.geometry.timer_bits) - 1) {
    throw std::invalid_argument("RTL RPM: timer_cycles " + std::to_string(p.timer_cycles) + " outside [0, " +
                                std::to_string((1U << e.geometry.timer_bits) - 2) + "]");
  }
  impl_ = std::make_unique<Impl>(p, e);
}

RtlRuntimePacketManager::~RtlRuntimePacketManager() = default;

RtlRpmGeometry RtlRuntimePacketManager::geometry() { return detail::rpm_models().front().geometry; }

std::vector<RtlRpmGeometry> RtlRuntimePacketManager::geometries() {
  std::vector<RtlRpmGeometry> v;
  for (const auto& e : detail::rpm_models()) v.push_back(e.geometry);
  return v;
}

bool RtlRuntimePacketManager::can_accept(const StoreRequest& s, Tick) const {
  return impl_->find_merge(s) >= 0 || impl_->free_slot(s.dst_gpu) >= 0;
}

void RtlRuntimePacketManager::accept(const StoreRequest& s, Tick now) {
  Impl& d = *impl_;
  const std::uint32_t row_bits = d.g.row_id_bits;
  if (is_row_store(s.op) && (s.row_id < 0 || static_cast<std::uint64_t>(s.row_id) + 1 >= (1ULL << row_bits))) {
    throw std::invalid_argument("RTL RPM: RowID " + std::to_string(s.row_id) + " outside [0, " +
                                std::to_string((1ULL << row_bits) - 2) + "]");
  }
  const ByteMask mask = golden::line_mask(s, "RTL RPM");
  // Accepts may run ahead of picks (the platform's stores reach the buffer up
  // to a quantum ahead of its egress): the model's clock follows the picks,
  // and an entry created after the model's cycle is presented when the model
  // reaches that cycle, so that its age counts as in the behavioural RPM.
  const std::uint64_t created = d.clock.cycle_at(now);
  ++d.stats.stores_accepted;
  int slot = d.find_merge(s);
  if (slot >= 0) {
    ++d.stats.stores_merged;
    Impl::Entry& e = d.pool[static_cast<std::size_t>(slot)];
    e.packet.mask |= mask;
    e.packet.ready = std::max(e.packet.ready, s.ready);
    ++e.merged;
    e.tags.push_back(s.tag);
    d.present(static_cast<std::size_t>(slot));
    return;
  }
  slot = d.free_slot(s.dst_gpu);
  if (slot < 0) throw std::logic_error("RTL RPM: partition full (accept without can_accept)");
  Impl::Entry& e = d.pool[static_cast<std::size_t>(slot)];
  e = Impl::Entry{true, s, golden::merge_line(s), created, false, 0, 1, {s.tag}};
  e.packet.mask = mask;
  ++d.held;
  ++d.count[static_cast<std::size_t>(slot) / d.g.entries_per_peer];
  if (created <= d.model->cycle) {
    d.make_presented(static_cast<std::size_t>(slot));
  } else {
    d.deferred.push_back(static_cast<std::size_t>(slot));
  }
}

bool RtlRuntimePacketManager::pick(Tick now, const std::vector<std::uint8_t>& congested, golden::EgressPick& out) {
  Impl& d = *impl_;
  d.advance_to(d.clock.cycle_at(now));
  if (d.held == 0) return false;
  // the behavioural RPM picks among every accepted entry, also those accepted
  // for a later cycle: they are shown for this decision only (not expired,
  // age 0) and withdrawn before the clock edge, so that their ages start at
  // their creation cycle
  for (const std::size_t i : d.deferred) {
    d.pool[i].presented = true;
    d.present(i);
  }
  const int granted = d.model->offer(congested);
  // the entries shown for this decision only, apart from a granted one, are
  // withdrawn after the clock edge that takes the grant: the edge takes the
  // grant that was offered, with the inputs it was offered on
  d.withdrawn.clear();
  for (const std::size_t i : d.deferred) {
    d.pool[i].presented = false;
    if (static_cast<int>(i) != granted) d.withdrawn.push_back(static_cast<std::uint32_t>(i));
  }
  if (granted < 0) {
    for (const std::uint32_t i : d.withdrawn) d.present(i);
    d.model->decline();
    return false;
  }
  const auto slot = static_cast<std::size_t>(granted);
  const auto it = std::find(d.deferred.begin(), d.deferred.end(), slot);
  if (it != d.deferred.end()) {
    d.deferred.erase(it);
  } else {
    --d.shown;
  }
  // what made it eligible, for the statistics: the RTL's age counter of the
  // slot (before the edge clears it) and whether its partition was full
  const bool timer_expired = d.model->age_of(static_cast<std::uint32_t>(slot)) >= d.p.timer_cycles;
  const bool partition_full = d.count[slot / d.g.entries_per_peer] == d.g.entries_per_peer;
  // the grant is taken at this edge; the slot is free after it
  d.model->take(d.withdrawn);
  for (const std::uint32_t i : d.withdrawn) d.present(i);
  Impl::Entry e = std::move(d.pool[slot]);
  Impl::vacate(d.pool[slot]);
  --d.held;
  --d.count[slot / d.g.entries_per_peer];
  d.compact(slot);
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
  golden::RpmStats& st = d.stats;
  ++st.packets_sent;
  st.stores_sent += e.merged;
  st.bytes_sent += out.store.bytes;
  st.packet_flits[(out.store.bytes + 15) / 16] += 1;
  if (e.packet.mask.full()) {
    ++st.full_packets;
  } else if (d.p.hold_partial && e.packet.op != Opcode::kFlagWrite) {
    if (timer_expired) {
      ++st.timer_flushes;
    } else if (partition_full) {
      ++st.pressure_flushes;
    }
  }
  d.last_tags = std::move(e.tags);
  return true;
}

Tick RtlRuntimePacketManager::next_event(Tick now) const {
  const Impl& d = *impl_;
  if (!d.p.hold_partial) return golden::kNever;
  std::uint64_t soonest = ~0ULL;
  if (d.held == 0) return golden::kNever;
  const std::uint32_t depth = d.g.entries_per_peer;
  const std::uint64_t cycle = d.clock.cycle_at(now);
  for (std::uint32_t part = 0; part < d.g.peers; ++part) {
    if (d.count[part] == depth) continue;  // a full partition drains without its timers
    for (std::uint32_t i = 0; i < d.count[part]; ++i) {  // the valid entries
      const Impl::Entry& e = d.pool[part * depth + i];
      if (e.packet.op == Opcode::kFlagWrite || e.packet.mask.full()) continue;
      const std::uint64_t c = (e.presented ? e.presented_at : e.created) + d.p.timer_cycles;
      if (c > cycle) soonest = std::min(soonest, c);
    }
  }
  return soonest == ~0ULL ? golden::kNever : d.clock.tick_of(soonest);
}

std::size_t RtlRuntimePacketManager::occupancy() const { return impl_->held; }
const golden::RpmStats* RtlRuntimePacketManager::rpm_stats() const { return &impl_->stats; }
std::uint32_t RtlRuntimePacketManager::pick_cycles() const { return impl_->p.pick_cycles; }

const std::vector<std::uint64_t>& RtlRuntimePacketManager::last_pick_tags() const { return impl_->last_tags; }
std::uint64_t RtlRuntimePacketManager::cycles_simulated() const { return impl_->model->simulated; }
std::uint64_t RtlRuntimePacketManager::cycles_skipped() const { return impl_->skipped; }
std::uint64_t RtlRuntimePacketManager::cycles_forwarded() const { return impl_->model->forwarded; }

void RtlRuntimePacketManager::trace_to(const std::string& fst_path) { impl_->model->trace_to(fst_path); }

}  // namespace moehub::cosim
