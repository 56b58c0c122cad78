#include "common/sc_time_util.hpp"

#include <stdexcept>

namespace moehub {

void set_picosecond_resolution() {
  static bool done = false;
  if (!done) {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    const Tick probe = 0x0123456789abcdefULL >> 4;
    if (to_sc(probe) != sc_core::sc_time::from_value(probe)) {
      throw std::logic_error("to_sc: this SystemC's sc_time does not hold its tick count as expected");
    }
    done = true;
  }
}

}  // namespace moehub
