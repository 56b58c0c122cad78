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
#include "moe_plan/moe_plan.hpp"
#include "schedule.hpp"

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
  if (c.hop_chunk_rows < -1 || c.hop_chunk_rows > (1LL << 30))
    bad("hop chunk rows (--hop-chunk-rows) must be in [-1, 1073741824] (0 = the whole hop, -1 = one expert per chunk)");
  if (c.ring_accum != RingAccum::kFp32 && c.ring_accum != RingAccum::kBf16)
    bad("ring accumulators (--ring-accum) must be fp32 or bf16");
}

const char* to_string(RingAccum a) { return a == RingAccum::kBf16 ? "bf16" : "fp32"; }

std::vector<std::pair<std::string, std::string>> ring_sim_settings(const LayerConfig& c) {
  // the accumulators and the travelling gradient partitions share one element type here
  const std::string elem = c.ring_accum == RingAccum::kBf16 ? "2" : "4";
  return {{"ring_accum_bytes", elem}, {"ring_grad_bytes", elem}, {"ring_chunk_rows", std::to_string(c.hop_chunk_rows)}};
}
RingAccum parse_ring_accum(const std::string& s) {
  if (s == "fp32") return RingAccum::kFp32;
  if (s == "bf16") return RingAccum::kBf16;
  throw std::invalid_argument("--ring-accum must be one of fp32, bf16 (got '" + s + "')");
}

plan::MoeProblem plan_problem(const LayerConfig& c) {
  plan::MoeProblem p;
  p.tokens_per_rank = c.tokens;
  p.hidden = c.hidden;
  p.ffn = c.ffn;
  p.experts = c.experts;
  p.top_k = c.top_k;
  p.ep = c.ep;
  return p;
}

std::vector<std::int64_t> hop_rows(const LayerConfig& c, const CountMatrix& cm, int rank, int partition,
                                   bool expert_mode, std::int64_t* start) {
  (void)c;
  // expert mode: rank `rank`'s pairs for the visiting partition's experts; token mode:
  // the visiting partition's pairs for rank `rank`'s experts
  const int src = expert_mode ? rank : partition, owner = expert_mode ? partition : rank;
  if (start) *start = cm.sorted_offset(src, cm.first_expert(owner));
  return cm.block(src, owner);
}

std::vector<LayerVariant> layer_variants(const std::vector<std::string>& schedules,
                                         const std::vector<std::string>& accums,
                                         const std::vector<std::int64_t>& chunk_rows) {
  std::vector<LayerVariant> out;
  for (const std::string& sn : schedules) {
    if (!make_schedule(sn)->ring_options()) {  // throws for an unknown name
      out.push_back({sn, sn, RingAccum::kFp32, 0});
      continue;
    }
    for (const std::string& an : accums) {
      const RingAccum a = parse_ring_accum(an);
      for (std::int64_t ch : chunk_rows) {
        const bool plain = a == RingAccum::kFp32 && ch == 0;
        out.push_back({plain ? sn : sn + "/" + an + "/c" + std::to_string(ch), sn, a, ch});
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
  set_launch_threads(0);
}
MoeLayer::~MoeLayer() = default;

void MoeLayer::set_ring_options(RingAccum accum, std::int64_t hop_chunk_rows) {
  LayerConfig c = cfg_;
  c.ring_accum = accum;
  c.hop_chunk_rows = hop_chunk_rows;
  validate(c);
  cfg_ = c;
}

void MoeLayer::set_launch_threads(int n) {
  if (n < 0) throw std::invalid_argument("launch threads (--launch-threads) must be at least 0 (0 = one per local rank)");
  const int local = static_cast<int>(ranks_.size());
  threads_ = std::make_unique<RankThreads>(std::max(1, std::min(n == 0 ? local : n, local)));
}

void MoeLayer::for_each_rank(const std::function<void(std::size_t)>& fn) {
  threads_->for_each(ranks_.size(), [&](std::size_t li) {
    MOEHUB_CUDA_CHECK(cudaSetDevice(tr_.device_of(ranks_[li]->rank)));
    fn(li);
  });
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

void MoeLayer::phase_begin(Rank& r, const std::string& name, const std::string& unit, cudaStream_t s) {
  r.phase_events.push_back({name, unit, r.ev(), nullptr});
  MOEHUB_CUDA_CHECK(cudaEventRecord(r.phase_events.back().a, s));
}

void MoeLayer::phase_end(Rank& r, const std::string& name, cudaStream_t s) {
  for (auto it = r.phase_events.rbegin(); it != r.phase_events.rend(); ++it) {
    if (it->name == name && it->b == nullptr) {
      it->b = r.ev();
      MOEHUB_CUDA_CHECK(cudaEventRecord(it->b, s));
      return;
    }
  }
  throw std::logic_error("phase end without begin: " + name);
}

// ---- steps -------------------------------------------------------------------------------

void MoeLayer::route() {
  const Dims d = dims(cfg_);
  for_each_rank([&](std::size_t li) {
    Rank& r = *ranks_[li];
    phase_begin(r, "router", "compute", r.comp);
    float* logits = r.mem->alloc_n<float>(static_cast<std::size_t>(d.T * d.E), "router_logits");
    GemmCall c;
    c.c_fp32 = true;
    c.groups.push_back({r.in.x, r.in.w_router, logits, d.T, d.E, d.H});
    r.gemm->run(c, GemmImpl::kLoop);
    MOEHUB_CUDA_CHECK(k::softmax_topk(logits, d.T, static_cast<int>(d.E), static_cast<int>(d.K), r.out.probs,
                                      r.out.topk_ids, r.out.topk_weights, r.comp));
    r.mem->free(logits);
    phase_end(r, "router", r.comp);
    phase_begin(r, "permute", "compute", r.comp);
    auto* scratch = r.mem->alloc_n<std::int32_t>(static_cast<std::size_t>(d.E), "permute_scratch");
    MOEHUB_CUDA_CHECK(k::permute_pairs(r.out.topk_ids, d.T, static_cast<int>(d.K), static_cast<int>(d.E), r.counts,
                                       r.offsets, r.pair_src, r.pair_pos, scratch, r.comp));
    r.mem->free(scratch);
    phase_end(r, "permute", r.comp);
  });
}

void MoeLayer::exchange_counts() {
  for (auto& r : ranks_) maybe_fail_on_purpose(r->rank, "layer");
  std::vector<const void*> send;
  std::vector<cudaStream_t> streams;
  for (auto& r : ranks_) {
    send.push_back(r->counts);
    streams.push_back(r->comp);
  }
  // On the GPU's timeline the exchange is the gap it leaves on the compute stream: from the
  // end of the routing kernels before it (the begin event) to the host's return (the end
  // event, recorded when the host may launch again; the stream is idle by then).
  for (auto& r : ranks_) phase_begin(*r, "counts_exchange", "host", r->comp);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char> all = tr_.all_gather_host(send, sizeof(std::int32_t) * static_cast<std::size_t>(cfg_.experts), streams);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  for (auto& r : ranks_) phase_end(*r, "counts_exchange", r->comp);
  for (auto& r : ranks_) {
    std::vector<std::int32_t> counts(all.size() / sizeof(std::int32_t));
    std::memcpy(counts.data(), all.data(), all.size());
    r->count_matrix = CountMatrix(cfg_.ep, cfg_.experts, std::move(counts));
    r->counts_sync_us = us;
  }
}

void MoeLayer::router_backward(Rank& r) {
  const Dims d = dims(cfg_);
  phase_begin(r, "router_backward", "compute", r.comp);
  if (!r.out.d_logits) r.out.d_logits = r.mem->alloc_n<float>(static_cast<std::size_t>(d.T * d.E), "d_logits");
  MOEHUB_CUDA_CHECK(k::router_backward(r.out.topk_ids, r.out.topk_weights, r.out.d_topk_weights, d.T, static_cast<int>(d.E),
                        static_cast<int>(d.K), r.out.d_logits, r.comp));
  phase_end(r, "router_backward", r.comp);
}

// The simulator's ring schedules replay this layer's kernels around the passes (route,
// exchange_counts, router_backward: systemc/workload/ring.cpp): change both together.
void MoeLayer::run(LayerSchedule& schedule) {
  for (auto& r : ranks_) {
    r->hop_events.clear();
    r->phase_events.clear();
    r->events_used = 0;
    MOEHUB_CUDA_CHECK(cudaEventRecord(r->t0, r->comp));
  }
  schedule.forward(*this);
  schedule.backward(*this);
  for_each_rank([&](std::size_t li) { router_backward(*ranks_[li]); });
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
