// MoE workload generation: expert placement and token-to-expert routing.
// The model behind the numbers is described in docs/workload.md.
#include "workload/routing.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

namespace moehub {

namespace {

// ---------------------------------------------------------------------------
// Random numbers: a counter-based splitmix64 stream per purpose, so that the
// result depends only on the seed and on what is drawn, never on the standard
// library's distributions (whose output differs between implementations).

/// The splitmix64 output function: a bijective 64-bit mixer.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio, odd

/// What a stream is used for; part of the stream key so that streams of
/// different purposes never coincide.
enum class Stream : std::uint64_t { kNormalPopularity = 1, kZipfRanks = 2, kToken = 3 };

class Rng {
 public:
  /// Stream `index` of purpose `purpose` under `seed`.
  Rng(std::uint64_t seed, Stream purpose, std::uint64_t index)
      : state_(mix64(mix64(seed + kGolden * static_cast<std::uint64_t>(purpose)) ^
                     (index * kGolden + 0xD1B54A32D192ED03ULL))) {}

  std::uint64_t next() {
    state_ += kGolden;
    return mix64(state_);
  }
  /// Uniform in the open interval (0, 1): 52 random bits, centred in their
  /// cell, so the result is exact and lies in [2^-53, 1 - 2^-53] (with 53 bits
  /// the top cell would round to 1.0).
  double uniform_open() {
    return (static_cast<double>(next() >> 12) + 0.5) * 0x1.0p-52;
  }
  /// Uniform integer in [0, n), n >= 1.
  std::uint64_t below(std::uint64_t n) {
    const auto v = static_cast<std::uint64_t>(uniform_open() * static_cast<double>(n));
    return std::min(v, n - 1);
  }
  /// Standard normal (Marsaglia's polar method; uses only log and sqrt).
  double normal() {
    for (;;) {
      const double u = 2.0 * uniform_open() - 1.0;
      const double v = 2.0 * uniform_open() - 1.0;
      const double s = u * u + v * v;
      if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
    }
  }
  /// Standard Gumbel (location 0, scale 1).
  double gumbel() { return -std::log(-std::log(uniform_open())); }

 private:
  std::uint64_t state_;
};

/// log(exp(a) + exp(b)) without overflow.
double log_add_exp(double a, double b) {
  const double hi = std::max(a, b);
  const double lo = std::min(a, b);
  return hi + std::log1p(std::exp(lo - hi));
}

// ---------------------------------------------------------------------------
// Argument checking.

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("generate_routing: " + what);
}

std::string model_where(const ModelConfig& model) {
  return model.source_file.empty() ? std::string() : " (model file " + model.source_file + ")";
}

void check_model(const ModelConfig& model) {
  if (model.num_experts < 1)
    fail("model.num_experts = " + std::to_string(model.num_experts) + model_where(model) +
         " must be >= 1");
  if (model.top_k < 1 || model.top_k > model.num_experts)
    fail("model.top_k = " + std::to_string(model.top_k) + model_where(model) +
         " must be in 1..num_experts (" + std::to_string(model.num_experts) + ")");
}

void check_distribution(const ModelConfig& model, const WorkloadConfig& workload) {
  if (workload.distribution == "normal") {
    const double s = workload.imbalance_std;
    if (!std::isfinite(s) || s < 0.0)
      fail("workload.imbalance_std = " + fmt(s) + " must be finite and >= 0");
    const double bound = routing_detail::max_load_std(model.num_experts, model.top_k);
    if (s > 0.0 && bound == 0.0)
      fail("workload.imbalance_std = " + fmt(s) + " must be 0 when num_experts = " +
           std::to_string(model.num_experts) + " and top_k = " + std::to_string(model.top_k) +
           model_where(model) + ": every token uses every expert, the load is always even");
    if (s > 0.0 && s >= bound)
      fail("workload.imbalance_std = " + fmt(s) + " must be in [0, " + fmt(bound) +
           ") for num_experts = " + std::to_string(model.num_experts) + " and top_k = " +
           std::to_string(model.top_k) + model_where(model) +
           ": no routing has a larger load std (k experts with 1/k of the load each)");
  } else if (workload.distribution == "zipf") {
    if (!std::isfinite(workload.zipf_s) || workload.zipf_s < 0.0)
      fail("workload.zipf_s = " + fmt(workload.zipf_s) + " must be finite and >= 0");
  } else {
    fail("workload.distribution = \"" + workload.distribution +
         "\" must be \"normal\" or \"zipf\"");
  }
}

// ---------------------------------------------------------------------------
// Popularity.

std::vector<double> normalised(std::vector<double> v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  for (double& x : v) x /= sum;
  return v;
}

/// p(s) = renormalise(max(1/E + s * zhat_e, floor / E)).
std::vector<double> normal_shape(const std::vector<double>& zhat, double scale) {
  const double e = static_cast<double>(zhat.size());
  std::vector<double> p(zhat.size());
  for (std::size_t i = 0; i < zhat.size(); ++i)
    p[i] = std::max(1.0 / e + scale * zhat[i], routing_detail::kPopularityFloor / e);
  return normalised(std::move(p));
}

/// z_e standard normal from the seed, standardised to mean 0 and population
/// std 1 so that the spread of this seed's draw does not add to the requested
/// imbalance. Needs num_experts >= 2.
std::vector<double> standardised_normals(int num_experts, std::uint64_t seed) {
  const std::size_t n = static_cast<std::size_t>(num_experts);
  Rng rng(seed, Stream::kNormalPopularity, 0);
  std::vector<double> zhat(n);
  double mean = 0.0;
  for (double& z : zhat) {
    z = rng.normal();
    mean += z;
  }
  mean /= static_cast<double>(n);
  double var = 0.0;
  for (double z : zhat) var += (z - mean) * (z - mean);
  const double sd = std::sqrt(var / static_cast<double>(n));
  // sd == 0 would need identical draws from 53-bit uniforms
  if (!(sd > 0.0)) fail("workload.seed = " + std::to_string(seed) +
                        " draws identical popularities; choose another seed");
  for (double& z : zhat) z = (z - mean) / sd;
  return zhat;
}

/// Beyond this scale p(s) no longer changes visibly: the experts at the floor
/// hold less than 1e-6 of the mass relative to the others.
constexpr double kScaleCap = 1e4;

std::vector<double> normal_popularity(const ModelConfig& model, const WorkloadConfig& workload) {
  const int k = model.top_k;
  const double target = workload.imbalance_std;
  if (target == 0.0)
    return std::vector<double>(static_cast<std::size_t>(model.num_experts), 1.0 / model.num_experts);
  // target > 0 passed check_distribution, so num_experts >= 2 and k < num_experts
  const std::vector<double> zhat = standardised_normals(model.num_experts, workload.seed);

  // Calibrate the scale s so that the expected load std of p(s) (after
  // top-k sampling without replacement and the floor) equals the target.
  // With k = 1 and no expert at the floor, s = target exactly.
  auto excess = [&](double s) {
    return routing_detail::expected_load_std(normal_shape(zhat, s), k) - target;
  };
  double lo = 0.0, f_lo = -target;
  double hi = target, f_hi = excess(hi);
  while (f_hi < 0.0) {
    if (hi >= kScaleCap) {
      fail("workload.imbalance_std = " + fmt(target) + " is not reachable for num_experts = " +
           std::to_string(model.num_experts) + ", top_k = " + std::to_string(k) +
           " and workload.seed = " + std::to_string(workload.seed) + model_where(model) +
           ": the \"normal\" popularity of this seed reaches a load std of at most " +
           fmt(f_hi + target) + " (many experts end at the floor); lower imbalance_std, "
           "or use distribution \"zipf\" for steeper imbalance");
    }
    lo = hi;
    f_lo = f_hi;
    hi = std::min(2.0 * hi, kScaleCap);
    f_hi = excess(hi);
  }
  // Illinois variant of regula falsi on the bracket [lo, hi]: g_lo and g_hi
  // are the (down-weighted) end values that steer the secant; the best point
  // seen and its true excess are kept apart from them.
  const double tol = 1e-6 * target;
  double s = std::abs(f_lo) < std::abs(f_hi) ? lo : hi;
  double f_s = std::min(std::abs(f_lo), std::abs(f_hi));
  double g_lo = f_lo, g_hi = f_hi;
  int side = 0;
  for (int it = 0; it < 200 && f_s > tol && hi - lo > 1e-15 * hi; ++it) {
    double m = (lo * g_hi - hi * g_lo) / (g_hi - g_lo);
    if (!(m > lo && m < hi)) m = 0.5 * (lo + hi);
    const double f = excess(m);
    if (std::abs(f) < f_s) {
      s = m;
      f_s = std::abs(f);
    }
    if (f < 0.0) {
      lo = m;
      g_lo = f;
      if (side == -1) g_hi *= 0.5;
      side = -1;
    } else {
      hi = m;
      g_hi = f;
      if (side == +1) g_lo *= 0.5;
      side = +1;
    }
  }
  return normal_shape(zhat, s);
}

std::vector<double> zipf_popularity(const ModelConfig& model, const WorkloadConfig& workload) {
  const std::size_t n = static_cast<std::size_t>(model.num_experts);
  // rank_of[e] in 1..E: a seeded Fisher-Yates permutation.
  std::vector<int> rank_of(n);
  for (std::size_t i = 0; i < n; ++i) rank_of[i] = static_cast<int>(i) + 1;
  Rng rng(workload.seed, Stream::kZipfRanks, 0);
  for (std::size_t i = n; i > 1; --i) std::swap(rank_of[i - 1], rank_of[rng.below(i)]);
  // p_e ~ rank^-s, computed in the log domain relative to rank 1 so that
  // large exponents do not overflow; floored at the smallest normal double so
  // that every expert stays selectable (a token needs k distinct experts).
  std::vector<double> p(n);
  for (std::size_t i = 0; i < n; ++i)
    p[i] = std::max(std::exp(-workload.zipf_s * std::log(static_cast<double>(rank_of[i]))),
                    std::numeric_limits<double>::min());
  return normalised(std::move(p));
}

// ---------------------------------------------------------------------------
// Token sampling.

/// Draws the top-k experts of one token and their router logits
/// log(p_e) + Gumbel, without drawing the logits of the experts that are not
/// selected: the maximum of log(p_e) + G_e over a set R is Gumbel distributed
/// with location log(sum_R p), its arg-max is e with probability p_e / sum_R p
/// independently of the value, and the next maximum is the same over the
/// remaining set, truncated below the previous maximum. This yields exactly
/// the distribution of "perturb every logit, take the top k" in O(k log E).
class TokenSampler {
 public:
  TokenSampler(const std::vector<double>& p, int top_k)
      : p_(p), cdf_(p.size()), chosen_(p.size(), 0), logits_(static_cast<std::size_t>(top_k)),
        top_k_(top_k) {
    double acc = 0.0;
    for (std::size_t e = 0; e < p.size(); ++e) cdf_[e] = acc += p[e];
    total_ = acc;
  }

  void sample(Rng& rng, std::int32_t* ids, float* weights) {
    double chosen_mass = 0.0;
    double prev_max = 0.0;
    for (int i = 0; i < top_k_; ++i) {
      std::size_t e = 0;
      double rest = 0.0;
      if (chosen_mass <= 0.5 * total_) {
        // rejection from the full distribution: accepts with probability >= 1/2
        rest = total_ - chosen_mass;
        do {
          const double x = rng.uniform_open() * total_;
          e = static_cast<std::size_t>(std::upper_bound(cdf_.begin(), cdf_.end(), x) - cdf_.begin());
          e = std::min(e, cdf_.size() - 1);
        } while (chosen_[e]);
      } else {
        // most of the mass is taken: scan the remaining experts
        for (std::size_t j = 0; j < p_.size(); ++j)
          if (!chosen_[j]) rest += p_[j];
        const double x = rng.uniform_open() * rest;
        double acc = 0.0;
        std::size_t last = 0;
        for (e = 0; e < p_.size(); ++e) {
          if (chosen_[e]) continue;
          last = e;
          acc += p_[e];
          if (x < acc) break;
        }
        if (e == p_.size()) e = last;  // rounding at the top end
      }
      const double g = std::log(rest) + rng.gumbel();  // max of the remaining, untruncated
      const double value = i == 0 ? g : -log_add_exp(-prev_max, -g);
      prev_max = value;
      logits_[static_cast<std::size_t>(i)] = value;
      chosen_[e] = 1;
      chosen_mass += p_[e];
      ids[i] = static_cast<std::int32_t>(e);
    }
    // renormalised top-k gate: softmax over the selected logits; logits_[0] is the largest
    const double top = logits_[0];
    double sum = 0.0;
    for (double& l : logits_) sum += (l = std::exp(l - top));
    for (int i = 0; i < top_k_; ++i) {
      const double w = logits_[static_cast<std::size_t>(i)] / sum;
      weights[i] = std::max(static_cast<float>(w), std::numeric_limits<float>::min());
      chosen_[static_cast<std::size_t>(ids[i])] = 0;
    }
  }

 private:
  const std::vector<double>& p_;
  std::vector<double> cdf_;
  std::vector<unsigned char> chosen_;
  std::vector<double> logits_;
  double total_ = 0.0;
  int top_k_;
};

}  // namespace

// ---------------------------------------------------------------------------
// ExpertPlacement

ExpertPlacement ExpertPlacement::contiguous(int num_experts, int num_gpus) {
  if (num_experts < 1)
    throw std::invalid_argument("ExpertPlacement::contiguous: num_experts = " +
                                std::to_string(num_experts) + " must be >= 1");
  if (num_gpus < 1)
    throw std::invalid_argument("ExpertPlacement::contiguous: num_gpus = " +
                                std::to_string(num_gpus) + " must be >= 1");
  ExpertPlacement pl;
  pl.num_experts = num_experts;
  pl.num_gpus = num_gpus;
  const int base = num_experts / num_gpus;
  const int extra = num_experts % num_gpus;
  pl.first_expert.resize(static_cast<std::size_t>(num_gpus) + 1);
  pl.owner.resize(static_cast<std::size_t>(num_experts));
  for (int g = 0; g <= num_gpus; ++g)
    pl.first_expert[static_cast<std::size_t>(g)] = g * base + std::min(g, extra);
  for (int g = 0; g < num_gpus; ++g)
    for (int e = pl.first_expert[static_cast<std::size_t>(g)];
         e < pl.first_expert[static_cast<std::size_t>(g) + 1]; ++e)
      pl.owner[static_cast<std::size_t>(e)] = g;
  return pl;
}

int ExpertPlacement::experts_on(int gpu) const {
  if (gpu < 0 || gpu >= num_gpus)
    throw std::out_of_range("ExpertPlacement::experts_on: gpu = " + std::to_string(gpu) +
                            " must be in 0.." + std::to_string(num_gpus - 1));
  return first_expert[static_cast<std::size_t>(gpu) + 1] - first_expert[static_cast<std::size_t>(gpu)];
}

// ---------------------------------------------------------------------------
// Routing

std::int64_t Routing::total_tokens() const {
  std::int64_t t = 0;
  for (std::int64_t n : tokens_per_gpu) t += n;
  return t;
}

std::vector<std::int64_t> Routing::expert_load() const {
  std::vector<std::int64_t> load(static_cast<std::size_t>(std::max(num_experts, 0)), 0);
  for (const auto& ids : expert_ids)
    for (std::int32_t e : ids) ++load[static_cast<std::size_t>(e)];
  return load;
}

std::vector<std::vector<std::int64_t>> Routing::rows_between(const ExpertPlacement& placement) const {
  if (placement.num_experts != num_experts || placement.num_gpus != num_gpus)
    throw std::invalid_argument(
        "Routing::rows_between: placement of " + std::to_string(placement.num_experts) +
        " experts on " + std::to_string(placement.num_gpus) + " GPUs does not match routing of " +
        std::to_string(num_experts) + " experts on " + std::to_string(num_gpus) + " GPUs");
  const std::size_t g = static_cast<std::size_t>(num_gpus);
  std::vector<std::vector<std::int64_t>> rows(g, std::vector<std::int64_t>(g, 0));
  for (std::size_t src = 0; src < expert_ids.size(); ++src)
    for (std::int32_t e : expert_ids[src])
      ++rows[src][static_cast<std::size_t>(placement.owner[static_cast<std::size_t>(e)])];
  return rows;
}

double Routing::load_std() const {
  const std::vector<std::int64_t> load = expert_load();
  if (load.empty()) return 0.0;
  double sum = 0.0;
  for (std::int64_t l : load) sum += static_cast<double>(l);
  if (sum == 0.0) return 0.0;
  const double n = static_cast<double>(load.size());
  const double mean = 1.0 / n;
  double var = 0.0;
  for (std::int64_t l : load) {
    const double d = static_cast<double>(l) / sum - mean;
    var += d * d;
  }
  return std::sqrt(var / n);
}

// ---------------------------------------------------------------------------
// Generation

namespace routing_detail {

double max_load_std(int num_experts, int top_k) {
  const double e = num_experts, k = top_k;
  return std::sqrt(std::max(0.0, 1.0 / (k * e) - 1.0 / (e * e)));
}

std::vector<double> inclusion_probabilities(const std::vector<double>& p, int top_k) {
  const std::size_t n = p.size();
  if (n == 0) return {};
  if (top_k < 1 || static_cast<std::size_t>(top_k) > n)
    throw std::invalid_argument("inclusion_probabilities: top_k = " + std::to_string(top_k) +
                                " must be in 1.." + std::to_string(n));
  double sum = 0.0, p_min = std::numeric_limits<double>::infinity();
  for (double x : p) {
    if (!(x > 0.0) || !std::isfinite(x))
      throw std::invalid_argument("inclusion_probabilities: every p_e must be finite and > 0");
    sum += x;
    p_min = std::min(p_min, x);
  }
  if (static_cast<std::size_t>(top_k) == n) return std::vector<double>(n, 1.0);
  if (top_k == 1) {
    std::vector<double> q(p);
    for (double& x : q) x /= sum;
    return q;
  }
  // Expert e is selected iff fewer than k of the other clocks T_j ~ Exp(p_j)
  // ring before its own:
  //   pi_e = int_0^inf p_e exp(-p_e t) P(N_{-e}(t) <= k-1) dt,
  // N_{-e}(t) = number of j != e with T_j < t (Poisson-binomial with
  // r_j = 1 - exp(-p_j t)). Up to t_a, P(N >= k) <= t^k / k! <= 1e-12 and the
  // integral is 1 - exp(-p_e t_a); beyond, Simpson's rule on y = ln t up to
  // t_b = 40 / p_min where every integrand is below exp(-40).
  const std::size_t k = static_cast<std::size_t>(top_k);
  std::vector<double> q(p);
  for (double& x : q) x /= sum;
  p_min /= sum;
  double k_fact = 1.0;
  for (std::size_t i = 2; i <= k; ++i) k_fact *= static_cast<double>(i);
  const double t_a = std::pow(1e-12 * k_fact, 1.0 / static_cast<double>(k));
  // t itself may exceed the double range for tiny p (steep Zipf): work with
  // y = ln t and p_j t = exp(ln p_j + y)
  const double y_a = std::log(t_a);
  const double y_b = std::max(
      std::log(40.0) - std::log(std::max(p_min, std::numeric_limits<double>::denorm_min())), y_a + 1.0);
  constexpr double kStep = 0.08;  // in ln t; differs from a 0.01 step by < 1e-8 (measured)
  std::size_t intervals = static_cast<std::size_t>(std::ceil((y_b - y_a) / kStep));
  intervals += intervals % 2;  // Simpson needs an even count
  const double h = (y_b - y_a) / static_cast<double>(intervals);

  std::vector<double> pi(n);
  for (std::size_t e = 0; e < n; ++e) pi[e] = -std::expm1(-q[e] * t_a);

  // pre[j*k + c] = P(c arrivals among experts < j); suf[j*k + c] = P(c arrivals among experts >= j)
  std::vector<double> log_q(n), qt(n);
  for (std::size_t j = 0; j < n; ++j) log_q[j] = std::log(q[j]);
  std::vector<double> pre((n + 1) * k), suf((n + 1) * k), r(n), stay(n);
  for (std::size_t step = 0; step <= intervals; ++step) {
    const double w = (step == 0 || step == intervals) ? 1.0 : (step % 2 ? 4.0 : 2.0);
    const double y = y_a + h * static_cast<double>(step);
    for (std::size_t j = 0; j < n; ++j) {
      qt[j] = std::exp(log_q[j] + y);  // p_j t
      stay[j] = std::exp(-qt[j]);
      r[j] = -std::expm1(-qt[j]);
    }
    std::fill(pre.begin(), pre.begin() + static_cast<std::ptrdiff_t>(k), 0.0);
    pre[0] = 1.0;
    for (std::size_t j = 0; j < n; ++j) {
      const double* a = &pre[j * k];
      double* b = &pre[(j + 1) * k];
      b[0] = a[0] * stay[j];
      for (std::size_t c = 1; c < k; ++c) b[c] = a[c] * stay[j] + a[c - 1] * r[j];
    }
    std::fill(suf.begin() + static_cast<std::ptrdiff_t>(n * k), suf.end(), 0.0);
    suf[n * k] = 1.0;
    for (std::size_t j = n; j-- > 0;) {
      const double* a = &suf[(j + 1) * k];
      double* b = &suf[j * k];
      b[0] = a[0] * stay[j];
      for (std::size_t c = 1; c < k; ++c) b[c] = a[c] * stay[j] + a[c - 1] * r[j];
    }
    for (std::size_t e = 0; e < n; ++e) {
      // P(N_{-e} <= k-1) = sum_a pre_e[a] * P(suffix after e <= k-1-a)
      const double* a = &pre[e * k];
      const double* b = &suf[(e + 1) * k];
      double cum_b = 0.0, f = 0.0;
      for (std::size_t c = 0; c < k; ++c) {
        cum_b += b[c];
        f += a[k - 1 - c] * cum_b;
      }
      // p_e t exp(-p_e t), written so that p_e t = inf gives 0
      pi[e] += (h / 3.0) * w * std::exp(log_q[e] + y - qt[e]) * f;
    }
  }
  return pi;
}

double expected_load_std(const std::vector<double>& p, int top_k) {
  const std::vector<double> pi = inclusion_probabilities(p, top_k);
  if (pi.empty()) return 0.0;
  double sum = 0.0;
  for (double x : pi) sum += x;
  const double n = static_cast<double>(pi.size());
  double var = 0.0;
  for (double x : pi) {
    const double d = x / sum - 1.0 / n;
    var += d * d;
  }
  return std::sqrt(var / n);
}

double max_normal_load_std(const ModelConfig& model, std::uint64_t seed) {
  check_model(model);
  if (model.num_experts < 2 || model.top_k == model.num_experts) return 0.0;
  return expected_load_std(normal_shape(standardised_normals(model.num_experts, seed), kScaleCap),
                           model.top_k);
}

std::vector<double> expert_popularity(const ModelConfig& model, const WorkloadConfig& workload) {
  check_model(model);
  check_distribution(model, workload);
  return workload.distribution == "zipf" ? zipf_popularity(model, workload)
                                         : normal_popularity(model, workload);
}

}  // namespace routing_detail

Routing generate_routing(const ModelConfig& model, const WorkloadConfig& workload, int num_gpus) {
  if (num_gpus < 1) fail("num_gpus = " + std::to_string(num_gpus) + " must be >= 1");
  check_model(model);
  if (workload.tokens < num_gpus)
    fail("workload.tokens = " + std::to_string(workload.tokens) + " must be >= num_gpus (" +
         std::to_string(num_gpus) + ")");
  const std::vector<double> p = routing_detail::expert_popularity(model, workload);

  Routing r;
  r.num_gpus = num_gpus;
  r.num_experts = model.num_experts;
  r.top_k = model.top_k;
  const std::size_t g_count = static_cast<std::size_t>(num_gpus);
  const std::int64_t base = workload.tokens / num_gpus;
  const std::int64_t extra = workload.tokens % num_gpus;
  r.tokens_per_gpu.resize(g_count);
  r.expert_ids.resize(g_count);
  r.gate_weights.resize(g_count);

  TokenSampler sampler(p, model.top_k);
  const std::size_t k = static_cast<std::size_t>(model.top_k);
  std::uint64_t global_token = 0;
  for (std::size_t g = 0; g < g_count; ++g) {
    const std::int64_t n = base + (static_cast<std::int64_t>(g) < extra ? 1 : 0);
    r.tokens_per_gpu[g] = n;
    auto& ids = r.expert_ids[g];
    auto& weights = r.gate_weights[g];
    ids.resize(static_cast<std::size_t>(n) * k);
    weights.resize(static_cast<std::size_t>(n) * k);
    for (std::size_t t = 0; t < static_cast<std::size_t>(n); ++t, ++global_token) {
      Rng rng(workload.seed, Stream::kToken, global_token);
      sampler.sample(rng, &ids[t * k], &weights[t * k]);
    }
  }
  return r;
}

}  // namespace moehub
