// moehub::ref -- float64 CPU reference of one MoE layer (top-k softmax router,
// SwiGLU experts, weighted combine), forward and backward.
//
// Every tensor is a row-major std::vector<double>. The reference is the ground truth
// the GPU kernels (bf16 with fp32 accumulation) are checked against, so it is written
// as plain loops in float64 that follow the formulas below; the loops are tiled so that
// layers of a few thousand tokens run in seconds on one core, and the experts are spread
// over threads (set_num_threads) without changing a bit of the results.
//
//   logits[t][e] = sum_h x[t][h] * w_router[h][e]
//   probs[t]     = softmax(logits[t])
//   topk_ids[t]  = the top_k experts by probability (descending, ties -> lower id)
//   topk_weights[t][j] = probs[t][topk_ids[t][j]] / sum_j' probs[t][topk_ids[t][j']]
//   g = x Wg_e, u = x Wu_e, a = silu(g) * u, y_e(x) = a Wd_e     (silu(g) = g * sigmoid(g))
//   out[t] = sum_j topk_weights[t][j] * y_{topk_ids[t][j]}(x[t])
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace moehub::ref {

struct LayerShape {
  std::int64_t tokens;  ///< tokens in the layer's input
  int hidden;           ///< H, model width
  int ffn;              ///< F, width of one expert's intermediate
  int experts;          ///< E, number of routed experts
  int top_k;            ///< k, experts selected per token
};

struct ExpertWeights {          // SwiGLU experts: y_e(x) = (silu(x Wg_e) * (x Wu_e)) Wd_e
  std::vector<double> w_gate;   // [experts][hidden][ffn]
  std::vector<double> w_up;     // [experts][hidden][ffn]
  std::vector<double> w_down;   // [experts][ffn][hidden]
};

struct RouterOutput {
  std::vector<double> probs;           // [tokens][experts] softmax of logits = x * w_router ([hidden][experts])
  std::vector<std::int32_t> topk_ids;  // [tokens][top_k], descending probability, ties -> lower id
  std::vector<double> topk_weights;    // [tokens][top_k], renormalised over the k selected (sum 1)
};

/// Router forward. Throws std::invalid_argument on inconsistent sizes or top_k > experts.
RouterOutput router_forward(const LayerShape&, const std::vector<double>& x,
                            const std::vector<double>& w_router);

/// out[t] = sum_j topk_weights[t][j] * y_{topk_ids[t][j]}(x[t]); returns [tokens][hidden].
/// Throws std::invalid_argument on inconsistent sizes or an expert id outside [0, experts).
std::vector<double> experts_forward(const LayerShape&, const std::vector<double>& x,
                                    const std::vector<std::int32_t>& topk_ids,
                                    const std::vector<double>& topk_weights,
                                    const ExpertWeights&);

struct ExpertGrads {
  std::vector<double> d_x;             // [tokens][hidden]  (expert path; router treated as an input)
  std::vector<double> d_topk_weights;  // [tokens][top_k]   gradient w.r.t. the gate weights ("router probabilities")
  std::vector<double> d_w_gate, d_w_up, d_w_down;  // shapes as the weights
};

/// Backward of experts_forward for the upstream gradient d_out ([tokens][hidden]).
/// The routing (ids and weights) is an input: d_x holds only the expert path.
ExpertGrads experts_backward(const LayerShape&, const std::vector<double>& x,
                             const std::vector<std::int32_t>& topk_ids,
                             const std::vector<double>& topk_weights, const ExpertWeights&,
                             const std::vector<double>& d_out);

/// Router backward: from d_topk_weights to d_logits ([tokens][experts]) through the
/// renormalised top-k softmax (the top-k selection itself is piecewise constant).
/// Since w = p_sel / sum(p_sel) equals softmax over the selected logits only,
/// d_logits[t][e] = w_e * (d_w_e - sum_j w_j d_w_j) for selected e and 0 otherwise.
std::vector<double> router_backward(const LayerShape&, const RouterOutput&,
                                    const std::vector<double>& d_topk_weights);

/// Threads used by experts_forward / experts_backward (experts are spread over them;
/// the results are bit-identical for any count). n <= 0 restores the default, the
/// hardware concurrency.
void set_num_threads(int n);
int num_threads();

/// ||got - ref||_2 / ||ref||_2 over n elements. Returns +inf when any element of got or
/// ref is NaN or infinite; returns ||got||_2 (0 when equal) when ||ref|| is 0.
double relative_error(const double* got, const double* ref, std::size_t n);

/// Convenience overload over whole vectors (sizes must match, else +inf).
double relative_error(const std::vector<double>& got, const std::vector<double>& ref);

}  // namespace moehub::ref
