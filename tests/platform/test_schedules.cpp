// The schedules' op lists and all-to-all row lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/config_loader.hpp"
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
  const Schedule m = build_megatron(s.model, s.routing, s.placement, {});
  ASSERT_EQ(m.ops.size(), 8u);
  const std::vector<std::string> expected = {
      "router_gemm", "router_softmax_topk", "permute_indices", "permute", "count_exchange", "count_sync",
      "dispatch", "sort_chunks", "expert_gemm1", "swiglu", "expert_gemm2", "unsort_chunks", "combine",
      "unpermute"};
  for (const auto& ops : m.ops) EXPECT_EQ(names(ops), expected);
  // the count synchronisation is a host operation, not a kernel
  const auto& sync = m.ops[0][5];
  EXPECT_EQ(sync.kind, OpKind::kHostSync);
  EXPECT_FALSE(sync.launch);
}

TEST(Schedules, MegatronMovesEveryTokenRowOnceEachWay) {
  const Workload s = make("qwen1.5-moe-a2.7b", 2000, 8, 0.02);  // 60 experts on 8 GPUs: uneven placement
  const Schedule m = build_megatron(s.model, s.routing, s.placement, {});
  const AllToAll& d = m.collectives[0];
  const AllToAll& c = m.collectives[1];
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
    const Op& g1 = m.ops[g][8];
    ASSERT_EQ(g1.name, "expert_gemm1");
    ASSERT_EQ(g1.gemms.size(), 1u);  // one expert per GPU
    EXPECT_EQ(g1.gemms[0].m, load[g]);
    EXPECT_EQ(g1.gemms[0].n, 2 * s.model.expert_ffn_size);
    EXPECT_EQ(g1.gemms[0].k, s.model.hidden_size);
    const Op& g2 = m.ops[g][10];
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
            (std::vector<std::string>{"megatron", "ideal", "a2a-uniform", "ring-expert", "ring-token"}));
}

// Over one pass, a ring computes every token-expert pair exactly once, and its
// transfers follow the ring with the hop structure of ring.cpp.
void check_ring(bool token_routing) {
  const Workload s = make("qwen1.5-moe-a2.7b", 999, 4, 0.02);  // 60 experts on 4 GPUs, uneven tokens
  const Schedule r = build_ring(s.model, s.routing, s.placement, {}, token_routing);
  // transfers: forward N-1 (+1 trailing accumulators, token routing: N+1), backward N+1
  EXPECT_EQ(r.collectives.size(), token_routing ? 10u : 8u);
  for (const auto& c : r.collectives) {
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
        EXPECT_EQ(op.stream, 1);
      }
      if (op.kind == OpKind::kGemm) {
        EXPECT_EQ(op.stream, 0);
      }
      const bool g1 = op.name.find("gemm1") != std::string::npos;
      for (const auto& gs : op.gemms) {
        if (g1 && op.name.rfind("fwd", 0) == 0) fwd_rows += gs.m;
        if (g1 && op.name.rfind("bwd", 0) == 0) bwd_rows += gs.m;
      }
      // a hop's first kernel after hop 0 waits for a transfer
      if (op.name.find("gather") != std::string::npos && op.name.find("hop 0 ") == std::string::npos) {
        ASSERT_EQ(op.after.size(), 1u) << op.name;
        EXPECT_EQ(ops[static_cast<std::size_t>(op.after[0])].kind, OpKind::kAllToAll);
      }
    }
  }
  EXPECT_EQ(fwd_rows, 999 * s.model.top_k);
  EXPECT_EQ(bwd_rows, 999 * s.model.top_k);
}

TEST(Schedules, RingExpertComputesEveryPairOnce) { check_ring(false); }
TEST(Schedules, RingTokenComputesEveryPairOnce) { check_ring(true); }

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
