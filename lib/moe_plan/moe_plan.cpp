// Ring schedule, per-hop volumes, routing-mode choice and hop chunks. See moe_plan.hpp.
#include "moe_plan/moe_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace moehub::plan {
namespace {

void require(bool ok, const std::string& field, const std::string& range, long long value) {
  if (!ok)
    throw std::invalid_argument("MoeProblem." + field + " = " + std::to_string(value) +
                                " is outside the allowed range " + range);
}

bool valid_bytes(int b) { return b == 1 || b == 2 || b == 4 || b == 8; }

std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

void validate(const MoeProblem& p) {
  require(p.tokens_per_rank >= 1, "tokens_per_rank", "[1, inf)", p.tokens_per_rank);
  require(p.hidden >= 1, "hidden", "[1, inf)", p.hidden);
  require(p.ffn >= 1, "ffn", "[1, inf)", p.ffn);
  require(p.experts >= 1, "experts", "[1, inf)", p.experts);
  require(p.top_k >= 1 && p.top_k <= p.experts, "top_k", "[1, experts]", p.top_k);
  require(p.ep >= 1 && p.ep <= p.experts, "ep", "[1, experts]", p.ep);
  require(p.experts % p.ep == 0, "experts", "a multiple of ep", p.experts);
  require(p.etp >= 1 && p.ffn % p.etp == 0, "etp", "[1, ffn] dividing ffn", p.etp);
  require(valid_bytes(p.dtype_bytes), "dtype_bytes", "{1, 2, 4, 8}", p.dtype_bytes);
  require(valid_bytes(p.accum_bytes), "accum_bytes", "{1, 2, 4, 8}", p.accum_bytes);
  require(valid_bytes(p.grad_bytes), "grad_bytes", "{1, 2, 4, 8}", p.grad_bytes);
}

const char* to_string(RingMode m) { return m == RingMode::kExpert ? "expert" : "token"; }

HopParts hop_parts(const MoeProblem& p, RingMode mode, bool backward) {
  validate(p);
  const double T = static_cast<double>(p.tokens_per_rank), H = p.hidden, k = p.top_k;
  const double e_local = static_cast<double>(p.experts / p.ep);
  const double w_elems = 3.0 * H * (static_cast<double>(p.ffn) / p.etp);
  const double d = p.dtype_bytes, a = p.accum_bytes, g = p.grad_bytes;
  const double meta = T * k * (4.0 + 4.0);  // int32 id + fp32 weight per top-k slot
  if (mode == RingMode::kExpert) return {e_local * w_elems * d, backward ? e_local * w_elems * g : 0.0};
  if (!backward) return {T * H * d + meta, T * H * a};
  return {2.0 * T * H * d + meta, T * H * a + T * k * 4.0};
}

HopVolumes hop_volumes(const MoeProblem& p) {
  const auto sum = [&](RingMode m, bool bwd) {
    const HopParts h = hop_parts(p, m, bwd);
    return h.payload_bytes + h.accum_bytes;
  };
  return {sum(RingMode::kExpert, false), sum(RingMode::kExpert, true), sum(RingMode::kToken, false),
          sum(RingMode::kToken, true)};
}

ModeChoice choose_ring_mode(const MoeProblem& p) {
  const HopVolumes v = hop_volumes(p);
  const double expert = v.expert_fwd_bytes + v.expert_bwd_bytes;
  const double token = v.token_fwd_bytes + v.token_bwd_bytes;
  ModeChoice c{expert <= token ? RingMode::kExpert : RingMode::kToken, v, ""};
  c.reason = std::string(c.mode == RingMode::kExpert ? "expert" : "token") +
             " routing: per-hop volume expert " + mib(v.expert_fwd_bytes) + " fwd + " +
             mib(v.expert_bwd_bytes) + " bwd = " + mib(expert) + (expert <= token ? " <= " : " > ") +
             "token " + mib(v.token_fwd_bytes) + " fwd + " + mib(v.token_bwd_bytes) +
             " bwd = " + mib(token);
  return c;
}

int ring_partition_at_hop(int rank, int hop, int n) {
  if (n < 1) throw std::invalid_argument("ring size n = " + std::to_string(n) + " must be >= 1");
  if (rank < 0 || rank >= n)
    throw std::invalid_argument("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(n) + ")");
  if (hop < 0 || hop >= n)
    throw std::invalid_argument("hop " + std::to_string(hop) + " is outside [0, " + std::to_string(n) + ")");
  return ((rank - hop) % n + n) % n;
}

int ring_send_peer(int rank, int n) {
  ring_partition_at_hop(rank, 0, n);  // validates rank and n
  return (rank + 1) % n;
}

int ring_recv_peer(int rank, int n) {
  ring_partition_at_hop(rank, 0, n);
  return (rank - 1 + n) % n;
}

std::vector<HopChunk> hop_chunks(const std::vector<std::int64_t>& rows, std::int64_t max_rows) {
  if (max_rows < kOneExpertPerChunk)
    throw std::invalid_argument("hop_chunks: max_rows_per_chunk = " + std::to_string(max_rows) +
                                " must be >= -1 (0 = the whole hop, -1 = one expert per chunk)");
  std::vector<HopChunk> out;
  HopChunk cur{-1, -1, 0, {}};
  auto flush = [&] {
    if (cur.first >= 0) out.push_back(cur);
    cur = HopChunk{-1, -1, 0, {}};
  };
  for (int e = 0; e < static_cast<int>(rows.size()); ++e) {
    const std::int64_t r = rows[static_cast<std::size_t>(e)];
    if (max_rows > 0 && r > max_rows) {
      flush();
      const std::int64_t pieces = (r + max_rows - 1) / max_rows, base = r / pieces, extra = r % pieces;
      for (std::int64_t i = 0; i < pieces; ++i) {
        const std::int64_t pr = base + (i < extra ? 1 : 0);
        out.push_back(HopChunk{e, e + 1, pr, {pr}});
      }
      continue;
    }
    if (cur.first >= 0 && max_rows > 0 && cur.rows + r > max_rows) flush();
    if (cur.first >= 0 && max_rows == kOneExpertPerChunk && cur.rows > 0 && r > 0) flush();
    if (cur.first < 0) cur.first = e;
    cur.last = e + 1;
    cur.rows += r;
    cur.expert_rows.push_back(r);
  }
  flush();
  return out;
}

std::int64_t max_chunk_rows(const std::vector<std::int64_t>& rows, std::int64_t max_rows) {
  std::int64_t mx = 0;
  for (const HopChunk& c : hop_chunks(rows, max_rows)) mx = std::max(mx, c.rows);
  return mx;
}

}  // namespace moehub::plan
