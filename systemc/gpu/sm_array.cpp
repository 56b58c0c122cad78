#include "gpu/sm_array.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/sc_time_util.hpp"

namespace moehub {

SmArray::SmArray(const sc_core::sc_module_name& name, const GpuConfig& gpu, int dtype_bytes, Hub* hub,
                 MemoryFlows* hbm)
    : sc_core::sc_module(name), gpu_(gpu), compute_(gpu, dtype_bytes), hub_(hub), hbm_(hbm), engine_(gpu.num_sms, hbm) {
  engine_.set_on_flow_done([this] { refresh(); });
}

KernelSpec SmArray::gemm_kernel(const std::vector<GemmShape>& shapes, int groups, int first_sm, int num_sms) const {
  return moehub::gemm_kernel(compute_, gpu_.num_sms, shapes, groups, first_sm, num_sms);
}

KernelSpec SmArray::memory_kernel(double bytes) {
  KernelSpec k;
  k.hbm_bytes = bytes;
  return k;
}

int SmArray::launch(KernelSpec spec, const std::vector<int>& group_flags) {
  const Tick now = now_ticks();
  refreshing_ = true;  // flows that complete at once are picked up below
  const int id = engine_.launch(std::move(spec), now);
  waiters_[id].done = std::make_unique<sc_core::sc_event>();
  for (std::size_t g = 0; g < group_flags.size(); ++g) {
    const int f = group_flags[g];
    if (f < 0) continue;
    const auto raised = flags_.find(f);
    if (raised != flags_.end()) {
      release(id, static_cast<int>(g), raised->second);
    } else {
      flag_waiters_.insert({f, {id, static_cast<int>(g)}});
    }
  }
  refreshing_ = false;
  refresh();
  return id;
}

void SmArray::release(int kernel, int group, Tick t) {
  // a polling group sees the flag at its next poll; any other is released at t
  const auto& groups = engine_.spec(kernel).groups;
  if (groups.at(static_cast<std::size_t>(group)).release == GroupRelease::kPoll) {
    engine_.set_flag(kernel, group, t, now_ticks());
  } else {
    engine_.signal(kernel, group, t, now_ticks());
  }
}

void SmArray::signal(int kernel, int group, Tick t) {
  engine_.signal(kernel, group, t, now_ticks());
  refresh();
}

void SmArray::raise_flag(int flag, Tick t) {
  if (flags_.count(flag)) return;
  flags_[flag] = t;
  refreshing_ = true;
  const auto range = flag_waiters_.equal_range(flag);
  for (auto it = range.first; it != range.second; ++it) release(it->second.first, it->second.second, t);
  flag_waiters_.erase(range.first, range.second);
  refreshing_ = false;
  refresh();
}

void SmArray::refresh() {
  if (refreshing_) return;
  refreshing_ = true;
  const Tick now = now_ticks();
  engine_.update(now);
  for (auto& [id, w] : waiters_) {
    if (w.waiting) notify(id, w, now);
  }
  refreshing_ = false;
}

void SmArray::notify(int kernel, Waiter& w, Tick now) {
  const Tick p = engine_.predicted_end(kernel);
  if (p == w.notified) return;
  w.done->cancel();
  if (p != kTickMax) w.done->notify(to_sc(p > now ? p - now : 0));
  w.notified = p;
}

Tick SmArray::wait(int kernel) {
  // a kernel's event is notified only while a thread waits for it
  Waiter& w = waiters_.at(kernel);
  w.waiting = true;
  for (;;) {
    const Tick now = now_ticks();
    if (engine_.predicted_end(kernel) <= now) break;
    notify(kernel, w, now);
    sc_core::wait(*w.done);
    ++wakeups_;
  }
  waiters_.erase(kernel);
  last_first_start_ = kTickMax;
  const std::size_t groups = engine_.spec(kernel).groups.size();
  for (std::size_t g = 0; g < groups; ++g) {
    last_first_start_ = std::min(last_first_start_, engine_.group_start(kernel, static_cast<int>(g)));
  }
  engine_.retire(kernel);
  return now_ticks();
}

double SmArray::store_issue_gbps(int sms) const {
  return gpu_.remote_store_bytes_per_cycle_per_sm * gpu_.sm_clock_ghz * std::max(1, sms);
}

}  // namespace moehub
