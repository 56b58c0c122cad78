// Conversions between SystemC time and moehub ticks (picoseconds). The
// platform sets SystemC's time resolution to 1 ps before elaboration, so one
// sc_time unit is one tick.
#pragma once

#include <systemc>

#include <cstring>

#include "common/units.hpp"

namespace moehub {

/// Must run before any sc_time is constructed (i.e. before elaboration).
void set_picosecond_resolution();

inline Tick to_ticks(const sc_core::sc_time& t) { return static_cast<Tick>(t.value()); }
/// The same as sc_time::from_value(t) once the resolution is fixed, without
/// the call into the SystemC library (several per packet): an sc_time is its
/// tick count (set_picosecond_resolution checks this at run time).
inline sc_core::sc_time to_sc(Tick t) {
  static_assert(sizeof(sc_core::sc_time) == sizeof(Tick), "sc_time is expected to hold just its value");
  sc_core::sc_time r;
  std::memcpy(static_cast<void*>(&r), &t, sizeof t);
  return r;
}
/// The current simulated time (the simulation context's own field, read inline:
/// this is called several times per packet).
inline Tick now_ticks() { return to_ticks(sc_core::sc_get_curr_simcontext()->time_stamp()); }

}  // namespace moehub
