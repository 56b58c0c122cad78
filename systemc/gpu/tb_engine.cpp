#include "gpu/tb_engine.hpp"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <utility>

namespace moehub {

std::vector<BlockGroup> split_groups(const std::vector<Tick>& tiles, int groups) {
  const auto n = tiles.size();
  const auto G = static_cast<std::size_t>(std::max(1, groups));
  std::vector<BlockGroup> out(G);
  std::size_t at = 0;
  for (std::size_t g = 0; g < G; ++g) {
    const std::size_t size = n / G + (g < n % G ? 1 : 0);
    out[g].blocks.assign(tiles.begin() + static_cast<std::ptrdiff_t>(at),
                         tiles.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  return out;
}

KernelSpec gemm_kernel(const ComputeModel& model, int total_sms, const std::vector<GemmShape>& shapes, int groups,
                       int first_sm, int num_sms) {
  KernelSpec k;
  k.first_sm = first_sm;
  k.num_sms = num_sms > 0 ? num_sms : total_sms - first_sm;
  k.groups = split_groups(model.tiles(shapes), groups);
  const KernelCost c = model.grouped_gemm(shapes, k.num_sms);
  k.hbm_bytes = c.hbm_bytes;
  k.flops = c.flops;
  // bytes per picosecond -> GB/s; half a picosecond of slack keeps the
  // rounded-up transfer time of the paced flow at the makespan
  const double span_ps = static_cast<double>(c.compute_makespan) - 0.5;
  k.hbm_max_gbps = span_ps > 0 ? c.hbm_bytes * 1e3 / span_ps : 0;
  return k;
}

Tick TbEngine::Poller::count(Tick a, Tick e) const {
  if (e <= a) return 0;
  const Tick lo = std::max(a, first);
  const Tick hi = std::min(e - 1, last);
  if (hi < lo) return 0;
  const Tick i_lo = (lo - first + interval - 1) / interval;
  const Tick i_hi = (hi - first) / interval;
  return i_hi >= i_lo ? i_hi - i_lo + 1 : 0;
}

TbEngine::TbEngine(int num_sms, MemoryFlows* hbm)
    : num_sms_(num_sms), hbm_(hbm), pollers_on_sm_(static_cast<std::size_t>(num_sms)) {
  if (num_sms < 1) throw std::invalid_argument("thread-block engine: num_sms must be >= 1");
  committed_.sms.resize(static_cast<std::size_t>(num_sms));
}

TbEngine::Kernel& TbEngine::kernel(int id) {
  const auto it = kernels_.find(id);
  if (it == kernels_.end()) throw std::invalid_argument("thread-block engine: unknown kernel " + std::to_string(id));
  return it->second;
}

const TbEngine::Kernel& TbEngine::kernel(int id) const {
  const auto it = kernels_.find(id);
  if (it == kernels_.end()) throw std::invalid_argument("thread-block engine: unknown kernel " + std::to_string(id));
  return it->second;
}

int TbEngine::launch(KernelSpec spec, Tick now) {
  if (spec.num_sms <= 0) spec.num_sms = num_sms_ - spec.first_sm;
  if (spec.first_sm < 0 || spec.num_sms < 1 || spec.first_sm + spec.num_sms > num_sms_) {
    throw std::invalid_argument("kernel " + spec.name + ": SMs [" + std::to_string(spec.first_sm) + ", " +
                                std::to_string(spec.first_sm + spec.num_sms) + ") outside the array's 0.." +
                                std::to_string(num_sms_));
  }
  const int id = next_id_++;
  Kernel& k = kernels_[id];
  k.spec = std::move(spec);
  k.launch = now;
  const std::size_t G = k.spec.groups.size();
  k.release.assign(G, kTickMax);
  k.poller.assign(G, -1);
  Cursor& c = committed_.cursors[id];
  c.kernel = &k;
  c.next.assign(G, 0);
  c.first_start.assign(G, kTickMax);
  int polling = 0;
  for (std::size_t g = 0; g < G; ++g) {
    c.left += static_cast<std::int64_t>(k.spec.groups[g].blocks.size());
    switch (k.spec.groups[g].release) {
      case GroupRelease::kLaunch:
        k.release[g] = now;
        break;
      case GroupRelease::kSignal:
        break;
      case GroupRelease::kPoll: {
        const PollCost& pc = k.spec.poll;
        if (pc.interval == 0 || pc.sm_ticks >= pc.interval) {
          throw std::invalid_argument("kernel " + k.spec.name + ": poll SM time must be below the poll interval (> 0)");
        }
        Poller p;
        p.sm = k.spec.first_sm + polling++ % k.spec.num_sms;
        p.first = now;
        p.interval = pc.interval;
        p.cost = pc.sm_ticks;
        k.poller[g] = static_cast<int>(pollers_.size());
        pollers_on_sm_[static_cast<std::size_t>(p.sm)].push_back(k.poller[g]);
        pollers_.push_back(p);
        break;
      }
    }
  }
  while (c.open < G && k.spec.groups[c.open].blocks.empty()) ++c.open;
  dirty_ = dirty_ || G > 0;
  if (k.spec.hbm_bytes > 0) start_flow(id, k.spec.hbm_bytes, k.spec.hbm_max_gbps, now);
  return id;
}

void TbEngine::start_flow(int id, double bytes, double max_gbps, Tick start) {
  ++kernel(id).flows_pending;
  const bool outer = !updating_;
  updating_ = true;  // a flow that completes at once must not re-enter the caller
  hbm_->start_flow(bytes, max_gbps, start, [this, id](Tick t) {
    const auto it = kernels_.find(id);
    if (it == kernels_.end()) return;
    --it->second.flows_pending;
    it->second.flows_done = std::max(it->second.flows_done, t);
    if (!updating_ && on_flow_done_) on_flow_done_();
  });
  if (outer) updating_ = false;
}

void TbEngine::signal(int id, int group, Tick t, Tick now) {
  Kernel& k = kernel(id);
  const auto g = static_cast<std::size_t>(group);
  if (group < 0 || g >= k.release.size()) throw std::invalid_argument("signal for a group the kernel does not have");
  if (k.release[g] != kTickMax) return;
  k.release[g] = std::max(t, now);
  dirty_ = true;
}

void TbEngine::set_flag(int id, int group, Tick t, Tick now) {
  Kernel& k = kernel(id);
  const auto g = static_cast<std::size_t>(group);
  if (group < 0 || g >= k.release.size() || k.poller[g] < 0) {
    throw std::invalid_argument("flag for a group of kernel " + k.spec.name + " that does not poll");
  }
  if (k.release[g] != kTickMax) return;
  Poller& p = pollers_[static_cast<std::size_t>(k.poller[g])];
  // a flag set before the kernel polls is seen by the first poll; after the
  // current time it cannot be (decisions before now are final)
  if (t > p.first) t = std::max(t, now);
  const Tick n = t <= p.first ? 0 : (t - p.first + p.interval - 1) / p.interval;
  p.last = p.first + n * p.interval;
  k.release[g] = p.last;
  dirty_ = true;
  if (k.spec.poll.bytes > 0) start_flow(id, static_cast<double>(n + 1) * k.spec.poll.bytes, 0, now);
}

Tick TbEngine::finish(int sm, Tick start, Tick work) const {
  const auto& ps = pollers_on_sm_[static_cast<std::size_t>(sm)];
  Tick end = start + work;
  if (ps.empty() || work == 0) return end;
  // polls interleave with the block: each one inside its run stretches it
  for (;;) {
    Tick extra = 0;
    for (const int i : ps) {
      const Poller& p = pollers_[static_cast<std::size_t>(i)];
      extra += p.cost * p.count(start, end);
    }
    if (start + work + extra == end) return end;
    end = start + work + extra;
  }
}

void TbEngine::run(State& st, Tick until) const {
  using Item = std::pair<Tick, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  for (int s = 0; s < num_sms_; ++s) heap.push({st.sms[static_cast<std::size_t>(s)].free, s});
  while (!heap.empty()) {
    const Tick t = heap.top().first;
    const int s = heap.top().second;
    if (t >= until) break;
    heap.pop();
    // the first released block, in launch order, of a kernel that may use SM s
    int best = -1;
    Cursor* bc = nullptr;
    std::size_t bg = 0;
    Tick next_release = kTickMax;
    for (auto& [id, c] : st.cursors) {
      if (c.left == 0) continue;
      const Kernel& k = *c.kernel;
      if (s < k.spec.first_sm || s >= k.spec.first_sm + k.spec.num_sms) continue;
      for (std::size_t g = c.open; g < k.spec.groups.size(); ++g) {
        if (c.next[g] >= k.spec.groups[g].blocks.size()) continue;
        if (k.release[g] <= t) {
          best = id;
          bc = &c;
          bg = g;
          break;
        }
        next_release = std::min(next_release, k.release[g]);
      }
      if (best >= 0) break;
    }
    if (best < 0) {
      // idle until a known release; an unknown one comes with an update
      if (next_release != kTickMax) heap.push({next_release, s});
      continue;
    }
    const Kernel& k = *bc->kernel;
    Cursor& c = *bc;
    SmState& sm = st.sms[static_cast<std::size_t>(s)];
    if (sm.kernel >= 0) {
      const auto prev = st.cursors.find(sm.kernel);
      if (prev != st.cursors.end()) prev->second.ended = std::max(prev->second.ended, sm.free);
    }
    const Tick w = k.spec.groups[bg].blocks[c.next[bg]];
    sm = {finish(s, t, w), t, w, best};
    c.first_start[bg] = std::min(c.first_start[bg], t);
    ++c.next[bg];
    --c.left;
    while (c.open < k.spec.groups.size() && c.next[c.open] >= k.spec.groups[c.open].blocks.size()) ++c.open;
    heap.push({sm.free, s});
  }
}

void TbEngine::update(Tick now) {
  // without new blocks, releases or polls the prediction stands (committing
  // it later gives the same decisions); only flows may have completed
  if (dirty_) predict(now);
  dirty_ = false;
  for (auto& [id, k] : kernels_) {
    const auto c = predicted_.cursors.find(id);
    const bool blocks_left = c != predicted_.cursors.end() && c->second.left > 0;
    k.predicted = kTickMax;
    if (blocks_left || k.flows_pending > 0) continue;
    Tick end = std::max({k.launch, k.flows_done, c != predicted_.cursors.end() ? c->second.ended : Tick{0}});
    bool known = true;
    for (const Tick r : k.release) {
      known = known && r != kTickMax;
      if (r != kTickMax) end = std::max(end, r);
    }
    if (known) k.predicted = end;
  }
}

void TbEngine::predict(Tick now) {
  // polls that became known change the end of the blocks now on their SMs;
  // a poller whose polls all lie before the block on its SM and before the
  // last commit (every block still to be dispatched starts after it) can no
  // longer stretch anything
  for (int s = 0; s < num_sms_; ++s) {
    SmState& sm = committed_.sms[static_cast<std::size_t>(s)];
    auto& ps = pollers_on_sm_[static_cast<std::size_t>(s)];
    ps.erase(std::remove_if(ps.begin(), ps.end(),
                            [&](int i) {
                              const Tick last = pollers_[static_cast<std::size_t>(i)].last;
                              return last < committed_until_ && (sm.kernel < 0 || last < sm.work_start);
                            }),
             ps.end());
    if (sm.kernel >= 0) sm.free = finish(s, sm.work_start, sm.work);
  }
  run(committed_, now);
  committed_until_ = std::max(committed_until_, now);
  predicted_ = committed_;
  run(predicted_, kTickMax);
  for (const SmState& sm : predicted_.sms) {
    const auto c = predicted_.cursors.find(sm.kernel);
    if (c != predicted_.cursors.end()) c->second.ended = std::max(c->second.ended, sm.free);
  }
}

Tick TbEngine::predicted_end(int id) const { return kernel(id).predicted; }

Tick TbEngine::group_start(int id, int group) const {
  const auto c = predicted_.cursors.find(id);
  if (c == predicted_.cursors.end()) throw std::invalid_argument("group_start of an unknown kernel");
  return c->second.first_start.at(static_cast<std::size_t>(group));
}

std::int64_t TbEngine::polls(int id, int group) const {
  const Kernel& k = kernel(id);
  const int p = k.poller.at(static_cast<std::size_t>(group));
  if (p < 0) return 0;
  const Poller& q = pollers_[static_cast<std::size_t>(p)];
  if (q.last == kTickMax) return 0;
  return static_cast<std::int64_t>((q.last - q.first) / q.interval + 1);
}

void TbEngine::retire(int id) {
  kernels_.erase(id);
  committed_.cursors.erase(id);
  predicted_.cursors.erase(id);
}

}  // namespace moehub
