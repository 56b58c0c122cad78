// The simulator's ring schedules replay the ring steps (ring_steps.hpp) that the GPU
// harness executes: for the published configuration and for uneven routing, every GPU's
// compute ops are the steps' kernels in order (names, GEMM shapes, bytes), each hop's
// transfer moves the steps' bytes, and the kernel after a wait_accum step waits for the
// transfer that brings the accumulator; and the ops wait for each other as the GPU
// harness's ring engine (host/gpu/ring_engine.cpp) orders its streams: a hop's first
// kernel for the transfer that brought its partition, a transfer for the previous hop's
// last kernel, a pass's first transfer for every kernel before the pass and the first
// kernel after a pass for its last transfer. Around the passes, the layer's kernels as
// moehub-gpu's MoeLayer issues them (routing, the counts exchange the host waits for, each
// pass's prologue and epilogue, the router's backward).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "moe_plan/moe_plan.hpp"
#include "moe_plan/ring_steps.hpp"
#include "workload/routing.hpp"
#include "workload/schedule.hpp"

namespace {

using namespace moehub;

// tokens_per_gpu[g] tokens on GPU g; token t's j-th expert is pick(g, t, j)
template <class Pick>
Routing make_routing(int gpus, int experts, int k, const std::vector<std::int64_t>& tokens, Pick pick) {
  Routing r;
  r.num_gpus = gpus;
  r.num_experts = experts;
  r.top_k = k;
  r.tokens_per_gpu = tokens;
  for (int g = 0; g < gpus; ++g) {
    std::vector<std::int32_t> ids;
    for (std::int64_t t = 0; t < tokens[static_cast<std::size_t>(g)]; ++t)
      for (int j = 0; j < k; ++j) ids.push_back(pick(g, t, j));
    r.expert_ids.push_back(ids);
    r.gate_weights.push_back(std::vector<float>(ids.size(), 1.0f / static_cast<float>(k)));
  }
  return r;
}

bool waits_for(const Op& op, int i) { return std::find(op.after.begin(), op.after.end(), i) != op.after.end(); }

void expect_replay(const ModelConfig& m, const Routing& r, bool token_routing, const ScheduleOptions& opt = {}) {
  const ExpertPlacement p = ExpertPlacement::contiguous(m.num_experts, r.num_gpus);
  const Schedule s = build_ring(m, r, p, opt, token_routing);
  plan::RingRouting rr;
  rr.first_expert = p.first_expert;
  rr.tokens = r.tokens_per_gpu;
  rr.pairs.assign(static_cast<std::size_t>(r.num_gpus), std::vector<std::int64_t>(static_cast<std::size_t>(m.num_experts), 0));
  for (std::size_t g = 0; g < rr.pairs.size(); ++g)
    for (auto e : r.expert_ids[g]) ++rr.pairs[g][static_cast<std::size_t>(e)];
  plan::RingOptions ro;
  ro.accum_bytes = opt.ring_accum_bytes;
  ro.grad_bytes = opt.ring_grad_bytes;
  ro.chunk_rows = opt.ring_chunk_rows;
  const int N = r.num_gpus;
  for (int g = 0; g < N; ++g) {
    SCOPED_TRACE("GPU " + std::to_string(g));
    const auto& ops = s.ops[static_cast<std::size_t>(g)];
    // the layer's start, as moehub-gpu's MoeLayer::route and exchange_counts issue it
    std::vector<std::string> head = {"router_gemm", "router_softmax_topk", "permute_pairs"};
    if (N > 1) head.push_back("count_exchange");
    head.push_back("count_sync");
    ASSERT_GE(ops.size(), head.size());
    std::size_t i = 0;
    for (; i < head.size(); ++i) EXPECT_EQ(ops[i].name, head[i]);
    EXPECT_EQ(ops[head.size() - 1].kind, OpKind::kHostSync) << "the host waits for the counts";
    int last_kernel = -1;   // the latest compute-stream kernel so far
    int copy_pending = -1;  // the last transfer of the previous pass, until a kernel waits for it
    // a compute-stream kernel: the first after a pass waits for that pass's last transfer
    auto kernel = [&](const Op& op) {
      EXPECT_EQ(op.stream, 0) << op.name;
      if (copy_pending >= 0) {
        EXPECT_TRUE(waits_for(op, copy_pending)) << op.name << " must wait for the transfers of the pass before it";
        copy_pending = -1;
      }
      last_kernel = static_cast<int>(i);
    };
    // a pass's prologue or epilogue: its memory kernels in order
    auto edge = [&](const std::string& pass, const std::vector<plan::KernelStep>& kernels) {
      for (const plan::KernelStep& k : kernels) {
        ASSERT_LT(i, ops.size());
        EXPECT_EQ(ops[i].name, pass + " " + k.name);
        EXPECT_DOUBLE_EQ(ops[i].bytes, k.bytes) << ops[i].name;
        kernel(ops[i]);
        ++i;
      }
    };
    for (const bool bwd : {false, true}) {
      const std::string pass = bwd ? "bwd" : "fwd";
      const plan::RingPassSteps st = plan::ring_pass_steps(rr, m.hidden_size, m.expert_ffn_size, m.top_k, m.dtype_bytes,
                                                           token_routing ? plan::RingMode::kToken : plan::RingMode::kExpert,
                                                           bwd, ro);
      edge(pass, st.prologue[static_cast<std::size_t>(g)]);
      if (::testing::Test::HasFatalFailure()) return;
      bool first_transfer = true;
      int prev_transfer = -1, pass_last_transfer = -1;
      bool any_accum = false;  // a transfer at hop h: a payload (h < N-1) or accumulators (h >= 1)
      for (const auto& hops : st.hops)
        for (const auto& hs : hops) any_accum = any_accum || hs.accum_bytes > 0;
      for (double b : st.final_accum_bytes) any_accum = any_accum || b > 0;
      for (int h = 0; h <= N; ++h) {
        int transfer = -1;
        if (h < N - 1 || (N > 1 && h >= 1 && any_accum)) {
          ASSERT_LT(i, ops.size());
          ASSERT_EQ(ops[i].phase, "ring_transfer") << "hop " << h << ": " << ops[i].name;
          const AllToAll& a = s.collectives[static_cast<std::size_t>(ops[i].collective)];
          const double bytes = h < N ? st.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)].payload_bytes +
                                           st.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)].accum_bytes
                                     : st.final_accum_bytes[static_cast<std::size_t>(g)];
          const auto rows = a.rows[static_cast<std::size_t>(g)][static_cast<std::size_t>(plan::ring_send_peer(g, N))].size();
          EXPECT_EQ(static_cast<double>(rows), std::ceil(bytes / a.row_bytes)) << "hop " << h;
          EXPECT_EQ(ops[i].stream, 1) << ops[i].name;
          if (last_kernel >= 0) {
            EXPECT_TRUE(waits_for(ops[i], last_kernel))
                << ops[i].name << " must wait for " << ops[static_cast<std::size_t>(last_kernel)].name
                << (first_transfer ? " (every kernel before the pass)" : " (the buffer it reuses)");
          }
          first_transfer = false;
          transfer = pass_last_transfer = static_cast<int>(i++);
        }
        if (h == N) break;
        bool waits = false;
        bool hop_first = true;
        for (const plan::ChunkSteps& c : st.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)].chunks) {
          for (const plan::KernelStep& k : c.kernels) {
            if (k.is_wait()) {
              waits = h >= 1 && transfer >= 0;
              continue;
            }
            ASSERT_LT(i, ops.size());
            const Op& op = ops[i];
            EXPECT_EQ(op.name.substr(op.name.rfind(' ') + 1), k.name) << "hop " << h << " op " << op.name;
            if (k.is_gemm()) {
              ASSERT_EQ(op.gemms.size(), k.gemms.size()) << op.name;
              for (std::size_t x = 0; x < k.gemms.size(); ++x) {
                EXPECT_EQ(op.gemms[x].m, k.gemms[x].m);
                EXPECT_EQ(op.gemms[x].n, k.gemms[x].n);
                EXPECT_EQ(op.gemms[x].k, k.gemms[x].k);
              }
            } else {
              EXPECT_DOUBLE_EQ(op.bytes, k.bytes) << op.name;
            }
            if (waits) {
              EXPECT_TRUE(waits_for(op, transfer)) << op.name << " must wait for the transfer that brings its accumulator";
            }
            if (hop_first && h >= 1 && prev_transfer >= 0) {
              EXPECT_TRUE(waits_for(op, prev_transfer)) << op.name << " must wait for the transfer that brought its partition";
            }
            kernel(op);
            hop_first = waits = false;
            ++i;
          }
        }
        prev_transfer = transfer;
      }
      if (pass_last_transfer >= 0) copy_pending = pass_last_transfer;
      edge(pass, st.epilogue[static_cast<std::size_t>(g)]);
      if (::testing::Test::HasFatalFailure()) return;
    }
    ASSERT_LT(i, ops.size());
    EXPECT_EQ(ops[i].name, "router_backward");
    kernel(ops[i]);
    ++i;
    EXPECT_EQ(i, ops.size()) << "ops the steps do not describe";
  }
}

ModelConfig qwen3() {
  ModelConfig m;
  m.hidden_size = 2048;
  m.expert_ffn_size = 768;
  m.num_experts = 128;
  m.top_k = 8;
  return m;
}

TEST(RingStepsSim, PublishedConfigurationReplaysTheSteps) {
  // 8 GPUs x 49,152 tokens, balanced: token t's experts (t + 16 j) mod 128
  const Routing r = make_routing(8, 128, 8, std::vector<std::int64_t>(8, 49152),
                                 [](int, std::int64_t t, int j) { return static_cast<std::int32_t>((t + 16 * j) % 128); });
  expect_replay(qwen3(), r, false);
  expect_replay(qwen3(), r, true);
}

TEST(RingStepsSim, HopChunksReplayTheSteps) {
  // moehub-gpu's default (one expert per chunk) and a row limit that splits experts,
  // with its default bf16 accumulators and gradient partitions
  const Routing r = make_routing(4, 32, 4, {96, 40, 7, 64}, [](int g, std::int64_t t, int j) {
    return static_cast<std::int32_t>((g + t * 5 + 9 * j) % 32);
  });
  for (const std::int64_t rows : {std::int64_t{-1}, std::int64_t{8}}) {
    ScheduleOptions opt;
    opt.ring_chunk_rows = rows;
    opt.ring_accum_bytes = opt.ring_grad_bytes = 2;
    ModelConfig m = qwen3();
    m.num_experts = 32;
    m.top_k = 4;
    expect_replay(m, r, false, opt);
    expect_replay(m, r, true, opt);
  }
}

TEST(RingStepsSim, UnevenRoutingReplaysTheSteps) {
  // uneven tokens per GPU, a quarter of the experts never chosen, the rest skewed
  const Routing r = make_routing(8, 128, 8, {300, 17, 0, 256, 99, 1, 128, 64}, [](int g, std::int64_t t, int j) {
    return static_cast<std::int32_t>((g * 3 + t * t + 11 * j) % 96);
  });
  expect_replay(qwen3(), r, false);
  expect_replay(qwen3(), r, true);
}

}  // namespace
