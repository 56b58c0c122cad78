#include "platform/collectives.hpp"

#include <algorithm>

#include "common/sc_time_util.hpp"

namespace moehub {

Collectives::Collectives(const Schedule& schedule, const SystemConfig& sys, Scoreboard& scoreboard)
    : fmt_(PacketFormat::from(sys.nvlink)),
      granularity_(sys.sim.granularity),
      bulk_granularity_(sys.sim.bulk_granularity),
      sm_to_hub_(ns_to_ticks(sys.gpu.xbar_latency_ns + sys.gpu.hub_latency_ns)),
      scoreboard_(scoreboard) {
  const auto G = static_cast<std::size_t>(sys.num_gpus);
  states_.resize(schedule.collectives.size());
  for (std::size_t c = 0; c < schedule.collectives.size(); ++c) {
    State& s = states_[c];
    s.spec = &schedule.collectives[c];
    s.gpus.resize(G);
    for (auto& pg : s.gpus) pg.done_ev = std::make_unique<sc_core::sc_event>();
  }
  scoreboard_.set_progress_listener([this](int c, int g) { check_done(c, g); });
}

void Collectives::attach(std::vector<Hub*> hubs, std::vector<SmArray*> sms, std::vector<MemoryFlows*> hbm) {
  hubs_ = std::move(hubs);
  sms_ = std::move(sms);
  hbm_ = std::move(hbm);
}

sc_core::sc_event& Collectives::done_event(int c, int g) {
  return *states_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)].done_ev;
}

void Collectives::join(int c, int g) {
  State& s = states_[static_cast<std::size_t>(c)];
  const auto gi = static_cast<std::size_t>(g);
  PerGpu& me = s.gpus[gi];
  const Tick now = now_ticks();
  me.joined = true;

  // local rows are copied (read and written) through HBM instead of being sent
  const double local = static_cast<double>(s.spec->rows[gi][gi].size()) * s.spec->row_bytes;
  scoreboard_.local_copy(c, g);
  hbm_[gi]->start_flow(2 * local, 0, now, [this, c, g](Tick t) {
    PerGpu& p = states_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)];
    p.local_done = true;
    p.local_at = t;
    check_done(c, g);
  });

  std::vector<RowBatch> batches;
  const std::size_t G = s.gpus.size();
  double sent = 0;
  for (std::size_t k = 1; k < G; ++k) {  // peers in ring order starting after ourselves
    const std::size_t d = (gi + k) % G;
    const auto& rows = s.spec->rows[gi][d];
    if (rows.empty()) continue;
    batches.push_back({static_cast<std::int32_t>(d), rows.data(), static_cast<std::int64_t>(rows.size()),
                       scoreboard_.address_of(c, g, static_cast<int>(d), 0)});
    sent += static_cast<double>(rows.size()) * s.spec->row_bytes;
  }
  scoreboard_.count_sent(c, g, sent);
  // at row granularity a row goes as one run of packets per plane
  const bool row_level = (s.spec->bulk ? bulk_granularity_ : granularity_) == "row";
  const std::uint32_t per_txn =
      row_level ? ceil_div<std::uint32_t>(fmt_.packets_per_row(s.spec->row_bytes),
                                          static_cast<std::uint32_t>(hubs_[gi]->planes()))
                : 1u;
  me.stream = std::make_unique<StoreStream>(g, static_cast<std::uint64_t>(c), batches, s.spec->row_bytes,
                                            fmt_, per_txn, sms_[gi]->store_issue_gbps(s.spec->sms), now, sm_to_hub_);
  // transfers between two GPUs start once both have joined
  for (std::size_t d = 0; d < G; ++d) {
    if (d == gi || !s.gpus[d].joined) continue;
    me.stream->enable(static_cast<std::int32_t>(d), now);
    s.gpus[d].stream->enable(static_cast<std::int32_t>(g), now);
    hubs_[d]->wake(now);
  }
  if (!me.stream->finished()) hubs_[gi]->add_source(me.stream.get());
  check_done(c, g);
}

void Collectives::check_done(int c, int g) {
  PerGpu& p = states_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)];
  if (!p.joined || p.done || !p.local_done || !scoreboard_.complete(c, g)) return;
  p.done = true;
  const Tick now = now_ticks();
  const Tick at = std::max({scoreboard_.last_event(c, g), p.local_at, now});
  p.done_ev->notify(to_sc(at - now));
}

std::vector<std::string> Collectives::verify() const {
  std::vector<std::string> errors;
  for (const State& s : states_) {
    for (std::size_t g = 0; g < s.gpus.size(); ++g) {
      const PerGpu& p = s.gpus[g];
      if (!p.joined) {
        errors.push_back(s.spec->name + ": GPU " + std::to_string(g) + " never joined");
      } else if (!p.done) {
        errors.push_back(s.spec->name + ": GPU " + std::to_string(g) + " did not complete");
      }
    }
  }
  return errors;
}

}  // namespace moehub
