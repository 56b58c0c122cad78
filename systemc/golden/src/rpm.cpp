#include "golden/rpm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moehub::golden {

namespace {
bool is_row_store(Opcode op) { return op == Opcode::kRowStore || op == Opcode::kRowStoreNop; }
}  // namespace

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
}

std::size_t RuntimePacketManager::partition_of(std::int32_t dst) const {
  if (dst < 0 || dst >= p_.num_gpus || dst == p_.gpu) {
    throw std::invalid_argument("RPM of GPU " + std::to_string(p_.gpu) + ": store to GPU " + std::to_string(dst) +
                                " (peers are [0, " + std::to_string(p_.num_gpus) + ") without this GPU)");
  }
  return static_cast<std::size_t>(dst < p_.gpu ? dst : dst - 1);
}

std::uint32_t RuntimePacketManager::offset_in_line(const StoreRequest& s) {
  return is_row_store(s.op) ? s.row_offset % kLineBytes : static_cast<std::uint32_t>(s.address % kLineBytes);
}

std::uint64_t RuntimePacketManager::line_of(const StoreRequest& s) {
  return is_row_store(s.op) ? s.row_offset / kLineBytes : s.address / kLineBytes;
}

ByteMask RuntimePacketManager::mask_of(const StoreRequest& s) {
  if (!s.mask.empty()) return s.mask;
  const std::uint32_t off = offset_in_line(s);
  if (s.bytes == 0 || off + s.bytes > kLineBytes) {
    throw std::invalid_argument("RPM: store of " + std::to_string(s.bytes) + " bytes at offset " + std::to_string(off) +
                                " of its 128-byte line (a store is 1..128 bytes within one line)");
  }
  return ByteMask::range(off, s.bytes);
}

std::size_t RuntimePacketManager::find_merge(const std::vector<Entry>& part, const StoreRequest& s) const {
  if (!mergeable(s)) return part.size();
  const std::uint64_t line = line_of(s);
  for (std::size_t i = 0; i < part.size(); ++i) {
    const StoreRequest& q = part[i].packet;
    if (q.op != s.op || q.priority != s.priority || part[i].line != line) continue;
    if (is_row_store(s.op) && (q.malloc_id != s.malloc_id || q.row_id != s.row_id)) continue;
    return i;
  }
  return part.size();
}

bool RuntimePacketManager::can_accept(const StoreRequest& s, Tick) const {
  const auto& part = parts_[partition_of(s.dst_gpu)];
  return part.size() < p_.entries_per_peer || find_merge(part, s) < part.size();
}

void RuntimePacketManager::accept(const StoreRequest& s, Tick now) {
  auto& part = parts_[partition_of(s.dst_gpu)];
  const ByteMask mask = mask_of(s);
  ++stats_.stores_accepted;
  if (const std::size_t found = find_merge(part, s); found < part.size()) {
    Entry& e = part[found];
    e.packet.mask |= mask;
    e.packet.ready = std::max(e.packet.ready, s.ready);  // the packet is complete once its last store is in
    ++e.merged;
    e.tags.push_back(s.tag);
    ++stats_.stores_merged;
    return;
  }
  if (part.size() >= p_.entries_per_peer) {
    throw std::logic_error("RPM: partition for GPU " + std::to_string(s.dst_gpu) + " full (accept without can_accept)");
  }
  Entry e;
  e.packet = s;
  e.packet.mask = mask;
  e.line = line_of(s);
  e.created_cycle = clock_.cycle_at(now);
  e.seq = seq_++;
  e.tags.push_back(s.tag);
  part.push_back(std::move(e));
}

bool RuntimePacketManager::eligible(const Entry& e, const std::vector<Entry>& part, std::uint64_t cycle) const {
  if (!p_.hold_partial || !mergeable(e.packet) || e.packet.mask.full()) return true;
  return expired(e, cycle) || part.size() >= p_.entries_per_peer;
}

bool RuntimePacketManager::pick(Tick now, const std::vector<std::uint8_t>& congested, EgressPick& out) {
  const std::uint64_t cycle = clock_.cycle_at(now);
  // true if a goes before b (both eligible, same partition)
  auto before = [&](const Entry& a, const Entry& b) {
    const bool ea = expired(a, cycle), eb = expired(b, cycle);
    if (ea != eb) return ea;
    if (ea) return a.seq < b.seq;
    if (a.packet.priority != b.packet.priority) return a.packet.priority;
    const bool fa = a.packet.mask.full(), fb = b.packet.mask.full();
    if (fa != fb) return fa;
    if (a.packet.row_id != b.packet.row_id) return a.packet.row_id < b.packet.row_id;
    return a.seq < b.seq;
  };
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const std::size_t pi = (rr_ + k) % parts_.size();
    const auto peer = static_cast<std::size_t>(peers_[pi]);
    if (peer < congested.size() && congested[peer]) continue;
    auto& part = parts_[pi];
    std::size_t best = part.size();
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (!eligible(part[i], part, cycle)) continue;
      if (best == part.size() || before(part[i], part[best])) best = i;
    }
    if (best == part.size()) continue;

    Entry e = std::move(part[best]);
    const bool full = e.packet.mask.full();
    const bool was_expired = expired(e, cycle);
    const bool pressure = part.size() >= p_.entries_per_peer;
    part.erase(part.begin() + static_cast<std::ptrdiff_t>(best));
    rr_ = (pi + 1) % parts_.size();

    // The packet starts at its first valid byte; the mask stays relative to the line.
    std::uint32_t first = 0;
    while (!((e.packet.mask.bits[first / 64] >> (first % 64)) & 1ULL)) ++first;
    if (is_row_store(e.packet.op)) {
      e.packet.row_offset = static_cast<std::uint32_t>(e.line * kLineBytes) + first;
    } else {
      e.packet.address = e.line * kLineBytes + first;
    }
    e.packet.bytes = e.packet.mask.count();
    out.store = e.packet;
    out.merged = e.merged;
    out.cycles = p_.pick_cycles;
    last_tags_ = std::move(e.tags);

    ++stats_.packets_sent;
    stats_.stores_sent += e.merged;
    stats_.bytes_sent += e.packet.bytes;
    stats_.packet_flits[(e.packet.bytes + 15) / 16] += 1;
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
  for (const auto& part : parts_) {
    for (const Entry& e : part) {
      if (eligible(e, part, cycle)) continue;
      const std::uint64_t c = e.created_cycle + p_.timer_cycles;
      if (c < soonest) soonest = c;
    }
  }
  return soonest == ~0ULL ? kNever : clock_.tick_of(soonest);
}

std::size_t RuntimePacketManager::occupancy() const {
  std::size_t n = 0;
  for (const auto& part : parts_) n += part.size();
  return n;
}

std::size_t RuntimePacketManager::occupancy(std::int32_t peer) const { return parts_[partition_of(peer)].size(); }

}  // namespace moehub::golden
