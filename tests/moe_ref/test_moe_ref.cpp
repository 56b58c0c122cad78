// Tests of the float64 MoE reference: gradients against central finite differences,
// forward against an independent per-token evaluation, routing rules, empty experts,
// relative_error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "moe_ref/moe_ref.hpp"

namespace {

using moehub::ref::ExpertWeights;
using moehub::ref::LayerShape;

std::vector<double> random_vec(std::size_t n, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

ExpertWeights random_weights(const LayerShape& s, std::mt19937_64& rng, double scale) {
  const std::size_t n = static_cast<std::size_t>(s.experts) * static_cast<std::size_t>(s.hidden) *
                        static_cast<std::size_t>(s.ffn);
  return {random_vec(n, rng, scale), random_vec(n, rng, scale), random_vec(n, rng, scale)};
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central difference of f() with respect to every element of v; f reads v.
template <typename F>
std::vector<double> numeric_grad(std::vector<double>& v, F f, double h = 1e-6) {
  std::vector<double> g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = f();
    v[i] = keep - h;
    const double down = f();
    v[i] = keep;
    g[i] = (up - down) / (2.0 * h);
  }
  return g;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double norm = 0.0;
  for (double w : want) norm += w * w;
  ASSERT_GT(norm, 0.0) << what << ": the reference gradient is zero, the check would be empty";
  EXPECT_LT(moehub::ref::relative_error(got, want), tol) << what;
}

// Tiny layer used by the finite-difference checks: every expert gets at least one row
// and the routing has no ties.
struct Tiny {
  LayerShape s{6, 5, 3, 4, 2};
  std::mt19937_64 rng{42};
  std::vector<double> x, w_router, d_out;
  ExpertWeights w;
  moehub::ref::RouterOutput ro;
  Tiny() {
    x = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
    w_router = random_vec(static_cast<std::size_t>(s.hidden * s.experts), rng);
    w = random_weights(s, rng, 0.5);
    d_out = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
    ro = moehub::ref::router_forward(s, x, w_router);
  }
  double expert_loss() {
    return dot(moehub::ref::experts_forward(s, x, ro.topk_ids, ro.topk_weights, w), d_out);
  }
};

TEST(MoeRef, ExpertGradientsMatchCentralDifferences) {
  Tiny t;
  const auto g = moehub::ref::experts_backward(t.s, t.x, t.ro.topk_ids, t.ro.topk_weights, t.w, t.d_out);
  auto loss = [&] { return t.expert_loss(); };
  expect_close(g.d_x, numeric_grad(t.x, loss), 1e-7, "d_x");
  expect_close(g.d_topk_weights, numeric_grad(t.ro.topk_weights, loss), 1e-7, "d_topk_weights");
  expect_close(g.d_w_gate, numeric_grad(t.w.w_gate, loss), 1e-7, "d_w_gate");
  expect_close(g.d_w_up, numeric_grad(t.w.w_up, loss), 1e-7, "d_w_up");
  expect_close(g.d_w_down, numeric_grad(t.w.w_down, loss), 1e-7, "d_w_down");
}

TEST(MoeRef, RouterBackwardMatchesCentralDifferencesOnLogits) {
  // With hidden == experts and an identity router, x holds the logits directly.
  const LayerShape s{5, 6, 2, 6, 3};
  std::mt19937_64 rng(7);
  std::vector<double> logits = random_vec(static_cast<std::size_t>(s.tokens * s.experts), rng, 2.0);
  std::vector<double> eye(static_cast<std::size_t>(s.experts * s.experts), 0.0);
  for (int e = 0; e < s.experts; ++e) eye[static_cast<std::size_t>(e * s.experts + e)] = 1.0;
  const std::vector<double> upstream = random_vec(static_cast<std::size_t>(s.tokens * s.top_k), rng);
  const auto ro = moehub::ref::router_forward(s, logits, eye);
  auto loss = [&] {
    const auto r = moehub::ref::router_forward(s, logits, eye);
    EXPECT_EQ(r.topk_ids, ro.topk_ids) << "the finite-difference step changed the selection";
    return dot(r.topk_weights, upstream);
  };
  const auto d_logits = moehub::ref::router_backward(s, ro, upstream);
  expect_close(d_logits, numeric_grad(logits, loss), 1e-7, "d_logits");
  // unselected experts get no gradient
  for (std::int64_t t = 0; t < s.tokens; ++t)
    for (int e = 0; e < s.experts; ++e) {
      bool selected = false;
      for (int j = 0; j < s.top_k; ++j) selected |= ro.topk_ids[static_cast<std::size_t>(t * s.top_k + j)] == e;
      if (!selected) {
        EXPECT_EQ(d_logits[static_cast<std::size_t>(t * s.experts + e)], 0.0);
      }
    }
}

TEST(MoeRef, WholeLayerInputGradientComposesExpertAndRouterPaths) {
  // d/dx of sum(out * d_out) with the routing recomputed from x: expert path plus
  // router path (d_logits w_router^T), checked against central differences.
  Tiny t;
  const auto g = moehub::ref::experts_backward(t.s, t.x, t.ro.topk_ids, t.ro.topk_weights, t.w, t.d_out);
  const auto d_logits = moehub::ref::router_backward(t.s, t.ro, g.d_topk_weights);
  std::vector<double> d_x = g.d_x;
  const auto H = static_cast<std::size_t>(t.s.hidden), E = static_cast<std::size_t>(t.s.experts);
  for (std::size_t tok = 0; tok < static_cast<std::size_t>(t.s.tokens); ++tok)
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t e = 0; e < E; ++e) d_x[tok * H + h] += d_logits[tok * E + e] * t.w_router[h * E + e];
  auto loss = [&] {
    const auto r = moehub::ref::router_forward(t.s, t.x, t.w_router);
    EXPECT_EQ(r.topk_ids, t.ro.topk_ids) << "the finite-difference step changed the selection";
    return dot(moehub::ref::experts_forward(t.s, t.x, r.topk_ids, r.topk_weights, t.w), t.d_out);
  };
  expect_close(d_x, numeric_grad(t.x, loss), 1e-7, "whole-layer d_x");
}

// Independent evaluation, one token and one selected expert at a time, straight from
// the formulas (no grouping, no blocking).
std::vector<double> naive_forward(const LayerShape& s, const std::vector<double>& x,
                                  const std::vector<std::int32_t>& ids, const std::vector<double>& wts,
                                  const ExpertWeights& w) {
  const auto T = static_cast<std::size_t>(s.tokens), H = static_cast<std::size_t>(s.hidden),
             F = static_cast<std::size_t>(s.ffn), K = static_cast<std::size_t>(s.top_k);
  std::vector<double> out(T * H, 0.0);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < K; ++j) {
      const auto e = static_cast<std::size_t>(ids[t * K + j]);
      std::vector<double> a(F);
      for (std::size_t f = 0; f < F; ++f) {
        double g = 0.0, u = 0.0;
        for (std::size_t h = 0; h < H; ++h) {
          g += x[t * H + h] * w.w_gate[(e * H + h) * F + f];
          u += x[t * H + h] * w.w_up[(e * H + h) * F + f];
        }
        a[f] = g / (1.0 + std::exp(-g)) * u;
      }
      for (std::size_t h = 0; h < H; ++h) {
        double y = 0.0;
        for (std::size_t f = 0; f < F; ++f) y += a[f] * w.w_down[(e * F + f) * H + h];
        out[t * H + h] += wts[t * K + j] * y;
      }
    }
  return out;
}

TEST(MoeRef, ForwardMatchesNaivePerTokenEvaluation) {
  // more rows per expert than one block of the blocked loops, uneven routing
  const LayerShape s{150, 24, 16, 8, 3};
  std::mt19937_64 rng(3);
  const auto x = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
  auto w_router = random_vec(static_cast<std::size_t>(s.hidden * s.experts), rng);
  for (std::size_t h = 0; h < static_cast<std::size_t>(s.hidden); ++h) w_router[h * 8 + 2] += 0.6;  // skew toward expert 2
  const auto w = random_weights(s, rng, 0.3);
  const auto ro = moehub::ref::router_forward(s, x, w_router);
  const auto got = moehub::ref::experts_forward(s, x, ro.topk_ids, ro.topk_weights, w);
  const auto want = naive_forward(s, x, ro.topk_ids, ro.topk_weights, w);
  EXPECT_LT(moehub::ref::relative_error(got, want), 1e-13);
}

TEST(MoeRef, RouterSelectsDescendingWithTiesToLowerIdAndRenormalises) {
  const LayerShape s{3, 4, 1, 4, 2};
  std::vector<double> eye(16, 0.0);
  for (int e = 0; e < 4; ++e) eye[static_cast<std::size_t>(e * 4 + e)] = 1.0;
  const std::vector<double> logits = {0.0, 3.0, 1.0, 2.0,   // -> 1, 3
                                      5.0, 1.0, 5.0, 5.0,   // three-way tie -> 0, 2
                                      1.0, 1.0, 1.0, 1.0};  // all equal -> 0, 1
  const auto ro = moehub::ref::router_forward(s, logits, eye);
  EXPECT_EQ(ro.topk_ids, (std::vector<std::int32_t>{1, 3, 0, 2, 0, 1}));
  const double e1 = std::exp(1.0);
  EXPECT_NEAR(ro.topk_weights[0], e1 / (e1 + 1.0), 1e-15);
  EXPECT_NEAR(ro.topk_weights[1], 1.0 / (e1 + 1.0), 1e-15);
  for (std::size_t i = 2; i < 6; ++i) EXPECT_DOUBLE_EQ(ro.topk_weights[i], 0.5);
  for (int t = 0; t < 3; ++t) {
    double sum = 0.0;
    for (int e = 0; e < 4; ++e) sum += ro.probs[static_cast<std::size_t>(t * 4 + e)];
    EXPECT_NEAR(sum, 1.0, 1e-15);
  }
  // softmax of the first row: p_1 = e^3 / (1 + e^3 + e + e^2)
  EXPECT_NEAR(ro.probs[1], std::exp(3.0) / (1 + std::exp(3.0) + std::exp(1.0) + std::exp(2.0)), 1e-15);
}

TEST(MoeRef, ExpertsWithoutTokensHaveZeroWeightGradients) {
  const LayerShape s{20, 6, 4, 5, 2};
  std::mt19937_64 rng(11);
  const auto x = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
  const auto w = random_weights(s, rng, 0.5);
  const auto d_out = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
  // only experts 0, 2 and 3 are used; 1 and 4 get no tokens
  std::vector<std::int32_t> ids;
  std::vector<double> wts;
  for (int t = 0; t < s.tokens; ++t) {
    ids.push_back(t % 2 == 0 ? 0 : 3);
    ids.push_back(2);
    wts.push_back(0.7);
    wts.push_back(0.3);
  }
  const auto g = moehub::ref::experts_backward(s, x, ids, wts, w, d_out);
  const std::size_t per = static_cast<std::size_t>(s.hidden * s.ffn);
  for (std::size_t e = 0; e < 5; ++e) {
    double norm = 0.0;
    for (std::size_t i = 0; i < per; ++i)
      norm += std::fabs(g.d_w_gate[e * per + i]) + std::fabs(g.d_w_up[e * per + i]) + std::fabs(g.d_w_down[e * per + i]);
    if (e == 1 || e == 4) {
      EXPECT_EQ(norm, 0.0) << "expert " << e;
    } else {
      EXPECT_GT(norm, 0.0) << "expert " << e;
    }
  }
}

TEST(MoeRef, ZeroTokensGiveEmptyOutputs) {
  const LayerShape s{0, 4, 3, 2, 1};
  std::mt19937_64 rng(5);
  const auto w = random_weights(s, rng, 1.0);
  const auto out = moehub::ref::experts_forward(s, {}, {}, {}, w);
  EXPECT_TRUE(out.empty());
  const auto g = moehub::ref::experts_backward(s, {}, {}, {}, w, {});
  EXPECT_EQ(g.d_w_gate, std::vector<double>(24, 0.0));
}

TEST(MoeRef, RejectsInconsistentInputs) {
  const LayerShape s{2, 3, 2, 2, 1};
  std::mt19937_64 rng(1);
  const auto w = random_weights(s, rng, 1.0);
  const auto x = random_vec(6, rng);
  EXPECT_THROW(moehub::ref::experts_forward(s, x, {0, 2}, {1.0, 1.0}, w), std::invalid_argument);   // id >= experts
  EXPECT_THROW(moehub::ref::experts_forward(s, x, {0, -1}, {1.0, 1.0}, w), std::invalid_argument);  // id < 0
  EXPECT_THROW(moehub::ref::experts_forward(s, x, {0}, {1.0}, w), std::invalid_argument);           // too few ids
  EXPECT_THROW(moehub::ref::experts_forward(s, {1.0}, {0, 1}, {1.0, 1.0}, w), std::invalid_argument);
  EXPECT_THROW(moehub::ref::router_forward({2, 3, 2, 2, 3}, x, random_vec(6, rng)), std::invalid_argument);  // k > E
  EXPECT_THROW(moehub::ref::router_forward(s, x, random_vec(5, rng)), std::invalid_argument);
}

TEST(MoeRef, RelativeErrorOnKnownVectors) {
  const std::vector<double> ref = {3.0, 4.0};  // ||ref|| = 5
  EXPECT_DOUBLE_EQ(moehub::ref::relative_error(std::vector<double>{3.0, 4.0}, ref), 0.0);
  EXPECT_DOUBLE_EQ(moehub::ref::relative_error(std::vector<double>{3.0, 5.0}, ref), 0.2);
  EXPECT_DOUBLE_EQ(moehub::ref::relative_error(std::vector<double>{0.0, 0.0}, ref), 1.0);
  EXPECT_DOUBLE_EQ(moehub::ref::relative_error(std::vector<double>{6.0, 8.0}, ref), 1.0);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(moehub::ref::relative_error(std::vector<double>{nan, 4.0}, ref), inf);
  EXPECT_EQ(moehub::ref::relative_error(std::vector<double>{3.0, inf}, ref), inf);
  EXPECT_EQ(moehub::ref::relative_error(std::vector<double>{3.0, 4.0}, std::vector<double>{nan, 4.0}), inf);
  EXPECT_EQ(moehub::ref::relative_error(std::vector<double>{3.0}, ref), inf);  // size mismatch
  // zero reference: the absolute norm
  EXPECT_DOUBLE_EQ(moehub::ref::relative_error(std::vector<double>{0.0, 0.0}, std::vector<double>{0.0, 0.0}), 0.0);
  EXPECT_DOUBLE_EQ(moehub::ref::relative_error(std::vector<double>{3.0, 4.0}, std::vector<double>{0.0, 0.0}), 5.0);
}

}  // namespace

namespace {

TEST(MoeRef, ResultsDoNotDependOnTheThreadCount) {
  const LayerShape s{300, 16, 8, 12, 3};
  std::mt19937_64 rng(9);
  const auto x = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
  const auto w_router = random_vec(static_cast<std::size_t>(s.hidden * s.experts), rng);
  const auto w = random_weights(s, rng, 0.4);
  const auto d_out = random_vec(static_cast<std::size_t>(s.tokens * s.hidden), rng);
  const auto ro = moehub::ref::router_forward(s, x, w_router);
  moehub::ref::set_num_threads(1);
  EXPECT_EQ(moehub::ref::num_threads(), 1);
  const auto out1 = moehub::ref::experts_forward(s, x, ro.topk_ids, ro.topk_weights, w);
  const auto g1 = moehub::ref::experts_backward(s, x, ro.topk_ids, ro.topk_weights, w, d_out);
  moehub::ref::set_num_threads(5);
  EXPECT_EQ(moehub::ref::num_threads(), 5);
  const auto out5 = moehub::ref::experts_forward(s, x, ro.topk_ids, ro.topk_weights, w);
  const auto g5 = moehub::ref::experts_backward(s, x, ro.topk_ids, ro.topk_weights, w, d_out);
  moehub::ref::set_num_threads(0);
  EXPECT_GE(moehub::ref::num_threads(), 1);
  EXPECT_EQ(out1, out5);  // bit-identical
  EXPECT_EQ(g1.d_x, g5.d_x);
  EXPECT_EQ(g1.d_topk_weights, g5.d_topk_weights);
  EXPECT_EQ(g1.d_w_gate, g5.d_w_gate);
  EXPECT_EQ(g1.d_w_up, g5.d_w_up);
  EXPECT_EQ(g1.d_w_down, g5.d_w_down);
}

}  // namespace
