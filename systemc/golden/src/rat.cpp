#include "golden/rat.hpp"

#include <stdexcept>
#include <string>

namespace moehub::golden {

SpillRecord spill_record_from(const std::string& name) {
  if (name == "exact") return SpillRecord::kExact;
  if (name == "region") return SpillRecord::kRegion;
  throw std::invalid_argument("RAT spill record '" + name + "' unknown (allowed: exact, region)");
}

RowAllocationTable::RowAllocationTable(const RatParams& p, AllocationPointerTable& apt) : p_(p), apt_(apt), ways_(0) {
  if (p.banks == 0 || p.entries == 0 || p.ports_per_bank == 0) {
    throw std::invalid_argument("RAT: entries, banks and ports_per_bank must be >= 1");
  }
  if (p.entries % p.banks != 0) {
    throw std::invalid_argument("RAT: entries (" + std::to_string(p.entries) + ") must be a multiple of banks (" +
                                std::to_string(p.banks) + ")");
  }
  ways_ = p.entries / p.banks;
  banks_.resize(p.banks);
}

std::uint32_t RowAllocationTable::bank_of(std::int64_t row_id) const {
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(row_id) % p_.banks);
}

std::uint32_t RowAllocationTable::book(Bank& b, std::uint64_t cycle, std::uint32_t accesses) {
  if (cycle > b.cycle) {
    b.cycle = cycle;
    b.used = 0;
  }
  std::uint64_t first = 0;
  for (std::uint32_t i = 0; i < accesses; ++i) {
    if (b.used == p_.ports_per_bank) {
      ++b.cycle;
      b.used = 0;
    }
    if (i == 0) first = b.cycle;
    ++b.used;
  }
  if (first > cycle) ++stats_.bank_conflicts;
  const auto wait = static_cast<std::uint32_t>(b.cycle - cycle);
  stats_.conflict_cycles += wait;
  return wait;
}

bool RowAllocationTable::cached(std::uint32_t malloc_id, std::int64_t row_id) const {
  return tags_.count(Key{malloc_id, row_id}) != 0;
}

std::size_t RowAllocationTable::spilled(std::uint32_t malloc_id) const {
  std::size_t n = 0;
  for (const auto& kv : spill_) n += kv.first.malloc_id == malloc_id ? 1 : 0;
  return n;
}

RatResult RowAllocationTable::lookup(std::uint32_t malloc_id, std::int64_t row_id, std::uint64_t cycle) {
  if (row_id < 0) throw std::invalid_argument("RAT: RowID " + std::to_string(row_id) + " is negative");
  (void)apt_.region(malloc_id);  // unknown region: std::out_of_range
  const Key key{malloc_id, row_id};
  Bank& bank = banks_[bank_of(row_id)];
  RatResult r;

  if (auto it = tags_.find(key); it != tags_.end()) {
    r.cycles = book(bank, cycle, 1) + p_.lookup_cycles;
    r.hit = true;
    r.local_row_id = it->second.local_row_id;
    ++stats_.hits;
    return r;
  }

  r.cycles = book(bank, cycle, 2) + p_.lookup_cycles;
  Tag tag{-1, true};
  if (auto s = spill_.find(key); s != spill_.end()) {
    tag = Tag{s->second, false};
    r.restored = true;
    r.cycles += p_.restore_cycles + p_.lookup_cycles;  // the answer passes the lookup stage again to fill
    r.metadata_read_bytes = p_.spill_entry_bytes;
    ++stats_.restores;
  } else {
    if (p_.spill_record == SpillRecord::kRegion && spilled_regions_.count(malloc_id) != 0) {
      // one bit per region: the spill area is read before a new row is
      // allocated; its answer ("not there") goes through the lookup stage
      // again, which then allocates
      r.cycles += p_.restore_cycles + p_.lookup_cycles;
      r.metadata_read_bytes = p_.spill_entry_bytes;
      ++stats_.empty_queries;
    }
    r.cycles += p_.apt_cycles;
    tag.local_row_id = apt_.allocate(malloc_id);  // kError policy: throws here, nothing changed
    if (tag.local_row_id < 0) {
      r.ok = false;
      ++stats_.stalls;
      return r;
    }
    ++stats_.allocations;
  }
  ++stats_.misses;

  if (bank.fifo.size() == ways_) {
    const Key victim = bank.fifo.front();
    bank.fifo.pop_front();
    auto v = tags_.find(victim);
    if (v->second.dirty) {
      spill_[victim] = v->second.local_row_id;
      spilled_regions_.insert(victim.malloc_id);
      r.metadata_write_bytes = p_.spill_entry_bytes;
      ++stats_.spills;
    }
    tags_.erase(v);
    r.evicted = true;
    ++stats_.evictions;
  }
  bank.fifo.push_back(key);
  tags_.emplace(key, tag);
  r.local_row_id = tag.local_row_id;
  return r;
}

void RowAllocationTable::flush(std::uint32_t malloc_id) {
  for (Bank& b : banks_) {
    std::deque<Key> keep;
    for (const Key& k : b.fifo) {
      if (k.malloc_id == malloc_id) {
        tags_.erase(k);
      } else {
        keep.push_back(k);
      }
    }
    b.fifo.swap(keep);
  }
  spilled_regions_.erase(malloc_id);
  for (auto it = spill_.begin(); it != spill_.end();) {
    it = it->first.malloc_id == malloc_id ? spill_.erase(it) : std::next(it);
  }
}

}  // namespace moehub::golden
