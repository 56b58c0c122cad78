#include "common/config.hpp"
