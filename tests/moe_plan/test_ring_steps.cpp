// Tests of the ring steps (ring_steps.hpp): the one description of a ring pass that the
// GPU harness executes and the simulator replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "moe_plan/moe_plan.hpp"
#include "moe_plan/ring_steps.hpp"

namespace {

using namespace moehub::plan;

std::vector<std::string> names(const ChunkSteps& c) {
  std::vector<std::string> out;
  for (const KernelStep& k : c.kernels) out.push_back(k.name);
  return out;
}

// 4 ranks x 8 experts (2 each); every rank sends e + 1 + rank pairs to expert e, except
// that nobody routes to expert 5 and rank 3 routes nothing to experts 0..3
RingRouting uneven() {
  std::vector<std::int32_t> c(32);
  for (int g = 0; g < 4; ++g)
    for (int e = 0; e < 8; ++e) c[static_cast<std::size_t>(g * 8 + e)] = e == 5 || (g == 3 && e < 4) ? 0 : e + 1 + g;
  return uniform_ring_routing(4, 8, 40, c);
}

TEST(RingSteps, TransferBytesAreTheHopPartsOfEachPartition) {
  const MoeProblem p{49152, 2048, 768, 128, 8, 8};
  const std::vector<std::int32_t> counts(8 * 128, 49152 * 8 / 128);
  const RingRouting r = uniform_ring_routing(8, 128, 49152, counts);
  for (const RingMode mode : {RingMode::kExpert, RingMode::kToken}) {
    for (const bool bwd : {false, true}) {
      RingOptions o;
      o.accum_bytes = 4;
      o.grad_bytes = 2;
      MoeProblem q = p;
      q.accum_bytes = 4;
      q.grad_bytes = 2;
      const HopParts want = hop_parts(q, mode, bwd);
      const RingPassSteps s = ring_pass_steps(r, p.hidden, p.ffn, p.top_k, 2, mode, bwd, o);
      for (int g = 0; g < 8; ++g) {
        for (int h = 0; h < 8; ++h) {
          const HopSteps& hs = s.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)];
          EXPECT_EQ(hs.partition, ring_partition_at_hop(g, h, 8));
          EXPECT_DOUBLE_EQ(hs.payload_bytes, h < 7 ? want.payload_bytes : 0.0) << to_string(mode) << bwd << g << h;
          EXPECT_DOUBLE_EQ(hs.accum_bytes, h >= 1 ? want.accum_bytes : 0.0) << to_string(mode) << bwd << g << h;
        }
        EXPECT_DOUBLE_EQ(s.final_accum_bytes[static_cast<std::size_t>(g)], want.accum_bytes);
      }
    }
  }
}

TEST(RingSteps, KernelOrderIsTheGpuHarnesss) {
  const RingRouting r = uneven();
  const RingOptions o;
  EXPECT_EQ(names(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, false, o).hops[0][1].chunks[0]),
            (std::vector<std::string>{"gather_x", "gemm1_gate_up", "swiglu", "gemm2_down", "scatter_out"}));
  EXPECT_EQ(names(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kToken, false, o).hops[0][1].chunks[0]),
            (std::vector<std::string>{"gather_x", "gemm1_gate_up", "swiglu", "gemm2_down", "wait_accum", "scatter_out"}));
  EXPECT_EQ(names(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, true, o).hops[0][1].chunks[0]),
            (std::vector<std::string>{"gather_x_d_out", "gemm1_gate_up", "gemm_d_act", "swiglu_backward",
                                      "gemm_d_x", "scatter_d_x", "wait_accum", "gemm_d_w_gate_up", "gemm_d_w_down"}));
  RingOptions chunked;  // chunked hops: the weight gradients before d_x (its rows overwrite x)
  chunked.chunk_rows = kOneExpertPerChunk;
  EXPECT_EQ(names(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, true, chunked).hops[0][1].chunks[0]),
            (std::vector<std::string>{"gather_x_d_out", "gemm1_gate_up", "gemm_d_act", "swiglu_backward",
                                      "wait_accum", "gemm_d_w_gate_up", "gemm_d_w_down", "gemm_d_x", "scatter_d_x"}));
  EXPECT_EQ(names(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kToken, true, o).hops[0][1].chunks[0]),
            (std::vector<std::string>{"gather_x_d_out", "gemm1_gate_up", "gemm_d_act", "swiglu_backward",
                                      "gemm_d_x", "gemm_d_w_gate_up", "gemm_d_w_down", "wait_accum", "scatter_d_x",
                                      "scatter_d_topk_weights"}));
}

TEST(RingSteps, ChunksCoverTheHopsRowsInPairOrder) {
  const RingRouting r = uneven();
  RingOptions o;
  o.chunk_rows = 7;
  for (const RingMode mode : {RingMode::kExpert, RingMode::kToken}) {
    const RingPassSteps s = ring_pass_steps(r, 64, 32, 2, 2, mode, true, o);
    for (int g = 0; g < 4; ++g) {
      for (int h = 0; h < 4; ++h) {
        const HopSteps& hs = s.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)];
        const int src = mode == RingMode::kExpert ? g : hs.partition, owner = mode == RingMode::kExpert ? hs.partition : g;
        const auto& row = r.pairs[static_cast<std::size_t>(src)];
        const std::int64_t start = std::accumulate(row.begin(), row.begin() + 2 * owner, std::int64_t{0});
        const std::int64_t total = row[static_cast<std::size_t>(2 * owner)] + row[static_cast<std::size_t>(2 * owner + 1)];
        std::int64_t next = start, covered = 0;
        for (const ChunkSteps& c : hs.chunks) {
          EXPECT_EQ(c.pair_offset, next);
          EXPECT_LE(c.rows, 7);
          next += c.rows;
          covered += c.rows;
          std::int64_t gemm_rows = 0;
          for (const GemmDims& gd : c.kernels[1].gemms) gemm_rows += gd.m;  // gemm1_gate_up
          EXPECT_EQ(gemm_rows, c.rows);
          EXPECT_DOUBLE_EQ(c.kernels[0].bytes, static_cast<double>(c.rows) * 64 * 2 * 4);  // gather_x_d_out
        }
        EXPECT_EQ(covered, total) << to_string(mode) << " rank " << g << " hop " << h;
      }
    }
  }
}

TEST(RingSteps, AccumulatorAndGradientBytesFollowTheOptions) {
  const RingRouting r = uneven();
  RingOptions o;
  o.accum_bytes = 2;
  o.grad_bytes = 2;
  const ChunkSteps c = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, true, o).hops[1][2].chunks[0];
  EXPECT_EQ(c.kernels[5].name, "scatter_d_x");
  EXPECT_EQ(c.kernels[5].accum_bytes, 2);
  EXPECT_DOUBLE_EQ(c.kernels[5].bytes, static_cast<double>(c.rows) * 64 * (2 + 4));  // read y, read + write bf16
  EXPECT_EQ(c.kernels[7].name, "gemm_d_w_gate_up");
  EXPECT_EQ(c.kernels[7].accum_bytes, 2);  // bf16 gradient partition
  const ChunkSteps t = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kToken, true, o).hops[1][2].chunks[0];
  EXPECT_EQ(t.kernels[5].name, "gemm_d_w_gate_up");
  EXPECT_EQ(t.kernels[5].accum_bytes, 4);  // the resident parameter gradient stays fp32
  // an empty expert gives an empty weight-gradient GEMM, not a 64 x 64 one
  const ChunkSteps e = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, true, RingOptions{}).hops[0][2].chunks[0];
  ASSERT_EQ(e.first, 0);
  ASSERT_EQ(e.expert_rows.size(), 2u);
  EXPECT_EQ(e.expert_rows[1], 0);  // expert 5 (partition 2's second)
  EXPECT_EQ(e.kernels[7].name, "gemm_d_w_gate_up");
  EXPECT_EQ(e.kernels[7].gemms[1].m, 0);
}

// The kernels around a pass's hops, as moehub-gpu's ring schedules issue them
// (ring_expert.cpp, ring_token.cpp): fp32 accumulators (its --ring-accum fp32: a = g = 4)
// and bf16 ones (a = g = 2); uneven() has 40 tokens per rank, rank 1 owns 2 experts.
TEST(RingSteps, PrologueAndEpilogueAreTheGpuHarnesss) {
  const RingRouting r = uneven();
  const double T = 40, H = 64, F = 32, k = 2, W = 2 * 3 * H * F;
  auto kernels = [](const std::vector<KernelStep>& v) {
    std::vector<std::pair<std::string, double>> out;
    for (const KernelStep& s : v) out.emplace_back(s.name, s.bytes);
    return out;
  };
  using List = std::vector<std::pair<std::string, double>>;
  for (const int acc : {4, 2}) {
    SCOPED_TRACE("accumulator bytes " + std::to_string(acc));
    RingOptions o;
    o.accum_bytes = o.grad_bytes = acc;
    const bool fp32 = acc == 4;
    const RingPassSteps ef = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, false, o);
    const RingPassSteps eb = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, true, o);
    const RingPassSteps tf = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kToken, false, o);
    const RingPassSteps tb = ring_pass_steps(r, 64, 32, 2, 2, RingMode::kToken, true, o);
    ASSERT_EQ(ef.prologue.size(), 4u);
    ASSERT_EQ(ef.epilogue.size(), 4u);
    // expert routing: the out / d_x accumulator (fp32 scratch or the bf16 output) is zeroed;
    // fp32 is rounded into the output at the end; bf16 gradient partitions are widened
    // into the fp32 parameter gradient
    EXPECT_EQ(kernels(ef.prologue[1]), (List{{"zero_accum", T * H * acc}}));
    EXPECT_EQ(kernels(eb.prologue[1]), (List{{"zero_accum", T * H * acc}}));
    EXPECT_EQ(kernels(ef.epilogue[1]), fp32 ? (List{{"accum_to_output", T * H * 6}}) : List{});
    EXPECT_EQ(kernels(eb.epilogue[1]), fp32 ? (List{{"accum_to_output", T * H * 6}}) : (List{{"grad_to_param", W * 6}}));
    // token routing: the resident parameter gradient zeroed before the backward; fp32
    // accumulators come home into a slot and are rounded / copied into the outputs
    EXPECT_EQ(kernels(tf.prologue[1]), List{});
    EXPECT_EQ(kernels(tb.prologue[1]), (List{{"zero_d_w", W * 4}}));
    EXPECT_EQ(kernels(tf.epilogue[1]), fp32 ? (List{{"accum_to_output", T * H * 6}}) : List{});
    EXPECT_EQ(kernels(tb.epilogue[1]),
              fp32 ? (List{{"accum_to_output", T * H * 6}, {"copy_d_topk_weights", T * k * 8}}) : List{});
  }
}

// Every field of a rank's hops, as text: two hops lists print alike only if they are equal.
std::string dump(const std::vector<HopSteps>& hops) {
  std::string out;
  for (const HopSteps& h : hops) {
    out += "hop " + std::to_string(h.rank) + "/" + std::to_string(h.hop) + " p" + std::to_string(h.partition) + " " +
           std::to_string(h.payload_bytes) + " " + std::to_string(h.accum_bytes) + "\n";
    for (const ChunkSteps& c : h.chunks) {
      out += " chunk " + std::to_string(c.first) + "-" + std::to_string(c.last) + " rows " + std::to_string(c.rows) +
             " at " + std::to_string(c.pair_offset) + ":";
      for (std::int64_t e : c.expert_rows) out += " " + std::to_string(e);
      out += "\n";
      for (const KernelStep& k : c.kernels) {
        out += "  " + k.name + " " + std::to_string(k.bytes) + " a" + std::to_string(k.accum_bytes);
        for (const GemmDims& g : k.gemms)
          out += " " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k);
        out += "\n";
      }
    }
  }
  return out;
}

TEST(RingSteps, OneRanksHopsAreThoseOfTheWholePass) {
  const RingRouting r = uneven();
  int compared = 0;
  for (const RingMode mode : {RingMode::kExpert, RingMode::kToken})
    for (const bool bwd : {false, true})
      for (const std::int64_t chunk : {std::int64_t{kOneExpertPerChunk}, std::int64_t{0}, std::int64_t{3}}) {
        RingOptions o;
        o.chunk_rows = chunk;
        o.accum_bytes = 2;
        o.grad_bytes = 2;
        const RingPassSteps all = ring_pass_steps(r, 64, 32, 2, 2, mode, bwd, o);
        for (int g = 0; g < r.ranks(); ++g) {
          const std::string want = dump(all.hops[static_cast<std::size_t>(g)]);
          ASSERT_FALSE(want.empty());
          EXPECT_EQ(dump(ring_hop_steps(r, g, 64, 32, 2, 2, mode, bwd, o)), want)
              << to_string(mode) << (bwd ? " bwd" : " fwd") << " chunk " << chunk << " rank " << g;
          ++compared;
        }
      }
  EXPECT_EQ(compared, 2 * 2 * 3 * 4);
  for (const int bad_rank : {-1, 4}) {
    try {
      ring_hop_steps(r, bad_rank, 64, 32, 2, 2, RingMode::kExpert, false, RingOptions{});
      ADD_FAILURE() << "rank " << bad_rank << " accepted";
    } catch (const std::invalid_argument& x) {
      EXPECT_NE(std::string(x.what()).find("ring_hop_steps: rank " + std::to_string(bad_rank) + " outside [0, 3]"),
                std::string::npos)
          << x.what();
    }
  }
  RingRouting broken = uneven();
  broken.pairs[2][1] = -1;
  EXPECT_THROW(ring_hop_steps(broken, 0, 64, 32, 2, 2, RingMode::kToken, true, RingOptions{}), std::invalid_argument);
}

// plan_ring sizes the hop buffers once for both passes: it relies on the backward pass
// cutting each hop into the same chunks as the forward one (only the kernels differ).
TEST(RingSteps, BothPassesCutTheSameChunks) {
  const RingRouting r = uneven();
  int chunks = 0;
  for (const RingMode mode : {RingMode::kExpert, RingMode::kToken})
    for (const std::int64_t chunk : {std::int64_t{kOneExpertPerChunk}, std::int64_t{0}, std::int64_t{3}})
      for (int g = 0; g < r.ranks(); ++g) {
        RingOptions o;
        o.chunk_rows = chunk;
        const std::vector<HopSteps> fwd = ring_hop_steps(r, g, 64, 32, 2, 2, mode, false, o);
        const std::vector<HopSteps> bwd = ring_hop_steps(r, g, 64, 32, 2, 2, mode, true, o);
        ASSERT_EQ(fwd.size(), bwd.size());
        for (std::size_t h = 0; h < fwd.size(); ++h) {
          ASSERT_EQ(fwd[h].chunks.size(), bwd[h].chunks.size()) << "rank " << g << " hop " << h;
          for (std::size_t c = 0; c < fwd[h].chunks.size(); ++c) {
            const ChunkSteps &f = fwd[h].chunks[c], &b = bwd[h].chunks[c];
            EXPECT_EQ(f.first, b.first);
            EXPECT_EQ(f.last, b.last);
            EXPECT_EQ(f.rows, b.rows) << to_string(mode) << " chunk " << chunk << " rank " << g << " hop " << h;
            EXPECT_EQ(f.pair_offset, b.pair_offset);
            EXPECT_EQ(f.expert_rows, b.expert_rows);
            ++chunks;
          }
        }
      }
  EXPECT_GT(chunks, 2 * 3 * 4 * 4);  // more than one chunk per hop on average
}

TEST(RingSteps, RejectsInconsistentRouting) {
  RingRouting r = uneven();
  r.pairs[1][3] = -1;
  EXPECT_THROW(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, false, RingOptions{}), std::invalid_argument);
  r = uneven();
  r.first_expert.pop_back();
  EXPECT_THROW(ring_pass_steps(r, 64, 32, 2, 2, RingMode::kExpert, false, RingOptions{}), std::invalid_argument);
  EXPECT_THROW(uniform_ring_routing(3, 8, 10, std::vector<std::int32_t>(24)), std::invalid_argument);
  RingOptions o;
  o.chunk_rows = -2;  // below kOneExpertPerChunk
  EXPECT_THROW(ring_pass_steps(uneven(), 64, 32, 2, 2, RingMode::kExpert, true, o), std::invalid_argument);
}

TEST(RingSteps, OneExpertPerChunkKeepsExpertsWhole) {
  const RingRouting r = uneven();
  RingOptions o;
  o.chunk_rows = kOneExpertPerChunk;
  for (const RingMode mode : {RingMode::kExpert, RingMode::kToken}) {
    const RingPassSteps s = ring_pass_steps(r, 64, 32, 2, 2, mode, true, o);
    const RingPassSteps w = ring_pass_steps(r, 64, 32, 2, 2, mode, true, RingOptions{});
    for (const auto& hops : s.hops)
      for (const HopSteps& hs : hops) {
        std::int64_t rows = 0;
        for (const ChunkSteps& c : hs.chunks) {
          const auto nonzero = std::count_if(c.expert_rows.begin(), c.expert_rows.end(), [](std::int64_t n) { return n > 0; });
          EXPECT_LE(nonzero, 1);  // never two experts with rows in one chunk
          EXPECT_EQ(std::accumulate(c.expert_rows.begin(), c.expert_rows.end(), std::int64_t{0}), c.rows);
          rows += c.rows;
        }
        // every expert whole: the chunks' rows add up to the hop's (the whole-hop plan's one chunk)
        const HopSteps& whole = w.hops[static_cast<std::size_t>(hs.rank)][static_cast<std::size_t>(hs.hop)];
        EXPECT_EQ(rows, whole.chunks.empty() ? 0 : whole.chunks[0].rows);
        EXPECT_LE(hs.chunks.size(), 2u);  // two local experts per partition
      }
  }
}

}  // namespace
