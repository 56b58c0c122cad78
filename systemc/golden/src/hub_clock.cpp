#include "golden/hub_clock.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace moehub::golden {

HubClock::HubClock(double clock_ghz) : mhz_(0) {
  if (!std::isfinite(clock_ghz) || clock_ghz < 0.001 || clock_ghz > 100.0) {
    throw std::invalid_argument("hub clock_ghz " + std::to_string(clock_ghz) + " outside [0.001, 100]");
  }
  mhz_ = static_cast<std::uint64_t>(std::llround(clock_ghz * 1000.0));
}

}  // namespace moehub::golden
