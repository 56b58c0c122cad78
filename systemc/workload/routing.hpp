// MoE workload generation: where the routed experts live (ExpertPlacement) and
// which experts every token of one MoE layer picks, with its gate weights
// (Routing). Plain C++17, no SystemC. The generation model is described in
// docs/workload.md.
#pragma once

#include <cstdint>
#include <vector>

#include "common/config.hpp"

namespace moehub {

/// Which GPU hosts which routed expert. Experts are spread as evenly as
/// possible in contiguous blocks; the first (E % G) GPUs get one extra expert.
/// With fewer experts than GPUs, the last GPUs host none.
struct ExpertPlacement {
  int num_gpus = 0;
  int num_experts = 0;
  std::vector<int> owner;         ///< owner[e] = GPU of expert e, size num_experts
  std::vector<int> first_expert;  ///< experts of GPU g are [first_expert[g], first_expert[g+1]), size num_gpus+1

  /// Throws std::invalid_argument unless num_experts >= 1 and num_gpus >= 1.
  static ExpertPlacement contiguous(int num_experts, int num_gpus);
  /// Number of experts hosted by `gpu`; throws std::out_of_range unless 0 <= gpu < num_gpus.
  int experts_on(int gpu) const;
};

/// Token-to-expert routing of one MoE layer on every GPU.
struct Routing {
  int num_gpus = 0;
  int num_experts = 0;
  int top_k = 0;
  /// Tokens held by each GPU: the total split evenly, the first (T % G) GPUs get one extra.
  std::vector<std::int64_t> tokens_per_gpu;
  /// Per GPU, row-major [tokens][top_k]: the experts of each token, distinct,
  /// ordered by decreasing router logit (so by decreasing gate weight).
  std::vector<std::vector<std::int32_t>> expert_ids;
  /// Per GPU, [tokens][top_k]: gate weights, > 0, summing to 1 per token.
  std::vector<std::vector<float>> gate_weights;

  std::int64_t total_tokens() const;
  /// Routed rows (token-expert pairs) per expert, over all GPUs; size num_experts.
  std::vector<std::int64_t> expert_load() const;
  /// rows[src][dst] = token-expert pairs of GPU src whose expert lives on GPU dst.
  /// Throws std::invalid_argument if the placement's num_experts or num_gpus
  /// differ from this routing's.
  std::vector<std::vector<std::int64_t>> rows_between(const ExpertPlacement& placement) const;
  /// Population standard deviation of the per-expert load fractions
  /// load[e] / sum(load) (the imbalance measure of the MoE-Hub paper).
  double load_std() const;
};

/// Generates the routing of `workload.tokens` tokens spread over `num_gpus`
/// GPUs for `model`. Deterministic: the same (model, workload, num_gpus) give
/// an identical Routing on any platform with IEEE-754 doubles (own PRNG and
/// samplers). A token's experts and weights depend only on the seed, the
/// model, the distribution parameters and the token's global index, not on
/// num_gpus. Throws std::invalid_argument naming the parameter and its allowed
/// range when an argument is out of range.
Routing generate_routing(const ModelConfig& model, const WorkloadConfig& workload, int num_gpus);

/// Details of the generator, exposed for tests and for reports.
namespace routing_detail {

/// Relative floor of the "normal" popularity: p_e >= kPopularityFloor / E
/// before renormalisation (assumption: no expert of a trained router goes
/// completely unused; 1% of the uniform share keeps every expert selectable
/// without visibly flattening the requested imbalance).
constexpr double kPopularityFloor = 0.01;

/// Per-expert selection probabilities p_e (sum 1) the routing is sampled
/// from. For "normal", the spread is calibrated so that the expected load std
/// equals workload.imbalance_std (see docs/workload.md). Validates like
/// generate_routing.
std::vector<double> expert_popularity(const ModelConfig& model, const WorkloadConfig& workload);

/// Inclusion probabilities pi_e of top-k sampling without replacement
/// proportional to p (Gumbel top-k, i.e. the k first arrivals of independent
/// exponential clocks with rates p_e); sum(pi) = k. Expected load fraction of
/// expert e is pi_e / k. Numerical integration, accurate to about 1e-7.
std::vector<double> inclusion_probabilities(const std::vector<double>& p, int top_k);

/// Largest expected load std the "normal" popularity of this seed reaches
/// (its scale taken to the limit, where only the experts with z_e above the
/// mean keep a visible share). Requests above it are rejected.
double max_normal_load_std(const ModelConfig& model, std::uint64_t seed);

/// Population standard deviation of pi_e / k: the load std expected for p.
double expected_load_std(const std::vector<double>& p, int top_k);

/// Largest load std any routing can have: k experts with load 1/k each, the
/// rest none: sqrt(1/(k E) - 1/E^2).
double max_load_std(int num_experts, int top_k);

}  // namespace routing_detail

}  // namespace moehub
