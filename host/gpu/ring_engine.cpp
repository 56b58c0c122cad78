// The ring engine (ring_engine.hpp): the hops of one pass over all local ranks, their
// transfers on the copy streams and computes on the compute streams, ordered by events.
#include "ring_engine.hpp"

// GCC 12/13 report a null memmove destination inside std::vector<Segment> copies on the
// empty-vector path after inlining (-Wnonnull false positive); nothing here passes null.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnonnull"
#endif

#include "cuda_check.hpp"
#include "layer.hpp"

namespace moehub::gpu {

RingHopSegments ring_hop_segments(int h, int n, const std::vector<Segment>& own,
                                  const std::array<std::vector<Segment>, 2>& pay,
                                  const std::array<std::vector<Segment>, 2>& acc) {
  RingHopSegments x;
  const bool has_acc = !acc[0].empty();
  // element by element: GCC 13 flags a range insert of this trivially copyable type with
  // a -Wnonnull false positive
  if (ring_sends_payload(h, n)) {
    for (const auto& s : h == 0 ? own : pay[static_cast<std::size_t>(ring_payload_slot(h))]) x.send.push_back(s);
    for (const auto& s : pay[static_cast<std::size_t>(ring_prefetch_slot(h))]) x.recv.push_back(s);
  }
  if (ring_sends_acc(h, has_acc)) {
    for (const auto& s : acc[static_cast<std::size_t>(ring_acc_send_slot(h))]) x.send.push_back(s);
    for (const auto& s : acc[static_cast<std::size_t>(ring_acc_slot(h))]) x.recv.push_back(s);
  }
  return x;
}

void MoeLayer::ring_pass(RingPass& p) {
  const int n = cfg_.ep;
  const std::size_t L = ranks_.size();
  const bool has_acc = !p.acc.empty() && !p.acc[0][0].empty();
  std::vector<cudaEvent_t> prev_c1(L, nullptr), prev_x1(L, nullptr);
  auto payload = [&](std::size_t li, int h) -> const std::vector<Segment>& {
    return h == 0 ? p.own[li] : p.pay[li][static_cast<std::size_t>(ring_payload_slot(h))];
  };
  const std::array<std::vector<Segment>, 2> no_acc;
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
      RingHopSegments seg = ring_hop_segments(h, n, p.own[li], p.pay[li], has_acc ? p.acc[li] : no_acc);
      RingXfer x{r.rank, r.copy, std::move(seg.send), std::move(seg.recv)};
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
    // the hop's computes: each rank's launches on its own host thread (for_each_rank)
    for_each_rank([&](std::size_t li) {
      Rank& r = *ranks_[li];
      if (prev_x1[li]) MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.comp, prev_x1[li], 0));
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].c0, r.comp));
      std::vector<Segment> acc_now;
      if (has_acc) {
        const auto& an = p.acc[li][static_cast<std::size_t>(ring_acc_slot(h))];
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
    });
  }
  if (has_acc) {
    std::vector<RingXfer> xs;
    std::vector<Rank::EventRec> recs(L);
    for (std::size_t li = 0; li < L; ++li) {
      Rank& r = *ranks_[li];
      MOEHUB_CUDA_CHECK(cudaStreamWaitEvent(r.copy, prev_c1[li], 0));
      recs[li] = {p.pass, p.mode, n, r.ev(), r.ev(), r.ev(), r.ev(), true};
      MOEHUB_CUDA_CHECK(cudaEventRecord(recs[li].x0, r.copy));
      xs.push_back({r.rank, r.copy, p.acc[li][static_cast<std::size_t>(ring_acc_send_slot(n))], p.acc_final[li]});
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

}  // namespace moehub::gpu
