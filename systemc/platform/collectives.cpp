#include "platform/collectives.hpp"

#include <algorithm>

#include "common/sc_time_util.hpp"

namespace moehub {

Collectives::Collectives(const Schedule& schedule, int num_gpus, PacketFormat fmt,
                         std::uint32_t packets_per_transaction)
    : fmt_(fmt), packets_per_transaction_(packets_per_transaction) {
  const auto G = static_cast<std::size_t>(num_gpus);
  states_.resize(schedule.collectives.size());
  for (std::size_t c = 0; c < schedule.collectives.size(); ++c) {
    State& s = states_[c];
    s.spec = &schedule.collectives[c];
    s.gpus.resize(G);
    s.bytes_at_row.assign(s.spec->expected_dst.size(), 0);
    s.arrivals_ok.assign(s.spec->expected_dst.size(), 1);
    const std::uint64_t ppr = fmt_.packets_per_row(s.spec->row_bytes);
    for (std::size_t src = 0; src < G; ++src) {
      for (std::size_t dst = 0; dst < G; ++dst) {
        if (src == dst) continue;
        const auto n = static_cast<std::uint64_t>(s.spec->rows[src][dst].size()) * ppr;
        s.gpus[src].expect_acks += n;
        s.gpus[dst].expect_recv += n;
      }
    }
    for (auto& pg : s.gpus) pg.done_ev = std::make_unique<sc_core::sc_event>();
  }
}

void Collectives::attach(std::vector<Hub*> hubs, std::vector<SmArray*> sms) {
  hubs_ = std::move(hubs);
  sms_ = std::move(sms);
}

sc_core::sc_event& Collectives::done_event(int c, int g) {
  return *states_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)].done_ev;
}

void Collectives::join(int c, int g, Tick local_done) {
  State& s = states_[static_cast<std::size_t>(c)];
  const auto gi = static_cast<std::size_t>(g);
  PerGpu& me = s.gpus[gi];
  const Tick now = now_ticks();
  me.joined = true;
  me.join_time = now;
  me.local_done = local_done;
  me.last = std::max(now, local_done);

  // local rows are copied in place of being sent
  for (const auto id : s.spec->rows[gi][gi]) {
    if (s.spec->expected_dst[static_cast<std::size_t>(id)] != g) s.arrivals_ok[static_cast<std::size_t>(id)] = 0;
    s.bytes_at_row[static_cast<std::size_t>(id)] += s.spec->row_bytes;
  }
  s.local += static_cast<double>(s.spec->rows[gi][gi].size()) * s.spec->row_bytes;

  std::vector<RowBatch> batches;
  const std::size_t G = s.gpus.size();
  for (std::size_t k = 1; k < G; ++k) {  // peers in ring order starting after ourselves
    const std::size_t d = (gi + k) % G;
    const auto& rows = s.spec->rows[gi][d];
    if (rows.empty()) continue;
    batches.push_back({static_cast<std::int32_t>(d), rows.data(), static_cast<std::int64_t>(rows.size())});
    s.sent += static_cast<double>(rows.size()) * s.spec->row_bytes;
  }
  // at row granularity a row goes as one run of packets per plane
  const std::uint32_t per_txn =
      packets_per_transaction_ == 0
          ? ceil_div<std::uint32_t>(fmt_.packets_per_row(s.spec->row_bytes), static_cast<std::uint32_t>(hubs_[gi]->planes()))
          : packets_per_transaction_;
  me.stream = std::make_unique<StoreStream>(std::move(batches), s.spec->row_bytes, fmt_, per_txn,
                                            sms_[gi]->store_issue_gbps(s.spec->sms), now);
  sms_[gi]->start_stores(c, me.stream.get());
  // transfers between two GPUs start once both have joined
  for (std::size_t d = 0; d < G; ++d) {
    if (d == gi || !s.gpus[d].joined) continue;
    hubs_[gi]->enable_peer(c, static_cast<std::int32_t>(d), now);
    hubs_[d]->enable_peer(c, static_cast<std::int32_t>(g), now);
  }
  check_done(s, g);
}

void Collectives::on_delivered(const MoePacketExt& w, Tick t) {
  State& s = states_[static_cast<std::size_t>(w.phase)];
  const auto row = static_cast<std::size_t>(w.row_id);
  if (w.row_id < 0 || row >= s.bytes_at_row.size()) {
    s.errors.push_back(s.spec->name + ": packet with unknown row id " + std::to_string(w.row_id));
    return;
  }
  if (s.spec->expected_dst[row] != w.dst_gpu) s.arrivals_ok[row] = 0;
  s.bytes_at_row[row] += w.payload_bytes;
  s.received += w.payload_bytes;
  s.packets += w.packets;
  PerGpu& d = s.gpus[static_cast<std::size_t>(w.dst_gpu)];
  d.recv += w.packets;
  d.last = std::max(d.last, t);
  check_done(s, w.dst_gpu);
}

void Collectives::on_acknowledged(const MoePacketExt& r, Tick t) {
  State& s = states_[static_cast<std::size_t>(r.phase)];
  PerGpu& p = s.gpus[static_cast<std::size_t>(r.dst_gpu)];
  p.acks += r.packets;
  p.last = std::max(p.last, t);
  check_done(s, r.dst_gpu);
}

void Collectives::check_done(State& s, int g) {
  PerGpu& p = s.gpus[static_cast<std::size_t>(g)];
  if (!p.joined || p.done || p.recv < p.expect_recv || p.acks < p.expect_acks) return;
  p.done = true;
  const Tick now = now_ticks();
  const Tick at = std::max(p.last, now);
  p.done_ev->notify(to_sc(at - now));
}

std::vector<std::string> Collectives::verify() const {
  std::vector<std::string> errors;
  for (const State& s : states_) {
    errors.insert(errors.end(), s.errors.begin(), s.errors.end());
    const std::string& n = s.spec->name;
    std::int64_t missing = 0, duplicated = 0, misrouted = 0;
    for (std::size_t row = 0; row < s.bytes_at_row.size(); ++row) {
      if (s.spec->expected_dst[row] < 0) continue;  // id not used by this collective
      if (s.bytes_at_row[row] < s.spec->row_bytes) ++missing;
      if (s.bytes_at_row[row] > s.spec->row_bytes) ++duplicated;
      if (!s.arrivals_ok[row]) ++misrouted;
    }
    if (missing) errors.push_back(n + ": " + std::to_string(missing) + " rows not delivered completely");
    if (duplicated) errors.push_back(n + ": " + std::to_string(duplicated) + " rows delivered more than once");
    if (misrouted) errors.push_back(n + ": " + std::to_string(misrouted) + " rows arrived at the wrong GPU");
    if (s.sent != s.received) {
      errors.push_back(n + ": bytes sent (" + std::to_string(s.sent) + ") != bytes received (" +
                       std::to_string(s.received) + ")");
    }
    for (std::size_t g = 0; g < s.gpus.size(); ++g) {
      const PerGpu& p = s.gpus[g];
      if (!p.joined) errors.push_back(n + ": GPU " + std::to_string(g) + " never joined");
      else if (!p.done) errors.push_back(n + ": GPU " + std::to_string(g) + " did not complete");
      if (p.acks != p.expect_acks) {
        errors.push_back(n + ": GPU " + std::to_string(g) + " got " + std::to_string(p.acks) +
                         " write responses, expected " + std::to_string(p.expect_acks));
      }
    }
  }
  return errors;
}

Collectives::Totals Collectives::totals() const {
  Totals t;
  for (const State& s : states_) {
    t.payload_bytes_sent += s.sent;
    t.payload_bytes_received += s.received;
    t.local_bytes += s.local;
    t.data_packets += s.packets;
    for (std::size_t row = 0; row < s.bytes_at_row.size(); ++row) {
      if (s.spec->expected_dst[row] >= 0 && s.bytes_at_row[row] == s.spec->row_bytes) ++t.rows_delivered;
    }
  }
  return t;
}

}  // namespace moehub
