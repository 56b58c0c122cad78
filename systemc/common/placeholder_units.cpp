#include "common/units.hpp"
