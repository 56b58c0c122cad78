// The software baselines: what waits for what in their op lists, and a run of
// each on the default system that passes the self-checks and shows its
// overlap in the timeline (fastermoe, tutel, comet, ccfuser), or shows that
// nothing overlaps (megatron, megatron-train). One simulation per test case;
// CTest runs each case in its own process.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "common/config_loader.hpp"
#include "platform/simulate.hpp"
#include "workload/baseline_common.hpp"
#include "workload/schedule.hpp"

namespace moehub {
namespace {

struct Workload {
  ModelConfig model;
  Routing routing;
  ExpertPlacement placement;
};

/// `experts` > 0 replaces the model's expert count.
Workload make(const std::string& model, std::int64_t tokens, int gpus, int experts = 0, double imbalance_std = 0.01) {
  Workload s;
  s.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/" + model + ".yaml");
  if (experts > 0) s.model.num_experts = experts;
  WorkloadConfig w;
  w.tokens = tokens;
  w.seed = 3;
  w.imbalance_std = imbalance_std;
  s.routing = generate_routing(s.model, w, gpus);
  s.placement = ExpertPlacement::contiguous(s.model.num_experts, gpus);
  return s;
}

int index_of(const std::vector<Op>& ops, const std::string& name) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Megatron-Core overlaps nothing: one stream, no events between streams, no
// flags; the host synchronises on the counts after their exchange and before
// the dispatch, and (megatron-train) the backward follows the whole forward,
// its combine gradient's all-to-all before the dispatch gradient's.
void check_megatron_sequence(const Schedule& sch, bool backward) {
  for (const auto& ops : sch.ops) {
    for (const auto& op : ops) {
      EXPECT_EQ(op.stream, 0) << op.name;
      EXPECT_TRUE(op.after.empty()) << op.name;
      EXPECT_EQ(op.sets_flag, -1) << op.name;
      EXPECT_EQ(op.release, ReleaseKind::kLaunch) << op.name;
    }
    const int counts = index_of(ops, "count_exchange");
    const int sync = index_of(ops, "count_sync");
    const int dispatch = index_of(ops, "dispatch");
    const int probs = index_of(ops, "dispatch_probs");
    const int combine = index_of(ops, "combine");
    const int fc1 = index_of(ops, "expert0_fc1");
    ASSERT_TRUE(counts >= 0 && sync > counts && dispatch > sync && probs > dispatch && fc1 > probs && combine > fc1);
    EXPECT_EQ(ops[static_cast<std::size_t>(sync)].kind, OpKind::kHostSync);
    // the routed experts run one after another: fc1 of expert e+1 after fc2 of expert e
    EXPECT_LT(index_of(ops, "expert0_fc2"), index_of(ops, "expert1_fc1"));
    if (!backward) {
      EXPECT_EQ(index_of(ops, "combine_bwd"), -1);
      continue;
    }
    const int cbwd = index_of(ops, "combine_bwd");
    const int dbwd = index_of(ops, "dispatch_bwd");
    ASSERT_TRUE(cbwd > combine && dbwd > cbwd);
    // every backward op follows every forward op
    int last_forward = -1, first_backward = static_cast<int>(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].phase == "backward") {
        first_backward = std::min(first_backward, static_cast<int>(i));
      } else {
        last_forward = static_cast<int>(i);
      }
    }
    EXPECT_LT(last_forward, first_backward);
    EXPECT_GT(index_of(ops, "expert0_fc2_dgrad"), cbwd);
    EXPECT_LT(index_of(ops, "expert1_fc1_wgrad"), dbwd);
  }
}

TEST(Baselines, MegatronRunsEveryPhaseInSequence) {
  const Workload s = make("mixtral-8x7b", 4096, 4);  // 2 experts per GPU
  check_megatron_sequence(build_megatron(s.model, s.routing, s.placement, {}, false), false);
  check_megatron_sequence(build_megatron(s.model, s.routing, s.placement, {}, true), true);
}

// The experts phase spreads its kernels evenly over the local experts (each at
// least its fc1, activation and fc2), also with tens of thousands of them:
// the spread once multiplied two ints past 2^31 (found by mutate_sim.py under
// UBSan: 65,536 experts on 2 GPUs).
TEST(Baselines, MegatronSpreadsTheExpertKernelsOverManyLocalExperts) {
  for (const int experts : {8, 60, 65536}) {
    SCOPED_TRACE(experts);
    const Workload s = make("mixtral-8x7b", 16, 2, experts, 0);
    const ScheduleOptions opt;
    const Schedule sch = build_megatron(s.model, s.routing, s.placement, opt, false);
    for (std::size_t g = 0; g < sch.ops.size(); ++g) {
      const int n = s.placement.experts_on(static_cast<int>(g));
      std::vector<int> per_expert(static_cast<std::size_t>(n), 0);
      int fixed = 0;
      for (const Op& op : sch.ops[g]) {
        if (op.phase != "expert_compute") continue;
        if (op.name.rfind("experts_k", 0) == 0) {
          ++fixed;
          continue;
        }
        ASSERT_EQ(op.name.rfind("expert", 0), 0u) << op.name;
        const int e = std::stoi(op.name.substr(6));
        ASSERT_TRUE(e >= 0 && e < n) << op.name;
        ++per_expert[static_cast<std::size_t>(e)];
      }
      const int total = opt.megatron.forward.experts.count(n, 3 * n);
      const auto [lo, hi] = std::minmax_element(per_expert.begin(), per_expert.end());
      EXPECT_GE(*lo, 3);
      EXPECT_LE(*hi - *lo, 1);
      EXPECT_EQ(std::accumulate(per_expert.begin(), per_expert.end(), 0) + fixed, total);
    }
  }
}

TEST(Baselines, FasterMoePipelinesPairwiseSteps) {
  const Workload s = make("mixtral-8x7b", 4096, 8);
  const Schedule sch = build_fastermoe(s.model, s.routing, s.placement, {});
  for (const auto& ops : sch.ops) {
    // the host resolves the counts before the first exchange
    const int sync = index_of(ops, "count_sync");
    ASSERT_GE(sync, 0);
    EXPECT_EQ(ops[static_cast<std::size_t>(sync)].kind, OpKind::kHostSync);
    std::vector<int> combines;
    for (int st = 0; st < 8; ++st) {
      const std::string n = std::to_string(st);
      const int d = index_of(ops, "dispatch_step" + n);
      const int g1 = index_of(ops, "expert_gemm1_step" + n);
      const int g2 = index_of(ops, "expert_gemm2_step" + n);
      const int c = index_of(ops, "combine_step" + n);
      ASSERT_TRUE(d > sync && g1 >= 0 && g2 > g1 && c > g2);
      EXPECT_EQ(ops[static_cast<std::size_t>(d)].stream, 1);
      EXPECT_EQ(ops[static_cast<std::size_t>(g1)].stream, 0);
      EXPECT_EQ(ops[static_cast<std::size_t>(g1)].after, std::vector<int>{d});  // step s's GEMMs wait for step s only
      EXPECT_EQ(ops[static_cast<std::size_t>(c)].after, std::vector<int>{g2});
      if (st + 1 < 8) {
        // the next step's exchange is launched before this step's GEMMs
        EXPECT_LT(index_of(ops, "dispatch_step" + std::to_string(st + 1)), g1);
      }
      combines.push_back(c);
    }
    EXPECT_EQ(ops.back().name, "unpermute");
    EXPECT_EQ(ops.back().after, combines);
  }
  // step s carries exactly the rows from GPU g to GPU g + s
  const auto between = s.routing.rows_between(s.placement);
  for (int st = 0; st < 8; ++st) {
    const AllToAll& a = sch.collectives[static_cast<std::size_t>(2 * st)];
    for (std::size_t g = 0; g < 8; ++g) {
      for (std::size_t d = 0; d < 8; ++d) {
        const bool on = static_cast<int>(d) == (static_cast<int>(g) + st) % 8;
        EXPECT_EQ(static_cast<std::int64_t>(a.rows[g][d].size()), on ? between[g][d] : 0);
      }
    }
  }
}

TEST(Baselines, TutelHasStaticShapesAndAdaptiveChunks) {
  const Workload small = make("mixtral-8x7b", 256, 8);
  const Workload large = make("mixtral-8x7b", 32768, 8);
  const BaselineOptions o;
  // rows per local expert: capacity 1.0 x k x T / E summed over 8 sources = k x T / E
  EXPECT_EQ(tutel_pipeline_degree(small.model, small.routing, small.placement, o), 1);  // 64 rows
  EXPECT_EQ(tutel_pipeline_degree(large.model, large.routing, large.placement, o), 8);  // 8192 rows
  ScheduleOptions opt;
  opt.baseline.tutel_pipeline_degree = 4;
  const Schedule sch = build_tutel(large.model, large.routing, large.placement, opt);
  ASSERT_EQ(sch.collectives.size(), 8u);  // 4 dispatch and 4 combine chunks
  for (const auto& ops : sch.ops) {
    for (const auto& op : ops) EXPECT_NE(op.kind, OpKind::kHostSync);  // no count synchronisation
    for (int c = 0; c < 4; ++c) {
      const std::string n = std::to_string(c);
      const int d = index_of(ops, "dispatch_chunk" + n);
      const int g1 = index_of(ops, "expert_gemm1_chunk" + n);
      const int g2 = index_of(ops, "expert_gemm2_chunk" + n);
      const int cb = index_of(ops, "combine_chunk" + n);
      ASSERT_TRUE(d >= 0 && g1 > d && g2 > g1 && cb > g2);
      EXPECT_EQ(ops[static_cast<std::size_t>(g1)].after, std::vector<int>{d});
      EXPECT_EQ(ops[static_cast<std::size_t>(cb)].after, std::vector<int>{g2});
    }
  }
  // capacity padding: every GPU sends capacity x experts rows, whatever the routing
  std::int64_t sent = 0;
  for (int c = 0; c < 4; ++c) {
    for (const auto& v : sch.collectives[static_cast<std::size_t>(2 * c)].rows[0]) sent += static_cast<std::int64_t>(v.size());
  }
  EXPECT_EQ(sent, 4096 * 2);  // 4096 tokens x top-2, capacity factor 1
}

/// 8 GPUs of `tokens` tokens each, token t routed to experts pick(t) (top-2).
template <typename Pick>
Routing routing_of(const ModelConfig& m, std::int64_t tokens, Pick pick) {
  Routing r;
  r.num_gpus = 8;
  r.num_experts = m.num_experts;
  r.top_k = 2;
  for (int g = 0; g < 8; ++g) {
    r.tokens_per_gpu.push_back(tokens);
    std::vector<std::int32_t> ids;
    for (std::int64_t t = 0; t < tokens; ++t) {
      const auto [a, b] = pick(t);
      ids.push_back(a);
      ids.push_back(b);
    }
    r.expert_ids.push_back(ids);
    r.gate_weights.emplace_back(ids.size(), 0.5f);
  }
  return r;
}

// Tutel drops the pairs beyond an expert's capacity on their token's GPU
// (capacity factor x k x T / E slots): it computes fewer pairs than the
// routing asks for when the load is uneven, and the schedule counts them.
TEST(Baselines, TutelCountsThePairsBeyondCapacity) {
  const Workload w = make("mixtral-8x7b", 512, 8);
  const ExpertPlacement& p = w.placement;
  ScheduleOptions opt;
  // 64 tokens per GPU, top-2 over 8 experts: 16 slots per expert and GPU
  const Routing even = routing_of(w.model, 64, [](std::int64_t t) {
    return std::pair<int, int>{static_cast<int>(t % 8), static_cast<int>((t + 1) % 8)};
  });
  const Routing skewed = routing_of(w.model, 64, [](std::int64_t) { return std::pair<int, int>{0, 1}; });
  const Schedule se = build_tutel(w.model, even, p, opt);
  EXPECT_TRUE(se.capacity.limited);
  EXPECT_DOUBLE_EQ(se.capacity.capacity_factor, 1.0);
  EXPECT_EQ(se.capacity.dropped, 0);
  // experts 0 and 1 get 64 pairs from each GPU, 48 over their 16 slots
  EXPECT_EQ(build_tutel(w.model, skewed, p, opt).capacity.dropped, 8 * 2 * 48);
  opt.baseline.tutel_capacity_factor = 4.0;  // 64 slots: nothing dropped
  EXPECT_EQ(build_tutel(w.model, skewed, p, opt).capacity.dropped, 0);
  opt.baseline.tutel_capacity_factor = 2.0;  // 32 slots
  EXPECT_EQ(build_tutel(w.model, skewed, p, opt).capacity.dropped, 8 * 2 * 32);
  // the other schedules compute every pair
  for (const char* name : {"megatron", "fastermoe", "comet", "ccfuser", "moehub", "ideal"}) {
    const Schedule s = build_schedule(name, w.model, skewed, p, ScheduleOptions{});
    EXPECT_FALSE(s.capacity.limited) << name;
    EXPECT_EQ(s.capacity.dropped, 0) << name;
  }
}

void check_fused(const Schedule& sch, int comm_sms, ReleaseKind release) {
  for (const auto& ops : sch.ops) {
    const int g1 = index_of(ops, "expert_gemm1");
    ASSERT_GE(g1, 0);
    const Op& gemm1 = ops[static_cast<std::size_t>(g1)];
    EXPECT_EQ(gemm1.first_sm, comm_sms);
    EXPECT_EQ(gemm1.groups, 8);
    EXPECT_EQ(gemm1.release, release);
    int launched = 0;
    for (int st = 0; st < 8; ++st) {
      const int d = index_of(ops, "dispatch_chunk" + std::to_string(st));
      ASSERT_GE(d, 0);
      ASSERT_LT(d, g1);
      const Op& disp = ops[static_cast<std::size_t>(d)];
      EXPECT_EQ(disp.stream, 1);
      EXPECT_EQ(disp.sets_flag, st);                                   // chunk st raises flag st
      EXPECT_EQ(gemm1.release_flags[static_cast<std::size_t>(st)], st); // and releases GEMM1's group st
      launched += disp.launch ? 1 : 0;
    }
    EXPECT_EQ(launched, 1);  // one fused kernel, one launch
    // layer 1: each source's combine waits for the GEMM2 chunk holding its
    // rows; the chunks run in source order, on the GEMM SMs, as one kernel
    int prev_g2 = g1, g2_launched = 0, chunks = 0;
    for (const auto& op : ops) {
      if (op.name.rfind("expert_gemm2_chunk", 0) == 0) {
        ++chunks;
        g2_launched += op.launch ? 1 : 0;
        EXPECT_EQ(op.first_sm, comm_sms);
      }
    }
    EXPECT_EQ(g2_launched, 1);
    EXPECT_GE(chunks, 1);
    EXPECT_LE(chunks, 8);
    for (int st = 0; st < 8; ++st) {
      const int c = index_of(ops, "combine_chunk" + std::to_string(st));
      ASSERT_GT(c, g1);
      const auto& after = ops[static_cast<std::size_t>(c)].after;
      ASSERT_EQ(after.size(), 1u);
      EXPECT_EQ(ops[static_cast<std::size_t>(after[0])].name.rfind("expert_gemm2_chunk", 0), 0u);
      EXPECT_GE(after[0], prev_g2);  // sources in order
      prev_g2 = after[0];
    }
    EXPECT_GE(index_of(ops, "count_sync"), 0);
  }
}

// A fused GEMM2 kernel's chunks are whole tile rows: consecutive sources until
// they hold kFusedMinRowsPerChunk rows per expert that receives rows, the
// remainder joining the chunk before it.
TEST(Baselines, FusedGemm2ChunksAreWholeTileRows) {
  using baseline_detail::fused_gemm2_chunks;
  using V = std::vector<std::vector<std::int64_t>>;
  using C = std::vector<std::vector<int>>;
  ASSERT_EQ(baseline_detail::kFusedMinRowsPerChunk, 256);
  // large sources: one chunk each
  EXPECT_EQ(fused_gemm2_chunks(V(4, {512})), (C{{0}, {1}, {2}, {3}}));
  // 64 rows per source: four sources a chunk
  EXPECT_EQ(fused_gemm2_chunks(V(8, {64})), (C{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // fewer rows than one chunk in all: one chunk
  EXPECT_EQ(fused_gemm2_chunks(V(8, {4})), (C{{0, 1, 2, 3, 4, 5, 6, 7}}));
  // a remainder under the target joins the chunk before it
  EXPECT_EQ(fused_gemm2_chunks(V(3, {200})), (C{{0, 1, 2}}));
  // two local experts, one of them idle: the target counts the busy one only
  EXPECT_EQ(fused_gemm2_chunks(V(4, {300, 0})), (C{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(fused_gemm2_chunks(V(4, {150, 150})), (C{{0, 1}, {2, 3}}));
}

// At a size where every source's rows fill chunks of their own, comet runs one
// GEMM2 chunk per source, and at a small size a single chunk.
TEST(Baselines, CometGemm2ChunksFollowTheRows) {
  const auto count_chunks = [](const Schedule& sch) {
    return std::count_if(sch.ops[0].begin(), sch.ops[0].end(),
                         [](const Op& o) { return o.name.rfind("expert_gemm2_chunk", 0) == 0; });
  };
  const Workload large = make("mixtral-8x7b", 32768, 8);  // about 1,024 rows per source
  const Workload small = make("mixtral-8x7b", 512, 8);    // about 16 rows per source
  EXPECT_EQ(count_chunks(build_comet(large.model, large.routing, large.placement, {})), 8);
  EXPECT_EQ(count_chunks(build_comet(small.model, small.routing, small.placement, {})), 1);
}

TEST(Baselines, CometPollsFlagsWithDedicatedSms) {
  const Workload s = make("qwen1.5-moe-a2.7b", 4096, 8);
  const ScheduleOptions opt;
  const Schedule sch = build_comet(s.model, s.routing, s.placement, opt);
  check_fused(sch, opt.baseline.comet_comm_sms, ReleaseKind::kPoll);
  for (const auto& ops : sch.ops) EXPECT_GE(index_of(ops, "tile_layout"), 0);
}

TEST(Baselines, CcfuserGemmTilesMoveTheirOwnRows) {
  const Workload s = make("qwen1.5-moe-a2.7b", 4096, 8);
  const Schedule sch = build_ccfuser(s.model, s.routing, s.placement, {});
  check_fused(sch, 0, ReleaseKind::kSignal);
  for (const auto& ops : sch.ops) EXPECT_GE(index_of(ops, "remote_address_table"), 0);
}

// A run of each on the default system passes the self-checks, and expert
// compute starts before the dispatch has delivered everything.
class BaselineRun : public testing::TestWithParam<std::string> {};

TEST_P(BaselineRun, PassesSelfChecksAndOverlaps) {
  RunRequest req;
  req.system = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/dgx-h800.yaml");
  req.system.sim.granularity = "row";
  req.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/mixtral-8x7b.yaml");
  req.workload.tokens = 16384;
  req.schedule = GetParam();
  req.options.baseline.tutel_pipeline_degree = 4;
  req.timeline = false;
  const RunOutput out = simulate(req);
  ASSERT_FALSE(out.time_limit_exceeded);
  EXPECT_TRUE(out.check_errors.empty()) << (out.check_errors.empty() ? "" : out.check_errors[0]);
  EXPECT_TRUE(out.results["checks"]["passed"].get<bool>());
  double first_gemm = 1e30, last_dispatch = 0;
  for (const auto& p : out.results["gpus"][0]["phases"]) {
    const auto name = p["name"].get<std::string>();
    if (name.rfind("expert_gemm1", 0) == 0) first_gemm = std::min(first_gemm, p["start_us"].get<double>());
    if (name.rfind("dispatch", 0) == 0) last_dispatch = std::max(last_dispatch, p["end_us"].get<double>());
  }
  EXPECT_LT(first_gemm, last_dispatch);
  // the results report the pairs beyond capacity (tutel) or none dropped;
  // counted here from the routing: per GPU and expert, pairs over ceil(k x T / E)
  const Routing routing = generate_routing(req.model, req.workload, req.system.num_gpus);
  std::int64_t pairs = 0, beyond = 0;
  for (int g = 0; g < routing.num_gpus; ++g) {
    const auto& ids = routing.expert_ids[static_cast<std::size_t>(g)];
    const auto slots = (routing.top_k * routing.tokens_per_gpu[static_cast<std::size_t>(g)] + req.model.num_experts - 1) /
                       req.model.num_experts;
    std::vector<std::int64_t> count(static_cast<std::size_t>(req.model.num_experts), 0);
    for (const auto e : ids) ++count[static_cast<std::size_t>(e)];
    for (const auto n : count) beyond += std::max<std::int64_t>(0, n - slots);
    pairs += static_cast<std::int64_t>(ids.size());
  }
  const bool tutel = GetParam() == "tutel";
  EXPECT_EQ(out.results["token_expert_pairs"].get<std::int64_t>(), pairs);
  EXPECT_EQ(out.results["dropped_token_expert_pairs"].get<std::int64_t>(), tutel ? beyond : 0);
  EXPECT_DOUBLE_EQ(out.results["dropped_pair_fraction"].get<double>(),
                   tutel ? static_cast<double>(beyond) / static_cast<double>(pairs) : 0.0);
  EXPECT_EQ(out.results.contains("capacity_factor"), tutel);
  if (tutel) {
    EXPECT_GT(beyond, 0);  // a generated routing is never exactly even
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, BaselineRun, testing::Values("fastermoe", "tutel", "comet", "ccfuser"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// A run of megatron and megatron-train passes the self-checks, and on every GPU
// no two ops overlap in time: each starts when the previous one has finished.
class MegatronRun : public testing::TestWithParam<std::string> {};

TEST_P(MegatronRun, PassesSelfChecksAndOverlapsNothing) {
  RunRequest req;
  req.system = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/dgx-h800.yaml");
  req.system.sim.granularity = "row";
  req.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/mixtral-8x7b.yaml");
  req.workload.tokens = 4096;
  req.schedule = GetParam();
  req.timeline = false;
  const RunOutput out = simulate(req);
  ASSERT_FALSE(out.time_limit_exceeded);
  EXPECT_TRUE(out.check_errors.empty()) << (out.check_errors.empty() ? "" : out.check_errors[0]);
  EXPECT_TRUE(out.results["checks"]["passed"].get<bool>());
  for (const auto& gpu : out.results["gpus"]) {
    double prev_end = 0;
    double dispatch_end = -1, first_gemm = -1;
    int ops = 0;
    for (const auto& p : gpu["phases"]) {
      if (p["kind"] == "launch_gap") continue;  // host time between launches
      EXPECT_EQ(p["stream"].get<int>(), 0);
      const double start = p["start_us"].get<double>();
      EXPECT_GE(start, prev_end - 1e-6) << p["name"].get<std::string>();
      prev_end = std::max(prev_end, p["end_us"].get<double>());
      if (p["phase"] == "dispatch") dispatch_end = p["end_us"].get<double>();
      if (p["phase"] == "expert_compute" && first_gemm < 0) first_gemm = start;
      ++ops;
    }
    EXPECT_GT(ops, 10);
    ASSERT_GE(dispatch_end, 0);
    EXPECT_GE(first_gemm, dispatch_end);  // no expert starts before the dispatch has delivered everything
  }
}

INSTANTIATE_TEST_SUITE_P(Schedules, MegatronRun, testing::Values("megatron", "megatron-train"),
                         [](const testing::TestParamInfo<std::string>& i) {
                           return i.param == "megatron" ? std::string("megatron") : std::string("megatron_train");
                         });

}  // namespace
}  // namespace moehub
