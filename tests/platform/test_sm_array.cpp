// Tests of the thread-block engine (plain C++: time is passed in, so each
// test plays the part of the simulator) and of the SM array that runs it in
// SystemC (one simulation per process: run through CTest).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "common/sc_time_util.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/sm_array.hpp"
#include "gpu/tb_engine.hpp"
#include "sim_fixture.hpp"

namespace moehub {
namespace {

/// HBM as one first-come-first-served server of fixed bandwidth; a paced
/// flow holds it for its paced duration. With `deferred`, completions are
/// held until the test calls complete().
class FakeHbm : public MemoryFlows {
 public:
  explicit FakeHbm(double gbps, bool deferred = false) : gbps_(gbps), deferred_(deferred) {}
  void start_flow(double bytes, double max_gbps, Tick start, std::function<void(Tick)> done) override {
    const Tick begin = std::max(start, free_);
    free_ = begin + transfer_ticks(bytes, max_gbps > 0 ? std::min(max_gbps, gbps_) : gbps_);
    bytes_ += bytes;
    ++flows_;
    if (deferred_) {
      pending_.push_back(std::move(done));
    } else {
      done(free_);
    }
  }
  /// Completes the oldest held flow at `t`.
  void complete(Tick t) {
    auto f = std::move(pending_.front());
    pending_.erase(pending_.begin());
    f(t);
  }
  double bytes() const { return bytes_; }
  int flows() const { return flows_; }

 private:
  double gbps_;
  bool deferred_;
  Tick free_ = 0;
  double bytes_ = 0;
  int flows_ = 0;
  std::vector<std::function<void(Tick)>> pending_;
};

GpuConfig default_gpu() { return test::default_system().gpu; }

/// Expert GEMM shapes of an uneven grouped GEMM (gate+up projection of eight
/// experts with between 300 and 1,700 rows each).
std::vector<GemmShape> expert_shapes() {
  const ModelConfig m = test::default_model();
  std::vector<GemmShape> s;
  for (std::int64_t e = 0; e < 8; ++e) s.push_back({300 + 200 * e, 2LL * m.expert_ffn_size, m.hidden_size});
  return s;
}

/// A kernel of `n` blocks of `ticks` each in one group on SMs [first, first + num).
KernelSpec uniform_kernel(std::size_t n, Tick ticks, int first, int num, GroupRelease release = GroupRelease::kLaunch) {
  KernelSpec k;
  k.first_sm = first;
  k.num_sms = num;
  k.groups.push_back({std::vector<Tick>(n, ticks), release});
  return k;
}

Tick run_alone(const KernelSpec& k, int sms) {
  FakeHbm hbm(1e9);
  TbEngine e(sms, &hbm);
  const int id = e.launch(k, 0);
  e.update(0);
  return e.predicted_end(id);
}

TEST(TbEngine, GemmAloneMatchesComputeModel) {
  const GpuConfig gpu = default_gpu();
  const ComputeModel model(gpu, 2);
  const auto shapes = expert_shapes();
  const KernelCost c = model.grouped_gemm(shapes);
  ASSERT_GT(c.thread_blocks, 4 * gpu.num_sms);  // several waves
  FakeHbm hbm(gpu.hbm_bw_gbps * gpu.memory_kernel_efficiency);
  TbEngine e(gpu.num_sms, &hbm);
  const int id = e.launch(gemm_kernel(model, gpu.num_sms, shapes, 4), 0);
  e.update(0);
  EXPECT_EQ(e.predicted_end(id), c.duration);
  EXPECT_DOUBLE_EQ(hbm.bytes(), c.hbm_bytes);  // the compulsory traffic went to HBM
}

TEST(TbEngine, MemoryBoundGemmEndsWithItsFlow) {
  GpuConfig gpu = default_gpu();
  gpu.hbm_bw_gbps = 10;  // far below what the tensor cores need
  const ComputeModel model(gpu, 2);
  const auto shapes = expert_shapes();
  const KernelCost c = model.grouped_gemm(shapes);
  ASSERT_GT(c.duration, c.compute_makespan);
  FakeHbm hbm(gpu.hbm_bw_gbps * gpu.memory_kernel_efficiency);
  TbEngine e(gpu.num_sms, &hbm);
  const int id = e.launch(gemm_kernel(model, gpu.num_sms, shapes, 1), 0);
  e.update(0);
  // the fake and the cost function round the transfer time separately
  EXPECT_NEAR(static_cast<double>(e.predicted_end(id)), static_cast<double>(c.duration), 1.0);
}

TEST(TbEngine, HalfTheSmsTakesTwiceAsLong) {
  const GpuConfig gpu = default_gpu();
  const ComputeModel model(gpu, 2);
  const auto shapes = expert_shapes();
  const int half = gpu.num_sms / 2;
  const Tick all = run_alone(gemm_kernel(model, gpu.num_sms, shapes, 1), gpu.num_sms);
  const Tick lower = run_alone(gemm_kernel(model, gpu.num_sms, shapes, 1, 0, half), gpu.num_sms);
  const Tick upper = run_alone(gemm_kernel(model, gpu.num_sms, shapes, 1, half, half), gpu.num_sms);
  EXPECT_EQ(lower, model.grouped_gemm(shapes, half).duration);
  EXPECT_EQ(lower, upper);
  EXPECT_NEAR(static_cast<double>(lower) / static_cast<double>(all), 2.0, 0.05);
}

TEST(TbEngine, KernelsSharingSmsQueueInLaunchOrder) {
  const int S = 8;
  const Tick t = 1000;
  FakeHbm hbm(1e9);
  TbEngine e(S, &hbm);
  // A: 20 blocks on all SMs; B launched next: 12 blocks on SMs [4, 8)
  const int a = e.launch(uniform_kernel(20, t, 0, S), 0);
  const int b = e.launch(uniform_kernel(12, t, 4, 4), 0);
  e.update(0);
  // A goes first everywhere: 3 waves (8 + 8 + 4), its last wave on SMs 0..3,
  // so SMs 4..7 are free from 2t and B's 12 blocks take 3 more waves there
  EXPECT_EQ(e.predicted_end(a), 3 * t);
  EXPECT_EQ(e.predicted_end(b), 5 * t);
  EXPECT_EQ(e.group_start(b, 0), 2 * t);
  // on disjoint sets they do not interact
  TbEngine f(S, &hbm);
  const int c = f.launch(uniform_kernel(20, t, 0, 4), 0);
  const int d = f.launch(uniform_kernel(12, t, 4, 4), 0);
  f.update(0);
  EXPECT_EQ(f.predicted_end(c), 5 * t);
  EXPECT_EQ(f.predicted_end(d), 3 * t);
}

TEST(TbEngine, SignalledGroupStartsAtTheSignalEvenWithIdleSms) {
  const int S = 4;
  const Tick t = 1000;
  FakeHbm hbm(1e9);
  TbEngine e(S, &hbm);
  KernelSpec k = uniform_kernel(4, t, 0, S);
  k.groups.push_back({std::vector<Tick>(6, t), GroupRelease::kSignal});
  const int id = e.launch(k, 0);
  e.update(0);
  EXPECT_EQ(e.predicted_end(id), kTickMax);  // waits for its signal
  EXPECT_EQ(e.group_start(id, 1), kTickMax);
  // the SMs are idle from t on; the signal arrives at 2t announcing 5t
  e.update(2 * t);
  e.signal(id, 1, 5 * t, 2 * t);
  e.update(2 * t);
  EXPECT_EQ(e.group_start(id, 1), 5 * t);
  EXPECT_EQ(e.predicted_end(id), 7 * t);  // 6 blocks on 4 SMs: two waves
}

TEST(TbEngine, ReleasedGroupOvertakesALaterKernelAtTheNextFreeSm) {
  const int S = 2;
  const Tick t = 1000;
  FakeHbm hbm(1e9);
  TbEngine e(S, &hbm);
  KernelSpec a;  // launched first: one group that waits for a signal
  a.groups.push_back({std::vector<Tick>(2, t), GroupRelease::kSignal});
  const int ka = e.launch(a, 0);
  const int kb = e.launch(uniform_kernel(10, t, 0, S), 0);  // fills the idle SMs
  e.update(0);
  e.update(t + t / 2);
  e.signal(ka, 0, 2 * t + t / 2, t + t / 2);
  e.update(t + t / 2);
  // B's blocks on both SMs end at 3t; A's released blocks go first there
  EXPECT_EQ(e.group_start(ka, 0), 3 * t);
  EXPECT_EQ(e.predicted_end(ka), 4 * t);
  EXPECT_EQ(e.predicted_end(kb), 6 * t);  // 10 blocks + A's 2 over 2 SMs
}

TEST(TbEngine, PollingGroupStartsAtTheFirstPollAfterTheFlagAndCostsItsSm) {
  const Tick us = kPsPerUs;
  const PollCost poll{us, 100 * kPsPerNs, 32};
  FakeHbm hbm(1e9);
  TbEngine e(1, &hbm);
  // P (launched first) polls on SM 0; C, launched next, runs one 10 us block there
  KernelSpec p = uniform_kernel(1, 2 * us, 0, 1, GroupRelease::kPoll);
  p.poll = poll;
  const int kp = e.launch(p, 0);
  const Tick work = 10 * us;
  const int kc = e.launch(uniform_kernel(1, work, 0, 1), 0);
  e.update(0);
  EXPECT_EQ(e.predicted_end(kp), kTickMax);
  // the flag is set at 5.5 us: polls at 0, 1, ..., 6 us, the last one releases P
  const Tick flag = 5 * us + us / 2;
  e.update(flag);
  e.set_flag(kp, 0, flag, flag);
  e.update(flag);
  const std::int64_t polls = static_cast<std::int64_t>(ceil_div(flag, poll.interval)) + 1;
  EXPECT_EQ(e.polls(kp, 0), polls);
  EXPECT_DOUBLE_EQ(hbm.bytes(), static_cast<double>(polls) * poll.bytes);
  // every poll while C's block runs takes poll.sm_ticks of its SM
  EXPECT_EQ(e.predicted_end(kc), work + static_cast<Tick>(polls) * poll.sm_ticks);
  // P's group was released at 6 us but its block queues behind C's on the one SM
  EXPECT_EQ(e.group_start(kp, 0), e.predicted_end(kc));
  EXPECT_EQ(e.predicted_end(kp), e.predicted_end(kc) + 2 * us);
}

TEST(TbEngine, FlagSetBeforeLaunchReleasesAtTheFirstPoll) {
  FakeHbm hbm(1e9);
  TbEngine e(1, &hbm);
  KernelSpec p = uniform_kernel(1, 500, 0, 1, GroupRelease::kPoll);
  p.poll = {1000, 10, 8};
  const int kp = e.launch(p, 7000);
  e.set_flag(kp, 0, 3000, 7000);
  e.update(7000);
  EXPECT_EQ(e.polls(kp, 0), 1);
  EXPECT_EQ(e.group_start(kp, 0), 7000u);
  EXPECT_EQ(e.predicted_end(kp), 7000u + 500u + 10u);  // its own first poll stretches it
}

TEST(TbEngine, CompletionWaitsForTheHbmFlow) {
  FakeHbm hbm(1e9, true);
  TbEngine e(4, &hbm);
  KernelSpec k = uniform_kernel(8, 1000, 0, 4);
  k.hbm_bytes = 1e6;
  const int id = e.launch(k, 0);
  const int mem = e.launch(KernelSpec{}, 0);  // no blocks, no traffic: done at launch
  e.update(0);
  EXPECT_EQ(e.predicted_end(id), kTickMax);
  EXPECT_EQ(e.predicted_end(mem), 0u);
  hbm.complete(1500);  // before the blocks end: the blocks decide
  e.update(1500);
  EXPECT_EQ(e.predicted_end(id), 2000u);
  const int late = e.launch(uniform_kernel(4, 1000, 0, 4), 2000);
  e.update(2000);
  EXPECT_EQ(e.predicted_end(late), 3000u);
  KernelSpec s;
  s.hbm_bytes = 4096;
  const int stream = e.launch(s, 2000);
  e.update(2000);
  EXPECT_EQ(e.predicted_end(stream), kTickMax);
  hbm.complete(9000);
  e.update(2000);
  EXPECT_EQ(e.predicted_end(stream), 9000u);
}

TEST(TbEngine, TenThousandBlocksReleasedByAHundredSignals) {
  // group g of 100 one-nanosecond blocks is signalled at g ns: each group
  // runs on 100 of the 132 SMs in the nanosecond after its signal
  FakeHbm hbm(1e9);
  TbEngine e(132, &hbm);
  KernelSpec k;
  for (int g = 0; g < 100; ++g) k.groups.push_back({std::vector<Tick>(100, 1000), GroupRelease::kSignal});
  const int id = e.launch(k, 0);
  for (int g = 0; g < 100; ++g) {
    e.signal(id, g, static_cast<Tick>(g) * 1000, static_cast<Tick>(g) * 1000);
    e.update(static_cast<Tick>(g) * 1000);
  }
  EXPECT_EQ(e.group_start(id, 99), 99u * 1000u);
  EXPECT_EQ(e.predicted_end(id), 100u * 1000u);
}

TEST(TbEngine, RejectsAnSmSetOutsideTheArray) {
  FakeHbm hbm(1e9);
  TbEngine e(4, &hbm);
  EXPECT_THROW(e.launch(uniform_kernel(1, 1, 2, 3), 0), std::invalid_argument);
  KernelSpec p = uniform_kernel(1, 1, 0, 1, GroupRelease::kPoll);
  p.poll = {100, 100, 0};  // a poll may not take the whole interval
  EXPECT_THROW(e.launch(p, 0), std::invalid_argument);
}

// In SystemC: a GEMM whose second group waits for a flag raised ahead of its
// time by another thread, next to a streaming kernel; one wake-up per kernel.
/// True for the first simulation test of this process (SystemC elaborates once).
bool claim_simulation() {
  static bool ran = false;
  const bool first = !ran;
  ran = true;
  return first;
}

struct Bench : sc_core::sc_module {
  SC_HAS_PROCESS(Bench);
  Bench(const sc_core::sc_module_name& n, SmArray* sm, std::vector<GemmShape> shapes, Tick flag_at)
      : sc_core::sc_module(n), sm_(sm), shapes_(std::move(shapes)), flag_at_(flag_at) {
    SC_THREAD(compute);
    SC_THREAD(raiser);
  }
  void compute() {
    KernelSpec k = sm_->gemm_kernel(shapes_, 2);
    k.groups[1].release = GroupRelease::kSignal;
    const int id = sm_->launch(k, {-1, 7});
    gemm_end = sm_->wait(id);
    mem_end = sm_->wait(sm_->launch(SmArray::memory_kernel(1e6)));
  }
  void raiser() {
    sc_core::wait(to_sc(flag_at_ / 2));
    sm_->raise_flag(7, flag_at_);  // announced ahead of its time
  }
  SmArray* sm_;
  std::vector<GemmShape> shapes_;
  Tick flag_at_;
  Tick gemm_end = 0, mem_end = 0;
};

TEST(SmArray, FlagReleasedGroupInSystemC) {
  if (!claim_simulation()) GTEST_SKIP() << "one simulation per process: run through ctest";
  set_picosecond_resolution();
  const GpuConfig gpu = default_gpu();
  const auto shapes = expert_shapes();
  const ComputeModel model(gpu, 2);
  const KernelCost c = model.grouped_gemm(shapes);
  FakeHbm hbm(gpu.hbm_bw_gbps * gpu.memory_kernel_efficiency);
  SmArray sm("sm", gpu, 2, nullptr, &hbm);
  const Tick flag_at = 2 * c.duration;  // the first group is long done by then
  Bench bench("bench", &sm, shapes, flag_at);
  sc_core::sc_start();
  // the second half of the tiles starts at the flag on idle SMs
  const auto tiles = model.tiles(shapes);
  TbEngine alone(gpu.num_sms, &hbm);
  KernelSpec second;
  second.groups = {split_groups(tiles, 2)[1]};
  const int id = alone.launch(second, 0);
  alone.update(0);
  EXPECT_EQ(bench.gemm_end, flag_at + alone.predicted_end(id));
  EXPECT_EQ(bench.mem_end, bench.gemm_end + transfer_ticks(1e6, gpu.hbm_bw_gbps * gpu.memory_kernel_efficiency));
  EXPECT_EQ(sm.wakeups(), 2u);  // one per kernel, none per thread block
}

// In the node: a streaming kernel on stream 1 sets a flag when it finishes;
// the second group of a GEMM on stream 0 waits for that flag, by a signal or
// by polling it.
Schedule flag_schedule(ReleaseKind how, double mem_bytes) {
  const SystemConfig sys = test::default_system();
  Op gemm;
  gemm.kind = OpKind::kGemm;
  gemm.name = "gemm";
  gemm.launch = false;
  gemm.gemms = expert_shapes();
  gemm.groups = 2;
  gemm.release = how;
  gemm.release_flags = {-1, 3};
  Op mem;
  mem.kind = OpKind::kMemory;
  mem.name = "producer";
  mem.launch = false;
  mem.bytes = mem_bytes;
  mem.stream = 1;
  mem.sets_flag = 3;
  Schedule s;
  s.name = "flags";
  s.ops.assign(static_cast<std::size_t>(sys.num_gpus), std::vector<Op>{gemm, mem});
  return s;
}

struct FlagRun {
  Tick producer_end = 0, gemm_end = 0;
  Tick second_group_alone = 0;  ///< the GEMM's second group on idle SMs
  PollParams poll;
};

FlagRun run_flag_schedule(ReleaseKind how) {
  FlagRun r;
  const SystemConfig sys = test::default_system();
  const ComputeModel model(sys.gpu, test::default_model().dtype_bytes);
  const KernelCost c = model.grouped_gemm(expert_shapes());
  // the producer streams for about three GEMM durations
  const double mem_bytes = 3 * ticks_to_ns(c.duration) * sys.gpu.hbm_bw_gbps * sys.gpu.memory_kernel_efficiency;
  if (!claim_simulation()) return r;
  auto node = test::run_node(sys, flag_schedule(how, mem_bytes));
  if (!node) return r;
  for (const OpRecord& o : node->records()[0].stream) {
    if (o.name == "producer") r.producer_end = o.end;
    if (o.name == "gemm") r.gemm_end = o.end;
  }
  FakeHbm hbm(1e9);
  TbEngine alone(sys.gpu.num_sms, &hbm);
  KernelSpec second;
  second.groups = {split_groups(model.tiles(expert_shapes()), 2)[1]};
  const int id = alone.launch(second, 0);
  alone.update(0);
  r.second_group_alone = alone.predicted_end(id);
  return r;
}

TEST(SmArrayInNode, OpFinishingSignalsAGroupOfAnotherStreamsGemm) {
  const FlagRun r = run_flag_schedule(ReleaseKind::kSignal);
  if (r.gemm_end == 0) GTEST_SKIP() << "one simulation per process: run through ctest";
  EXPECT_GT(r.producer_end, r.second_group_alone);
  EXPECT_EQ(r.gemm_end, r.producer_end + r.second_group_alone);
}

TEST(SmArrayInNode, PollingGroupStartsAtTheFirstPollAfterTheOpFinishes) {
  const FlagRun r = run_flag_schedule(ReleaseKind::kPoll);
  if (r.gemm_end == 0) GTEST_SKIP() << "one simulation per process: run through ctest";
  const Tick interval = ns_to_ticks(r.poll.poll_interval_ns);
  const Tick release = ceil_div(r.producer_end, interval) * interval;  // polls from the GEMM's launch at 0
  EXPECT_EQ(r.gemm_end, release + r.second_group_alone);
}

}  // namespace
}  // namespace moehub
