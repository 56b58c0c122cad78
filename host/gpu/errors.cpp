// Exit status per error type (errors.hpp).
#include "errors.hpp"

namespace moehub::gpu {

int exit_status_of(const std::exception& e) { return dynamic_cast<const UsageError*>(&e) ? 2 : 1; }

}  // namespace moehub::gpu
