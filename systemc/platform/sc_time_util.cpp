#include "common/sc_time_util.hpp"

namespace moehub {

void set_picosecond_resolution() {
  static bool done = false;
  if (!done) {
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    done = true;
  }
}

}  // namespace moehub
