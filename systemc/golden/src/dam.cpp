#include "golden/dam.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace moehub::golden {

namespace {

/// A run of bytes a completed write wrote.
struct Run {
  std::uint64_t start;
  std::uint64_t len;
};
/// At most 64 runs fit in a 128-byte mask (every other byte).
using Runs = std::array<Run, kLineBytes / 2>;

/// First index >= i whose mask bit equals `set`, or kLineBytes.
std::uint32_t next_bit(const ByteMask& m, std::uint32_t i, bool set) {
  while (i < kLineBytes) {
    std::uint64_t word = m.bits[i / 64];
    if (!set) word = ~word;
    word >>= i % 64;
    if (word != 0) return i + static_cast<std::uint32_t>(__builtin_ctzll(word));
    i = (i / 64 + 1) * 64;
  }
  return kLineBytes;
}

/// The runs of bytes the completed write `w` wrote, in address order; returns
/// their number. [lo, hi) receives the span they cover (lo == hi: none).
std::size_t runs_of(const StoreRequest& w, Runs& out, std::uint64_t& lo, std::uint64_t& hi) {
  std::size_t n = 0;
  if (w.mask.empty()) {
    lo = hi = w.address;
    if (w.bytes > 0) {
      out[n++] = Run{w.address, std::uint64_t{w.bytes}};
      hi = w.address + w.bytes;
    }
    return n;
  }
  const std::uint32_t off =
      is_row_store(w.op) ? w.row_offset % kLineBytes : static_cast<std::uint32_t>(w.address % kLineBytes);
  const std::uint64_t window = w.address - off;
  for (std::uint32_t i = next_bit(w.mask, 0, true); i < kLineBytes;) {
    const std::uint32_t j = next_bit(w.mask, i, false);
    out[n++] = Run{window + i, std::uint64_t{j - i}};
    i = next_bit(w.mask, j, true);
  }
  lo = n ? out[0].start : window;
  hi = n ? out[n - 1].start + out[n - 1].len : window;
  return n;
}

}  // namespace

void DataAvailabilityManager::check_expected(const KernelDependency& dep, std::uint64_t bytes) {
  const std::uint64_t capacity = std::uint64_t{dep.rows_per_group} * dep.row_bytes * dep.groups;
  if (bytes % dep.row_bytes != 0 || bytes > capacity) {
    throw std::invalid_argument("DAM: kernel " + std::to_string(dep.kernel) + ": expected bytes " +
                                std::to_string(bytes) + " must be a multiple of the row size " +
                                std::to_string(dep.row_bytes) + " and at most the groups' capacity " +
                                std::to_string(capacity));
  }
}

DataAvailabilityManager::Kernel& DataAvailabilityManager::find(std::int32_t kernel) {
  return const_cast<Kernel&>(static_cast<const DataAvailabilityManager*>(this)->find(kernel));
}

const DataAvailabilityManager::Kernel& DataAvailabilityManager::find(std::int32_t kernel) const {
  for (const Kernel& k : kernels_) {
    if (k.dep.kernel == kernel) return k;
  }
  throw std::out_of_range("DAM: kernel " + std::to_string(kernel) + " is not registered");
}

std::uint64_t DataAvailabilityManager::threshold(const Kernel& k, std::uint32_t g) {
  const std::uint64_t rpg = k.dep.rows_per_group;
  if (!k.dep.expected_bytes) return rpg * k.dep.row_bytes;
  const std::uint64_t rows = *k.dep.expected_bytes / k.dep.row_bytes;
  const std::uint64_t first = std::uint64_t{g} * rpg;
  return (rows <= first ? 0 : std::min(rpg, rows - first)) * k.dep.row_bytes;
}

void DataAvailabilityManager::add_kernel(const KernelDependency& dep, std::vector<ReadySignal>& ready) {
  if (dep.row_bytes == 0 || dep.rows_per_group == 0 || dep.groups == 0) {
    throw std::invalid_argument("DAM: kernel " + std::to_string(dep.kernel) +
                                ": row_bytes, rows_per_group and groups must be >= 1");
  }
  for (const Kernel& k : kernels_) {
    if (k.dep.kernel == dep.kernel) {
      throw std::invalid_argument("DAM: kernel " + std::to_string(dep.kernel) + " registered twice");
    }
  }
  if (dep.expected_bytes) check_expected(dep, *dep.expected_bytes);
  Kernel k;
  k.dep = dep;
  k.dep.expected_bytes.reset();
  k.bytes.assign(dep.groups, 0);
  k.state.assign(dep.groups, GroupState::kWaiting);
  kernels_.push_back(std::move(k));
  if (dep.expected_bytes) set_expected_bytes(dep.kernel, *dep.expected_bytes, ready);
}

void DataAvailabilityManager::set_expected_bytes(std::int32_t kernel, std::uint64_t bytes,
                                                 std::vector<ReadySignal>& ready) {
  Kernel& k = find(kernel);
  check_expected(k.dep, bytes);
  if (k.dep.expected_bytes) {
    throw std::logic_error("DAM: kernel " + std::to_string(kernel) + ": expected bytes set twice");
  }
  if (k.received > bytes) {
    throw std::logic_error("DAM: kernel " + std::to_string(kernel) + " already received " + std::to_string(k.received) +
                           " bytes, more than the expected " + std::to_string(bytes));
  }
  k.dep.expected_bytes = bytes;
  resolve(k, 0, k.dep.groups, ready);
}

void DataAvailabilityManager::remove_kernel(std::int32_t kernel) {
  const Kernel& k = find(kernel);
  kernels_.erase(kernels_.begin() + (&k - kernels_.data()));
}

void DataAvailabilityManager::add_bytes(Kernel& k, std::uint64_t start, std::uint64_t len, std::uint32_t& g_lo,
                                        std::uint32_t& g_hi) {
  const std::uint64_t lo = std::max(start, k.dep.base_address);
  const std::uint64_t hi = std::min(start + len, k.end());
  const std::uint64_t span = k.group_span();
  for (std::uint64_t a = lo; a < hi;) {
    const auto g = static_cast<std::uint32_t>((a - k.dep.base_address) / span);
    const std::uint64_t group_end = k.dep.base_address + (std::uint64_t{g} + 1) * span;
    const std::uint64_t n = std::min(hi, group_end) - a;
    k.bytes[g] += n;
    g_lo = std::min(g_lo, g);
    g_hi = std::max(g_hi, g + 1);
    k.received += n;
    stats_.counted_bytes += n;
    a += n;
  }
}

void DataAvailabilityManager::resolve(Kernel& k, std::uint32_t g_lo, std::uint32_t g_hi,
                                      std::vector<ReadySignal>& ready) {
  for (std::uint32_t g = g_lo; g < g_hi; ++g) {
    const std::uint64_t t = threshold(k, g);
    if (k.bytes[g] > t) {
      throw std::logic_error("DAM: kernel " + std::to_string(k.dep.kernel) + " group " + std::to_string(g) +
                             " received " + std::to_string(k.bytes[g]) + " bytes, more than its " + std::to_string(t));
    }
    if (k.state[g] == GroupState::kWaiting && t > 0 && k.bytes[g] == t) {
      k.state[g] = GroupState::kReleased;
      ++stats_.groups_released;
      ready.push_back(ReadySignal{k.dep.kernel, static_cast<std::int32_t>(g)});
    }
  }
  if (k.all_ready || !k.dep.expected_bytes) return;
  if (k.received > *k.dep.expected_bytes) {
    throw std::logic_error("DAM: kernel " + std::to_string(k.dep.kernel) + " received " + std::to_string(k.received) +
                           " bytes, more than the expected " + std::to_string(*k.dep.expected_bytes));
  }
  if (k.received < *k.dep.expected_bytes) return;
  for (std::uint32_t g = 0; g < k.dep.groups; ++g) {
    if (k.state[g] != GroupState::kWaiting) continue;
    if (threshold(k, g) != 0) {
      throw std::logic_error("DAM: kernel " + std::to_string(k.dep.kernel) + " complete but group " +
                             std::to_string(g) + " has " + std::to_string(k.bytes[g]) + " of its " +
                             std::to_string(threshold(k, g)) + " bytes");
    }
    k.state[g] = GroupState::kRetired;
    ++stats_.groups_retired;
  }
  k.all_ready = true;
  ++stats_.all_ready;
  ready.push_back(ReadySignal{k.dep.kernel, kAllReadyGroup});
}

void DataAvailabilityManager::on_write_complete(const StoreRequest& w, Tick, std::vector<ReadySignal>& ready) {
  ++stats_.completions;
  bool matched = false;
  Runs runs;
  std::uint64_t lo = 0, hi = 0;
  const std::size_t n = runs_of(w, runs, lo, hi);
  for (Kernel& k : kernels_) {
    if (hi <= k.dep.base_address || lo >= k.end()) continue;  // no byte in this kernel's range
    std::uint32_t g_lo = k.dep.groups, g_hi = 0;
    for (std::size_t r = 0; r < n; ++r) add_bytes(k, runs[r].start, runs[r].len, g_lo, g_hi);
    if (g_hi == 0) continue;
    matched = true;
    resolve(k, g_lo, g_hi, ready);
  }
  if (!matched) ++stats_.unmatched_completions;
}

GroupState DataAvailabilityManager::group_state(std::int32_t kernel, std::uint32_t group) const {
  return find(kernel).state.at(group);
}
std::uint64_t DataAvailabilityManager::group_bytes(std::int32_t kernel, std::uint32_t group) const {
  return find(kernel).bytes.at(group);
}
std::uint64_t DataAvailabilityManager::threshold_bytes(std::int32_t kernel, std::uint32_t group) const {
  const Kernel& k = find(kernel);
  if (group >= k.dep.groups) throw std::out_of_range("DAM: group " + std::to_string(group) + " out of range");
  return threshold(k, group);
}
std::uint64_t DataAvailabilityManager::received_bytes(std::int32_t kernel) const { return find(kernel).received; }
bool DataAvailabilityManager::all_ready(std::int32_t kernel) const { return find(kernel).all_ready; }

}  // namespace moehub::golden
