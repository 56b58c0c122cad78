#include "platform/scoreboard.hpp"

#include <algorithm>

namespace moehub {

Scoreboard::Scoreboard(const Schedule& schedule, int num_gpus, PacketFormat fmt, AddressMap& map) : fmt_(fmt) {
  const auto G = static_cast<std::size_t>(num_gpus);
  transfers_.resize(schedule.collectives.size());
  for (std::size_t c = 0; c < schedule.collectives.size(); ++c) {
    Transfer& s = transfers_[c];
    s.spec = &schedule.collectives[c];
    s.gpus.resize(G);
    s.bytes_at_row.assign(s.spec->expected_dst.size(), 0);
    s.arrivals_ok.assign(s.spec->expected_dst.size(), 1);
    s.slot_of_row.assign(s.spec->expected_dst.size(), -1);
    s.recv_slot.assign(G, std::vector<std::int64_t>(G, 0));
    const std::uint64_t ppr = fmt_.packets_per_row(s.spec->row_bytes);
    for (std::size_t dst = 0; dst < G; ++dst) {
      std::int64_t slot = 0;
      for (std::size_t src = 0; src < G; ++src) {
        s.recv_slot[src][dst] = slot;
        const auto& rows = s.spec->rows[src][dst];
        for (std::size_t i = 0; i < rows.size(); ++i) s.slot_of_row[static_cast<std::size_t>(rows[i])] = slot + static_cast<std::int64_t>(i);
        slot += static_cast<std::int64_t>(rows.size());
        if (src == dst) continue;
        const auto n = static_cast<std::uint64_t>(rows.size()) * ppr;
        s.gpus[src].expect_acks += n;
        s.gpus[dst].expect_recv += n;
      }
      s.region.push_back(map.allocate(static_cast<int>(dst), "recv:" + s.spec->name,
                                      static_cast<std::uint64_t>(slot) * s.spec->row_bytes));
    }
  }
}

std::uint64_t Scoreboard::address_of(int c, int src, int dst, std::int64_t index) const {
  const Transfer& s = transfers_[static_cast<std::size_t>(c)];
  const auto slot = s.recv_slot[static_cast<std::size_t>(src)][static_cast<std::size_t>(dst)] + index;
  return s.region[static_cast<std::size_t>(dst)] + static_cast<std::uint64_t>(slot) * s.spec->row_bytes;
}

void Scoreboard::local_copy(int c, int g) {
  Transfer& s = transfers_[static_cast<std::size_t>(c)];
  const auto gi = static_cast<std::size_t>(g);
  for (const auto id : s.spec->rows[gi][gi]) {
    if (s.spec->expected_dst[static_cast<std::size_t>(id)] != g) s.arrivals_ok[static_cast<std::size_t>(id)] = 0;
    s.bytes_at_row[static_cast<std::size_t>(id)] += s.spec->row_bytes;
  }
  s.local += static_cast<double>(s.spec->rows[gi][gi].size()) * s.spec->row_bytes;
}

void Scoreboard::count_sent(int c, int, double bytes) { transfers_[static_cast<std::size_t>(c)].sent += bytes; }

void Scoreboard::on_delivered(const MoePacketExt& w, Tick t) {
  if (row_sink_ && static_cast<std::size_t>(w.transfer) >= transfers_.size()) {
    row_sink_->on_delivered(w, t);
    return;
  }
  Transfer& s = transfers_[static_cast<std::size_t>(w.transfer)];
  const std::int64_t id = w.store.row_id;
  const auto row = static_cast<std::size_t>(id);
  if (id < 0 || row >= s.bytes_at_row.size()) {
    s.errors.push_back(s.spec->name + ": packet with unknown row id " + std::to_string(id));
    return;
  }
  if (s.spec->expected_dst[row] != w.dst_gpu) s.arrivals_ok[row] = 0;
  const std::uint64_t expect = s.region[static_cast<std::size_t>(w.dst_gpu)] +
                               static_cast<std::uint64_t>(s.slot_of_row[row]) * s.spec->row_bytes + w.store.row_offset;
  if (w.store.address != expect) ++s.wrong_address;
  s.bytes_at_row[row] += w.store.bytes;
  s.received += w.store.bytes;
  s.packets += w.packets;
  PerGpu& d = s.gpus[static_cast<std::size_t>(w.dst_gpu)];
  d.recv += w.packets;
  d.last = std::max(d.last, t);
  if (progress_ && d.recv >= d.expect_recv && d.acks >= d.expect_acks) progress_(w.transfer, w.dst_gpu);
}

void Scoreboard::on_acknowledged(const MoePacketExt& r, Tick t) {
  if (row_sink_ && static_cast<std::size_t>(r.transfer) >= transfers_.size()) {
    row_sink_->on_acknowledged(r, t);
    return;
  }
  Transfer& s = transfers_[static_cast<std::size_t>(r.transfer)];
  if (r.sent < r.written) ++s.early_responses;
  PerGpu& p = s.gpus[static_cast<std::size_t>(r.dst_gpu)];
  p.acks += r.packets;
  p.last = std::max(p.last, t);
  if (progress_ && p.recv >= p.expect_recv && p.acks >= p.expect_acks) progress_(r.transfer, r.dst_gpu);
}

bool Scoreboard::complete(int c, int g) const {
  const PerGpu& p = transfers_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)];
  return p.recv >= p.expect_recv && p.acks >= p.expect_acks;
}

Tick Scoreboard::last_event(int c, int g) const {
  return transfers_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)].last;
}

std::vector<std::string> Scoreboard::verify() const {
  std::vector<std::string> errors;
  for (const Transfer& s : transfers_) {
    errors.insert(errors.end(), s.errors.begin(), s.errors.end());
    const std::string& n = s.spec->name;
    std::int64_t missing = 0, duplicated = 0, misrouted = 0;
    for (std::size_t row = 0; row < s.bytes_at_row.size(); ++row) {
      if (s.spec->expected_dst[row] < 0) continue;  // id not used by this transfer
      if (s.bytes_at_row[row] < s.spec->row_bytes) ++missing;
      if (s.bytes_at_row[row] > s.spec->row_bytes) ++duplicated;
      if (!s.arrivals_ok[row]) ++misrouted;
    }
    if (missing) errors.push_back(n + ": " + std::to_string(missing) + " rows not delivered completely");
    if (duplicated) errors.push_back(n + ": " + std::to_string(duplicated) + " rows delivered more than once");
    if (misrouted) errors.push_back(n + ": " + std::to_string(misrouted) + " rows arrived at the wrong GPU");
    if (s.wrong_address) {
      errors.push_back(n + ": " + std::to_string(s.wrong_address) + " packets written to an address their row does not own");
    }
    if (s.early_responses) {
      errors.push_back(n + ": " + std::to_string(s.early_responses) + " write responses left before their write was in memory");
    }
    if (s.sent != s.received) {
      errors.push_back(n + ": bytes sent (" + std::to_string(s.sent) + ") != bytes received (" +
                       std::to_string(s.received) + ")");
    }
    for (std::size_t g = 0; g < s.gpus.size(); ++g) {
      const PerGpu& p = s.gpus[g];
      if (p.acks != p.expect_acks) {
        errors.push_back(n + ": GPU " + std::to_string(g) + " got " + std::to_string(p.acks) +
                         " write responses, expected " + std::to_string(p.expect_acks));
      }
      if (p.recv != p.expect_recv) {
        errors.push_back(n + ": GPU " + std::to_string(g) + " received " + std::to_string(p.recv) +
                         " packets, expected " + std::to_string(p.expect_recv));
      }
    }
  }
  return errors;
}

Scoreboard::Totals Scoreboard::totals() const {
  Totals t;
  for (const Transfer& s : transfers_) {
    t.payload_bytes_sent += s.sent;
    t.payload_bytes_received += s.received;
    t.local_bytes += s.local;
    t.data_packets += s.packets;
    t.wrong_addresses += s.wrong_address;
    t.early_responses += s.early_responses;
    for (std::size_t row = 0; row < s.bytes_at_row.size(); ++row) {
      if (s.spec->expected_dst[row] >= 0 && s.bytes_at_row[row] == s.spec->row_bytes) ++t.rows_delivered;
    }
  }
  return t;
}

}  // namespace moehub
