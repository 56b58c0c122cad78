// Polling wait with failure checks (poll_wait.hpp).
#include "poll_wait.hpp"

#include <thread>

namespace moehub::gpu {

std::string poll_until_done(const PollHooks& hooks, const PollTiming& timing) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto last_check = t0;
  for (;;) {
    if (hooks.done()) return "";
    const auto now = clock::now();
    if (now - last_check >= timing.failure_check_interval) {
      last_check = now;
      std::string why = hooks.failure ? hooks.failure() : std::string();
      if (why.empty() && timing.timeout.count() > 0 && now - t0 >= timing.timeout)
        why = "no completion after " + std::to_string(timing.timeout.count()) + " ms";
      if (!why.empty()) return hooks.done() ? std::string() : why;
    }
    if (now - t0 < timing.spin)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(timing.sleep);
  }
}

}  // namespace moehub::gpu
