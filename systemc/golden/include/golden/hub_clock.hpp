// The hub clock: converts simulated time (integer picoseconds) to hub cycles
// and back, in integer arithmetic so that every model built on it is exact
// and deterministic.
//
// The clock is held as a whole number of MHz (clock_ghz rounded to 1 MHz).
// Cycle c spans [tick_of(c), tick_of(c + 1)); cycle_at(t) is the cycle that
// contains t, tick_of(c) the first picosecond of cycle c.
#pragma once

#include <cstdint>

#include "golden/store.hpp"

namespace moehub::golden {

class HubClock {
 public:
  /// Throws std::invalid_argument unless 0.001 <= clock_ghz <= 100.
  explicit HubClock(double clock_ghz);
  std::uint64_t mhz() const { return mhz_; }
  std::uint64_t cycle_at(Tick t) const { return t * mhz_ / 1000000ULL; }
  Tick tick_of(std::uint64_t cycle) const { return (cycle * 1000000ULL + mhz_ - 1) / mhz_; }

 private:
  std::uint64_t mhz_;
};

}  // namespace moehub::golden
