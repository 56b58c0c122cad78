// The MoE layer's schedules. See layer.hpp for layouts, and docs/gpu.md for the design
// (buffers, streams, events) of each schedule.
#include "layer.hpp"

// GCC 12/13 report a null memmove destination inside std::vector<Segment> copies on the
// empty-vector path after inlining (-Wnonnull false positive); nothing here passes null.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnonnull"
#endif

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "cuda_check.hpp"
#include "expert_ops.hpp"
#include "moe_plan.hpp"

namespace moehub::gpu {

namespace k = moehub::kernels;

void validate(const LayerConfig& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (c.tokens < 1 || c.tokens > (1LL << 24)) bad("tokens per rank must be in [1, 16777216]");
  if (c.hidden < 8 || c.hidden > 65536 || c.hidden % 8) bad("hidden must be a multiple of 8 in [8, 65536]");
  if (c.ffn < 8 || c.ffn > 65536 || c.ffn % 8) bad("ffn must be a multiple of 8 in [8, 65536]");
  if (c.experts < 1 || c.experts > 1024) bad("experts must be in [1, 1024]");
  if (c.top_k < 1 || c.top_k > 32 || c.top_k > c.experts) bad("top_k must be in [1, min(32, experts)]");
  if (c.ep < 1 || c.ep > 1024 || c.experts % c.ep) bad("ep must be in [1, 1024] and divide experts");
  if (c.tokens * c.top_k > INT32_MAX / 2) bad("tokens * top_k must stay below 2^30");
  if (c.hop_chunk_rows < 0 || c.hop_chunk_rows > (1LL << 30))
    bad("hop chunk rows (--hop-chunk-rows) must be in [0, 1073741824] (0 = the whole hop)");
  if (c.ring_accum != RingAccum::kFp32 && c.ring_accum != RingAccum::kBf16)
    bad("ring accumulators (--ring-accum) must be fp32 or bf16");
}

const char* to_string(RingAccum a) { return a == RingAccum::kBf16 ? "bf16" : "fp32"; }
RingAccum parse_ring_accum(const std::string& s) {
  if (s == "fp32") return RingAccum::kFp32;
  if (s == "bf16") return RingAccum::kBf16;
  throw std::invalid_argument("--ring-accum must be one of fp32, bf16 (got '" + s + "')");
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::kA2A: return "a2a";
    case Schedule::kRingExpert: return "ring-expert";
    case Schedule::kRingToken: return "ring-token";
  }
  return "?";
}
Schedule parse_schedule(const std::string& s) {
  if (s == "a2a") return Schedule::kA2A;
  if (s == "ring-expert") return Schedule::kRingExpert;
  if (s == "ring-token") return Schedule::kRingToken;
  throw std::invalid_argument("schedule must be one of a2a, ring-expert, ring-token (got '" + s + "')");
}

std::vector<std::int64_t> hop_rows(const LayerConfig& c, const std::vector<std::int32_t>& cm, int rank, int partition,
                                   bool expert_mode, std::int64_t* start) {
  const std::int64_t E = c.experts, El = c.local_experts();
  // expert mode: row `rank` of the matrix, the visiting partition's experts; token mode:
  // row `partition`, the rank's experts
  const std::int64_t row = expert_mode ? rank : partition, first = (expert_mode ? partition : rank) * El;
  std::vector<std::int64_t> rows(static_cast<std::size_t>(El));
  for (std::int64_t i = 0; i < El; ++i) rows[static_cast<std::size_t>(i)] = cm[static_cast<std::size_t>(row * E + first + i)];
  if (start) {
    std::int64_t s = 0;
    for (std::int64_t e = 0; e < first; ++e) s += cm[static_cast<std::size_t>(row * E + e)];
    *start = s;
  }
  return rows;
}

std::int64_t largest_hop_chunk(const LayerConfig& c, const std::vector<std::int32_t>& cm, int rank, bool expert_mode,
                               std::int64_t chunk_rows) {
  std::int64_t mx = 0;
  for (int p = 0; p < c.ep; ++p) mx = std::max(mx, plan::max_chunk_rows(hop_rows(c, cm, rank, p, expert_mode), chunk_rows));
  return mx;
}

std::vector<LayerVariant> layer_variants(const std::vector<std::string>& schedules,
                                         const std::vector<std::string>& accums,
                                         const std::vector<std::int64_t>& chunk_rows) {
  std::vector<LayerVariant> out;
  for (const std::string& sn : schedules) {
    const Schedule s = parse_schedule(sn);
    if (s == Schedule::kA2A) {
      out.push_back({sn, s, RingAccum::kFp32, 0});
      continue;
    }
    for (const std::string& an : accums) {
      const RingAccum a = parse_ring_accum(an);
      for (std::int64_t ch : chunk_rows) {
        const bool plain = a == RingAccum::kFp32 && ch == 0;
        out.push_back({plain ? sn : sn + "/" + an + "/c" + std::to_string(ch), s, a, ch});
      }
    }
  }
  return out;
}

Rank::Rank(int r, int device) : rank(r) {
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&comp, cudaStreamNonBlocking));
  MOEHUB_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
  mem = std::make_unique<RankAllocator>(device, comp);
  gemm = std::make_unique<GemmRunner>(comp);
  MOEHUB_CUDA_CHECK(cudaEventCreate(&t0));
}
Rank::~Rank() {
  cudaStreamSynchronize(comp);
  cudaStreamSynchronize(copy);
  gemm.reset();
  mem.reset();
  for (auto e : event_pool) cudaEventDestroy(e);
  cudaEventDestroy(t0);
  cudaStreamDestroy(comp);
  cudaStreamDestroy(copy);
}
cudaEvent_t Rank::ev() {
  if (events_used == event_pool.size()) {
    cudaEvent_t e;
    MOEHUB_CUDA_CHECK(cudaEventCreate(&e));
    event_pool.push_back(e);
  }
  return event_pool[events_used++];
}

MoeLayer::MoeLayer(const LayerConfig& c, Transport& t, GemmImpl impl) : cfg_(c), tr_(t), impl_(impl) {
  validate(c);
  if (t.size() != c.ep) throw std::invalid_argument("ep must equal the transport's rank count");
  for (int r : t.local_ranks()) {
    MOEHUB_CUDA_CHECK(cudaSetDevice(t.device_of(r)));
    ranks_.push_back(std::make_unique<Rank>(r, t.device_of(r)));
  }
}
MoeLayer::~MoeLayer() = default;

void MoeLayer::set_ring_options(RingAccum accum, std::int64_t hop_chunk_rows) {
  LayerConfig c = cfg_;
  c.ring_accum = accum;
  c.hop_chunk_rows = hop_chunk_rows;
  validate(c);
  cfg_ = c;
}

void MoeLayer::allocate_inputs() {
  const auto T = static_cast<std::size_t>(cfg_.tokens), H = static_cast<std::size_t>(cfg_.hidden),
             F = static_cast<std::size_t>(cfg_.ffn), E = static_cast<std::size_t>(cfg_.experts),
             El = static_cast<std::size_t>(cfg_.local_experts());
  for (auto& r : ranks_) {
    r->in.x = r->mem->alloc_n<bf16_t>(T * H, "x");
    r->in.w_router = r->mem->alloc_n<bf16_t>(H * E, "w_router");
    r->in.w_part = r->mem->alloc_n<bf16_t>(3 * El * H * F, "expert_weights");
    r->in.d_out = r->mem->alloc_n<bf16_t>(T * H, "d_out");
    r->out.d_w_part = r->mem->alloc_n<float>(3 * El * H * F, "param_grad_experts");
  }
}

void MoeLayer::allocate_outputs() {
  const auto T = static_cast<std::size_t>(cfg_.tokens), H = static_cast<std::size_t>(cfg_.hidden),
             F = static_cast<std::size_t>(cfg_.ffn), E = static_cast<std::size_t>(cfg_.experts),
             K = static_cast<std::size_t>(cfg_.top_k), El = static_cast<std::size_t>(cfg_.local_experts());
  for (auto& r : ranks_) {
    auto& o = r->out;
    auto& m = *r->mem;
    o.probs = m.alloc_n<float>(T * E, "probs");
    o.topk_ids = m.alloc_n<std::int32_t>(T * K, "topk_ids");
    o.topk_weights = m.alloc_n<float>(T * K, "topk_weights");
    o.out = m.alloc_n<bf16_t>(T * H, "out");
    o.d_x = m.alloc_n<bf16_t>(T * H, "d_x");
    o.d_topk_weights = m.alloc_n<float>(T * K, "d_topk_weights");
    // d_logits is allocated by the router backward, when it is written (after the experts)
    const std::pair<void*, std::size_t> all[] = {
        {o.probs, T * E * 4}, {o.topk_ids, T * K * 4}, {o.topk_weights, T * K * 4}, {o.out, T * H * 2},
        {o.d_x, T * H * 2},   {o.d_topk_weights, T * K * 4}, {o.d_w_part, 3 * El * H * F * 4}};
    for (auto& p : all) MOEHUB_CUDA_CHECK(cudaMemsetAsync(p.first, 0xFF, p.second, r->comp));
    r->counts = m.alloc_n<std::int32_t>(E, "counts");
    r->offsets = m.alloc_n<std::int32_t>(E + 1, "offsets");
    r->pair_src = m.alloc_n<std::int32_t>(T * K, "pair_src");
    r->pair_pos = m.alloc_n<std::int32_t>(T * K, "pair_pos");
  }
}

void MoeLayer::free_outputs() {
  for (auto& r : ranks_) {
    auto& o = r->out;
    for (void* p : {static_cast<void*>(o.probs), static_cast<void*>(o.topk_ids), static_cast<void*>(o.topk_weights),
                    static_cast<void*>(o.out), static_cast<void*>(o.d_x), static_cast<void*>(o.d_topk_weights),
                    static_cast<void*>(o.d_logits), static_cast<void*>(r->counts),
                    static_cast<void*>(r->offsets), static_cast<void*>(r->pair_src), static_cast<void*>(r->pair_pos)})
      r->mem->free(p);
    float* keep = o.d_w_part;  // model state: stays with the inputs
    o = RankOutputs{};
    o.d_w_part = keep;
  }
}

void MoeLayer::synchronize() {
  for (auto& r : ranks_) {
    tr_.wait(r->comp);
    tr_.wait(r->copy);
  }
}

void MoeLayer::phase(Rank& r, const std::string& name, const std::string& unit, cudaStream_t s, bool begin) {
  if (begin) {
    r.phase_events.push_back({name, unit, r.ev(), nullptr});
    MOEHUB_CUDA_CHECK(cudaEventRecord(r.phase_events.back().a, s));
  } else {
    for (auto it = r.phase_events.rbegin(); it != r.phase_events.rend(); ++it) {
      if (it->name == name && it->b == nullptr) {
        it->b = r.ev();
        MOEHUB_CUDA_CHECK(cudaEventRecord(it->b, s));
        return;
      }
    }
    throw std::logic_error("phase end without begin: " + name);
  }
}

// ---- helpers over one rank ------------------------------------------------------------


void MoeLayer::router_and_permute(Rank& r) {
  const Dims d = dims(cfg_);
  phase(r, "router", "compute", r.comp, true);
  float* logits = r.mem->alloc_n<float>(static_cast<std::size_t>(d.T * d.E), "router_logits");
  GemmCall c;
  c.c_fp32 = true;
  c.groups.push_back({r.in.x, r.in.w_router, logits, d.T, d.E, d.H});
  r.gemm->run(c, GemmImpl::kLoop);
  MOEHUB_CUDA_CHECK(k::softmax_topk(logits, d.T, static_cast<int>(d.E), static_cast<int>(d.K), r.out.probs, r.out.topk_ids,
                     r.out.topk_weights, r.comp));
  r.mem->free(logits);
  phase(r, "router", "compute", r.comp, false);
  phase(r, "permute", "compute", r.comp, true);
  auto* scratch = r.mem->alloc_n<std::int32_t>(static_cast<std::size_t>(d.E), "permute_scratch");
  MOEHUB_CUDA_CHECK(k::permute_pairs(r.out.topk_ids, d.T, static_cast<int>(d.K), static_cast<int>(d.E), r.counts, r.offsets,
                      r.pair_src, r.pair_pos, scratch, r.comp));
  r.mem->free(scratch);
  phase(r, "permute", "compute", r.comp, false);
}

void MoeLayer::exchange_counts() {
  std::vector<const void*> send;
  std::vector<cudaStream_t> streams;
  for (auto& r : ranks_) {
    send.push_back(r->counts);
    streams.push_back(r->comp);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char> all = tr_.all_gather_host(send, sizeof(std::int32_t) * static_cast<std::size_t>(cfg_.experts), streams);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  for (auto& r : ranks_) {
    r->count_matrix.resize(all.size() / sizeof(std::int32_t));
    std::memcpy(r->count_matrix.data(), all.data(), all.size());
    r->counts_sync_us = us;
  }
}

void MoeLayer::router_backward(Rank& r) {
  const Dims d = dims(cfg_);
  phase(r, "router_backward", "compute", r.comp, true);
  if (!r.out.d_logits) r.out.d_logits = r.mem->alloc_n<float>(static_cast<std::size_t>(d.T * d.E), "d_logits");
  MOEHUB_CUDA_CHECK(k::router_backward(r.out.topk_ids, r.out.topk_weights, r.out.d_topk_weights, d.T, static_cast<int>(d.E),
                        static_cast<int>(d.K), r.out.d_logits, r.comp));
  phase(r, "router_backward", "compute", r.comp, false);
}

void MoeLayer::run(Schedule s) {
  for (auto& r : ranks_) {
    r->hop_events.clear();
    r->phase_events.clear();
    r->events_used = 0;
    MOEHUB_CUDA_CHECK(cudaEventRecord(r->t0, r->comp));
  }
  for (auto& r : ranks_) maybe_fail_on_purpose(r->rank, "layer");
  for (auto& r : ranks_) router_and_permute(*r);
  exchange_counts();
  switch (s) {
    case Schedule::kA2A: a2a_forward_backward(); break;
    case Schedule::kRingExpert: ring_expert(); break;
    case Schedule::kRingToken: ring_token(); break;
  }
  for (auto& r : ranks_) router_backward(*r);
}

// ---- all-to-all -------------------------------------------------------------------------

void MoeLayer::a2a_forward_backward() {
  const Dims d = dims(cfg_);
  const auto N = static_cast<std::size_t>(d.N);
  struct State {
    std::vector<std::int64_t> off;          // local sorted offsets [E+1]
    std::vector<std::int64_t> rows;         // received rows per local expert
    std::vector<std::vector<std::int64_t>> recv_at;  // [src][i] row where src's chunk of expert i lands
    std::int64_t R = 0;
    bf16_t *xperm = nullptr, *xrecv = nullptr, *gu = nullptr, *a = nullptr, *y = nullptr, *yback = nullptr;
  };
  std::vector<State> st(ranks_.size());
  auto C = [&](const Rank& r, std::int64_t src, std::int64_t e) {
    return static_cast<std::int64_t>(r.count_matrix[static_cast<std::size_t>(src * d.E + e)]);
  };
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    s.off.assign(static_cast<std::size_t>(d.E + 1), 0);
    for (std::int64_t e = 0; e < d.E; ++e) s.off[static_cast<std::size_t>(e + 1)] = s.off[static_cast<std::size_t>(e)] + C(r, r.rank, e);
    s.rows.assign(static_cast<std::size_t>(d.El), 0);
    s.recv_at.assign(N, std::vector<std::int64_t>(static_cast<std::size_t>(d.El), 0));
    std::int64_t base = 0;
    for (std::int64_t i = 0; i < d.El; ++i) {
      const std::int64_t e = r.rank * d.El + i;
      for (std::int64_t src = 0; src < d.N; ++src) {
        s.recv_at[static_cast<std::size_t>(src)][static_cast<std::size_t>(i)] = base;
        base += C(r, src, e);
      }
      s.rows[static_cast<std::size_t>(i)] = 0;
      for (std::int64_t src = 0; src < d.N; ++src) s.rows[static_cast<std::size_t>(i)] += C(r, src, e);
    }
    s.R = base;
  }
  // Segments of one a2a over row buffers: `perm` (sorted local pairs) <-> `recv` (expert-major).
  auto build = [&](std::size_t li, bf16_t* perm, bf16_t* recv, std::int64_t width, bool dispatch) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    A2AXfer x{r.rank, r.comp, std::vector<std::vector<Segment>>(N), std::vector<std::vector<Segment>>(N)};
    const auto rowb = static_cast<std::size_t>(width) * 2;
    for (std::int64_t p = 0; p < d.N; ++p) {
      for (std::int64_t i = 0; i < d.El; ++i) {
        const std::int64_t e = p * d.El + i;
        // my pairs routed to peer p's expert i
        Segment mine{perm + s.off[static_cast<std::size_t>(e)] * width, static_cast<std::size_t>(C(r, r.rank, e)) * rowb};
        // peer p's pairs routed to my expert i
        const std::int64_t my_e = r.rank * d.El + i;
        Segment theirs{recv + s.recv_at[static_cast<std::size_t>(p)][static_cast<std::size_t>(i)] * width,
                       static_cast<std::size_t>(C(r, p, my_e)) * rowb};
        (dispatch ? x.send : x.recv)[static_cast<std::size_t>(p)].push_back(mine);
        (dispatch ? x.recv : x.send)[static_cast<std::size_t>(p)].push_back(theirs);
      }
    }
    return x;
  };
  auto a2a = [&](const std::function<A2AXfer(std::size_t)>& mk, const std::string& name) {
    std::vector<A2AXfer> xs;
    for (std::size_t li = 0; li < ranks_.size(); ++li) {
      phase(*ranks_[li], name, "comm", ranks_[li]->comp, true);
      xs.push_back(mk(li));
    }
    tr_.all_to_all(xs);
    for (auto& r : ranks_) phase(*r, name, "comm", r->comp, false);
  };
  const auto TK = static_cast<std::size_t>(d.T * d.K);
  // forward: expand, dispatch, experts, combine, unpermute
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    phase(r, "a2a_fwd", "compute", r.comp, true);
    s.xperm = r.mem->alloc_n<bf16_t>(TK * static_cast<std::size_t>(d.H), "a2a_x_permuted");
    MOEHUB_CUDA_CHECK(k::gather_rows(r.in.x, r.pair_src, static_cast<int>(d.K), nullptr, d.T * d.K, static_cast<int>(d.H), s.xperm, r.comp));
    s.xrecv = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(s.R * d.H), "a2a_x_received");
  }
  a2a([&](std::size_t li) { return build(li, st[li].xperm, st[li].xrecv, d.H, true); }, "a2a_dispatch");
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    r.mem->free(s.xperm);
    s.xperm = nullptr;
    phase(r, "expert_fwd", "compute", r.comp, true);
    const auto RF = static_cast<std::size_t>(s.R * d.F), RH = static_cast<std::size_t>(s.R * d.H);
    s.gu = r.mem->alloc_n<bf16_t>(2 * RF, "a2a_gate_up_act");
    s.a = r.mem->alloc_n<bf16_t>(RF, "a2a_swiglu_out");
    s.y = r.mem->alloc_n<bf16_t>(RH, "a2a_expert_out");
    expert_forward(*r.gemm, impl_, d, s.rows, s.xrecv, r.in.w_part, s.gu, s.a, s.y, r.comp);
    r.mem->free(s.a);
    s.a = nullptr;
    phase(r, "expert_fwd", "compute", r.comp, false);
    s.yback = r.mem->alloc_n<bf16_t>(TK * static_cast<std::size_t>(d.H), "a2a_y_permuted");
  }
  a2a([&](std::size_t li) { return build(li, st[li].yback, st[li].y, d.H, false); }, "a2a_combine");
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    r.mem->free(s.y);
    s.y = nullptr;
    MOEHUB_CUDA_CHECK(k::unpermute_sum(s.yback, r.pair_pos, r.out.topk_weights, d.T, static_cast<int>(d.K), static_cast<int>(d.H),
                        r.out.out, nullptr, r.comp));
    phase(r, "a2a_fwd", "compute", r.comp, false);
  }
  // backward
  std::vector<bf16_t*> dyperm(ranks_.size()), dy(ranks_.size()), dxrecv(ranks_.size()), dxperm(ranks_.size());
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    phase(r, "a2a_bwd", "compute", r.comp, true);
    MOEHUB_CUDA_CHECK(k::pair_dot(r.in.d_out, s.yback, r.pair_pos, d.T, static_cast<int>(d.K), static_cast<int>(d.H),
                   r.out.d_topk_weights, r.comp));
    r.mem->free(s.yback);
    s.yback = nullptr;
    dyperm[li] = r.mem->alloc_n<bf16_t>(TK * static_cast<std::size_t>(d.H), "a2a_dy_permuted");
    MOEHUB_CUDA_CHECK(k::gather_rows(r.in.d_out, r.pair_src, static_cast<int>(d.K), r.out.topk_weights, d.T * d.K,
                      static_cast<int>(d.H), dyperm[li], r.comp));
    dy[li] = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(s.R * d.H), "a2a_dy_received");
  }
  a2a([&](std::size_t li) { return build(li, dyperm[li], dy[li], d.H, true); }, "a2a_dispatch_bwd");
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    State& s = st[li];
    r.mem->free(dyperm[li]);
    phase(r, "expert_bwd", "compute", r.comp, true);
    const auto RF = static_cast<std::size_t>(s.R * d.F);
    bf16_t* da = r.mem->alloc_n<bf16_t>(RF, "a2a_d_swiglu_out");
    expert_da(*r.gemm, impl_, d, s.rows, dy[li], r.in.w_part, da);
    // in place: gu <- dGU, da <- A (recomputed, unscaled)
    MOEHUB_CUDA_CHECK(k::swiglu_backward(s.gu, da, s.R, static_cast<int>(d.F), nullptr, nullptr, s.gu, da, nullptr, false, r.comp));
    expert_dw(*r.gemm, impl_, d, s.rows, s.xrecv, s.gu, da, dy[li], r.out.d_w_part, 0.f);
    r.mem->free(dy[li]);
    r.mem->free(s.xrecv);
    s.xrecv = nullptr;
    dxrecv[li] = r.mem->alloc_n<bf16_t>(static_cast<std::size_t>(s.R * d.H), "a2a_dx_received");
    expert_dx(*r.gemm, impl_, d, s.rows, s.gu, r.in.w_part, dxrecv[li]);
    r.mem->free(da);
    r.mem->free(s.gu);
    s.gu = nullptr;
    phase(r, "expert_bwd", "compute", r.comp, false);
    dxperm[li] = r.mem->alloc_n<bf16_t>(TK * static_cast<std::size_t>(d.H), "a2a_dx_permuted");
  }
  a2a([&](std::size_t li) { return build(li, dxperm[li], dxrecv[li], d.H, false); }, "a2a_combine_bwd");
  for (std::size_t li = 0; li < ranks_.size(); ++li) {
    Rank& r = *ranks_[li];
    r.mem->free(dxrecv[li]);
    MOEHUB_CUDA_CHECK(k::unpermute_sum(dxperm[li], r.pair_pos, nullptr, d.T, static_cast<int>(d.K), static_cast<int>(d.H), r.out.d_x,
                        nullptr, r.comp));
    r.mem->free(dxperm[li]);
    phase(r, "a2a_bwd", "compute", r.comp, false);
  }
}

// ---- ring engine -------------------------------------------------------------------------
// Hop h (0 <= h < n): rank r computes with the payload that started on rank (r - h) mod n.
// Payload: hop 0 uses the rank's own buffers; the transfer of hop h (copy stream, started
// as soon as compute h-1 has released the target buffer) prefetches hop h+1's payload
// into the other receive buffer. Accumulators travel one hop behind: the transfer of hop
// h also carries the accumulator that compute h-1 finished, and compute h waits for it
// (wait_acc) only right before it adds into it. After the last hop one more transfer
// returns each accumulator to its owner.
struct MoeLayer::RingPass {
  std::string pass, mode;
  std::vector<std::vector<Segment>> own;                 // [local rank] hop-0 payload
  std::vector<std::array<std::vector<Segment>, 2>> pay;  // [local rank] receive buffers
  std::vector<std::array<std::vector<Segment>, 2>> acc;  // [local rank] accumulators (may be empty)
  std::vector<std::vector<Segment>> acc_final;           // [local rank] owner's destination
  std::function<void(std::size_t li, int hop, const std::vector<Segment>& pay, const std::vector<Segment>& acc,
                     const std::function<void()>& wait_acc)>
      compute;
};

void MoeLayer::ring_pass(RingPass& p) {
  const int n = cfg_.ep;
  const std::size_t L = ranks_.size();
  const bool has_acc = !p.acc.empty() && !p.acc[0][0].empty();
  std::vector<cudaEvent_t> prev_c1(L, nullptr), prev_x1(L, nullptr);
  auto payload = [&](std::size_t li, int h) -> const std::vector<Segment>& {
    return h == 0 ? p.own[li] : p.pay[li][static_cast<std::size_t>((h - 1) % 2)];
  };
  for (std::size_t li = 0; li < L; ++li) {
    Rank& r = *ranks_[li];
    cudaEvent_t e = r.ev();
    MOEHUB_CUDA_CHECK(cudaEventRecord(e, r.comp));
    MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.copy, e, 0));
  }
  for (int h = 0; h < n; ++h) {
    std::vector<RingXfer> xs;
    std::vector<Rank::EventRec> recs(L);
    bool any = false;
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      RingXfer x{r.rank, r.copy, {}, {}};
      if (h + 1 < n) {
        const auto& ps = payload(li, h);
        const auto& pr = p.pay[li][static_cast<std::size_t>(h % 2)];
        // element by element: GCC 13 flags a range insert of this trivially
        // copyable type with a -Wnonnull false positive
        for (const auto& s : ps) x.send.push_back(s);
        for (const auto& s : pr) x.recv.push_back(s);
      }
      if (has_acc && h >= 1) {
        for (auto& s : p.acc[li][static_cast<std::size_t>((h - 1) % 2)]) x.send.push_back(s);
        for (auto& s : p.acc[li][static_cast<std::size_t>(h % 2)]) x.recv.push_back(s);
      }
      recs[li] = {p.pass, p.mode, h, r.ev(), r.ev(), nullptr, nullptr, false};
      if (!x.send.empty()) {
        any = true;
        if (prev_c1[li]) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.copy, prev_c1[li], 0));
        recs[li].x0 = r.ev();
        recs[li].x1 = r.ev();
        recs[li].has_x = true;
        MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].x0, r.copy));
      }
      xs.push_back(std::move(x));
    }
    if (any) {
      tr_.ring_exchange(xs);
      for (std::size_t li = 0; li < L; ++li) MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].x1, ranks_[li]->copy));
    }
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      if (prev_x1[li]) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.comp, prev_x1[li], 0));
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].c0, r.comp));
      std::vector<Segment> acc_now;
      if (has_acc) {
        const auto& an = p.acc[li][static_cast<std::size_t>(h % 2)];
        for (const auto& s : an) acc_now.push_back(s);
        if (h == 0)
          for (auto& s : acc_now) MOEHUB_CUDA_CHECK(cudaMemsetAsync(s.ptr, 0, s.bytes, r.comp));
      }
      cudaEvent_t xh = recs[li].has_x ? recs[li].x1 : nullptr;
      auto wait_acc = [&r, xh, h, has_acc]() {
        if (has_acc && h >= 1 && xh) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.comp, xh, 0));
      };
      p.compute(li, h, payload(li, h), acc_now, wait_acc);
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].c1, r.comp));
      prev_c1[li] = recs[li].c1;
      prev_x1[li] = recs[li].has_x && h + 1 < n ? recs[li].x1 : nullptr;
      r.hop_events.push_back(recs[li]);
    }
  }
  if (has_acc) {
    std::vector<RingXfer> xs;
    std::vector<Rank::EventRec> recs(L);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.copy, prev_c1[li], 0));
      recs[li] = {p.pass, p.mode, n, r.ev(), r.ev(), r.ev(), r.ev(), true};
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].x0, r.copy));
      xs.push_back({r.rank, r.copy, p.acc[li][static_cast<std::size_t>((n - 1) % 2)], p.acc_final[li]});
    }
    tr_.ring_exchange(xs);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].x1, r.copy));
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.comp, recs[li].x1, 0));
      // an empty compute interval keeps the record's shape: c0 = c1 at the wait
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].c0, r.comp));
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].c1, r.comp));
      r.hop_events.push_back(recs[li]);
    }
  }
  // The pass's buffers are freed on the compute stream: let it wait for the copy stream.
  for (std::size_t li = 0; li < L; ++li) {
    Rank& r = *ranks_[li];
    cudaEvent_t e = r.ev();
    MOEHUB_CUDA_CHECK(cudaEventRecord(e, r.copy));
    MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.comp, e, 0));
  }
}

namespace {
struct HopBufs {
  bf16_t *x = nullptr, *dout = nullptr, *gu = nullptr, *a = nullptr, *y = nullptr;
  float* dtw = nullptr;
};
HopBufs alloc_hop(RankAllocator& m, const Dims& d, std::int64_t rows, bool backward) {
  HopBufs b;
  const auto RH = static_cast<std::size_t>(std::max<std::int64_t>(rows, 1) * d.H);
  const auto RF = static_cast<std::size_t>(std::max<std::int64_t>(rows, 1) * d.F);
  b.x = m.alloc_n<bf16_t>(RH, "hop_x");
  b.gu = m.alloc_n<bf16_t>(2 * RF, "hop_gate_up_act");
  b.a = m.alloc_n<bf16_t>(RF, "hop_swiglu_out");
  b.y = m.alloc_n<bf16_t>(RH, backward ? "hop_dx" : "hop_expert_out");
  if (backward) {
    b.dout = m.alloc_n<bf16_t>(RH, "hop_d_out");
    b.dtw = m.alloc_n<float>(static_cast<std::size_t>(std::max<std::int64_t>(rows, 1)), "hop_d_topk_weights");
  }
  return b;
}
void free_hop(RankAllocator& m, HopBufs& b) {
  for (void* p : {static_cast<void*>(b.x), static_cast<void*>(b.dout), static_cast<void*>(b.gu),
                  static_cast<void*>(b.a), static_cast<void*>(b.y), static_cast<void*>(b.dtw)})
    if (p) m.free(p);
  b = HopBufs{};
}
}  // namespace

void MoeLayer::ring_expert() {
  const Dims d = dims(cfg_);
  const std::size_t L = ranks_.size();
  const bool acc16 = cfg_.ring_accum == RingAccum::kBf16;
  const auto welems = static_cast<std::size_t>(3 * d.El * d.H * d.F);
  const auto wbytes = welems * 2;
  const auto gbytes = welems * (acc16 ? 2 : 4);  // travelling weight-gradient partitions
  // rank r's pairs for the visiting partition p, per local expert, and their start in sorted order
  auto rows_of = [&](const Rank& r, std::int64_t p, std::int64_t* start) {
    return hop_rows(cfg_, r.count_matrix, r.rank, static_cast<int>(p), true, start);
  };
  for (int pass = 0; pass < 2; ++pass) {
    const bool bwd = pass == 1;
    RingPass p;
    p.pass = bwd ? "bwd" : "fwd";
    p.mode = "ring-expert";
    std::vector<HopBufs> hb(L);
    std::vector<std::array<void*, 2>> wbuf(L), gbuf(L);
    std::vector<float*> local_acc(L, nullptr);
    // bf16 gradient partitions and experts split over several chunks: the pieces' weight
    // gradients sum in fp32 (one expert's worth) and enter the partition once per hop, as
    // a whole expert's do, rather than once per piece
    std::vector<float*> split_dw(L, nullptr);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      phase(r, bwd ? "ring_expert_bwd" : "ring_expert_fwd", "compute", r.comp, true);
      hb[li] = alloc_hop(*r.mem, d, largest_hop_chunk(cfg_, r.count_matrix, r.rank, true, cfg_.hop_chunk_rows), bwd);
      if (bwd && acc16 && cfg_.hop_chunk_rows > 0) {
        std::int64_t most = 0, st = 0;
        for (std::int64_t q = 0; q < d.N; ++q)
          for (std::int64_t m : rows_of(r, q, &st)) most = std::max(most, m);
        if (most > cfg_.hop_chunk_rows)
          split_dw[li] = r.mem->alloc_n<float>(static_cast<std::size_t>(3 * d.H * d.F), "ring_split_expert_grad");
      }
      std::array<std::vector<Segment>, 2> pay, acc;
      for (int s = 0; s < 2; ++s) {
        wbuf[li][static_cast<std::size_t>(s)] = r.mem->alloc(wbytes, "ring_weight_buffer");
        pay[static_cast<std::size_t>(s)] = {{wbuf[li][static_cast<std::size_t>(s)], wbytes}};
        if (bwd) {
          gbuf[li][static_cast<std::size_t>(s)] = r.mem->alloc(gbytes, "ring_grad_accumulator");
          acc[static_cast<std::size_t>(s)] = {{gbuf[li][static_cast<std::size_t>(s)], gbytes}};
        }
      }
      p.own.push_back({{r.in.w_part, wbytes}});
      p.pay.push_back(pay);
      p.acc.push_back(acc);
      if (bwd && acc16)  // the bf16 sum comes home into the slot the last hop did not use
        p.acc_final.push_back(acc[static_cast<std::size_t>(d.N % 2)]);
      else
        p.acc_final.push_back({{r.out.d_w_part, gbytes}});
      if (acc16) {
        // the output (forward) or d_x (backward) is itself the accumulator
        MOEHUB_CUDA_CHECK(cudaMemsetAsync(bwd ? r.out.d_x : r.out.out, 0, static_cast<std::size_t>(d.T * d.H) * 2, r.comp));
      } else {
        // the output (forward) or d_x (backward) accumulates in fp32 within the pass
        local_acc[li] = r.mem->alloc_n<float>(static_cast<std::size_t>(d.T * d.H), bwd ? "ring_dx_accumulator" : "ring_out_accumulator");
        MOEHUB_CUDA_CHECK(cudaMemsetAsync(local_acc[li], 0, static_cast<std::size_t>(d.T * d.H) * 4, r.comp));
      }
    }
    p.compute = [&, bwd](std::size_t li, int h, const std::vector<Segment>& pay, const std::vector<Segment>& acc,
                         const std::function<void()>& wait_acc) {
      Rank& r = *ranks_[li];
      HopBufs& b = hb[li];
      const std::int64_t part = (r.rank - h + d.N) % d.N;
      std::int64_t start = 0;
      const auto rows = rows_of(r, part, &start);
      const auto* W = static_cast<const bf16_t*>(pay[0].ptr);
      const int K = static_cast<int>(d.K), H = static_cast<int>(d.H);
      bf16_t* out16 = bwd ? r.out.d_x : r.out.out;
      // chunks of the hop (plan::hop_chunks); each chunk's pairs follow the previous chunk's
      std::int64_t off = start, split_done = 0;
      for (const plan::HopChunk& ch : plan::hop_chunks(rows, cfg_.hop_chunk_rows)) {
        const std::vector<std::int64_t>& crows = ch.expert_rows;
        const std::int64_t M = ch.rows, e0 = ch.first;
        const std::int32_t* src = r.pair_src + off;
        off += M;
        MOEHUB_CUDA_CHECK(k::gather_rows(r.in.x, src, K, nullptr, M, H, b.x, r.comp));
        if (!bwd) {
          expert_forward(*r.gemm, impl_, d, crows, b.x, W, b.gu, b.a, b.y, r.comp, e0);
          if (acc16)
            MOEHUB_CUDA_CHECK(k::scatter_add_rows_bf16(b.y, src, K, r.out.topk_weights, M, H, out16, r.comp));
          else
            MOEHUB_CUDA_CHECK(k::scatter_add_rows(b.y, src, K, r.out.topk_weights, M, H, local_acc[li], r.comp));
          continue;
        }
        // backward with in-hop recomputation of the expert intermediates
        MOEHUB_CUDA_CHECK(k::gather_rows(r.in.d_out, src, K, nullptr, M, H, b.dout, r.comp));
        expert_gate_up(*r.gemm, impl_, d, crows, b.x, W, b.gu, e0);
        expert_da(*r.gemm, impl_, d, crows, b.dout, W, b.a, e0);  // unscaled dA' = d_out Wd^T
        MOEHUB_CUDA_CHECK(k::swiglu_backward(b.gu, b.a, M, static_cast<int>(d.F), src, r.out.topk_weights, b.gu, b.a,
                              r.out.d_topk_weights, false, r.comp));
        expert_dx(*r.gemm, impl_, d, crows, b.gu, W, b.y, e0);
        if (acc16)
          MOEHUB_CUDA_CHECK(k::scatter_add_rows_bf16(b.y, src, K, nullptr, M, H, out16, r.comp));
        else
          MOEHUB_CUDA_CHECK(k::scatter_add_rows(b.y, src, K, nullptr, M, H, local_acc[li], r.comp));
        wait_acc();
        const bool piece = ch.last - ch.first == 1 && ch.rows < rows[static_cast<std::size_t>(ch.first)];
        if (acc16 && piece) {
          // one expert's view of the fp32 scratch: [H][2F] | [F][H]
          Dims d1 = d;
          d1.El = 1;
          const bool first_piece = split_done == 0;
          split_done += ch.rows;
          expert_dw(*r.gemm, impl_, d1, crows, b.x, b.gu, b.a, b.dout, split_dw[li], first_piece ? 0.f : 1.f, 0);
          if (split_done == rows[static_cast<std::size_t>(ch.first)]) {
            auto* g16 = static_cast<bf16_t*>(acc[0].ptr);
            MOEHUB_CUDA_CHECK(k::add_f32_into_bf16(split_dw[li], 2 * d.H * d.F, g16 + e0 * 2 * d.H * d.F, r.comp));
            MOEHUB_CUDA_CHECK(k::add_f32_into_bf16(split_dw[li] + 2 * d.H * d.F, d.F * d.H,
                                    g16 + 2 * d.El * d.H * d.F + e0 * d.F * d.H, r.comp));
            split_done = 0;
          }
        } else if (acc16)
          expert_dw(*r.gemm, impl_, d, crows, b.x, b.gu, b.a, b.dout, static_cast<bf16_t*>(acc[0].ptr), 1.f, e0);
        else
          expert_dw(*r.gemm, impl_, d, crows, b.x, b.gu, b.a, b.dout, static_cast<float*>(acc[0].ptr), 1.f, e0);
      }
    };
    ring_pass(p);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      if (local_acc[li]) {
        MOEHUB_CUDA_CHECK(k::f32_to_bf16(local_acc[li], d.T * d.H, bwd ? r.out.d_x : r.out.out, r.comp));
        r.mem->free(local_acc[li]);
      }
      if (bwd && acc16)
        MOEHUB_CUDA_CHECK(k::bf16_to_f32(static_cast<const bf16_t*>(p.acc_final[li][0].ptr), static_cast<std::int64_t>(welems),
                          r.out.d_w_part, r.comp));
      free_hop(*r.mem, hb[li]);
      r.mem->free(split_dw[li]);
      for (int s = 0; s < 2; ++s) {
        r.mem->free(wbuf[li][static_cast<std::size_t>(s)]);
        if (bwd) r.mem->free(gbuf[li][static_cast<std::size_t>(s)]);
      }
      phase(r, bwd ? "ring_expert_bwd" : "ring_expert_fwd", "compute", r.comp, false);
    }
  }
}

void MoeLayer::ring_token() {
  const Dims d = dims(cfg_);
  const std::size_t L = ranks_.size();
  const auto TH = static_cast<std::size_t>(d.T * d.H), TK = static_cast<std::size_t>(d.T * d.K);
  const bool acc16 = cfg_.ring_accum == RingAccum::kBf16;
  const std::size_t acc_elem = acc16 ? 2 : 4;  // travelling output / d_x accumulators
  // rows of visiting partition q routed to rank r's experts, and their start in q's order
  auto rows_of = [&](const Rank& r, std::int64_t q, std::int64_t* start) {
    return hop_rows(cfg_, r.count_matrix, r.rank, static_cast<int>(q), false, start);
  };
  for (int pass = 0; pass < 2; ++pass) {
    const bool bwd = pass == 1;
    RingPass p;
    p.pass = bwd ? "bwd" : "fwd";
    p.mode = "ring-token";
    std::vector<HopBufs> hb(L);
    std::vector<std::vector<void*>> owned(L);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      phase(r, bwd ? "ring_token_bwd" : "ring_token_fwd", "compute", r.comp, true);
      hb[li] = alloc_hop(*r.mem, d, largest_hop_chunk(cfg_, r.count_matrix, r.rank, false, cfg_.hop_chunk_rows), bwd);
      std::vector<Segment> own = {{r.in.x, TH * 2}, {r.pair_src, TK * 4}, {r.out.topk_weights, TK * 4}};
      if (bwd) own.push_back({r.in.d_out, TH * 2});
      std::array<std::vector<Segment>, 2> pay, acc;
      for (std::size_t s = 0; s < 2; ++s) {
        for (const Segment& o : own) {
          void* b = r.mem->alloc(o.bytes, "ring_token_buffer");
          owned[li].push_back(b);
          pay[s].push_back({b, o.bytes});
        }
        void* a = r.mem->alloc(TH * acc_elem, bwd ? "ring_dx_accumulator" : "ring_out_accumulator");
        owned[li].push_back(a);
        acc[s].push_back({a, TH * acc_elem});
        if (bwd) {
          void* a2 = r.mem->alloc(TK * 4, "ring_d_topk_weights_accumulator");
          owned[li].push_back(a2);
          acc[s].push_back({a2, TK * 4});
        }
      }
      p.own.push_back(own);
      p.pay.push_back(pay);
      p.acc.push_back(acc);
      if (acc16) {  // bf16 accumulators come home straight into the outputs
        std::vector<Segment> home = {{bwd ? r.out.d_x : r.out.out, TH * 2}};
        if (bwd) home.push_back({r.out.d_topk_weights, TK * 4});
        p.acc_final.push_back(home);
      } else {
        // the accumulators come home into the slot the last hop did not use (free by then)
        p.acc_final.push_back(acc[static_cast<std::size_t>(d.N % 2)]);
      }
      if (bwd) MOEHUB_CUDA_CHECK(cudaMemsetAsync(r.out.d_w_part, 0, static_cast<std::size_t>(3 * d.El * d.H * d.F) * 4, r.comp));
    }
    p.compute = [&, bwd](std::size_t li, int h, const std::vector<Segment>& pay, const std::vector<Segment>& acc,
                         const std::function<void()>& wait_acc) {
      Rank& r = *ranks_[li];
      HopBufs& b = hb[li];
      const std::int64_t q = (r.rank - h + d.N) % d.N;
      std::int64_t start = 0;
      const auto rows = rows_of(r, q, &start);
      const auto* vx = static_cast<const bf16_t*>(pay[0].ptr);
      const auto* vtw = static_cast<const float*>(pay[2].ptr);
      const bf16_t* W = r.in.w_part;
      const int K = static_cast<int>(d.K), H = static_cast<int>(d.H);
      auto scatter_rows = [&](const std::int32_t* src, const float* w, std::int64_t M) {
        if (acc16)
          MOEHUB_CUDA_CHECK(k::scatter_add_rows_bf16(b.y, src, K, w, M, H, static_cast<bf16_t*>(acc[0].ptr), r.comp));
        else
          MOEHUB_CUDA_CHECK(k::scatter_add_rows(b.y, src, K, w, M, H, static_cast<float*>(acc[0].ptr), r.comp));
      };
      // chunks of the hop (plan::hop_chunks); each chunk's pairs follow the previous chunk's
      std::int64_t off = start;
      for (const plan::HopChunk& ch : plan::hop_chunks(rows, cfg_.hop_chunk_rows)) {
        const std::vector<std::int64_t>& crows = ch.expert_rows;
        const std::int64_t M = ch.rows, e0 = ch.first;
        const std::int32_t* src = static_cast<const std::int32_t*>(pay[1].ptr) + off;
        off += M;
        MOEHUB_CUDA_CHECK(k::gather_rows(vx, src, K, nullptr, M, H, b.x, r.comp));
        if (!bwd) {
          expert_forward(*r.gemm, impl_, d, crows, b.x, W, b.gu, b.a, b.y, r.comp, e0);
          wait_acc();
          scatter_rows(src, vtw, M);
          continue;
        }
        const auto* vdout = static_cast<const bf16_t*>(pay[3].ptr);
        MOEHUB_CUDA_CHECK(k::gather_rows(vdout, src, K, nullptr, M, H, b.dout, r.comp));
        expert_gate_up(*r.gemm, impl_, d, crows, b.x, W, b.gu, e0);
        expert_da(*r.gemm, impl_, d, crows, b.dout, W, b.a, e0);
        MOEHUB_CUDA_CHECK(k::swiglu_backward(b.gu, b.a, M, static_cast<int>(d.F), src, vtw, b.gu, b.a, b.dtw, true, r.comp));
        expert_dx(*r.gemm, impl_, d, crows, b.gu, W, b.y, e0);
        expert_dw(*r.gemm, impl_, d, crows, b.x, b.gu, b.a, b.dout, r.out.d_w_part, 1.f, e0);
        wait_acc();
        scatter_rows(src, nullptr, M);
        MOEHUB_CUDA_CHECK(k::scatter_add_scalars(b.dtw, src, M, static_cast<float*>(acc[1].ptr), r.comp));
      }
    };
    ring_pass(p);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      if (!acc16) {
        const auto& home = p.acc_final[li];
        MOEHUB_CUDA_CHECK(k::f32_to_bf16(static_cast<const float*>(home[0].ptr), d.T * d.H, bwd ? r.out.d_x : r.out.out, r.comp));
        if (bwd)
          MOEHUB_CUDA_CHECK(cudaMemcpyAsync(r.out.d_topk_weights, home[1].ptr, TK * 4, cudaMemcpyDeviceToDevice, r.comp));
      }
      free_hop(*r.mem, hb[li]);
      for (void* b : owned[li]) r.mem->free(b);
      phase(r, bwd ? "ring_token_bwd" : "ring_token_fwd", "compute", r.comp, false);
    }
  }
}

// ---- timings -----------------------------------------------------------------------------

std::vector<HopTime> MoeLayer::hop_times() {
  synchronize();
  std::vector<HopTime> out;
  for (auto& r : ranks_) {
    cudaEvent_t prev_end = nullptr;
    std::string prev_pass;
    for (auto& e : r->hop_events) {
      float c = 0, x = 0, hop = 0, cs = 0, xs = -1e-3f;
      MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&c, e.c0, e.c1));
      MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&cs, r->t0, e.c0));
      if (e.has_x) {
        MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&x, e.x0, e.x1));
        MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&xs, r->t0, e.x0));
      }
      if (prev_end && prev_pass == e.pass) MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&hop, prev_end, e.c1));
      else hop = c;
      out.push_back({r->rank, e.pass, e.mode, e.hop, 1e3 * c, 1e3 * x, 1e3 * hop, 1e3 * cs, 1e3 * xs});
      prev_end = e.c1;
      prev_pass = e.pass;
    }
  }
  return out;
}

std::vector<PhaseTime> MoeLayer::phase_times() {
  synchronize();
  std::vector<PhaseTime> out;
  for (auto& r : ranks_) {
    for (auto& p : r->phase_events) {
      if (!p.b) continue;
      float a = 0, dur = 0;
      MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&a, r->t0, p.a));
      MOEHUB_CUDA_CHECK(cudaEventElapsedTime(&dur, p.a, p.b));
      out.push_back({r->rank, p.name, 1e3 * a, 1e3 * dur, p.unit});
    }
    out.push_back({r->rank, "counts_exchange_host_sync", 0.0, r->counts_sync_us, "host"});
  }
  return out;
}

}  // namespace moehub::gpu
