// Tests of the ring schedule, the per-hop volumes and mode choice, and hop chunks.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "moe_plan/moe_plan.hpp"

namespace {

using moehub::plan::MoeProblem;
using moehub::plan::RingMode;

// The published Qwen3-style setting (RelayMoE, Section 2 and Table 3): 49,152 tokens per
// rank after SP x CP, hidden 2048, expert width 768, 128 experts, top-8, bf16.
MoeProblem published(int ep) { return MoeProblem{49152, 2048, 768, 128, 8, ep}; }

TEST(RingSchedule, EveryRankSeesEveryPartitionOnceAndPeersAgree) {
  for (int n = 1; n <= 9; ++n) {
    for (int r = 0; r < n; ++r) {
      std::set<int> seen;
      for (int h = 0; h < n; ++h) seen.insert(moehub::plan::ring_partition_at_hop(r, h, n));
      EXPECT_EQ(static_cast<int>(seen.size()), n) << "rank " << r << " of " << n;
      EXPECT_EQ(*seen.begin(), 0);
      EXPECT_EQ(*seen.rbegin(), n - 1);
      EXPECT_EQ(moehub::plan::ring_partition_at_hop(r, 0, n), r) << "hop 0 computes the own partition";
      const int send = moehub::plan::ring_send_peer(r, n), recv = moehub::plan::ring_recv_peer(r, n);
      EXPECT_EQ(moehub::plan::ring_recv_peer(send, n), r) << "whom r sends to receives from r";
      EXPECT_EQ(moehub::plan::ring_send_peer(recv, n), r) << "whom r receives from sends to r";
      // what r holds at hop h+1 is what its receive peer held at hop h
      for (int h = 0; h + 1 < n; ++h)
        EXPECT_EQ(moehub::plan::ring_partition_at_hop(r, h + 1, n), moehub::plan::ring_partition_at_hop(recv, h, n));
    }
    // at every hop the ranks hold distinct partitions
    for (int h = 0; h < n; ++h) {
      std::set<int> held;
      for (int r = 0; r < n; ++r) held.insert(moehub::plan::ring_partition_at_hop(r, h, n));
      EXPECT_EQ(static_cast<int>(held.size()), n);
    }
  }
}

TEST(RingSchedule, SingleRankIsDegenerate) {
  EXPECT_EQ(moehub::plan::ring_partition_at_hop(0, 0, 1), 0);
  EXPECT_EQ(moehub::plan::ring_send_peer(0, 1), 0);
  EXPECT_EQ(moehub::plan::ring_recv_peer(0, 1), 0);
}

TEST(RingSchedule, KnownValuesAndRejectsOutOfRange) {
  EXPECT_EQ(moehub::plan::ring_partition_at_hop(1, 3, 4), 2);  // (1 - 3) mod 4
  EXPECT_EQ(moehub::plan::ring_send_peer(3, 4), 0);
  EXPECT_EQ(moehub::plan::ring_recv_peer(0, 4), 3);
  EXPECT_THROW(moehub::plan::ring_partition_at_hop(4, 0, 4), std::invalid_argument);
  EXPECT_THROW(moehub::plan::ring_partition_at_hop(0, 4, 4), std::invalid_argument);
  EXPECT_THROW(moehub::plan::ring_partition_at_hop(-1, 0, 4), std::invalid_argument);
  EXPECT_THROW(moehub::plan::ring_partition_at_hop(0, 0, 0), std::invalid_argument);
  EXPECT_THROW(moehub::plan::ring_send_peer(2, 2), std::invalid_argument);
}

TEST(HopVolumes, PublishedSettingByHand) {
  const auto v = moehub::plan::hop_volumes(published(8));
  // 16 local experts x 3 x 2048 x 768 elements x 2 bytes
  EXPECT_DOUBLE_EQ(v.expert_fwd_bytes, 150994944.0);
  // weights (2 bytes) + gradients (bf16, 2 bytes)
  EXPECT_DOUBLE_EQ(v.expert_bwd_bytes, 301989888.0);
  // tokens 49152 x 2048 x 2 = 201326592, metadata 49152 x 8 x 8 = 3145728,
  // accumulators 49152 x 2048 x 4 = 402653184
  EXPECT_DOUBLE_EQ(v.token_fwd_bytes, 201326592.0 + 3145728.0 + 402653184.0);
  // tokens + d_out, metadata, d_x accumulators, d_topk_weights 49152 x 8 x 4 = 1572864
  EXPECT_DOUBLE_EQ(v.token_bwd_bytes, 2 * 201326592.0 + 3145728.0 + 402653184.0 + 1572864.0);
}

TEST(HopVolumes, ScalesWithEtpEpAndGradientBytes) {
  MoeProblem p = published(8);
  const auto base = moehub::plan::hop_volumes(p);
  p.etp = 2;
  EXPECT_DOUBLE_EQ(moehub::plan::hop_volumes(p).expert_fwd_bytes, base.expert_fwd_bytes / 2);
  EXPECT_DOUBLE_EQ(moehub::plan::hop_volumes(p).token_fwd_bytes, base.token_fwd_bytes);
  p = published(64);
  EXPECT_DOUBLE_EQ(moehub::plan::hop_volumes(p).expert_fwd_bytes, base.expert_fwd_bytes / 8);
  p = published(8);
  p.grad_bytes = 4;
  EXPECT_DOUBLE_EQ(moehub::plan::hop_volumes(p).expert_bwd_bytes, 150994944.0 * 3);
  // tiny problem by hand: T=3, H=4, F=2, E=2, k=1, ep=2, d=2: expert 1 x 3*4*2 x 2 = 48
  const auto t = moehub::plan::hop_volumes(MoeProblem{3, 4, 2, 2, 1, 2});
  EXPECT_DOUBLE_EQ(t.expert_fwd_bytes, 48.0);
  EXPECT_DOUBLE_EQ(t.expert_bwd_bytes, 96.0);
  EXPECT_DOUBLE_EQ(t.token_fwd_bytes, 3 * 4 * 2 + 3 * 1 * 8 + 3 * 4 * 4);        // 24 + 24 + 48
  EXPECT_DOUBLE_EQ(t.token_bwd_bytes, 2 * 3 * 4 * 2 + 3 * 8 + 3 * 4 * 4 + 3 * 4);  // 48 + 24 + 48 + 12
}

std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

TEST(ModeChoice, ExpertRoutingForThePublishedSetting) {
  const auto c = moehub::plan::choose_ring_mode(published(8));
  EXPECT_EQ(c.mode, RingMode::kExpert);
  EXPECT_STREQ(moehub::plan::to_string(c.mode), "expert");
  // the reason names both volumes
  EXPECT_NE(c.reason.find(mib(c.volumes.expert_fwd_bytes + c.volumes.expert_bwd_bytes)), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find(mib(c.volumes.token_fwd_bytes + c.volumes.token_bwd_bytes)), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("expert"), std::string::npos);
  EXPECT_NE(c.reason.find("token"), std::string::npos);
}

TEST(ModeChoice, TokenRoutingForManyWideExpertsAndFewTokens) {
  // E=384 experts of width 2048 at hidden 2048, 4096 tokens per rank, top-8, EP=8
  const auto c = moehub::plan::choose_ring_mode(MoeProblem{4096, 2048, 2048, 384, 8, 8});
  EXPECT_EQ(c.mode, RingMode::kToken);
  EXPECT_STREQ(moehub::plan::to_string(c.mode), "token");
  EXPECT_GT(c.volumes.expert_fwd_bytes, c.volumes.token_fwd_bytes);
  EXPECT_NE(c.reason.find(mib(c.volumes.expert_fwd_bytes + c.volumes.expert_bwd_bytes)), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find(mib(c.volumes.token_fwd_bytes + c.volumes.token_bwd_bytes)), std::string::npos) << c.reason;
}

TEST(ModeChoice, CrossoverFollowsTokenCount) {
  // same model: token routing at few tokens, expert routing once tokens outweigh weights
  MoeProblem p{1024, 2048, 2048, 384, 8, 8};
  EXPECT_EQ(moehub::plan::choose_ring_mode(p).mode, RingMode::kToken);
  p.tokens_per_rank = 1 << 20;
  EXPECT_EQ(moehub::plan::choose_ring_mode(p).mode, RingMode::kExpert);
}

TEST(Validate, RejectsBadProblemsNamingTheField) {
  auto message = [](MoeProblem p) {
    try {
      moehub::plan::validate(p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  MoeProblem p = published(8);
  EXPECT_EQ(message(p), "");
  p.top_k = 129;
  EXPECT_NE(message(p).find("top_k"), std::string::npos);
  p = published(8);
  p.ep = 3;
  EXPECT_NE(message(p).find("experts"), std::string::npos);
  p = published(8);
  p.etp = 5;
  EXPECT_NE(message(p).find("etp"), std::string::npos);
  p = published(8);
  p.tokens_per_rank = 0;
  EXPECT_NE(message(p).find("tokens_per_rank"), std::string::npos);
  p = published(8);
  p.dtype_bytes = 3;
  EXPECT_NE(message(p).find("dtype_bytes"), std::string::npos);
  EXPECT_THROW(moehub::plan::hop_volumes(p), std::invalid_argument);
}

TEST(HopChunks, WholeExpertsUpToTheLimitAndLargeExpertsSplit) {
  using moehub::plan::hop_chunks;
  const std::vector<std::int64_t> rows = {5, 0, 3, 12, 2, 2};
  auto ranges = [](const std::vector<moehub::plan::HopChunk>& cs) {
    std::vector<std::vector<std::int64_t>> out;
    for (const auto& c : cs) out.push_back({c.first, c.last, c.rows});
    return out;
  };
  using V = std::vector<std::vector<std::int64_t>>;
  EXPECT_EQ(ranges(hop_chunks(rows, 0)), (V{{0, 6, 24}}));  // 0: the whole hop
  // an expert above the limit is split into near-equal pieces, one chunk each
  EXPECT_EQ(ranges(hop_chunks(rows, 8)), (V{{0, 3, 8}, {3, 4, 6}, {3, 4, 6}, {4, 6, 4}}));
  EXPECT_EQ(ranges(hop_chunks(rows, 4)), (V{{0, 1, 3}, {0, 1, 2}, {1, 3, 3}, {3, 4, 4}, {3, 4, 4}, {3, 4, 4}, {4, 6, 4}}));
  // -1: one chunk per expert with rows, never split; the empty expert 1 joins expert 0
  EXPECT_EQ(ranges(hop_chunks(rows, moehub::plan::kOneExpertPerChunk)),
            (V{{0, 2, 5}, {2, 3, 3}, {3, 4, 12}, {4, 5, 2}, {5, 6, 2}}));
  EXPECT_EQ(ranges(hop_chunks({0, 0, 5, 0}, moehub::plan::kOneExpertPerChunk)), (V{{0, 4, 5}}));
  const auto ones = hop_chunks(rows, 1);
  ASSERT_EQ(ones.size(), 25u);  // 24 chunks of one row and the empty expert 1 on its own
  for (const auto& c : ones) EXPECT_LE(c.rows, 1);
  EXPECT_EQ(ranges({ones[5]}), (V{{1, 2, 0}}));
  // expert_rows: each chunk's rows per expert, summing to the chunk's rows
  const auto c8 = hop_chunks(rows, 8);
  EXPECT_EQ(c8[0].expert_rows, (std::vector<std::int64_t>{5, 0, 3}));
  EXPECT_EQ(c8[1].expert_rows, (std::vector<std::int64_t>{6}));
  EXPECT_EQ(c8[3].expert_rows, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(ranges(hop_chunks({7}, 3)), (V{{0, 1, 3}, {0, 1, 2}, {0, 1, 2}}));
  EXPECT_EQ(ranges(hop_chunks(rows, 24)), (V{{0, 6, 24}}));
  EXPECT_TRUE(hop_chunks({}, 8).empty());
  EXPECT_EQ(ranges(hop_chunks({0, 0}, 8)), (V{{0, 2, 0}}));
  EXPECT_EQ(moehub::plan::max_chunk_rows(rows, 8), 8);
  EXPECT_EQ(moehub::plan::max_chunk_rows(rows, 5), 5);
  EXPECT_EQ(moehub::plan::max_chunk_rows(rows, 0), 24);
  EXPECT_EQ(moehub::plan::max_chunk_rows({}, 8), 0);
  EXPECT_THROW(hop_chunks(rows, -2), std::invalid_argument);  // -1 is one expert per chunk
}

}  // namespace
