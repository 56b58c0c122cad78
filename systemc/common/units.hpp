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
#include <stdexcept>
#include <string>

namespace moehub {

using Tick = std::uint64_t;  ///< picoseconds
inline constexpr Tick kTickMax = std::numeric_limits<Tick>::max();

inline constexpr Tick kPsPerNs = 1000;
inline constexpr Tick kPsPerUs = 1000 * kPsPerNs;
inline constexpr Tick kPsPerMs = 1000 * kPsPerUs;
inline constexpr Tick kPsPerS = 1000 * kPsPerMs;

// Overflow safety. Every conversion of a configured or computed double to
// ticks is checked (a double-to-integer conversion out of range is undefined
// behaviour):
// - a duration of 2^60 ps (about 13 days) or more, infinity included, saturates to
//   kTickNever = 2^60 ps, which lies beyond every allowed simulated-time limit
//   (RunRequest::max_sim_time <= 2^59 ps): an event that far out is never
//   reached, and the run stops at its limit with a clear message (exit 3);
// - NaN and negative values throw TimeOverflow: they are bugs of
//   the caller (configs are range-checked at load).
// Saturation rather than an exception keeps exceptions out of SystemC
// processes, whose coroutine stacks AddressSanitizer cannot unwind. A time
// below the limit plus up to 14 durations fits in 64 bits; saturating_add
// guards the sums that the servers form.
inline constexpr Tick kTickNever = Tick{1} << 60;
inline constexpr Tick kTickConversionLimit = kTickNever;

/// Marks every TimeOverflow message; SystemC turns an exception thrown inside a
/// process into a report that keeps only its text, so callers of sc_start find
/// it by this tag.
inline constexpr const char* kTimeOverflowTag = "simulated time overflow";

/// A simulated time or duration that is not a time at all (NaN, negative).
class TimeOverflow : public std::overflow_error {
 public:
  explicit TimeOverflow(const std::string& what)
      : std::overflow_error(std::string(kTimeOverflowTag) + ": " + what) {}
};

namespace detail {
/// Out of line and cold, so that the checked conversions stay small.
[[noreturn]] [[gnu::noinline]] [[gnu::cold]] inline void throw_time_overflow(const char* what,
                                                                              double value) {
  throw TimeOverflow(std::string(what) + " = " + std::to_string(value) +
                      " ps is not a time (NaN or negative)");
}

/// Picoseconds (already rounded) to ticks: saturated at kTickNever, NaN and
/// negative values rejected.
inline Tick checked_ps(double ps, const char* what) {
  // the negated comparison also rejects NaN
  if (!(ps >= 0.0)) throw_time_overflow(what, ps);
  if (ps >= static_cast<double>(kTickNever)) return kTickNever;
  return static_cast<Tick>(ps);
}
}  // namespace detail

/// Nanoseconds (possibly fractional) to ticks, rounded to the nearest picosecond.
inline Tick ns_to_ticks(double ns) { return detail::checked_ps(std::round(ns * 1e3), "ns_to_ticks"); }
inline Tick us_to_ticks(double us) { return detail::checked_ps(std::round(us * 1e6), "us_to_ticks"); }
inline double ticks_to_ns(Tick t) { return static_cast<double>(t) * 1e-3; }
inline double ticks_to_us(Tick t) { return static_cast<double>(t) * 1e-6; }

/// Picoseconds (possibly fractional) to ticks, rounded up; saturated and
/// checked like every conversion here.
inline Tick ceil_ps_to_ticks(double ps) { return detail::checked_ps(std::ceil(ps), "ceil_ps_to_ticks"); }

/// Time to move `bytes` at `gbps` gigabytes per second (1 GB = 1e9 bytes),
/// rounded up to a whole picosecond so that a server never runs faster than
/// its configured bandwidth; saturated at kTickNever. A bandwidth that is not
/// > 0 and negative bytes throw TimeOverflow.
inline Tick transfer_ticks(double bytes, double gbps) {
  // bytes / (gbps * 1e9 B/s) seconds = bytes * 1e3 / gbps picoseconds
  if (!(gbps > 0.0)) detail::throw_time_overflow("transfer_ticks at a bandwidth <= 0, bytes", bytes);
  return detail::checked_ps(std::ceil(bytes * 1e3 / gbps), "transfer_ticks");
}

/// a + b, saturated at kTickMax instead of wrapping.
inline Tick saturating_add(Tick a, Tick b) { return b > kTickMax - a ? kTickMax : a + b; }

/// Integer ceiling division.
template <typename T>
constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace moehub
