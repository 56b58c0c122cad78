// float64 reference of the MoE layer. See moe_ref.hpp for the formulas.
//
// The expert loops work expert by expert on the rows routed to that expert, in blocks
// of kRowBlock rows: for each weight row, the block's rows are updated together, so
// the weight row stays in L1 while it is reused (i-k-j order, unit stride inner loops).
#include "moe_ref/moe_ref.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace moehub::ref {
namespace {

constexpr std::size_t kRowBlock = 64;

std::size_t sz(std::int64_t v) { return static_cast<std::size_t>(v); }

void check_shape(const LayerShape& s) {
  if (s.tokens < 0) throw std::invalid_argument("LayerShape.tokens must be >= 0");
  if (s.hidden <= 0) throw std::invalid_argument("LayerShape.hidden must be > 0");
  if (s.ffn <= 0) throw std::invalid_argument("LayerShape.ffn must be > 0");
  if (s.experts <= 0) throw std::invalid_argument("LayerShape.experts must be > 0");
  if (s.top_k <= 0 || s.top_k > s.experts)
    throw std::invalid_argument("LayerShape.top_k must be in [1, experts]");
}

void check_size(const char* what, std::size_t got, std::size_t want) {
  if (got != want)
    throw std::invalid_argument(std::string(what) + " has " + std::to_string(got) +
                                " elements, expected " + std::to_string(want));
}

void check_routing(const LayerShape& s, const std::vector<std::int32_t>& ids,
                   const std::vector<double>& weights) {
  const std::size_t n = sz(s.tokens) * sz(s.top_k);
  check_size("topk_ids", ids.size(), n);
  check_size("topk_weights", weights.size(), n);
  for (std::size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= s.experts)
      throw std::invalid_argument("topk_ids[" + std::to_string(i) + "] = " +
                                  std::to_string(ids[i]) + " is outside [0, experts)");
}

void check_weights(const LayerShape& s, const ExpertWeights& w) {
  const std::size_t n = sz(s.experts) * sz(s.hidden) * sz(s.ffn);
  check_size("w_gate", w.w_gate.size(), n);
  check_size("w_up", w.w_up.size(), n);
  check_size("w_down", w.w_down.size(), n);
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

std::atomic<int> g_threads{0};  // 0: std::thread::hardware_concurrency()

// The (token, slot) pairs routed to each expert, in token order.
struct Assignment { std::int64_t token; int slot; };
std::vector<std::vector<Assignment>> group_by_expert(const LayerShape& s,
                                                     const std::vector<std::int32_t>& ids) {
  std::vector<std::vector<Assignment>> rows(sz(s.experts));
  for (std::int64_t t = 0; t < s.tokens; ++t)
    for (int j = 0; j < s.top_k; ++j)
      rows[sz(ids[sz(t) * sz(s.top_k) + sz(j)])].push_back({t, j});
  return rows;
}

// c[r][0..n) += sum_i A(r, i) * b[i][0..n) for r < rows, i < kdim, where
// A(r, i) = a[r * rs + i * cs] (b: [kdim][n], c: [rows][n]).
// Tiles of 4 rows x kCols columns of c stay in L1 while the whole of kdim is summed
// into them, each loaded row piece of b serving four rows.
void gemm_strided_acc(std::size_t rows, std::size_t kdim, std::size_t n, const double* a, std::size_t rs,
                      std::size_t cs, const double* b, double* c) {
  constexpr std::size_t kCols = 64;
  for (std::size_t j0 = 0; j0 < n; j0 += kCols) {
    const std::size_t nj = std::min(kCols, n - j0);
    std::size_t r = 0;
    for (; r + 4 <= rows; r += 4) {
      double* c0 = c + r * n + j0;
      double* c1 = c0 + n;
      double* c2 = c1 + n;
      double* c3 = c2 + n;
      for (std::size_t i = 0; i < kdim; ++i) {
        const double* ai = a + r * rs + i * cs;
        const double v0 = ai[0], v1 = ai[rs], v2 = ai[2 * rs], v3 = ai[3 * rs];
        const double* brow = b + i * n + j0;
        for (std::size_t j = 0; j < nj; ++j) {
          const double bv = brow[j];
          c0[j] += v0 * bv;
          c1[j] += v1 * bv;
          c2[j] += v2 * bv;
          c3[j] += v3 * bv;
        }
      }
    }
    for (; r < rows; ++r) {
      double* crow = c + r * n + j0;
      for (std::size_t i = 0; i < kdim; ++i) {
        const double av = a[r * rs + i * cs];
        const double* brow = b + i * n + j0;
        for (std::size_t j = 0; j < nj; ++j) crow[j] += av * brow[j];
      }
    }
  }
}

// c[r][0..n) += sum_i a[r][i] * b[i][0..n)  (a: [rows][kdim], b: [kdim][n], c: [rows][n])
void gemm_acc(std::size_t rows, std::size_t kdim, std::size_t n, const double* a, const double* b, double* c) {
  gemm_strided_acc(rows, kdim, n, a, kdim, 1, b, c);
}

// c[i][0..n) += sum_r a[r][i] * b[r][0..n)  (a: [rows][kdim], b: [rows][n], c: [kdim][n])
void gemm_at_acc(std::size_t rows, std::size_t kdim, std::size_t n, const double* a, const double* b, double* c) {
  gemm_strided_acc(kdim, rows, n, a, 1, kdim, b, c);
}

// t[j][i] = m[i][j]  (m: [rows][cols])
void transpose(std::size_t rows, std::size_t cols, const double* m, double* t) {
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) t[j * rows + i] = m[i * cols + j];
}

// Runs work(e) for every expert with rows, on up to num_threads() threads, the experts
// with most rows first. Every expert is handled by exactly one thread and writes only
// its own outputs, so the results do not depend on the number of threads.
template <typename Work>
void parallel_over_experts(const std::vector<std::vector<Assignment>>& rows_of, Work work) {
  std::vector<std::size_t> order;
  for (std::size_t e = 0; e < rows_of.size(); ++e)
    if (!rows_of[e].empty()) order.push_back(e);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rows_of[a].size() > rows_of[b].size(); });
  const std::size_t threads = std::min(order.size(), static_cast<std::size_t>(num_threads()));
  if (threads <= 1) {
    for (const std::size_t e : order) work(e);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    try {
      for (std::size_t i; (i = next.fetch_add(1)) < order.size();) work(order[i]);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next.store(order.size());
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

// Forward of one expert on a block of gathered rows: gate, up, act ([rows][F]).
void expert_hidden(std::size_t rows, std::size_t H, std::size_t F, const double* xb,
                   const double* wg, const double* wu, double* g, double* u, double* act) {
  std::fill(g, g + rows * F, 0.0);
  std::fill(u, u + rows * F, 0.0);
  gemm_acc(rows, H, F, xb, wg, g);
  gemm_acc(rows, H, F, xb, wu, u);
  for (std::size_t i = 0; i < rows * F; ++i) act[i] = g[i] * sigmoid(g[i]) * u[i];
}

}  // namespace

void set_num_threads(int n) { g_threads.store(n > 0 ? n : 0); }

int num_threads() {
  const int n = g_threads.load();
  if (n > 0) return n;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

RouterOutput router_forward(const LayerShape& s, const std::vector<double>& x,
                            const std::vector<double>& w_router) {
  check_shape(s);
  const std::size_t T = sz(s.tokens), H = sz(s.hidden), E = sz(s.experts), K = sz(s.top_k);
  check_size("x", x.size(), T * H);
  check_size("w_router", w_router.size(), H * E);
  RouterOutput out;
  out.probs.assign(T * E, 0.0);
  out.topk_ids.assign(T * K, 0);
  out.topk_weights.assign(T * K, 0.0);
  std::vector<int> order(E);
  for (std::size_t t = 0; t < T; ++t) {
    double* p = &out.probs[t * E];
    gemm_acc(1, H, E, &x[t * H], w_router.data(), p);  // logits
    const double mx = *std::max_element(p, p + E);
    double sum = 0.0;
    for (std::size_t e = 0; e < E; ++e) sum += (p[e] = std::exp(p[e] - mx));
    for (std::size_t e = 0; e < E; ++e) p[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(K), order.end(),
                      [p](int a, int b) {
                        return p[a] > p[b] || (p[a] == p[b] && a < b);
                      });
    double sel = 0.0;
    for (std::size_t j = 0; j < K; ++j) sel += p[order[j]];
    for (std::size_t j = 0; j < K; ++j) {
      out.topk_ids[t * K + j] = order[j];
      out.topk_weights[t * K + j] = p[order[j]] / sel;
    }
  }
  return out;
}

std::vector<double> experts_forward(const LayerShape& s, const std::vector<double>& x,
                                    const std::vector<std::int32_t>& topk_ids,
                                    const std::vector<double>& topk_weights,
                                    const ExpertWeights& w) {
  check_shape(s);
  const std::size_t T = sz(s.tokens), H = sz(s.hidden), F = sz(s.ffn), K = sz(s.top_k);
  check_size("x", x.size(), T * H);
  check_routing(s, topk_ids, topk_weights);
  check_weights(s, w);
  const auto rows_of = group_by_expert(s, topk_ids);
  // y of every (token, slot), then the weighted sum over the slots in slot order
  std::vector<double> y_rows(T * K * H, 0.0);
  parallel_over_experts(rows_of, [&](std::size_t e) {
    std::vector<double> xb(kRowBlock * H), g(kRowBlock * F), u(kRowBlock * F), act(kRowBlock * F),
        y(kRowBlock * H);
    const double* wg = &w.w_gate[e * H * F];
    const double* wu = &w.w_up[e * H * F];
    const double* wd = &w.w_down[e * F * H];
    const auto& rows = rows_of[e];
    for (std::size_t r0 = 0; r0 < rows.size(); r0 += kRowBlock) {
      const std::size_t nb = std::min(kRowBlock, rows.size() - r0);
      for (std::size_t r = 0; r < nb; ++r)
        std::copy_n(&x[sz(rows[r0 + r].token) * H], H, &xb[r * H]);
      expert_hidden(nb, H, F, xb.data(), wg, wu, g.data(), u.data(), act.data());
      std::fill(y.begin(), y.end(), 0.0);
      gemm_acc(nb, F, H, act.data(), wd, y.data());
      for (std::size_t r = 0; r < nb; ++r) {
        const Assignment& a = rows[r0 + r];
        std::copy_n(&y[r * H], H, &y_rows[(sz(a.token) * K + sz(a.slot)) * H]);
      }
    }
  });
  std::vector<double> out(T * H, 0.0);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < K; ++j) {
      const double wt = topk_weights[t * K + j];
      const double* yr = &y_rows[(t * K + j) * H];
      double* o = &out[t * H];
      for (std::size_t h = 0; h < H; ++h) o[h] += wt * yr[h];
    }
  return out;
}

ExpertGrads experts_backward(const LayerShape& s, const std::vector<double>& x,
                             const std::vector<std::int32_t>& topk_ids,
                             const std::vector<double>& topk_weights, const ExpertWeights& w,
                             const std::vector<double>& d_out) {
  check_shape(s);
  const std::size_t T = sz(s.tokens), H = sz(s.hidden), F = sz(s.ffn), K = sz(s.top_k),
                    E = sz(s.experts);
  check_size("x", x.size(), T * H);
  check_size("d_out", d_out.size(), T * H);
  check_routing(s, topk_ids, topk_weights);
  check_weights(s, w);
  ExpertGrads gr;
  gr.d_topk_weights.assign(T * K, 0.0);
  gr.d_w_gate.assign(E * H * F, 0.0);
  gr.d_w_up.assign(E * H * F, 0.0);
  gr.d_w_down.assign(E * F * H, 0.0);
  const auto rows_of = group_by_expert(s, topk_ids);
  // d_x of every (token, slot), summed over the slots in slot order at the end; each
  // expert's weight gradients are written by the one thread that handles the expert
  std::vector<double> dx_rows(T * K * H, 0.0);
  parallel_over_experts(rows_of, [&](std::size_t e) {
    std::vector<double> xb(kRowBlock * H), dy(kRowBlock * H), g(kRowBlock * F), u(kRowBlock * F),
        act(kRowBlock * F), da(kRowBlock * F), dg(kRowBlock * F), du(kRowBlock * F), dxb(kRowBlock * H),
        tmp(kRowBlock * H);
    std::vector<double> wg_t(F * H), wu_t(F * H), wd_t(H * F);  // transposed weights of the expert
    const double* wg = &w.w_gate[e * H * F];
    const double* wu = &w.w_up[e * H * F];
    const double* wd = &w.w_down[e * F * H];
    transpose(H, F, wg, wg_t.data());
    transpose(H, F, wu, wu_t.data());
    transpose(F, H, wd, wd_t.data());
    double* dwg = &gr.d_w_gate[e * H * F];
    double* dwu = &gr.d_w_up[e * H * F];
    double* dwd = &gr.d_w_down[e * F * H];
    const auto& rows = rows_of[e];
    for (std::size_t r0 = 0; r0 < rows.size(); r0 += kRowBlock) {
      const std::size_t nb = std::min(kRowBlock, rows.size() - r0);
      for (std::size_t r = 0; r < nb; ++r) {
        std::copy_n(&x[sz(rows[r0 + r].token) * H], H, &xb[r * H]);
        std::copy_n(&d_out[sz(rows[r0 + r].token) * H], H, &dy[r * H]);
      }
      expert_hidden(nb, H, F, xb.data(), wg, wu, g.data(), u.data(), act.data());
      // d(act) before the gate weight: dy Wd^T; the gate weight's gradient is
      // dot(dy, y) = dot(dy Wd^T, act).
      std::fill(da.begin(), da.end(), 0.0);
      gemm_acc(nb, H, F, dy.data(), wd_t.data(), da.data());
      for (std::size_t r = 0; r < nb; ++r) {
        const Assignment& a = rows[r0 + r];
        const std::size_t slot = sz(a.token) * K + sz(a.slot);
        const double wt = topk_weights[slot];
        double dot = 0.0;
        for (std::size_t f = 0; f < F; ++f) dot += da[r * F + f] * act[r * F + f];
        gr.d_topk_weights[slot] = dot;
        for (std::size_t f = 0; f < F; ++f) da[r * F + f] *= wt;
        for (std::size_t h = 0; h < H; ++h) tmp[r * H + h] = wt * dy[r * H + h];
      }
      gemm_at_acc(nb, F, H, act.data(), tmp.data(), dwd);  // dWd += act^T (w dy)
      for (std::size_t i = 0; i < nb * F; ++i) {
        const double sg = sigmoid(g[i]);
        const double silu = g[i] * sg;
        du[i] = da[i] * silu;
        dg[i] = da[i] * u[i] * (sg + g[i] * sg * (1.0 - sg));
      }
      gemm_at_acc(nb, H, F, xb.data(), dg.data(), dwg);  // dWg += x^T dg
      gemm_at_acc(nb, H, F, xb.data(), du.data(), dwu);  // dWu += x^T du
      std::fill(dxb.begin(), dxb.end(), 0.0);            // dx = dg Wg^T + du Wu^T
      gemm_acc(nb, F, H, dg.data(), wg_t.data(), dxb.data());
      gemm_acc(nb, F, H, du.data(), wu_t.data(), dxb.data());
      for (std::size_t r = 0; r < nb; ++r) {
        const Assignment& a = rows[r0 + r];
        std::copy_n(&dxb[r * H], H, &dx_rows[(sz(a.token) * K + sz(a.slot)) * H]);
      }
    }
  });
  gr.d_x.assign(T * H, 0.0);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t j = 0; j < K; ++j) {
      const double* dr = &dx_rows[(t * K + j) * H];
      double* d = &gr.d_x[t * H];
      for (std::size_t h = 0; h < H; ++h) d[h] += dr[h];
    }
  return gr;
}

std::vector<double> router_backward(const LayerShape& s, const RouterOutput& ro,
                                    const std::vector<double>& d_topk_weights) {
  check_shape(s);
  const std::size_t T = sz(s.tokens), E = sz(s.experts), K = sz(s.top_k);
  check_size("probs", ro.probs.size(), T * E);
  check_routing(s, ro.topk_ids, ro.topk_weights);
  check_size("d_topk_weights", d_topk_weights.size(), T * K);
  std::vector<double> d_logits(T * E, 0.0);
  for (std::size_t t = 0; t < T; ++t) {
    const double* wt = &ro.topk_weights[t * K];
    const double* dw = &d_topk_weights[t * K];
    double inner = 0.0;
    for (std::size_t j = 0; j < K; ++j) inner += wt[j] * dw[j];
    for (std::size_t j = 0; j < K; ++j)
      d_logits[t * E + sz(ro.topk_ids[t * K + j])] += wt[j] * (dw[j] - inner);
  }
  return d_logits;
}

double relative_error(const double* got, const double* ref, std::size_t n) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i]) || !std::isfinite(ref[i]))
      return std::numeric_limits<double>::infinity();
    const double dlt = got[i] - ref[i];
    num += dlt * dlt;
    den += ref[i] * ref[i];
  }
  if (den == 0.0) return std::sqrt(num);
  return std::sqrt(num / den);
}

double relative_error(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  return relative_error(got.data(), ref.data(), got.size());
}

}  // namespace moehub::ref
