// Tests of the expert placement and the MoE routing generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "workload/routing.hpp"

namespace moehub {
namespace {

ModelConfig model_of(int num_experts, int top_k) {
  ModelConfig m;
  m.name = "test";
  m.num_experts = num_experts;
  m.top_k = top_k;
  return m;
}

// Mixtral-8x7B: 8 experts, top-2 (MoE-Hub paper, Table of models).
ModelConfig mixtral() { return model_of(8, 2); }
// Qwen3-30B-A3B: 128 experts, top-8 (shared/reference/models-and-hardware.md).
ModelConfig qwen3() { return model_of(128, 8); }

WorkloadConfig normal_workload(std::int64_t tokens, double imbalance_std, std::uint64_t seed) {
  WorkloadConfig w;
  w.tokens = tokens;
  w.seed = seed;
  w.distribution = "normal";
  w.imbalance_std = imbalance_std;
  return w;
}

WorkloadConfig zipf_workload(std::int64_t tokens, double s, std::uint64_t seed) {
  WorkloadConfig w;
  w.tokens = tokens;
  w.seed = seed;
  w.distribution = "zipf";
  w.zipf_s = s;
  return w;
}

double population_std(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double var = 0.0;
  for (double x : v) var += (x - mean) * (x - mean);
  return std::sqrt(var / static_cast<double>(v.size()));
}

// Expected mean square of the load-fraction deviations caused by sampling
// alone when every expert has the same popularity: each token picks each
// expert with probability k/E, so count_e ~ Binomial(N, k/E) and
// E[load_std^2] = (1 - k/E) / (N k E).
double uniform_noise_ms(std::int64_t tokens, int num_experts, int top_k) {
  const double n = static_cast<double>(tokens), e = num_experts, k = top_k;
  return (1.0 - k / e) / (n * k * e);
}

// ---------------------------------------------------------------------------
// ExpertPlacement

TEST(ExpertPlacement, CoversEveryExpertOnceInContiguousBalancedBlocks) {
  const std::vector<std::pair<int, int>> cases = {{60, 8}, {8, 8}, {128, 8}, {4, 8},
                                                  {1, 1},  {7, 3}, {64, 16}, {256, 8}};
  for (const auto& [experts, gpus] : cases) {
    SCOPED_TRACE(std::to_string(experts) + " experts on " + std::to_string(gpus) + " GPUs");
    const ExpertPlacement pl = ExpertPlacement::contiguous(experts, gpus);
    EXPECT_EQ(pl.num_experts, experts);
    EXPECT_EQ(pl.num_gpus, gpus);
    ASSERT_EQ(pl.owner.size(), static_cast<std::size_t>(experts));
    ASSERT_EQ(pl.first_expert.size(), static_cast<std::size_t>(gpus) + 1);
    EXPECT_EQ(pl.first_expert.front(), 0);
    EXPECT_EQ(pl.first_expert.back(), experts);

    std::vector<int> hosted(static_cast<std::size_t>(gpus), 0);
    for (int e = 0; e < experts; ++e) {
      const int g = pl.owner[static_cast<std::size_t>(e)];
      ASSERT_GE(g, 0);
      ASSERT_LT(g, gpus);
      ++hosted[static_cast<std::size_t>(g)];
      // the owner's block contains e
      EXPECT_GE(e, pl.first_expert[static_cast<std::size_t>(g)]);
      EXPECT_LT(e, pl.first_expert[static_cast<std::size_t>(g) + 1]);
      if (e > 0) {
        EXPECT_GE(g, pl.owner[static_cast<std::size_t>(e) - 1]);  // contiguous blocks
      }
    }
    int total = 0;
    for (int g = 0; g < gpus; ++g) {
      const int expected = experts / gpus + (g < experts % gpus ? 1 : 0);
      EXPECT_EQ(pl.experts_on(g), expected) << "gpu " << g;
      EXPECT_EQ(hosted[static_cast<std::size_t>(g)], expected) << "gpu " << g;
      total += pl.experts_on(g);
    }
    EXPECT_EQ(total, experts);
  }
}

TEST(ExpertPlacement, FewerExpertsThanGpusLeavesTheLastGpusEmpty) {
  const ExpertPlacement pl = ExpertPlacement::contiguous(4, 8);
  for (int g = 0; g < 4; ++g) EXPECT_EQ(pl.experts_on(g), 1);
  for (int g = 4; g < 8; ++g) EXPECT_EQ(pl.experts_on(g), 0);
  EXPECT_EQ(pl.owner, (std::vector<int>{0, 1, 2, 3}));
}

TEST(ExpertPlacement, SixtyExpertsOnEightGpus) {
  const ExpertPlacement pl = ExpertPlacement::contiguous(60, 8);
  // 60 = 8 * 7 + 4: GPUs 0..3 host 8 experts, GPUs 4..7 host 7
  EXPECT_EQ(pl.first_expert, (std::vector<int>{0, 8, 16, 24, 32, 39, 46, 53, 60}));
}

TEST(ExpertPlacement, RejectsBadArguments) {
  EXPECT_THROW(ExpertPlacement::contiguous(0, 8), std::invalid_argument);
  EXPECT_THROW(ExpertPlacement::contiguous(8, 0), std::invalid_argument);
  EXPECT_THROW(ExpertPlacement::contiguous(-3, 2), std::invalid_argument);
  const ExpertPlacement pl = ExpertPlacement::contiguous(8, 4);
  EXPECT_THROW(pl.experts_on(-1), std::out_of_range);
  EXPECT_THROW(pl.experts_on(4), std::out_of_range);
}

// ---------------------------------------------------------------------------
// Structure of a routing

TEST(Routing, SplitsTokensEvenlyWithTheRemainderOnTheFirstGpus) {
  const Routing r = generate_routing(mixtral(), normal_workload(8195, 0.0, 1), 8);
  ASSERT_EQ(r.tokens_per_gpu.size(), 8u);
  EXPECT_EQ(r.tokens_per_gpu,
            (std::vector<std::int64_t>{1025, 1025, 1025, 1024, 1024, 1024, 1024, 1024}));
  EXPECT_EQ(r.total_tokens(), 8195);
  EXPECT_EQ(r.num_gpus, 8);
  EXPECT_EQ(r.num_experts, 8);
  EXPECT_EQ(r.top_k, 2);
  for (std::size_t g = 0; g < 8; ++g) {
    EXPECT_EQ(r.expert_ids[g].size(), static_cast<std::size_t>(r.tokens_per_gpu[g]) * 2);
    EXPECT_EQ(r.gate_weights[g].size(), static_cast<std::size_t>(r.tokens_per_gpu[g]) * 2);
  }

  const Routing exact = generate_routing(mixtral(), normal_workload(64, 0.0, 1), 8);
  for (std::int64_t n : exact.tokens_per_gpu) EXPECT_EQ(n, 8);
  const Routing one_each = generate_routing(mixtral(), normal_workload(3, 0.0, 1), 3);
  EXPECT_EQ(one_each.tokens_per_gpu, (std::vector<std::int64_t>{1, 1, 1}));
}

void expect_well_formed(const Routing& r) {
  const std::size_t k = static_cast<std::size_t>(r.top_k);
  for (std::size_t g = 0; g < r.expert_ids.size(); ++g) {
    const auto& ids = r.expert_ids[g];
    const auto& w = r.gate_weights[g];
    for (std::size_t t = 0; t < static_cast<std::size_t>(r.tokens_per_gpu[g]); ++t) {
      std::set<std::int32_t> distinct;
      double sum = 0.0;
      for (std::size_t i = 0; i < k; ++i) {
        const std::int32_t e = ids[t * k + i];
        ASSERT_GE(e, 0) << "gpu " << g << " token " << t;
        ASSERT_LT(e, r.num_experts) << "gpu " << g << " token " << t;
        distinct.insert(e);
        ASSERT_GT(w[t * k + i], 0.0f) << "gpu " << g << " token " << t;
        if (i > 0) {
          ASSERT_LE(w[t * k + i], w[t * k + i - 1]) << "weights not in logit order";
        }
        sum += w[t * k + i];
      }
      ASSERT_EQ(distinct.size(), k) << "repeated expert, gpu " << g << " token " << t;
      // k floats of relative rounding error 2^-24 each
      ASSERT_NEAR(sum, 1.0, 1e-6 * static_cast<double>(k)) << "gpu " << g << " token " << t;
    }
  }
}

TEST(Routing, IdsAreDistinctInRangeAndWeightsFormADistribution) {
  expect_well_formed(generate_routing(mixtral(), normal_workload(8192, 0.0, 3), 8));
  expect_well_formed(generate_routing(mixtral(), normal_workload(8192, 0.05, 3), 8));
  expect_well_formed(generate_routing(qwen3(), normal_workload(8192, 0.008, 3), 8));
  expect_well_formed(generate_routing(model_of(64, 4), zipf_workload(4096, 1.2, 3), 4));
  expect_well_formed(generate_routing(model_of(60, 4), normal_workload(777, 0.01, 5), 8));
  // every expert of every token
  expect_well_formed(generate_routing(model_of(8, 8), normal_workload(100, 0.0, 3), 2));
  expect_well_formed(generate_routing(model_of(1, 1), normal_workload(10, 0.0, 3), 2));
  // very steep popularity: the other experts have tiny probabilities and logits far below
  expect_well_formed(generate_routing(model_of(16, 4), zipf_workload(2000, 40.0, 3), 2));
  expect_well_formed(generate_routing(model_of(16, 4), zipf_workload(2000, 1000.0, 3), 2));
}

TEST(Routing, TopKEqualToExpertCountPicksEveryExpert) {
  const Routing r = generate_routing(model_of(8, 8), normal_workload(100, 0.0, 9), 2);
  for (std::int64_t load : r.expert_load()) EXPECT_EQ(load, 100);
  EXPECT_EQ(r.load_std(), 0.0);
}

// ---------------------------------------------------------------------------
// Determinism

TEST(Routing, SameInputsGiveIdenticalRouting) {
  for (const WorkloadConfig& w :
       {normal_workload(8192, 0.032, 7), zipf_workload(8192, 1.0, 7), normal_workload(8192, 0.0, 7)}) {
    const Routing a = generate_routing(mixtral(), w, 8);
    const Routing b = generate_routing(mixtral(), w, 8);
    EXPECT_EQ(a.tokens_per_gpu, b.tokens_per_gpu);
    EXPECT_EQ(a.expert_ids, b.expert_ids);
    EXPECT_EQ(a.gate_weights, b.gate_weights);  // bitwise equal floats
  }
}

TEST(Routing, DifferentSeedsGiveDifferentRouting) {
  for (const auto& [w1, w2] :
       {std::make_pair(normal_workload(8192, 0.032, 1), normal_workload(8192, 0.032, 2)),
        std::make_pair(normal_workload(8192, 0.0, 1), normal_workload(8192, 0.0, 2)),
        std::make_pair(zipf_workload(8192, 1.0, 1), zipf_workload(8192, 1.0, 2))}) {
    const Routing a = generate_routing(mixtral(), w1, 8);
    const Routing b = generate_routing(mixtral(), w2, 8);
    std::size_t same = 0, total = 0;
    for (std::size_t g = 0; g < 8; ++g)
      for (std::size_t i = 0; i < a.expert_ids[g].size(); ++i, ++total)
        same += a.expert_ids[g][i] == b.expert_ids[g][i];
    // independent streams agree on a slot about as often as chance (well below all of them)
    EXPECT_LT(same, total / 2) << same << " of " << total << " slots equal";
  }
  // the imbalanced popularity itself depends on the seed
  EXPECT_NE(routing_detail::expert_popularity(mixtral(), normal_workload(1, 0.05, 1)),
            routing_detail::expert_popularity(mixtral(), normal_workload(1, 0.05, 2)));
}

TEST(Routing, TokenStreamDoesNotDependOnTheGpuCount) {
  const WorkloadConfig w = normal_workload(1001, 0.04, 11);
  const Routing on8 = generate_routing(mixtral(), w, 8);
  const Routing on3 = generate_routing(mixtral(), w, 3);
  std::vector<std::int32_t> ids8, ids3;
  std::vector<float> w8, w3;
  for (std::size_t g = 0; g < 8; ++g) {
    ids8.insert(ids8.end(), on8.expert_ids[g].begin(), on8.expert_ids[g].end());
    w8.insert(w8.end(), on8.gate_weights[g].begin(), on8.gate_weights[g].end());
  }
  for (std::size_t g = 0; g < 3; ++g) {
    ids3.insert(ids3.end(), on3.expert_ids[g].begin(), on3.expert_ids[g].end());
    w3.insert(w3.end(), on3.gate_weights[g].begin(), on3.gate_weights[g].end());
  }
  EXPECT_EQ(ids8, ids3);
  EXPECT_EQ(w8, w3);
}

// Pins the token stream of a uniform routing (which uses no floating-point
// library function: uniform popularity, integer-derived uniforms and
// comparisons only). A change here changes every generated workload and
// must be deliberate; a failure on another platform means the generator is
// not portable.
TEST(Routing, UniformTokenStreamIsPinned) {
  const Routing r = generate_routing(mixtral(), normal_workload(4096, 0.0, 1), 8);
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the expert ids
  for (const auto& ids : r.expert_ids)
    for (std::int32_t e : ids) {
      h ^= static_cast<std::uint64_t>(e);
      h *= 0x100000001b3ULL;
    }
  EXPECT_EQ(h, 0x7c9968924c4a3cffULL) << std::hex << "0x" << h;
}

// ---------------------------------------------------------------------------
// The sampler against its definition

// Brute force: perturb every logit log(p_e) with Gumbel noise, take the top k.
struct BruteForce {
  std::vector<double> inclusion;  // fraction of tokens that selected e
  std::vector<double> first;      // fraction of tokens whose top expert is e
  double mean_top_weight = 0.0;
  double var_top_weight = 0.0;
};

BruteForce brute_force_gumbel_top_k(const std::vector<double>& p, int k, int samples,
                                    std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const std::size_t n = p.size();
  BruteForce b;
  b.inclusion.assign(n, 0.0);
  b.first.assign(n, 0.0);
  std::vector<std::pair<double, std::size_t>> logits(n);
  double sum_w = 0.0, sum_w2 = 0.0;
  for (int s = 0; s < samples; ++s) {
    for (std::size_t e = 0; e < n; ++e) {
      const double u = (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53;
      logits[e] = {std::log(p[e]) - std::log(-std::log(u)), e};
    }
    std::partial_sort(logits.begin(), logits.begin() + k, logits.end(),
                      [](const auto& a, const auto& c) { return a.first > c.first; });
    double z = 0.0;
    for (int i = 0; i < k; ++i) {
      b.inclusion[logits[static_cast<std::size_t>(i)].second] += 1.0;
      z += std::exp(logits[static_cast<std::size_t>(i)].first - logits[0].first);
    }
    b.first[logits[0].second] += 1.0;
    sum_w += 1.0 / z;
    sum_w2 += 1.0 / (z * z);
  }
  for (double& x : b.inclusion) x /= samples;
  for (double& x : b.first) x /= samples;
  b.mean_top_weight = sum_w / samples;
  b.var_top_weight = sum_w2 / samples - b.mean_top_weight * b.mean_top_weight;
  return b;
}

TEST(Sampler, MatchesBruteForceGumbelTopK) {
  const ModelConfig model = model_of(8, 3);
  const WorkloadConfig w = zipf_workload(200000, 1.2, 21);
  const std::vector<double> p = routing_detail::expert_popularity(model, w);
  const Routing r = generate_routing(model, w, 4);
  const double n = static_cast<double>(r.total_tokens());
  const std::size_t k = 3;

  std::vector<double> inclusion(8, 0.0), first(8, 0.0);
  double sum_w = 0.0;
  for (std::size_t g = 0; g < 4; ++g)
    for (std::size_t t = 0; t < static_cast<std::size_t>(r.tokens_per_gpu[g]); ++t) {
      first[static_cast<std::size_t>(r.expert_ids[g][t * k])] += 1.0 / n;
      for (std::size_t i = 0; i < k; ++i)
        inclusion[static_cast<std::size_t>(r.expert_ids[g][t * k + i])] += 1.0 / n;
      sum_w += r.gate_weights[g][t * k];
    }
  const BruteForce b = brute_force_gumbel_top_k(p, 3, 200000, 99);
  const double m = 200000.0;
  for (std::size_t e = 0; e < 8; ++e) {
    // the top expert is e with probability p_e; compare both samples with it
    const double se_first = std::sqrt(p[e] * (1 - p[e]) / n);
    EXPECT_NEAR(first[e], p[e], 5 * se_first) << "expert " << e;
    EXPECT_NEAR(b.first[e], p[e], 5 * se_first) << "expert " << e;
    // inclusion: difference of two independent binomial proportions
    const double q = b.inclusion[e];
    const double se = std::sqrt(q * (1 - q) * (1 / n + 1 / m));
    EXPECT_NEAR(inclusion[e], q, 5 * se) << "expert " << e;
  }
  const double se_w = std::sqrt(b.var_top_weight * (1 / n + 1 / m));
  EXPECT_NEAR(sum_w / n, b.mean_top_weight, 5 * se_w);
}

TEST(InclusionProbabilities, ExactCases) {
  // k = 1: pi = p; k = E: pi = 1; uniform: pi = k / E
  const std::vector<double> p = {0.5, 0.3, 0.15, 0.05};
  EXPECT_EQ(routing_detail::inclusion_probabilities(p, 1), p);
  EXPECT_EQ(routing_detail::inclusion_probabilities(p, 4), std::vector<double>(4, 1.0));
  for (double x : routing_detail::inclusion_probabilities(std::vector<double>(16, 1.0 / 16), 5))
    EXPECT_NEAR(x, 5.0 / 16, 1e-8);

  // three experts, k = 2: e is left out iff it is drawn last,
  // P(e last) = sum over the two orders (i, j) of the others of p_i * p_j / (1 - p_i)
  const std::vector<double> q = {0.7, 0.25, 0.05};
  const std::vector<double> pi = routing_detail::inclusion_probabilities(q, 2);
  for (std::size_t e = 0; e < 3; ++e) {
    const std::size_t i = (e + 1) % 3, j = (e + 2) % 3;
    const double last = q[i] * q[j] / (1 - q[i]) + q[j] * q[i] / (1 - q[j]);
    EXPECT_NEAR(pi[e], 1.0 - last, 1e-8) << "expert " << e;
  }
}

TEST(InclusionProbabilities, SumToKForSkewedPopularities) {
  for (const auto& [experts, k, s] : {std::make_tuple(8, 2, 1.0), std::make_tuple(64, 4, 1.5),
                                      std::make_tuple(128, 8, 0.8), std::make_tuple(256, 8, 3.0),
                                      std::make_tuple(32, 6, 8.0), std::make_tuple(16, 4, 1000.0)}) {
    const std::vector<double> p =
        routing_detail::expert_popularity(model_of(experts, k), zipf_workload(1, s, 5));
    const std::vector<double> pi = routing_detail::inclusion_probabilities(p, k);
    const double sum = std::accumulate(pi.begin(), pi.end(), 0.0);
    EXPECT_NEAR(sum, k, 1e-7) << experts << " experts, top-" << k << ", s = " << s;
    for (std::size_t e = 0; e < p.size(); ++e) {
      EXPECT_GE(pi[e], p[e] * (1 - 1e-9));  // k >= 1 draws include e at least as often as one
      EXPECT_LE(pi[e], 1.0 + 1e-9);
    }
  }
}

// ---------------------------------------------------------------------------
// Imbalance

TEST(Imbalance, ZeroStdGivesUniformLoadUpToSamplingNoise) {
  const std::int64_t tokens = 8192;
  const double noise_ms = uniform_noise_ms(tokens, 8, 2);  // rms 0.0024
  EXPECT_EQ(routing_detail::expert_popularity(mixtral(), normal_workload(tokens, 0.0, 1)),
            std::vector<double>(8, 1.0 / 8));
  // load_std^2 / noise_ms is about chi-square with 7 degrees of freedom / 7:
  // its mean over 20 seeds has a standard deviation of sqrt(2/7/20) = 0.12
  double mean_ratio = 0.0;
  const int seeds = 20;
  for (int s = 1; s <= seeds; ++s) {
    const double ls = generate_routing(mixtral(), normal_workload(tokens, 0.0, s), 8).load_std();
    // a single seed beyond 4x the rms-square (chi2_7 > 28) has probability 2e-4
    EXPECT_LT(ls * ls, 4 * noise_ms) << "seed " << s;
    mean_ratio += ls * ls / noise_ms / seeds;
  }
  EXPECT_NEAR(mean_ratio, 1.0, 0.5);
}

TEST(Imbalance, CalibrationHitsTheRequestedExpectedLoadStd) {
  for (const auto& [experts, k, target] :
       {std::make_tuple(8, 2, 0.01), std::make_tuple(8, 2, 0.032), std::make_tuple(8, 2, 0.1),
        std::make_tuple(8, 1, 0.05), std::make_tuple(64, 4, 0.015), std::make_tuple(128, 8, 0.008),
        std::make_tuple(60, 4, 0.015)}) {
    for (std::uint64_t seed : {1u, 2u, 3u}) {
      const ModelConfig model = model_of(experts, k);
      const std::vector<double> p =
          routing_detail::expert_popularity(model, normal_workload(1, target, seed));
      EXPECT_NEAR(routing_detail::expected_load_std(p, k), target, 1e-5 * target)
          << experts << " experts, top-" << k << ", seed " << seed;
      EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
      for (double x : p) EXPECT_GT(x, 0.0);
    }
  }
  // with k = 1 and no expert at the floor the popularity std is the target itself
  const std::vector<double> p = routing_detail::expert_popularity(model_of(8, 1), normal_workload(1, 0.02, 4));
  EXPECT_NEAR(population_std(p), 0.02, 1e-7);
}

// Measured load std over seeds against the request. With f_e the measured
// and q_e the expected load fractions (std(q) = target by calibration),
//   load_std^2 = target^2 + (2/E) sum (q_e - 1/E)(f_e - q_e) + (1/E) sum (f_e - q_e)^2.
// The last term has mean sum_e pi_e (1 - pi_e) / (N k^2 E), at most the
// uniform value uniform_noise_ms(); so the mean load std lies in
// [target, sqrt(target^2 + uniform_noise_ms)] up to the seed-to-seed spread.
// The cross term gives a per-seed standard deviation of at most
// sqrt(max_e Var(f_e) / E) <= sqrt(1 / (4 N k^2 E)) (Var(f_e) = pi_e (1 - pi_e) / (N k^2));
// sqrt's curvature lowers the mean by about sd^2 / (2 target).
void expect_tracks(const ModelConfig& model, std::int64_t tokens, double target, int seeds) {
  double mean = 0.0;
  for (int s = 1; s <= seeds; ++s)
    mean += generate_routing(model, normal_workload(tokens, target, static_cast<std::uint64_t>(s)), 8)
                .load_std() / seeds;
  const double n = static_cast<double>(tokens), e = model.num_experts, k = model.top_k;
  const double sd_seed = std::sqrt(1.0 / (4.0 * n * k * k * e));
  const double tol = 4.0 * sd_seed / std::sqrt(static_cast<double>(seeds)) + sd_seed * sd_seed / target;
  const double high = std::sqrt(target * target + uniform_noise_ms(tokens, model.num_experts, model.top_k));
  SCOPED_TRACE(std::to_string(model.num_experts) + " experts, top-" + std::to_string(model.top_k) +
               ", target " + std::to_string(target) + ", tolerance " + std::to_string(tol));
  EXPECT_GE(mean, target - tol);
  EXPECT_LE(mean, high + tol);
}

TEST(Imbalance, MeasuredLoadStdTracksTheRequest) {
  for (double target : {0.01, 0.02, 0.032, 0.05, 0.1}) expect_tracks(mixtral(), 8192, target, 24);
  for (double target : {0.005, 0.01, 0.015}) expect_tracks(model_of(64, 4), 8192, target, 8);
  for (double target : {0.004, 0.008}) expect_tracks(qwen3(), 8192, target, 6);
}

TEST(Imbalance, LargerStdGivesLargerMeasuredLoadStd) {
  const std::vector<double> stds = {0.0, 0.02, 0.05, 0.1};
  std::vector<double> mean(stds.size(), 0.0);
  const int seeds = 10;
  for (std::size_t i = 0; i < stds.size(); ++i)
    for (int s = 1; s <= seeds; ++s)
      mean[i] += generate_routing(mixtral(), normal_workload(8192, stds[i], static_cast<std::uint64_t>(s)), 8)
                     .load_std() / seeds;
  for (std::size_t i = 1; i < stds.size(); ++i)
    EXPECT_GT(mean[i], mean[i - 1]) << "std " << stds[i] << " vs " << stds[i - 1];
}

TEST(Imbalance, ZipfLoadDecreasesWithRank) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const WorkloadConfig w = zipf_workload(65536, 1.0, seed);
    const std::vector<double> p = routing_detail::expert_popularity(mixtral(), w);
    // p follows 1/rank exactly
    std::vector<std::size_t> by_rank(8);
    std::iota(by_rank.begin(), by_rank.end(), 0);
    std::sort(by_rank.begin(), by_rank.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
    for (std::size_t r = 0; r < 8; ++r)
      EXPECT_NEAR(p[by_rank[r]] / p[by_rank[0]], 1.0 / static_cast<double>(r + 1), 1e-12);
    // the measured load follows the ranks
    const std::vector<std::int64_t> load = generate_routing(mixtral(), w, 8).expert_load();
    for (std::size_t r = 1; r < 8; ++r)
      EXPECT_LT(load[by_rank[r]], load[by_rank[r - 1]]) << "seed " << seed << " rank " << r + 1;
  }
  // the ranks are a seeded permutation
  EXPECT_NE(routing_detail::expert_popularity(mixtral(), zipf_workload(1, 1.0, 1)),
            routing_detail::expert_popularity(mixtral(), zipf_workload(1, 1.0, 2)));
  // s = 0 is uniform
  for (double x : routing_detail::expert_popularity(qwen3(), zipf_workload(1, 0.0, 1)))
    EXPECT_NEAR(x, 1.0 / 128, 1e-15);
}

// ---------------------------------------------------------------------------
// Traffic between GPUs

TEST(Routing, RowsBetweenMatchesABruteForceCount) {
  const std::vector<std::tuple<int, int, int>> cases = {{8, 2, 8}, {60, 4, 8}, {4, 2, 8}, {128, 8, 8}};
  for (const auto& [experts, k, gpus] : cases) {
    const Routing r = generate_routing(model_of(experts, k), normal_workload(5003, 0.0, 4), gpus);
    const ExpertPlacement pl = ExpertPlacement::contiguous(experts, gpus);
    const auto rows = r.rows_between(pl);
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(gpus));

    std::vector<std::vector<std::int64_t>> brute(static_cast<std::size_t>(gpus),
                                                 std::vector<std::int64_t>(static_cast<std::size_t>(gpus), 0));
    std::int64_t all = 0;
    for (std::size_t src = 0; src < static_cast<std::size_t>(gpus); ++src)
      for (std::int32_t e : r.expert_ids[src]) {
        // find the destination from the block boundaries, not from owner[]
        std::size_t dst = 0;
        while (!(e >= pl.first_expert[dst] && e < pl.first_expert[dst + 1])) ++dst;
        ++brute[src][dst];
      }
    EXPECT_EQ(rows, brute) << experts << " experts on " << gpus << " GPUs";
    for (std::size_t src = 0; src < rows.size(); ++src) {
      const std::int64_t row_sum = std::accumulate(rows[src].begin(), rows[src].end(), std::int64_t{0});
      EXPECT_EQ(row_sum, r.tokens_per_gpu[src] * k);
      all += row_sum;
    }
    EXPECT_EQ(all, 5003 * k);
    const auto load = r.expert_load();
    EXPECT_EQ(std::accumulate(load.begin(), load.end(), std::int64_t{0}), 5003 * k);
    if (experts < gpus) {  // GPUs without experts receive nothing
      for (std::size_t src = 0; src < rows.size(); ++src)
        for (int dst = experts; dst < gpus; ++dst) EXPECT_EQ(rows[src][static_cast<std::size_t>(dst)], 0);
    }
  }
}

TEST(Routing, RowsBetweenRejectsAMismatchedPlacement) {
  const Routing r = generate_routing(mixtral(), normal_workload(64, 0.0, 1), 8);
  EXPECT_THROW(r.rows_between(ExpertPlacement::contiguous(16, 8)), std::invalid_argument);
  EXPECT_THROW(r.rows_between(ExpertPlacement::contiguous(8, 4)), std::invalid_argument);
}

TEST(Routing, AMillionTokens) {
  const Routing r = generate_routing(mixtral(), normal_workload(1 << 20, 0.032, 1), 8);
  EXPECT_EQ(r.total_tokens(), 1 << 20);
  const auto load = r.expert_load();
  EXPECT_EQ(std::accumulate(load.begin(), load.end(), std::int64_t{0}), std::int64_t{2} << 20);
  // with 2M rows the sampling noise (rms 0.0002) is small against the request
  EXPECT_NEAR(r.load_std(), 0.032, 0.032 * 0.1);
}

// ---------------------------------------------------------------------------
// Bad arguments

void expect_invalid(const ModelConfig& m, const WorkloadConfig& w, int gpus, const std::string& names) {
  try {
    generate_routing(m, w, gpus);
    ADD_FAILURE() << "no exception; expected one naming " << names;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
  }
}

TEST(Routing, RejectsBadArgumentsNamingTheParameter) {
  expect_invalid(mixtral(), normal_workload(64, 0.0, 1), 0, "num_gpus = 0 must be >= 1");
  expect_invalid(mixtral(), normal_workload(64, 0.0, 1), -2, "num_gpus");
  expect_invalid(mixtral(), normal_workload(7, 0.0, 1), 8, "workload.tokens = 7 must be >= num_gpus (8)");
  expect_invalid(mixtral(), normal_workload(0, 0.0, 1), 1, "workload.tokens");
  expect_invalid(model_of(8, 0), normal_workload(64, 0.0, 1), 8, "model.top_k = 0 must be in 1..num_experts (8)");
  expect_invalid(model_of(8, 9), normal_workload(64, 0.0, 1), 8, "model.top_k = 9");
  expect_invalid(model_of(0, 1), normal_workload(64, 0.0, 1), 8, "model.num_experts = 0 must be >= 1");
  expect_invalid(mixtral(), normal_workload(64, -0.01, 1), 8, "workload.imbalance_std = -0.01 must be finite and >= 0");
  expect_invalid(mixtral(), normal_workload(64, std::nan(""), 1), 8, "workload.imbalance_std");
  expect_invalid(mixtral(), normal_workload(64, INFINITY, 1), 8, "workload.imbalance_std");
  // Mixtral: at most sqrt(1/16 - 1/64) = 0.2165
  expect_invalid(mixtral(), normal_workload(64, 0.3, 1), 8, "workload.imbalance_std = 0.3 must be in [0, 0.216506)");
  expect_invalid(model_of(8, 8), normal_workload(64, 0.01, 1), 8, "workload.imbalance_std = 0.01 must be 0 when");
  expect_invalid(model_of(1, 1), normal_workload(64, 0.01, 1), 8, "workload.imbalance_std = 0.01 must be 0 when");
  expect_invalid(mixtral(), zipf_workload(64, -1.0, 1), 8, "workload.zipf_s = -1 must be finite and >= 0");
  expect_invalid(mixtral(), zipf_workload(64, std::nan(""), 1), 8, "workload.zipf_s");
  WorkloadConfig bad = normal_workload(64, 0.0, 1);
  bad.distribution = "uniform";
  expect_invalid(mixtral(), bad, 8, "workload.distribution = \"uniform\" must be \"normal\" or \"zipf\"");
  // the model file is named when known
  ModelConfig from_file = model_of(8, 9);
  from_file.source_file = "configs/models/broken.yaml";
  expect_invalid(from_file, normal_workload(64, 0.0, 1), 8, "configs/models/broken.yaml");
}

TEST(Routing, UnreachableImbalanceIsReportedNotApproximated) {
  // Qwen3: below the absolute bound (0.0303) but beyond what the "normal"
  // popularity reaches with 128 experts (about 0.01): an error that says so,
  // not a routing with less imbalance than asked for.
  const ModelConfig model = qwen3();
  for (std::uint64_t seed : {1u, 2u}) {
    const double reach = routing_detail::max_normal_load_std(model, seed);
    EXPECT_GT(reach, 0.0);
    EXPECT_LT(reach, routing_detail::max_load_std(128, 8));
    if (reach < 0.02) {
      expect_invalid(model, normal_workload(8192, 0.02, seed), 8, "is not reachable");
    }
    // just below the reach is still hit
    const std::vector<double> p =
        routing_detail::expert_popularity(model, normal_workload(1, 0.98 * reach, seed));
    EXPECT_NEAR(routing_detail::expected_load_std(p, 8), 0.98 * reach, 1e-5 * reach);
    expect_invalid(model, normal_workload(8192, 1.01 * reach, seed), 8, "is not reachable");
  }
  EXPECT_EQ(routing_detail::max_normal_load_std(model_of(8, 8), 1), 0.0);
}

}  // namespace
}  // namespace moehub
