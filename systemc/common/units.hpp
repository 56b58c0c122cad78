// Units and simulated time.
//
// Simulated time is an integer count of picoseconds (Tick). Integer time keeps
// every run deterministic and lets bandwidth servers account exact
// serialisation times (a 144-byte NVLink packet at 50 GB/s is 2880 ps).
// SystemC's own time resolution is set to 1 ps to match.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace moehub {

using Tick = std::uint64_t;  ///< picoseconds
inline constexpr Tick kTickMax = std::numeric_limits<Tick>::max();

inline constexpr Tick kPsPerNs = 1000;
inline constexpr Tick kPsPerUs = 1000 * kPsPerNs;
inline constexpr Tick kPsPerMs = 1000 * kPsPerUs;

/// Nanoseconds (possibly fractional) to ticks, rounded to the nearest picosecond.
inline Tick ns_to_ticks(double ns) { return static_cast<Tick>(std::llround(ns * 1e3)); }
inline Tick us_to_ticks(double us) { return static_cast<Tick>(std::llround(us * 1e6)); }
inline double ticks_to_ns(Tick t) { return static_cast<double>(t) * 1e-3; }
inline double ticks_to_us(Tick t) { return static_cast<double>(t) * 1e-6; }

/// Time to move `bytes` at `gbps` gigabytes per second (1 GB = 1e9 bytes),
/// rounded up to a whole picosecond so that a server never runs faster than
/// its configured bandwidth.
inline Tick transfer_ticks(double bytes, double gbps) {
  // bytes / (gbps * 1e9 B/s) seconds = bytes * 1e3 / gbps picoseconds
  return static_cast<Tick>(std::ceil(bytes * 1e3 / gbps));
}

/// Integer ceiling division.
template <typename T>
constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace moehub
