// Ring execution of the MoE layer (RelayMoE): expert routing (expert
// partitions visit, tokens stay) and token routing (token partitions visit,
// experts stay), forward and backward.
//
// The pass's steps -- per GPU and hop the visiting partition, its matched rows,
// the kernels in launch order with their GEMM shapes and bytes, and the bytes of
// the hop's transfer -- come from moe_plan's ring_pass_steps, the description
// the GPU harness (host/gpu) executes, so that both run the same schedule. Each
// pass is, on every GPU g of N, over hops h = 0..N-1 (part_h = the partition
// GPU g computes with at hop h, the one owned by GPU (g - h) mod N):
//   X_h (stream 1, a ring exchange: send to g+1, receive from g-1) carries the
//       current partition's payload on to the next GPU (h < N-1) together with
//       the accumulators of the previous hop's partition (h >= 1), one hop
//       behind; it waits for C_{h-1} (the buffer it reuses and the accumulators
//       it forwards);
//   C_h (stream 0): the steps' kernels of hop h, chunk by chunk; its first
//       kernel waits for X_{h-1} (which brought part_h) and the kernel after
//       the steps' wait_accum for X_h (which brought the accumulator it adds
//       into);
// and a last X_N returns the final accumulators to their owners. Each pass also has
// the steps' prologue and epilogue kernels, and the passes meet as the harness's ring
// engine orders its streams (a pass's first transfer after the compute before it, the
// first kernel after a pass after its last transfer); around them the layer's routing,
// pair permutation, counts exchange (the host waits for it) and router backward, as
// moehub-gpu's MoeLayer issues them. Accumulator
// and gradient element sizes and the hop chunks: ScheduleOptions (ring_accum_bytes,
// ring_grad_bytes, ring_chunk_rows). Transfers move in 64 KiB rows, the last one rounded up.
#include <algorithm>
#include <array>
#include <stdexcept>

#include "moe_plan/moe_plan.hpp"
#include "moe_plan/ring_steps.hpp"
#include "workload/schedule_common.hpp"

namespace moehub {

using namespace schedule_detail;

namespace {

constexpr std::uint32_t kChunkBytes = 64 * 1024;  // transfer rows: 64 KiB chunks of a flat buffer

// The simulator's routing as the ring steps take it: per GPU its tokens, its experts and
// the pairs of its tokens per expert.
plan::RingRouting ring_routing(const Routing& r, const ExpertPlacement& p) {
  plan::RingRouting rr;
  rr.first_expert = p.first_expert;
  rr.tokens = r.tokens_per_gpu;
  rr.pairs.assign(static_cast<std::size_t>(r.num_gpus), std::vector<std::int64_t>(static_cast<std::size_t>(r.num_experts), 0));
  for (std::size_t g = 0; g < rr.pairs.size(); ++g)
    for (const auto e : r.expert_ids[g]) ++rr.pairs[g][static_cast<std::size_t>(e)];
  return rr;
}

}  // namespace

Schedule build_ring(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt,
                    bool token_routing) {
  const int N = r.num_gpus;
  const auto G = static_cast<std::size_t>(N);
  const plan::RingRouting rr = ring_routing(r, p);
  plan::RingOptions ro;
  ro.accum_bytes = opt.ring_accum_bytes;
  ro.grad_bytes = opt.ring_grad_bytes;
  ro.chunk_rows = opt.ring_chunk_rows;
  const plan::RingMode mode = token_routing ? plan::RingMode::kToken : plan::RingMode::kExpert;

  Schedule s;
  s.name = token_routing ? "ring-token" : "ring-expert";
  s.ops.resize(G);
  // The layer as moehub-gpu's MoeLayer issues it (host/gpu/layer.cpp): route (router GEMM,
  // softmax and top-k, then permute_pairs: the pair list and per-expert counts from the
  // top-k ids), exchange_counts (an NCCL all-gather of every rank's int32 count per expert,
  // copied to the host, which waits for it: the passes' steps depend on the counts), the
  // two passes, and router_backward.
  const double topk = m.top_k, E = m.num_experts;
  if (N > 1) {
    std::vector<std::vector<std::int64_t>> one(G, std::vector<std::int64_t>(G, 1));
    s.collectives.push_back(
        all_to_all_from_counts("count_exchange", one, static_cast<std::uint32_t>(std::max(1, m.num_experts) * 4), 1));
  }
  for (std::size_t g = 0; g < G; ++g) {
    auto& ops = s.ops[g];
    const auto T = static_cast<double>(r.tokens_per_gpu[g]);
    append_routing_ops(ops, m, r.tokens_per_gpu[g]);
    ops.push_back(memory_op("permute_pairs", "routing", T * topk * 4.0 * 3.0));  // ids read; pair source and slot written
    if (N > 1) ops.push_back(collective_op("count_exchange", "count_exchange", 0));
    ops.push_back(host_sync_op("count_sync", "count_exchange"));
  }
  // last_c: the latest op on the compute stream per GPU. A pass starts as the GPU harness's
  // ring engine (host/gpu/ring_engine.cpp) starts one: its copy stream waits for everything
  // on the compute stream so far, so the pass's first transfer waits for last_c as every
  // later one does (the buffer it reuses). copy_wait: the pass ends with the compute stream
  // waiting for the copy stream, so the first compute op after a pass waits for the pass's
  // last transfer.
  std::vector<int> last_c(G, -1), copy_wait(G, -1);
  for (std::size_t g = 0; g < G; ++g) {
    const std::vector<Op>& ops = s.ops[g];
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].stream == 0 && ops[i].kind != OpKind::kHostSync) last_c[g] = static_cast<int>(i);
  }
  const auto push_compute = [&](std::size_t g, Op op) {
    if (copy_wait[g] >= 0) {
      op.after.push_back(copy_wait[g]);
      copy_wait[g] = -1;
    }
    last_c[g] = static_cast<int>(s.ops[g].size());
    s.ops[g].push_back(std::move(op));
  };

  for (const bool backward : {false, true}) {
    const plan::RingPassSteps steps =
        plan::ring_pass_steps(rr, m.hidden_size, m.expert_ffn_size, m.top_k, m.dtype_bytes, mode, backward, ro);
    const std::string pass = backward ? "bwd" : "fwd";
    bool any_accum = false;  // does any partition carry accumulators in this pass?
    for (const auto& hops : steps.hops)
      for (const auto& hs : hops) any_accum = any_accum || hs.accum_bytes > 0;
    for (double b : steps.final_accum_bytes) any_accum = any_accum || b > 0;
    // the pass's own kernels before its hops (accumulators zeroed)
    for (std::size_t g = 0; g < G; ++g)
      for (const plan::KernelStep& ks : steps.prologue[g]) push_compute(g, memory_op(pass + " " + ks.name, "ring_compute", ks.bytes));
    std::vector<int> last_x(G, -1);       // the latest transfer per GPU (-1 after a hop without one)
    std::vector<int> pass_last_x(G, -1);  // the pass's last transfer per GPU
    for (int h = 0; h <= N; ++h) {
      const std::vector<int> prev_x = last_x;  // X_{h-1}: brought this hop's partition
      // X_h: does any GPU move anything at this hop?
      const bool has_payload = h < N - 1;
      const bool has_accum = N > 1 && h >= 1 && any_accum;
      if (has_payload || has_accum) {
        std::vector<std::vector<std::int64_t>> counts(G, std::vector<std::int64_t>(G, 0));
        for (int g = 0; g < N; ++g) {
          const double bytes = h < N ? steps.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)].payload_bytes +
                                           steps.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)].accum_bytes
                                     : steps.final_accum_bytes[static_cast<std::size_t>(g)];
          counts[static_cast<std::size_t>(g)][static_cast<std::size_t>(plan::ring_send_peer(g, N))] =
              static_cast<std::int64_t>((bytes + kChunkBytes - 1) / kChunkBytes);
        }
        const int c = static_cast<int>(s.collectives.size());
        s.collectives.push_back(all_to_all_from_counts(pass + "_hop" + std::to_string(h) + "_transfer", counts,
                                                       kChunkBytes, 8));
        s.collectives.back().bulk = true;
        for (std::size_t g = 0; g < G; ++g) {
          Op x = collective_op(pass + " hop " + std::to_string(h) + " transfer", "ring_transfer", c, 1);
          if (last_c[g] >= 0) x.after.push_back(last_c[g]);
          last_x[g] = static_cast<int>(s.ops[g].size());
          pass_last_x[g] = last_x[g];
          s.ops[g].push_back(x);
        }
      } else {
        for (auto& lx : last_x) lx = -1;
      }
      if (h == N) break;
      // C_h: the steps' kernels, chunk by chunk
      for (int g = 0; g < N; ++g) {
        const auto gi = static_cast<std::size_t>(g);
        auto& ops = s.ops[gi];
        const plan::HopSteps& hs = steps.hops[static_cast<std::size_t>(g)][static_cast<std::size_t>(h)];
        const std::string tag = pass + " hop " + std::to_string(h);
        const std::size_t first = ops.size();
        bool after_wait = false;  // the next kernel adds into the accumulator X_h brought
        for (std::size_t ci = 0; ci < hs.chunks.size(); ++ci) {
          const std::string ctag = hs.chunks.size() > 1 ? tag + " chunk " + std::to_string(ci) : tag;
          for (const plan::KernelStep& k : hs.chunks[ci].kernels) {
            if (k.is_wait()) {
              after_wait = has_accum && last_x[static_cast<std::size_t>(g)] >= 0;
              continue;
            }
            if (k.is_gemm()) {
              std::vector<GemmShape> shapes;
              for (const plan::GemmDims& gd : k.gemms) shapes.push_back({gd.m, gd.n, gd.k});
              push_compute(gi, gemm_op(ctag + " " + k.name, "ring_compute", shapes));
            } else {
              push_compute(gi, memory_op(ctag + " " + k.name, "ring_compute", k.bytes));
            }
            if (after_wait) ops.back().after.push_back(last_x[gi]);
            after_wait = false;
          }
        }
        // the hop's first kernel waits for the transfer that brought its partition
        if (ops.size() > first && h >= 1 && prev_x[gi] >= 0) ops[first].after.push_back(prev_x[gi]);
      }
    }
    // the pass's end: its kernels after the last transfer (accumulators into the outputs)
    for (std::size_t g = 0; g < G; ++g) {
      if (pass_last_x[g] >= 0) copy_wait[g] = pass_last_x[g];
      for (const plan::KernelStep& ks : steps.epilogue[g]) push_compute(g, memory_op(pass + " " + ks.name, "ring_compute", ks.bytes));
    }
  }
  // the router's backward: d_logits from the top-k ids, gate weights and their gradients
  for (std::size_t g = 0; g < G; ++g) {
    const auto T = static_cast<double>(r.tokens_per_gpu[g]);
    push_compute(g, memory_op("router_backward", "routing", T * topk * 4.0 * 3.0 + T * E * 4.0));
  }
  return s;
}

}  // namespace moehub
