#include "golden/rpm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moehub::golden {

namespace rpm_detail {

template <class T>
const T* SortedRun<T>::lower_bound(const T& x) const {
  return std::lower_bound(begin(), end(), x);
}

template <class T>
void SortedRun<T>::insert(const T& x) {
  if (empty() || !(x < v_.back())) {  // past the last (the common case): append
    if (head_ > 0 && head_ >= v_.size() - head_) {  // the free stretch outgrew the elements: close it
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    v_.push_back(x);
    return;
  }
  const auto pos = static_cast<std::size_t>(std::upper_bound(begin(), end(), x) - v_.data());
  if (head_ > 0 && pos - head_ < v_.size() - pos) {  // move the shorter front part one step towards the free stretch
    std::move(v_.begin() + static_cast<std::ptrdiff_t>(head_), v_.begin() + static_cast<std::ptrdiff_t>(pos),
              v_.begin() + static_cast<std::ptrdiff_t>(head_ - 1));
    --head_;
    v_[pos - 1] = x;
    return;
  }
  if (head_ > 0 && head_ >= v_.size() - head_) {  // the free stretch outgrew the elements: close it
    v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
    v_.insert(v_.begin() + static_cast<std::ptrdiff_t>(pos - head_), x);
    head_ = 0;
    return;
  }
  v_.insert(v_.begin() + static_cast<std::ptrdiff_t>(pos), x);
}

template <class T>
void SortedRun<T>::erase(const T& x) {
  if (!empty() && !(front() < x) && !(x < front())) {  // the first (the common case): take it
    if (++head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    }
    return;
  }
  const T* it = lower_bound(x);
  if (it == end() || x < *it) throw std::logic_error("RPM: index out of step with its entries");
  const auto pos = static_cast<std::size_t>(it - v_.data());
  if (pos - head_ < v_.size() - 1 - pos) {  // move the shorter front part one step back
    std::move_backward(v_.begin() + static_cast<std::ptrdiff_t>(head_), v_.begin() + static_cast<std::ptrdiff_t>(pos),
                       v_.begin() + static_cast<std::ptrdiff_t>(pos + 1));
    ++head_;
  } else {
    v_.erase(v_.begin() + static_cast<std::ptrdiff_t>(pos));
  }
  if (head_ == v_.size()) {
    v_.clear();
    head_ = 0;
  }
}

}  // namespace rpm_detail

RuntimePacketManager::RuntimePacketManager(const RpmParams& p) : p_(p), clock_(p.clock_ghz) {
  if (p.num_gpus < 2) throw std::invalid_argument("RPM: num_gpus must be >= 2");
  if (p.gpu < 0 || p.gpu >= p.num_gpus) {
    throw std::invalid_argument("RPM: gpu " + std::to_string(p.gpu) + " outside [0, " + std::to_string(p.num_gpus) +
                                ")");
  }
  if (p.entries_per_peer == 0) throw std::invalid_argument("RPM: entries_per_peer must be >= 1");
  for (std::int32_t g = 0; g < p.num_gpus; ++g) {
    if (g != p.gpu) peers_.push_back(g);
  }
  parts_.resize(peers_.size());
  std::size_t cells = 8;
  while (cells < 2 * std::size_t{p.entries_per_peer}) cells *= 2;
  for (Partition& part : parts_) part.merge_cells.assign(cells, MergeCell{});
}

std::size_t RuntimePacketManager::partition_of(std::int32_t dst) const {
  if (dst < 0 || dst >= p_.num_gpus || dst == p_.gpu) {
    throw std::invalid_argument("RPM of GPU " + std::to_string(p_.gpu) + ": store to GPU " + std::to_string(dst) +
                                " (peers are [0, " + std::to_string(p_.num_gpus) + ") without this GPU)");
  }
  return static_cast<std::size_t>(dst < p_.gpu ? dst : dst - 1);
}

bool RuntimePacketManager::OrderKey::operator<(const OrderKey& o) const {
  if (nop != o.nop) return nop < o.nop;
  if (partial != o.partial) return partial < o.partial;
  if (row_id != o.row_id) return row_id < o.row_id;
  return seq < o.seq;
}

bool RuntimePacketManager::TimeKey::operator<(const TimeKey& o) const {
  if (created_cycle != o.created_cycle) return created_cycle < o.created_cycle;
  return seq < o.seq;
}

RuntimePacketManager::OrderKey RuntimePacketManager::order_key(const Entry& e, std::uint32_t slot) {
  OrderKey k;
  k.nop = e.packet.priority ? 0 : 1;
  k.partial = e.packet.mask.full() ? 0 : 1;
  k.row_id = e.packet.row_id;
  k.seq = e.seq;
  k.slot = slot;
  return k;
}

std::uint32_t RuntimePacketManager::find_merge(const Partition& part, const StoreRequest& s) const {
  if (!mergeable(s)) return kNoSlot;
  const MergeKey k = merge_key(s);
  const std::size_t mask = part.merge_cells.size() - 1;
  const auto h = static_cast<std::uint32_t>(k.hash());
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const MergeCell& c = part.merge_cells[i];
    if (c.slot == kNoSlot) return kNoSlot;
    if (c.hash == h && entry_key(part.slots[c.slot]) == k) return c.slot;
  }
}

void RuntimePacketManager::merge_insert(Partition& part, std::uint32_t slot) {
  const std::size_t mask = part.merge_cells.size() - 1;
  const auto h = static_cast<std::uint32_t>(entry_key(part.slots[slot]).hash());
  std::size_t i = h & mask;
  while (part.merge_cells[i].slot != kNoSlot) i = (i + 1) & mask;
  part.merge_cells[i] = MergeCell{slot, h};
}

void RuntimePacketManager::merge_erase(Partition& part, std::uint32_t slot) {
  const std::size_t mask = part.merge_cells.size() - 1;
  std::size_t i = entry_key(part.slots[slot]).hash() & mask;
  while (part.merge_cells[i].slot != slot) {
    if (part.merge_cells[i].slot == kNoSlot) throw std::logic_error("RPM: merge index out of step with its entries");
    i = (i + 1) & mask;
  }
  // backward-shift deletion: pull later cells of the run into the hole when
  // their home cell does not lie after the hole
  for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    const MergeCell c = part.merge_cells[j];
    if (c.slot == kNoSlot) break;
    const std::size_t home = c.hash & mask;
    if (((j - home) & mask) >= ((j - i) & mask)) {
      part.merge_cells[i] = c;
      i = j;
    }
  }
  part.merge_cells[i] = MergeCell{};
}

bool RuntimePacketManager::can_accept(const StoreRequest& s, Tick) const {
  const Partition& part = parts_[partition_of(s.dst_gpu)];
  return part.size < p_.entries_per_peer || find_merge(part, s) != kNoSlot;
}

void RuntimePacketManager::index_order(Partition& part, std::uint32_t slot) {
  const Entry& e = part.slots[slot];
  if (waits(e)) {
    part.held.insert(order_key(e, slot));
    part.held_by_time.insert(TimeKey{e.created_cycle, e.seq, slot});
  } else {
    part.ready.insert(order_key(e, slot));
  }
}

void RuntimePacketManager::unindex_order(Partition& part, std::uint32_t slot) {
  const Entry& e = part.slots[slot];
  if (waits(e)) {
    part.held.erase(order_key(e, slot));
    part.held_by_time.erase(TimeKey{e.created_cycle, e.seq, slot});
  } else {
    part.ready.erase(order_key(e, slot));
  }
}

void RuntimePacketManager::accept(const StoreRequest& s, Tick now) {
  Partition& part = parts_[partition_of(s.dst_gpu)];
  const ByteMask mask = line_mask(s, "RPM");
  ++stats_.stores_accepted;
  if (const std::uint32_t found = find_merge(part, s); found != kNoSlot) {
    Entry& e = part.slots[found];
    const bool was_full = e.packet.mask.full();
    if (!was_full) unindex_order(part, found);  // its key may change; a full entry's cannot
    e.packet.mask |= mask;
    e.packet.ready = std::max(e.packet.ready, s.ready);  // the packet is complete once its last store is in
    ++e.merged;
    e.tags.push_back(s.tag);
    if (!was_full) index_order(part, found);
    ++stats_.stores_merged;
    return;
  }
  if (part.size >= p_.entries_per_peer) {
    throw std::logic_error("RPM: partition for GPU " + std::to_string(s.dst_gpu) + " full (accept without can_accept)");
  }
  std::uint32_t slot = 0;
  if (part.free_slots.empty()) {
    slot = static_cast<std::uint32_t>(part.slots.size());
    part.slots.emplace_back();
  } else {
    slot = part.free_slots.back();
    part.free_slots.pop_back();
  }
  Entry& e = part.slots[slot];
  e.packet = s;
  e.packet.mask = mask;
  e.line = merge_line(s);
  e.created_cycle = clock_.cycle_at(now);
  e.seq = seq_++;
  e.merged = 1;
  e.tags.clear();
  e.tags.push_back(s.tag);
  part.fifo.insert(AgeKey{e.seq, e.created_cycle, slot});
  part.by_time.insert(TimeKey{e.created_cycle, e.seq, slot});
  if (mergeable(s)) merge_insert(part, slot);
  index_order(part, slot);
  ++part.size;
  ++occupancy_;
}

std::uint32_t RuntimePacketManager::best_in(const Partition& part, std::uint64_t cycle) const {
  if (part.size == 0) return kNoSlot;
  // Expired entries (always eligible) go first, oldest first. The entry created
  // first tells whether any has expired; creation cycles grow with age but for
  // stores accepted out of time order, so the oldest expired entry is nearly
  // always the oldest entry.
  if (cycle >= part.by_time.front().created_cycle + p_.timer_cycles) {
    for (const AgeKey& a : part.fifo) {
      if (cycle >= a.created_cycle + p_.timer_cycles) return a.slot;
    }
  }
  // None expired: the ready ones, and while the partition is full the held ones too.
  const bool full_part = part.size >= p_.entries_per_peer;
  const OrderKey* best = part.ready.empty() ? nullptr : &part.ready.front();
  if (full_part && !part.held.empty() && (best == nullptr || part.held.front() < *best)) best = &part.held.front();
  return best == nullptr ? kNoSlot : best->slot;
}

bool RuntimePacketManager::pick(Tick now, const std::vector<std::uint8_t>& congested, EgressPick& out) {
  const std::uint64_t cycle = clock_.cycle_at(now);
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const std::size_t pi = (rr_ + k) % parts_.size();
    Partition& part = parts_[pi];
    if (part.size == 0) continue;
    const auto peer = static_cast<std::size_t>(peers_[pi]);
    if (peer < congested.size() && congested[peer]) continue;
    const std::uint32_t best = best_in(part, cycle);
    if (best == kNoSlot) continue;

    const bool pressure = part.size >= p_.entries_per_peer;
    unindex_order(part, best);
    if (mergeable(part.slots[best].packet)) merge_erase(part, best);
    const Entry& e = part.slots[best];
    const bool full = e.packet.mask.full();
    const bool was_expired = expired(e, cycle);
    part.fifo.erase(AgeKey{e.seq, e.created_cycle, best});
    part.by_time.erase(TimeKey{e.created_cycle, e.seq, best});
    part.free_slots.push_back(best);
    --part.size;
    --occupancy_;
    rr_ = (pi + 1) % parts_.size();

    // The packet starts at its first valid byte; the mask stays relative to the line.
    out.store = e.packet;
    std::uint32_t first = 0;
    while (!((e.packet.mask.bits[first / 64] >> (first % 64)) & 1ULL)) ++first;
    if (is_row_store(e.packet.op)) {
      out.store.row_offset = static_cast<std::uint32_t>(e.line * kLineBytes) + first;
    } else {
      out.store.address = e.line * kLineBytes + first;
    }
    out.store.bytes = e.packet.mask.count();
    out.merged = e.merged;
    out.cycles = p_.pick_cycles;
    last_tags_.swap(part.slots[best].tags);  // the slot keeps the old buffer for its next entry

    ++stats_.packets_sent;
    stats_.stores_sent += e.merged;
    stats_.bytes_sent += out.store.bytes;
    stats_.packet_flits[(out.store.bytes + 15) / 16] += 1;
    if (full) {
      ++stats_.full_packets;
    } else if (p_.hold_partial && mergeable(e.packet)) {
      if (was_expired) {
        ++stats_.timer_flushes;
      } else if (pressure) {
        ++stats_.pressure_flushes;
      }
    }
    return true;
  }
  return false;
}

Tick RuntimePacketManager::next_event(Tick now) const {
  if (!p_.hold_partial) return kNever;
  const std::uint64_t cycle = clock_.cycle_at(now);
  std::uint64_t soonest = ~0ULL;
  for (const Partition& part : parts_) {
    if (part.held_by_time.empty() || part.size >= p_.entries_per_peer) continue;  // a full partition holds nothing back
    // the earliest created held entry that has not expired (created_cycle + timer > cycle)
    auto it = part.held_by_time.begin();
    if (cycle >= p_.timer_cycles) {
      it = std::upper_bound(part.held_by_time.begin(), part.held_by_time.end(), TimeKey{cycle - p_.timer_cycles, ~0ULL, 0});
    }
    if (it == part.held_by_time.end()) continue;
    const std::uint64_t c = it->created_cycle + p_.timer_cycles;
    if (c < soonest) soonest = c;
  }
  return soonest == ~0ULL ? kNever : clock_.tick_of(soonest);
}

std::size_t RuntimePacketManager::occupancy() const { return occupancy_; }

std::size_t RuntimePacketManager::occupancy(std::int32_t peer) const { return parts_[partition_of(peer)].size; }

}  // namespace moehub::golden
