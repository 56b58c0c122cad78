// The schedules' op lists and all-to-all row lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "common/config_loader.hpp"
#include "moe_plan/moe_plan.hpp"
#include "workload/schedule.hpp"

namespace moehub {
namespace {

struct Workload {
  ModelConfig model;
  Routing routing;
  ExpertPlacement placement;
};

Workload make(const std::string& model_name, std::int64_t tokens, int gpus, double std_dev) {
  Workload s;
  s.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/" + model_name + ".yaml");
  WorkloadConfig w;
  w.tokens = tokens;
  w.seed = 5;
  w.imbalance_std = std_dev;
  s.routing = generate_routing(s.model, w, gpus);
  s.placement = ExpertPlacement::contiguous(s.model.num_experts, gpus);
  return s;
}

std::vector<std::string> names(const std::vector<Op>& ops) {
  std::vector<std::string> n;
  for (const auto& o : ops) n.push_back(o.name);
  return n;
}

TEST(Schedules, MegatronPhasesInOrder) {
  const Workload s = make("mixtral-8x7b", 1024, 8, 0.0);
  const ScheduleOptions opt;
  const Schedule m = build_megatron(s.model, s.routing, s.placement, opt);
  ASSERT_EQ(m.ops.size(), 8u);
  const std::vector<std::string> expected = {"routing", "permute",        "count_exchange", "dispatch",
                                             "expert_compute", "combine", "unpermute"};
  for (const auto& ops : m.ops) {
    std::vector<std::string> phases;
    for (const auto& o : ops) {
      if (phases.empty() || phases.back() != o.phase) phases.push_back(o.phase);
    }
    EXPECT_EQ(phases, expected);
    // the profile's kernel counts: router, permutation, one expert per GPU
    const auto count = [&](const std::string& p) {
      return std::count_if(ops.begin(), ops.end(), [&](const Op& o) { return o.phase == p; });
    };
    EXPECT_EQ(count("routing"), opt.megatron.forward.router.count(1, 1));
    EXPECT_EQ(count("permute"), opt.megatron.forward.permute.count(1, 1));
    EXPECT_EQ(count("expert_compute"), opt.megatron.forward.experts.count(1, 3));
  }
  // the count synchronisation is a host operation, not a kernel
  const auto it = std::find_if(m.ops[0].begin(), m.ops[0].end(), [](const Op& o) { return o.name == "count_sync"; });
  ASSERT_NE(it, m.ops[0].end());
  EXPECT_EQ(it->kind, OpKind::kHostSync);
  EXPECT_FALSE(it->launch);
}

// The unpermutation's scatter-add is limited by its element adds (T k H), not by all the
// bytes it moves: Mixtral (top-2, 4,096 wide) and Qwen1.5 (top-4, 2,048 wide) at the same
// tokens per GPU get the same time limit, though Qwen's phase moves fewer bytes.
TEST(Schedules, MegatronScatterAddLimitFollowsElementAdds) {
  const ScheduleOptions opt;
  const auto limit_us = [&](const std::string& model) {
    const Workload s = make(model, 8192, 8, 0.0);
    const Schedule m = build_megatron(s.model, s.routing, s.placement, opt);
    const auto& ops = m.ops[0];
    const auto it = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.phase == "unpermute"; });
    if (it == ops.end() || !(it->max_gbps > 0)) {
      ADD_FAILURE() << model << ": no rate-limited unpermute kernel";
      return std::make_pair(0.0, 0.0);
    }
    const double T = static_cast<double>(s.routing.tokens_per_gpu[0]);
    const double added = T * s.model.top_k * s.model.hidden_size * s.model.dtype_bytes;
    const double ns = it->bytes / it->max_gbps;  // bytes over GB/s
    EXPECT_NEAR(ns, added / opt.megatron.unpermute_add_gbps, 1e-9 * ns) << model;
    return std::make_pair(it->bytes, ns);
  };
  const auto mixtral = limit_us("mixtral-8x7b");
  const auto qwen = limit_us("qwen1.5-moe-a2.7b");
  EXPECT_LT(qwen.first, 0.9 * mixtral.first);
  EXPECT_NEAR(qwen.second, mixtral.second, 1e-9 * mixtral.second);
}

TEST(Schedules, MegatronMovesEveryTokenRowOnceEachWay) {
  const Workload s = make("qwen1.5-moe-a2.7b", 2000, 8, 0.02);  // 60 experts on 8 GPUs: uneven placement
  const Schedule m = build_megatron(s.model, s.routing, s.placement, {});
  const AllToAll& d = m.collectives[0];
  const AllToAll& c = m.collectives[2];
  EXPECT_EQ(d.name, "dispatch");
  EXPECT_EQ(c.name, "combine");
  const std::int64_t pairs = 2000 * s.model.top_k;
  std::vector<int> seen_d(static_cast<std::size_t>(pairs), 0), seen_c(static_cast<std::size_t>(pairs), 0);
  std::int64_t off = 0;
  std::vector<std::int64_t> first_pair(9, 0);
  for (int g = 0; g < 8; ++g) {
    first_pair[static_cast<std::size_t>(g)] = off;
    off += s.routing.tokens_per_gpu[static_cast<std::size_t>(g)] * s.model.top_k;
  }
  first_pair[8] = off;
  for (std::size_t src = 0; src < 8; ++src) {
    for (std::size_t dst = 0; dst < 8; ++dst) {
      for (const auto id : d.rows[src][dst]) {
        ++seen_d[static_cast<std::size_t>(id)];
        // the pair belongs to a token of src and its expert lives on dst
        EXPECT_GE(id, first_pair[src]);
        EXPECT_LT(id, first_pair[src + 1]);
        const auto local = static_cast<std::size_t>(id - first_pair[src]);
        const int expert = s.routing.expert_ids[src][local];
        EXPECT_EQ(s.placement.owner[static_cast<std::size_t>(expert)], static_cast<int>(dst));
        EXPECT_EQ(d.expected_dst[static_cast<std::size_t>(id)], static_cast<int>(dst));
      }
      for (const auto id : c.rows[src][dst]) {
        ++seen_c[static_cast<std::size_t>(id)];
        EXPECT_EQ(c.expected_dst[static_cast<std::size_t>(id)], static_cast<int>(dst));
        EXPECT_GE(id, first_pair[dst]);  // back to its token's GPU
        EXPECT_LT(id, first_pair[dst + 1]);
      }
      // combine is the mirror image of dispatch
      EXPECT_EQ(c.rows[dst][src].size(), d.rows[src][dst].size());
    }
  }
  EXPECT_TRUE(std::all_of(seen_d.begin(), seen_d.end(), [](int n) { return n == 1; }));
  EXPECT_TRUE(std::all_of(seen_c.begin(), seen_c.end(), [](int n) { return n == 1; }));
  EXPECT_EQ(d.row_bytes, static_cast<std::uint32_t>(s.model.hidden_size * s.model.dtype_bytes));
}

TEST(Schedules, ExpertGemmsFollowTheRouting) {
  const Workload s = make("mixtral-8x7b", 4096, 8, 0.05);
  const Schedule m = build_megatron(s.model, s.routing, s.placement, {});
  const auto load = s.routing.expert_load();
  for (std::size_t g = 0; g < 8; ++g) {
    const auto at = [&](const std::string& n) {
      return *std::find_if(m.ops[g].begin(), m.ops[g].end(), [&](const Op& o) { return o.name == n; });
    };
    const Op& g1 = at("expert0_fc1");
    ASSERT_EQ(g1.gemms.size(), 1u);  // one expert per GPU
    EXPECT_EQ(g1.gemms[0].m, load[g]);
    EXPECT_EQ(g1.gemms[0].n, 2 * s.model.expert_ffn_size);
    EXPECT_EQ(g1.gemms[0].k, s.model.hidden_size);
    const Op& g2 = at("expert0_fc2");
    EXPECT_EQ(g2.gemms[0].m, load[g]);
    EXPECT_EQ(g2.gemms[0].n, s.model.hidden_size);
    EXPECT_EQ(g2.gemms[0].k, s.model.expert_ffn_size);
  }
}

TEST(Schedules, IdealHasNoCommunication) {
  const Workload s = make("qwen1.5-moe-a2.7b", 1024, 8, 0.0);
  const Schedule i = build_ideal(s.model, s.routing, s.placement, {});
  EXPECT_TRUE(i.collectives.empty());
  for (const auto& ops : i.ops) {
    for (const auto& op : ops) {
      EXPECT_NE(op.kind, OpKind::kAllToAll);
      EXPECT_NE(op.kind, OpKind::kHostSync);
    }
    // the shared expert of Qwen1.5-MoE is computed locally
    const auto n = names(ops);
    EXPECT_NE(std::find(n.begin(), n.end(), "shared_gemm1"), n.end());
  }
}

TEST(Schedules, UnknownNameIsRejected) {
  const Workload s = make("mixtral-8x7b", 64, 8, 0.0);
  EXPECT_THROW(build_schedule("fastest", s.model, s.routing, s.placement, {}), std::invalid_argument);
  EXPECT_EQ(schedule_names(),
            (std::vector<std::string>{"megatron", "megatron-train", "ideal", "a2a-uniform", "ring-expert", "ring-token",
                                      "fastermoe", "tutel", "comet", "ccfuser", "moehub", "moehub-base", "moehub-pkt",
                                      "moehub-dep"}));
  EXPECT_THROW(build_schedule("moehub-fast", s.model, s.routing, s.placement, {}), std::invalid_argument);
}

// MoE-Hub: every (token, slot) pair is stored once with st.rowsp into the
// region of its expert on the expert's GPU (RowIDs unique per region), and
// comes home once with a plain store to its slot; GEMM1 waits for the data.
TEST(Schedules, MoeHubStoresEveryPairOnceEachWay) {
  const Workload s = make("qwen1.5-moe-a2.7b", 999, 8, 0.02);  // 60 experts on 8 GPUs: uneven placement
  for (const std::string v : {"moehub", "moehub-base", "moehub-pkt", "moehub-dep"}) {
    SCOPED_TRACE(v);
    const Schedule m = build_schedule(v, s.model, s.routing, s.placement, {});
    EXPECT_TRUE(m.hub.aau);
    EXPECT_EQ(m.hub.rpm, v == "moehub" || v == "moehub-pkt");
    EXPECT_EQ(m.hub.dam, v == "moehub" || v == "moehub-dep");
    ASSERT_EQ(m.regions.size(), static_cast<std::size_t>(s.model.num_experts));
    ASSERT_EQ(m.row_transfers.size(), 2u);
    const auto load = s.routing.expert_load();
    std::vector<std::int64_t> seen(m.regions.size(), 0);
    std::set<std::pair<int, std::int64_t>> ids;
    for (std::size_t src = 0; src < 8; ++src) {
      double last = 0;
      for (const RowStore& r : m.row_transfers[0].rows[src]) {
        ASSERT_GE(r.region, 0);
        const RowRegion& rg = m.regions[static_cast<std::size_t>(r.region)];
        EXPECT_EQ(rg.gpu, r.dst);
        EXPECT_EQ(s.placement.owner[static_cast<std::size_t>(rg.expert)], r.dst);
        EXPECT_TRUE(ids.insert({r.region, r.row_id}).second) << "RowID twice in a region";
        EXPECT_GE(r.ready_frac, last);  // token order: ready as the routing proceeds
        last = r.ready_frac;
        ++seen[static_cast<std::size_t>(r.region)];
      }
    }
    for (std::size_t e = 0; e < m.regions.size(); ++e) {
      EXPECT_EQ(seen[e], load[m.regions[e].expert]);
      EXPECT_EQ(m.regions[e].expected_rows, load[m.regions[e].expert]);
      EXPECT_GE(m.regions[e].capacity_rows, m.regions[e].expected_rows);
    }
    std::int64_t back = 0;
    for (std::size_t src = 0; src < 8; ++src) {
      for (const RowStore& r : m.row_transfers[1].rows[src]) {
        EXPECT_EQ(r.region, -1);
        ++back;
      }
    }
    EXPECT_EQ(back, s.routing.total_tokens() * s.model.top_k);
    for (const auto& ops : m.ops) {
      ASSERT_EQ(ops.front().kind, OpKind::kRowspMalloc);
      const auto g1 = std::find_if(ops.begin(), ops.end(), [](const Op& o) { return o.name == "expert_gemm1"; });
      ASSERT_NE(g1, ops.end());
      EXPECT_EQ(g1->release, m.hub.dam ? ReleaseKind::kSignal : ReleaseKind::kPoll);
      EXPECT_EQ(g1->regions.size(), g1->gemms.size());
    }
  }
}

// Over one pass, a ring computes every token-expert pair exactly once, and its
// transfers follow the ring with the hop structure of ring.cpp; `chunk_rows`
// as ScheduleOptions::ring_chunk_rows (-1, the default: one chunk per local
// expert; 0: whole hops).
void check_ring(bool token_routing, std::int64_t chunk_rows) {
  const Workload s = make("qwen1.5-moe-a2.7b", 999, 4, 0.02);  // 60 experts on 4 GPUs, uneven tokens
  ScheduleOptions opt;
  opt.ring_chunk_rows = chunk_rows;
  const Schedule r = build_ring(s.model, s.routing, s.placement, opt, token_routing);
  // the counts exchange, then the transfers: forward N-1 (+1 trailing accumulators, token
  // routing: N+1), backward N+1
  ASSERT_EQ(r.collectives.size(), token_routing ? 11u : 9u);
  EXPECT_EQ(r.collectives[0].name, "count_exchange");
  for (const auto& c : r.collectives) {
    if (c.name == "count_exchange") continue;
    for (std::size_t g = 0; g < 4; ++g) {
      for (std::size_t d = 0; d < 4; ++d) {
        if (d != (g + 1) % 4) {
          EXPECT_TRUE(c.rows[g][d].empty()) << c.name;  // only to the next GPU
        }
      }
    }
  }
  std::int64_t fwd_rows = 0, bwd_rows = 0;
  for (std::size_t g = 0; g < 4; ++g) {
    const auto& ops = r.ops[g];
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      for (const int d : op.after) EXPECT_LT(static_cast<std::size_t>(d), i);
      if (op.kind == OpKind::kAllToAll) {
        EXPECT_EQ(op.stream, op.phase == "ring_transfer" ? 1 : 0) << op.name;  // the counts exchange: the host waits
      }
      if (op.kind == OpKind::kGemm) {
        EXPECT_EQ(op.stream, 0);
      }
      const bool g1 = op.name.find("gemm1") != std::string::npos;
      for (const auto& gs : op.gemms) {
        if (g1 && op.name.rfind("fwd", 0) == 0) fwd_rows += gs.m;
        if (g1 && op.name.rfind("bwd", 0) == 0) bwd_rows += gs.m;
      }
      // a hop's first kernel after hop 0 (of its first chunk) waits for a transfer
      const bool first_chunk = op.name.find(" chunk ") == std::string::npos || op.name.find(" chunk 0 ") != std::string::npos;
      if (op.name.find("gather") != std::string::npos && op.name.find("hop 0 ") == std::string::npos && first_chunk) {
        ASSERT_EQ(op.after.size(), 1u) << op.name;
        EXPECT_EQ(ops[static_cast<std::size_t>(op.after[0])].kind, OpKind::kAllToAll);
      }
    }
  }
  EXPECT_EQ(fwd_rows, 999 * s.model.top_k);
  EXPECT_EQ(bwd_rows, 999 * s.model.top_k);
}

TEST(Schedules, RingExpertComputesEveryPairOnce) {
  check_ring(false, ScheduleOptions{}.ring_chunk_rows);
  check_ring(false, 0);
}
TEST(Schedules, RingTokenComputesEveryPairOnce) {
  check_ring(true, ScheduleOptions{}.ring_chunk_rows);
  check_ring(true, 0);
}

// Bytes GPU g sends to its ring successor in each transfer of a pass, by hop
// (absent hops: no transfer); the transfers move whole rows.
std::vector<std::vector<double>> ring_hop_bytes(const Schedule& s, const std::string& pass, int n) {
  std::vector<std::vector<double>> bytes(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(n) + 1, 0.0));
  for (const auto& c : s.collectives) {
    for (int h = 0; h <= n; ++h) {
      if (c.name != pass + "_hop" + std::to_string(h) + "_transfer") continue;
      for (int g = 0; g < n; ++g) {
        const auto next = static_cast<std::size_t>(plan::ring_send_peer(g, n));
        bytes[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)] =
            static_cast<double>(c.rows[static_cast<std::size_t>(g)][next].size()) * c.row_bytes;
      }
    }
  }
  return bytes;
}

// What moe_plan says hop h of a pass carries from GPU g: the payload of the
// partition it computed with (h < n-1) and the accumulators of the one before
// (h >= 1), rounded up to whole transfer rows.
double expected_hop_bytes(const std::vector<plan::HopParts>& parts, int g, int h, int n, std::uint32_t row_bytes) {
  double b = 0;
  if (h < n - 1) b += parts[static_cast<std::size_t>(plan::ring_partition_at_hop(g, h, n))].payload_bytes;
  if (h >= 1) b += parts[static_cast<std::size_t>(plan::ring_partition_at_hop(g, h - 1, n))].accum_bytes;
  return std::ceil(b / row_bytes) * row_bytes;
}

std::uint32_t ring_row_bytes(const Schedule& s) {
  for (const auto& c : s.collectives)
    if (c.name.find("_transfer") != std::string::npos) return c.row_bytes;
  throw std::runtime_error("test setup: a ring without transfers");
}

// The default job (moehub-sim with no options): every GPU's transfer in the
// middle of the ring carries exactly moe_plan's per-hop volume, the first only
// the payload and the last ones only the accumulators, for both ring modes.
TEST(Schedules, RingHopBytesAreMoePlanVolumesForTheDefaultJob) {
  const SystemConfig sys = load_system_config(resolve_config_path("dgx-h800", "systems"));
  const ModelConfig m = load_model_config(resolve_config_path("mixtral-8x7b", "models"));
  const WorkloadConfig w;
  const int n = sys.num_gpus;
  const Routing r = generate_routing(m, w, n);
  const ExpertPlacement p = ExpertPlacement::contiguous(m.num_experts, n);
  plan::MoeProblem q;
  q.accum_bytes = ScheduleOptions{}.ring_accum_bytes;  // the simulator's element sizes (the GPU harness's)
  q.grad_bytes = ScheduleOptions{}.ring_grad_bytes;
  q.tokens_per_rank = w.tokens / n;
  q.hidden = m.hidden_size;
  q.ffn = m.expert_ffn_size;
  q.experts = m.num_experts;
  q.top_k = m.top_k;
  q.ep = n;
  q.dtype_bytes = m.dtype_bytes;
  ASSERT_EQ(w.tokens % n, 0) << "test setup: the default job splits its tokens evenly";
  const plan::HopVolumes v = plan::hop_volumes(q);
  for (const bool token : {false, true}) {
    const Schedule s = build_ring(m, r, p, {}, token);
    const std::uint32_t row = ring_row_bytes(s);
    const plan::RingMode mode = token ? plan::RingMode::kToken : plan::RingMode::kExpert;
    for (const bool bwd : {false, true}) {
      SCOPED_TRACE(std::string(token ? "token" : "expert") + (bwd ? " bwd" : " fwd"));
      const double volume = token ? (bwd ? v.token_bwd_bytes : v.token_fwd_bytes)
                                  : (bwd ? v.expert_bwd_bytes : v.expert_fwd_bytes);
      const plan::HopParts parts = plan::hop_parts(q, mode, bwd);
      const auto bytes = ring_hop_bytes(s, bwd ? "bwd" : "fwd", n);
      for (int g = 0; g < n; ++g) {
        const auto& b = bytes[static_cast<std::size_t>(g)];
        for (int h = 1; h < n - 1; ++h) EXPECT_EQ(b[static_cast<std::size_t>(h)], std::ceil(volume / row) * row) << h;
        EXPECT_EQ(b[0], std::ceil(parts.payload_bytes / row) * row);
        EXPECT_EQ(b[static_cast<std::size_t>(n - 1)], std::ceil(parts.accum_bytes / row) * row);
        EXPECT_EQ(b[static_cast<std::size_t>(n)], std::ceil(parts.accum_bytes / row) * row);
      }
    }
  }
  // the expert backward carries bf16 weight-gradient partitions unless told otherwise
  ScheduleOptions fp32;
  fp32.ring_grad_bytes = 4;
  q.grad_bytes = 4;
  const auto bytes = ring_hop_bytes(build_ring(m, r, p, fp32, false), "bwd", n);
  const double fp32_volume = plan::hop_volumes(q).expert_bwd_bytes;
  EXPECT_EQ(bytes[0][1], fp32_volume);
  EXPECT_GT(fp32_volume, v.expert_bwd_bytes);
}

// Uneven routing: GPUs with very different token counts (one with none),
// skewed expert loads and an uneven expert placement. Every transfer carries
// moe_plan's parts of the partitions it moves.
TEST(Schedules, RingHopBytesAreMoePlanVolumesForUnevenRouting) {
  const ModelConfig m = load_model_config(resolve_config_path("qwen1.5-moe-a2.7b", "models"));  // 60 experts, top-4
  const int n = 8;
  const std::vector<std::int64_t> tokens = {100, 700, 0, 1000, 37, 512, 3, 250};
  Routing r;
  r.num_gpus = n;
  r.num_experts = m.num_experts;
  r.top_k = m.top_k;
  r.tokens_per_gpu = tokens;
  for (int g = 0; g < n; ++g) {
    std::vector<std::int32_t> ids;
    for (std::int64_t t = 0; t < tokens[static_cast<std::size_t>(g)]; ++t) {
      for (int j = 0; j < m.top_k; ++j) ids.push_back(static_cast<std::int32_t>((t * t % 13 + g + 15 * j) % 60));
    }
    r.gate_weights.emplace_back(ids.size(), 1.0f / static_cast<float>(m.top_k));
    r.expert_ids.push_back(std::move(ids));
  }
  const ExpertPlacement p = ExpertPlacement::contiguous(m.num_experts, n);  // 8, 8, 8, 8, 7, 7, 7, 7
  ASSERT_NE(p.experts_on(0), p.experts_on(n - 1)) << "test setup: the placement should be uneven";
  // moe_plan's parts of one partition: its own tokens; experts: per expert (a
  // problem with one local expert) times the partition's experts
  const auto problem = [&](std::int64_t t, int experts_per_rank) {
    plan::MoeProblem q;
    q.accum_bytes = ScheduleOptions{}.ring_accum_bytes;
    q.grad_bytes = ScheduleOptions{}.ring_grad_bytes;
    q.tokens_per_rank = t;
    q.hidden = m.hidden_size;
    q.ffn = m.expert_ffn_size;
    q.experts = experts_per_rank * n;
    q.top_k = m.top_k;
    q.ep = n;
    q.dtype_bytes = m.dtype_bytes;
    return q;
  };
  for (const bool token : {false, true}) {
    const Schedule s = build_ring(m, r, p, {}, token);
    const std::uint32_t row = ring_row_bytes(s);
    for (const bool bwd : {false, true}) {
      SCOPED_TRACE(std::string(token ? "token" : "expert") + (bwd ? " bwd" : " fwd"));
      std::vector<plan::HopParts> parts;
      for (int q = 0; q < n; ++q) {
        if (token) {
          const std::int64_t t = tokens[static_cast<std::size_t>(q)];
          parts.push_back(t == 0 ? plan::HopParts{0, 0} : plan::hop_parts(problem(t, 8), plan::RingMode::kToken, bwd));
        } else {
          const plan::HopParts one = plan::hop_parts(problem(1, 1), plan::RingMode::kExpert, bwd);
          const double e = p.experts_on(q);
          parts.push_back({one.payload_bytes * e, one.accum_bytes * e});
        }
      }
      const auto bytes = ring_hop_bytes(s, bwd ? "bwd" : "fwd", n);
      double total = 0;
      for (int g = 0; g < n; ++g) {
        for (int h = 0; h <= n; ++h) {
          const double b = bytes[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)];
          EXPECT_EQ(b, expected_hop_bytes(parts, g, h, n, row)) << "GPU " << g << " hop " << h;
          total += b;
        }
      }
      EXPECT_GT(total, 0.0);
    }
    // every token-expert pair is still computed once per pass
    std::int64_t rows = 0;
    for (const auto& ops : s.ops) {
      for (const auto& op : ops) {
        if (op.name.rfind("fwd", 0) == 0 && op.name.find("gemm1") != std::string::npos) {
          for (const auto& gs : op.gemms) rows += gs.m;
        }
      }
    }
    EXPECT_EQ(rows, (100 + 700 + 1000 + 37 + 512 + 3 + 250) * m.top_k);
  }
}

TEST(Schedules, UniformAllToAllSplitsEvenly) {
  const Workload s = make("qwen3-30b-a3b", 1001, 4, 0.0);  // 251, 250, 250, 250 tokens
  const Schedule u = build_a2a_uniform(s.model, s.routing, s.placement, {});
  ASSERT_EQ(u.collectives.size(), 1u);
  const AllToAll& a = u.collectives[0];
  std::int64_t total = 0;
  for (std::size_t src = 0; src < 4; ++src) {
    std::int64_t sent = 0;
    for (std::size_t dst = 0; dst < 4; ++dst) {
      const auto n = static_cast<std::int64_t>(a.rows[src][dst].size());
      EXPECT_GE(n, s.routing.tokens_per_gpu[src] / 4);
      EXPECT_LE(n, s.routing.tokens_per_gpu[src] / 4 + 1);
      sent += n;
    }
    EXPECT_EQ(sent, s.routing.tokens_per_gpu[src]);
    total += sent;
    ASSERT_EQ(u.ops[src].size(), 1u);
    EXPECT_EQ(u.ops[src][0].kind, OpKind::kAllToAll);
    EXPECT_TRUE(u.ops[src][0].collective_setup);
  }
  EXPECT_EQ(total, 1001);
  EXPECT_EQ(a.expected_dst.size(), 1001u);
  // back to back: one collective per repetition, in order on every GPU
  ScheduleOptions opt;
  opt.repeat = 3;
  const Schedule r = build_a2a_uniform(s.model, s.routing, s.placement, opt);
  ASSERT_EQ(r.collectives.size(), 3u);
  for (const auto& ops : r.ops) {
    ASSERT_EQ(ops.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(ops[static_cast<std::size_t>(i)].collective, i);
  }
}

}  // namespace
}  // namespace moehub
