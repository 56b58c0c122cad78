// Host logic of the GPU harness that needs no GPU: the exit status of each error type and
// the polling wait that lets a rank give up when another one failed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "errors.hpp"
#include "poll_wait.hpp"
#include "rank_threads.hpp"

namespace {

using namespace moehub::gpu;
using namespace std::chrono_literals;

TEST(GpuErrors, OnlyUsageErrorsExitWithTwo) {
  EXPECT_EQ(exit_status_of(UsageError("--ep must be ...")), 2);
  // an internal invalid_argument (e.g. a planner precondition) is an error, not bad usage
  EXPECT_EQ(exit_status_of(std::invalid_argument("max_rows_matched_in_one_hop < 0")), 1);
  EXPECT_EQ(exit_status_of(OutOfMemory("cudaMallocFromPoolAsync")), 1);
  EXPECT_EQ(exit_status_of(RankAborted("rank 1 failed")), 1);
  EXPECT_EQ(exit_status_of(std::runtime_error("x")), 1);
}

TEST(GpuErrors, UserInputParsersBecomeUsageErrors) {
  EXPECT_THROW(from_user_input("--gemm", []() -> int { throw std::invalid_argument("bad name"); }), UsageError);
  try {
    from_user_input("--gemm", []() -> int { throw std::invalid_argument("bad name"); });
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--gemm: bad name");
  }
  EXPECT_EQ(from_user_input("", [] { return 7; }), 7);
  // other exceptions pass through unchanged
  EXPECT_THROW(from_user_input("", []() -> int { throw std::runtime_error("device"); }), std::runtime_error);
}

TEST(GpuRankThreads, EachItemRunsOnceOnItsThreadInOrder) {
  for (int threads : {1, 2, 3, 8}) {
    RankThreads pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (std::size_t n : {0u, 1u, 5u, 8u, 17u}) {
      std::vector<std::thread::id> who(n);
      std::vector<int> runs(n, 0);
      std::mutex m;
      std::vector<std::size_t> order;  // items in the order they ran, all threads together
      pool.for_each(n, [&](std::size_t i) {
        who[i] = std::this_thread::get_id();
        ++runs[i];
        std::lock_guard<std::mutex> lock(m);
        order.push_back(i);
      });
      ASSERT_EQ(order.size(), n) << threads << " threads, " << n << " items";
      for (std::size_t i = 0; i < n; ++i) {
        EXPECT_EQ(runs[i], 1) << "item " << i;
        // item i on thread i % threads: the caller takes 0, threads, ...
        const bool on_caller = i % static_cast<std::size_t>(threads) == 0;
        EXPECT_EQ(who[i] == std::this_thread::get_id(), on_caller) << "item " << i;
        if (i >= static_cast<std::size_t>(threads)) {
          EXPECT_EQ(who[i], who[i - static_cast<std::size_t>(threads)]);
        }
      }
      // one thread's items in increasing order
      for (std::size_t a = 0; a < order.size(); ++a)
        for (std::size_t b = a + 1; b < order.size(); ++b)
          if (who[order[a]] == who[order[b]]) {
            EXPECT_LT(order[a], order[b]);
          }
      // distinct threads for distinct residues
      std::set<std::thread::id> ids(who.begin(), who.end());
      EXPECT_EQ(ids.size(), std::min<std::size_t>(n, static_cast<std::size_t>(threads)));
    }
  }
}

TEST(GpuRankThreads, RunsEveryItemAndRethrowsTheLowestFailure) {
  RankThreads pool(4);
  std::vector<std::atomic<int>> ran(8);
  try {
    pool.for_each(8, [&](std::size_t i) {
      ran[i].fetch_add(1);
      if (i == 6) throw std::runtime_error("item 6");
      if (i == 3) throw std::logic_error("item 3");
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "item 3");
  }
  for (auto& r : ran) EXPECT_EQ(r.load(), 1);
  // the pool stays usable after a failure, and a clean round throws nothing
  std::atomic<int> sum{0};
  EXPECT_NO_THROW(pool.for_each(8, [&](std::size_t i) { sum.fetch_add(static_cast<int>(i)); }));
  EXPECT_EQ(sum.load(), 28);
}

TEST(GpuRankThreads, NeedsAtLeastOneThread) { EXPECT_THROW(RankThreads(0), std::invalid_argument); }

PollTiming fast() {
  PollTiming t;
  t.failure_check_interval = 200us;
  t.spin = 100us;
  t.sleep = 50us;
  return t;
}

TEST(GpuPollWait, ReturnsWhenTheWorkCompletes) {
  int polls = 0, checks = 0;
  PollHooks h;
  h.done = [&] { return ++polls >= 50; };
  h.failure = [&] {
    ++checks;
    return std::string();
  };
  EXPECT_EQ(poll_until_done(h, fast()), "");
  EXPECT_EQ(polls, 50);
}

TEST(GpuPollWait, GivesUpWithinMillisecondsWhenAnotherRankFailed) {
  // the work never completes (a send to a dead peer); the failure appears after 20 ms
  const auto t0 = std::chrono::steady_clock::now();
  PollHooks h;
  h.done = [] { return false; };
  h.failure = [&] {
    return std::chrono::steady_clock::now() - t0 > 20ms ? std::string("another rank failed: rank 1") : std::string();
  };
  const std::string why = poll_until_done(h, fast());
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(why, "another rank failed: rank 1");
  EXPECT_GE(waited, 20ms);
  EXPECT_LT(waited, 2s);
}

TEST(GpuPollWait, TimesOutWithoutAFailureReport) {
  PollHooks h;
  h.done = [] { return false; };
  h.failure = [] { return std::string(); };
  PollTiming t = fast();
  t.timeout = 30ms;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = poll_until_done(h, t);
  EXPECT_NE(why.find("no completion after 30 ms"), std::string::npos) << why;
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
}

TEST(GpuPollWait, CompletedWorkIsNotReportedAsFailed) {
  // the failure is reported at the check where the work has just completed
  int polls = 0;
  PollHooks h;
  h.done = [&] { return ++polls > 1; };  // false at the first poll, true from then on
  h.failure = [] { return std::string("late notice"); };
  PollTiming t = fast();
  t.failure_check_interval = 0us;
  EXPECT_EQ(poll_until_done(h, t), "");
}

TEST(GpuPollWait, ChecksForFailuresAtTheGivenInterval) {
  std::atomic<int> checks{0};
  const auto t0 = std::chrono::steady_clock::now();
  PollHooks h;
  h.done = [&] { return std::chrono::steady_clock::now() - t0 > 50ms; };
  h.failure = [&] {
    ++checks;
    return std::string();
  };
  PollTiming t = fast();
  t.failure_check_interval = 10ms;
  EXPECT_EQ(poll_until_done(h, t), "");
  EXPECT_GE(checks.load(), 3);
  EXPECT_LE(checks.load(), 6);
}

}  // namespace

// ---- layout value types, a2a segments, ring slots ------------------------------------------

#include <map>
#include <numeric>

#include "a2a_segments.hpp"
#include "layer.hpp"
#include "layout.hpp"
#include "ring_engine.hpp"

namespace {

using namespace moehub::gpu;

TEST(GpuLayout, PartitionOffsetsTileThePartition) {
  const PartitionLayout p{3, 8, 4};  // El, H, F
  EXPECT_EQ(p.gate_up_elems(), 64);
  EXPECT_EQ(p.down_elems(), 32);
  EXPECT_EQ(p.elems(), 3 * 96);
  EXPECT_EQ(p.gate_up(0), 0);
  EXPECT_EQ(p.gate_up(2), 128);
  EXPECT_EQ(p.down(0), 192);  // after all three Wgu blocks
  EXPECT_EQ(p.down(2), 192 + 64);
  EXPECT_EQ(p.down(2) + p.down_elems(), p.elems());
}

CountMatrix uneven() {
  // 2 ranks x 4 experts (2 local each): rank 0 sends 5 + 0 + 2 + 1, rank 1 sends 0 + 3 + 4 + 1
  return CountMatrix(2, 4, {5, 0, 2, 1, 0, 3, 4, 1});
}

TEST(GpuLayout, CountMatrixSumsAndOffsets) {
  const CountMatrix cm = uneven();
  EXPECT_EQ(cm.local_experts(), 2);
  EXPECT_EQ(cm.at(1, 2), 4);
  EXPECT_EQ(cm.sent(0), 8);
  EXPECT_EQ(cm.sent(1), 8);
  EXPECT_EQ(cm.sorted_offset(0, 2), 5);
  EXPECT_EQ(cm.received_by_expert(1, 0), 6);  // expert 2: 2 + 4
  EXPECT_EQ(cm.received(0), 8);
  EXPECT_EQ(cm.received(1), 8);
  EXPECT_EQ(cm.block(1, 0), (std::vector<std::int64_t>{0, 3}));
  EXPECT_THROW(CountMatrix(3, 4, std::vector<std::int32_t>(12)), std::invalid_argument);  // 3 does not divide 4
  EXPECT_THROW(CountMatrix(2, 4, std::vector<std::int32_t>(7)), std::invalid_argument);
}

TEST(GpuLayout, HopRowsFollowTheRingInBothModes) {
  const CountMatrix cm = uneven();
  LayerConfig c;
  c.ep = 2;
  c.experts = 4;
  std::int64_t start = -1;
  // expert mode: rank 1's own pairs for partition 0's experts (0 and 1), from its row start
  EXPECT_EQ(hop_rows(c, cm, 1, 0, true, &start), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(start, 0);
  // token mode: partition 0's pairs for rank 1's experts (2 and 3), after its experts 0, 1
  EXPECT_EQ(hop_rows(c, cm, 1, 0, false, &start), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(start, 5);
}

/// A transport that records the all-to-all segments of every rank (no device).
class RecordingTransport final : public Transport {
 public:
  explicit RecordingTransport(int n) : n_(n) {}
  std::string name() const override { return "recording"; }
  int size() const override { return n_; }
  std::vector<int> local_ranks() const override {
    std::vector<int> r(static_cast<std::size_t>(n_));
    std::iota(r.begin(), r.end(), 0);
    return r;
  }
  int device_of(int) const override { return 0; }
  void ring_exchange(std::vector<RingXfer>& x) override { rings.push_back(x); }
  void all_to_all(std::vector<A2AXfer>& x) override { a2as.push_back(x); }
  std::vector<char> all_gather_host(const std::vector<const void*>&, std::size_t, const std::vector<cudaStream_t>&) override {
    return {};
  }
  void wait(cudaStream_t) override {}
  void abort(const std::string&) override {}
  std::vector<std::vector<A2AXfer>> a2as;
  std::vector<std::vector<RingXfer>> rings;

 private:
  int n_;
};

TEST(GpuA2ASegments, DispatchSegmentsPairUpAndCoverTheBuffers) {
  const CountMatrix cm = uneven();
  const std::size_t row = 16;  // bytes per row
  RecordingTransport tr(2);
  std::vector<A2ALayout> lay;
  std::vector<std::vector<char>> sorted(2, std::vector<char>(8 * row)), recv(2);
  std::vector<A2AXfer> xs;
  for (int r = 0; r < 2; ++r) {
    lay.push_back(a2a_layout(cm, r));
    recv[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(lay.back().received) * row);
    A2AXfer x{r, nullptr, {}, {}};
    a2a_segments(cm, lay.back(), r, sorted[static_cast<std::size_t>(r)].data(), recv[static_cast<std::size_t>(r)].data(),
                 row, true, x.send, x.recv);
    xs.push_back(x);
  }
  tr.all_to_all(xs);
  ASSERT_EQ(tr.a2as.size(), 1u);
  const auto& got = tr.a2as[0];
  EXPECT_EQ(lay[1].rows, (std::vector<std::int64_t>{6, 2}));
  EXPECT_EQ(lay[1].received_at[0], (std::vector<std::int64_t>{0, 6}));  // expert-major: src 0, then src 1
  EXPECT_EQ(lay[1].received_at[1], (std::vector<std::int64_t>{2, 7}));
  for (int s = 0; s < 2; ++s) {
    std::size_t sent = 0, received = 0;
    for (int d = 0; d < 2; ++d) {
      const auto& out = got[static_cast<std::size_t>(s)].send[static_cast<std::size_t>(d)];
      const auto& in = got[static_cast<std::size_t>(d)].recv[static_cast<std::size_t>(s)];
      ASSERT_EQ(out.size(), in.size());
      for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].bytes, in[i].bytes) << s << "->" << d << " segment " << i;
      for (const Segment& g : out) sent += g.bytes;
      for (const Segment& g : got[static_cast<std::size_t>(s)].recv[static_cast<std::size_t>(d)]) received += g.bytes;
    }
    // every sorted row leaves once, every received row arrives once
    EXPECT_EQ(sent, sorted[static_cast<std::size_t>(s)].size());
    EXPECT_EQ(received, recv[static_cast<std::size_t>(s)].size());
  }
  // rank 0 -> rank 1: its rows of experts 2 and 3 start at its sorted rows 5 and 7
  const auto& to1 = got[0].send[1];
  EXPECT_EQ(to1[0].ptr, sorted[0].data() + 5 * row);
  EXPECT_EQ(to1[1].ptr, sorted[0].data() + 7 * row);
}

TEST(GpuRingSlots, PayloadAndAccumulatorsAlternateAndNeverCollide) {
  // one buffer per slot, recognisable addresses
  char own = 0, p0 = 0, p1 = 0, a0 = 0, a1 = 0;
  const std::vector<Segment> mine = {{&own, 10}};
  const std::array<std::vector<Segment>, 2> pay = {std::vector<Segment>{{&p0, 10}}, std::vector<Segment>{{&p1, 10}}};
  const std::array<std::vector<Segment>, 2> acc = {std::vector<Segment>{{&a0, 4}}, std::vector<Segment>{{&a1, 4}}};
  for (int n : {1, 2, 3, 8}) {
    for (int h = 0; h < n; ++h) {
      const RingHopSegments x = ring_hop_segments(h, n, mine, pay, acc);
      const std::size_t want = (h + 1 < n ? 1u : 0u) + (h >= 1 ? 1u : 0u);
      ASSERT_EQ(x.send.size(), want) << "n " << n << " hop " << h;
      ASSERT_EQ(x.recv.size(), want);
      // compute h reads its payload from a slot the transfer of hop h does not overwrite
      const void* reads = h == 0 ? static_cast<const void*>(&own) : pay[static_cast<std::size_t>(ring_payload_slot(h))][0].ptr;
      const void* adds = acc[static_cast<std::size_t>(ring_acc_slot(h))][0].ptr;
      for (const Segment& r : x.recv) {
        EXPECT_NE(r.ptr, reads) << "n " << n << " hop " << h;
        if (r.ptr == &a0 || r.ptr == &a1) {
          EXPECT_EQ(r.ptr, adds);  // the accumulator compute h adds into arrives
        }
      }
      if (h + 1 < n) {
        EXPECT_EQ(x.send[0].ptr, reads);  // what is computed now moves on
      }
      if (h >= 1) {
        // the accumulator sent is the one compute h-1 added into
        EXPECT_EQ(x.send.back().ptr, acc[static_cast<std::size_t>(ring_acc_slot(h - 1))][0].ptr);
      }
    }
    // after the last hop the final return sends the last compute's slot; the other is free
    EXPECT_EQ(ring_acc_send_slot(n), ring_acc_slot(n - 1));
    EXPECT_NE(ring_free_slot_after(n), ring_acc_slot(n - 1));
  }
  // without accumulators only payloads move
  const std::array<std::vector<Segment>, 2> none;
  EXPECT_EQ(ring_hop_segments(1, 3, mine, pay, none).send.size(), 1u);
  EXPECT_TRUE(ring_hop_segments(2, 3, mine, pay, none).send.empty());
}

}  // namespace

// ---- model shapes from configs/models ------------------------------------------------------

#include "model_shapes.hpp"

namespace {

using namespace moehub::gpu;

// A trace records the ring's settings as the simulator's schedule keys
// (docs/trace-format.md): the same element type for accumulators and gradient partitions.
TEST(GpuTrace, RingSettingsAreTheSimulatorsScheduleKeys) {
  LayerConfig c;
  using KV = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(ring_sim_settings(c), (KV{{"ring_accum_bytes", "2"}, {"ring_grad_bytes", "2"}, {"ring_chunk_rows", "-1"}}));
  c.ring_accum = RingAccum::kFp32;
  c.hop_chunk_rows = 0;
  EXPECT_EQ(ring_sim_settings(c), (KV{{"ring_accum_bytes", "4"}, {"ring_grad_bytes", "4"}, {"ring_chunk_rows", "0"}}));
  c.hop_chunk_rows = 1024;
  EXPECT_EQ(ring_sim_settings(c).back().second, "1024");
}

TEST(GpuModelShapes, ReadsTheModelConfigs) {
  const std::vector<std::string> names = model_names();
  for (const char* n : {"mixtral-8x7b", "qwen3-30b-a3b", "qwen1.5-moe-a2.7b"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  const ModelShape q = load_model_shape("qwen3-30b-a3b");
  EXPECT_EQ(q.hidden, 2048);
  EXPECT_EQ(q.ffn, 768);
  EXPECT_EQ(q.experts, 128);
  EXPECT_EQ(q.top_k, 8);
  EXPECT_THROW(load_model_shape("no-such-model"), UsageError);
}

TEST(GpuModelShapes, BadValuesNameTheFileAndKey) {
  const std::string ok = "name: m\nhidden_size: 64   # a comment\nexpert_ffn_size: 32\nnum_experts: 4\ntop_k: 2\n";
  EXPECT_EQ(parse_model_shape(ok, "m.yaml").hidden, 64);
  try {
    parse_model_shape("hidden_size: 64\nexpert_ffn_size: 32\nnum_experts: 4\ntop_k: 5\n", "m.yaml");
    ADD_FAILURE() << "top_k above num_experts accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("m.yaml: top_k must be an integer in [1, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_model_shape("hidden_size: 64\nnum_experts: 4\ntop_k: 2\n", "m.yaml"), UsageError);  // no ffn
  EXPECT_THROW(parse_model_shape("hidden_size: 6x\nexpert_ffn_size: 32\nnum_experts: 4\ntop_k: 2\n", "m.yaml"), UsageError);
}

}  // namespace

// ---- every ring step has a GPU kernel ------------------------------------------------------

#include "ring_hop.hpp"

namespace {

using namespace moehub::gpu;

TEST(GpuRingSteps, EveryStepOfEveryPassHasAGpuKernel) {
  namespace plan = moehub::plan;
  // uneven routing, chunked hops: every kind of chunk appears
  std::vector<std::int32_t> counts(4 * 8);
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<std::int32_t>((i * 7) % 11);
  const plan::RingRouting r = plan::uniform_ring_routing(4, 8, 40, counts);
  std::size_t steps = 0;
  for (const plan::RingMode mode : {plan::RingMode::kExpert, plan::RingMode::kToken})
    for (const bool bwd : {false, true})
      for (const std::int64_t chunk : {0, 3}) {
        plan::RingOptions o;
        o.chunk_rows = chunk;
        for (const auto& hops : plan::ring_pass_steps(r, 64, 32, 2, 2, mode, bwd, o).hops)
          for (const auto& hs : hops)
            for (const auto& ch : hs.chunks)
              for (const auto& k : ch.kernels) {
                EXPECT_NO_THROW(hop_kernel_of(k.name)) << k.name;
                ++steps;
              }
      }
  EXPECT_GT(steps, 100u);
  EXPECT_THROW(hop_kernel_of("gemm3"), std::logic_error);
}

}  // namespace
