// Per-GPU device-memory region maps: where each transfer's data lands.
//
// Every GPU's memory is laid out as named regions (a transfer's receive
// buffer, token buffers, expert inputs, flags), each aligned to 4 KiB, in the
// order they are allocated. Stores carry real addresses from these maps; the
// scoreboard checks that every byte lands at the address its row owns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moehub {

struct Region {
  std::string name;
  std::uint64_t base = 0;
  std::uint64_t bytes = 0;
};

class AddressMap {
 public:
  static constexpr std::uint64_t kAlign = 4096;
  /// Address where device memory starts (0 stays an invalid address).
  static constexpr std::uint64_t kBase = 1ULL << 32;

  explicit AddressMap(int num_gpus) : regions_(static_cast<std::size_t>(num_gpus)), next_(regions_.size(), kBase) {}

  /// A new region of `bytes` on GPU `gpu`; returns its base.
  std::uint64_t allocate(int gpu, const std::string& name, std::uint64_t bytes) {
    auto& next = next_.at(static_cast<std::size_t>(gpu));
    const std::uint64_t base = next;
    regions_[static_cast<std::size_t>(gpu)].push_back({name, base, bytes});
    next += (bytes + kAlign - 1) / kAlign * kAlign + kAlign;  // a guard page between regions
    return base;
  }
  /// The region that holds `address` on `gpu`, or nullptr.
  const Region* find(int gpu, std::uint64_t address) const {
    for (const auto& r : regions_.at(static_cast<std::size_t>(gpu))) {
      if (address >= r.base && address < r.base + r.bytes) return &r;
    }
    return nullptr;
  }
  const std::vector<Region>& regions(int gpu) const { return regions_.at(static_cast<std::size_t>(gpu)); }
  int num_gpus() const { return static_cast<int>(regions_.size()); }

 private:
  std::vector<std::vector<Region>> regions_;
  std::vector<std::uint64_t> next_;
};

}  // namespace moehub
