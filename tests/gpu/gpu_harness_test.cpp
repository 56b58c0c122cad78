// moehub-gpu: argument validation (everywhere) and the layer checks against the float64
// reference (only where a CUDA device is present; skipped with a message elsewhere).
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gemm.hpp"
#include "grouped_gemm.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "moe_kernels.hpp"
#include "schedule.hpp"

namespace {

using moehub::gpu::GemmImpl;
using moehub::gpu::LayerConfig;

struct RunResult {
  int status;          ///< exit status, -1 when killed by a signal
  std::string output;  ///< stdout and stderr together
};
RunResult run_bin(const std::string& args) {
  const std::string cmd = std::string(MOEHUB_GPU_BIN) + " " + args + " 2>&1";
  RunResult r{-1, ""};
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  const int st = pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}
/// Runs moehub-gpu and expects exit status `want`; on a mismatch the failure shows the
/// command and everything it printed.
::testing::AssertionResult exits_with(const std::string& args, int want) {
  const RunResult r = run_bin(args);
  if (r.status == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "moehub-gpu " << args << ": exit status " << r.status << ", expected " << want
                                       << "; its output:\n" << r.output;
}

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(GpuHarnessArgs, BadArgumentsExitWithTwo) {
  EXPECT_TRUE(exits_with("", 2));
  EXPECT_TRUE(exits_with("no-such-command", 2));
  EXPECT_TRUE(exits_with("check --ep 3", 2));  // 3 does not divide the 32 experts
  EXPECT_TRUE(exits_with("check --bogus 1", 2));
  EXPECT_TRUE(exits_with("check --ep", 2));
  EXPECT_TRUE(exits_with("memory --tokens abc", 2));
  EXPECT_TRUE(exits_with("memory --tokens 0", 2));
  EXPECT_TRUE(exits_with("check --schedules ring-sideways", 2));
  EXPECT_TRUE(exits_with("run --transport carrier-pigeon", 2));
  EXPECT_TRUE(exits_with("check --gemm fastest", 2));
  EXPECT_TRUE(exits_with("check --transport carrier-pigeon", 2));
  EXPECT_TRUE(exits_with("bench-gemm --models gpt-2", 2));
  EXPECT_TRUE(exits_with("bench-gemm --routing zipf", 2));
  EXPECT_TRUE(exits_with("run --schedule ring-sideways", 2));
  // ring variants: accumulator names and chunk limits (0 = whole hop, never negative)
  EXPECT_TRUE(exits_with("check --ring-accum fp16", 2));
  EXPECT_TRUE(exits_with("check --ring-accum fp32,half", 2));
  EXPECT_TRUE(exits_with("check --hop-chunk-rows -2", 2));
  EXPECT_TRUE(exits_with("check --hop-chunk-rows 8,many", 2));
  EXPECT_TRUE(exits_with("memory --ring-accum double", 2));
  EXPECT_TRUE(exits_with("memory --hop-chunk-rows -5", 2));
  EXPECT_TRUE(exits_with("run --ring-accum fp64", 2));
  EXPECT_TRUE(exits_with("run --hop-chunk-rows -2", 2));
  EXPECT_TRUE(exits_with("bench-hop --ring-accum bf16", 2));  // not an option of bench-hop
  // host threads launching the folded ranks' work: 0 (one per rank) and up
  EXPECT_TRUE(exits_with("run --launch-threads -1", 2));
  EXPECT_TRUE(exits_with("check --launch-threads two", 2));
  EXPECT_TRUE(exits_with("memory --launch-threads 2", 2));  // not an option of memory
}

TEST(GpuHarnessArgs, ParsersAcceptTheDocumentedNames) {
  // the registry: every command takes its schedule names from here
  EXPECT_EQ(moehub::gpu::schedule_names(), (std::vector<std::string>{"a2a", "ring-expert", "ring-token"}));
  for (const std::string& n : moehub::gpu::schedule_names()) EXPECT_EQ(moehub::gpu::make_schedule(n)->name(), n);
  EXPECT_FALSE(moehub::gpu::make_schedule("a2a")->ring_options());
  EXPECT_TRUE(moehub::gpu::make_schedule("ring-token")->ring_options());
  try {
    moehub::gpu::make_schedule("ring");
    ADD_FAILURE() << "ring accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a2a, ring-expert, ring-token"), std::string::npos) << e.what();
  }
  EXPECT_EQ(moehub::gpu::parse_gemm_impl("grouped"), GemmImpl::kGrouped);
  EXPECT_EQ(moehub::gpu::parse_gemm_impl("wgmma"), GemmImpl::kWgmma);
  EXPECT_EQ(moehub::gpu::parse_gemm_impl("auto"), GemmImpl::kAuto);
  EXPECT_EQ(moehub::gpu::parse_gemm_impl("auto-cublas-wgrad"), GemmImpl::kAutoCublasWgrad);
  EXPECT_STREQ(moehub::gpu::to_string(GemmImpl::kAutoCublasWgrad), "auto-cublas-wgrad");
  EXPECT_THROW(moehub::gpu::parse_gemm_impl(""), std::invalid_argument);
  EXPECT_EQ(moehub::gpu::parse_ring_accum("fp32"), moehub::gpu::RingAccum::kFp32);
  EXPECT_EQ(moehub::gpu::parse_ring_accum("bf16"), moehub::gpu::RingAccum::kBf16);
  EXPECT_STREQ(moehub::gpu::to_string(moehub::gpu::RingAccum::kBf16), "bf16");
  try {
    moehub::gpu::parse_ring_accum("fp16");
    ADD_FAILURE() << "fp16 accepted";
  } catch (const std::invalid_argument& e) {
    // the message names the option and its allowed values
    EXPECT_NE(std::string(e.what()).find("--ring-accum"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp32, bf16"), std::string::npos) << e.what();
  }
}

// The wgmma kernel's contract is checked before any device is touched, so calls outside it
// are refused with the reason on every machine (and fall back to cuBLAS in GemmRunner).
TEST(GpuGemmArgs, WgmmaRefusesCallsOutsideItsContract) {
  alignas(16) static std::uint16_t buf[64];
  moehub::kernels::GroupedGemmArgs ok;
  ok.a = buf;
  ok.b = buf;
  ok.c = buf;
  ok.n = 64;
  ok.k = 64;
  ok.rows = {3, 0, 5};
  auto why = [](moehub::kernels::GroupedGemmArgs a) { return moehub::kernels::grouped_gemm_unsupported(a); };
  auto bad = ok;
  bad.rows.clear();
  EXPECT_EQ(why(bad), "no groups");
  bad = ok;
  bad.rows.assign(moehub::kernels::kGroupedGemmMaxGroups + 1, 1);
  EXPECT_NE(why(bad).find("more than 256 groups"), std::string::npos);
  bad = ok;
  bad.n = 100;
  EXPECT_NE(why(bad).find("multiples of 8"), std::string::npos);
  bad = ok;
  bad.k = 0;
  EXPECT_NE(why(bad).find("positive"), std::string::npos);
  bad = ok;
  bad.c = buf + 1;  // 2 bytes past an aligned address
  EXPECT_NE(why(bad).find("16-byte aligned"), std::string::npos);
  bad = ok;
  bad.rows = {4, -1};
  EXPECT_EQ(why(bad), "negative row count");
  bad = ok;
  bad.rows = {1LL << 31};
  EXPECT_EQ(why(bad), "sizes past 32-bit tile coordinates");
  // a call inside the contract is refused only for the device, if at all
  const std::string r = why(ok);
  if (!have_device()) {
    EXPECT_NE(r.find("no CUDA device"), std::string::npos) << r;
  }
}

TEST(GpuHarnessArgs, LayerConfigValidation) {
  LayerConfig c;
  c.tokens = 64;
  c.hidden = 128;
  c.ffn = 64;
  c.experts = 16;
  c.top_k = 4;
  c.ep = 4;
  EXPECT_NO_THROW(moehub::gpu::validate(c));
  LayerConfig bad = c;
  bad.ep = 5;
  EXPECT_THROW(moehub::gpu::validate(bad), std::invalid_argument);
  bad = c;
  bad.top_k = 17;
  EXPECT_THROW(moehub::gpu::validate(bad), std::invalid_argument);
  bad = c;
  bad.hidden = 100;  // not a multiple of 8 (16-byte rows)
  EXPECT_THROW(moehub::gpu::validate(bad), std::invalid_argument);
  LayerConfig ring = c;
  ring.ring_accum = moehub::gpu::RingAccum::kBf16;
  ring.hop_chunk_rows = 1;
  EXPECT_NO_THROW(moehub::gpu::validate(ring));
  ring.hop_chunk_rows = -1;  // one expert per chunk
  EXPECT_NO_THROW(moehub::gpu::validate(ring));
  bad = c;
  bad.hop_chunk_rows = -2;
  EXPECT_THROW(moehub::gpu::validate(bad), std::invalid_argument);
}

TEST(GpuHarnessArgs, WithoutADeviceCommandsFailWithOne) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present: this test covers machines without one";
  // valid arguments, no device: a failure (1), never success (0) or a usage error (2)
  EXPECT_TRUE(exits_with("check --ep 1 --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2", 1));
  EXPECT_TRUE(exits_with("memory --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2", 1));
  EXPECT_TRUE(exits_with("run --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2", 1));
  EXPECT_TRUE(exits_with("check --ep 1 --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2 --ring-accum bf16 --hop-chunk-rows 4", 1));
  EXPECT_TRUE(exits_with("memory --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2 --ring-accum fp32,bf16 --hop-chunk-rows 0,16", 1));
  // and says why, before the call that failed
  const RunResult r = run_bin("check --ep 1 --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2");
  EXPECT_NE(r.output.find("moehub-gpu check: error: no usable CUDA device (cudaGetDeviceCount: "), std::string::npos)
      << r.output;
}

TEST(GpuHarnessArgs, HiddenFailureOptionIsCheckedButNotAdvertised) {
  EXPECT_TRUE(exits_with("run --fail-rank 0 --fail-at somewhere", 2));
  const RunResult r = run_bin("run --no-such-option 1");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.output.find("fail-rank"), std::string::npos) << r.output;
}

TEST(GpuLayer, ARankThatFailsOnPurposeEndsTheCommandWithOne) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  // folded ranks: rank 1 of 2 fails before the layer's first exchange
  const RunResult r = run_bin("run --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2 --fail-rank 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 fails on purpose"), std::string::npos) << r.output;
}

TEST(GpuLayer, AllSchedulesMatchTheReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  // uniform and skewed routing (experts with no tokens), EP 1, 2 and 8, folded ranks
  // (the ring schedules also run with bf16 accumulators and hop chunks of 8 and 40 rows)
  EXPECT_TRUE(exits_with("check --ep 1,2,8 --tokens 48 --hidden 128 --ffn 64 --experts 16 --top-k 4", 0));
}

TEST(GpuLayer, RingVariantsMatchTheReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  // bf16 accumulators with chunks of one row (every expert alone) and of 20 rows (below
  // one hop's rows), on more experts per rank than the default case
  EXPECT_TRUE(exits_with("check --ep 1,2,8 --schedules ring-expert,ring-token --ring-accum bf16,fp32 --hop-chunk-rows 1,20 "
                    "--tokens 64 --hidden 128 --ffn 64 --experts 32 --top-k 4", 0));
}

TEST(GpuLayer, EveryLaunchThreadCountMatchesTheReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  // the folded ranks' work launched from one host thread, from fewer threads than ranks
  // (several ranks per thread) and from one per rank (the default, run by the cases above)
  for (const char* t : {"1", "3"})
    EXPECT_TRUE(exits_with(std::string("check --ep 8 --tokens 48 --hidden 128 --ffn 64 --experts 16 --top-k 4 --launch-threads ") + t, 0))
        << t;
}

TEST(GpuLayer, GemmImplementationsAgree) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  for (const char* g : {"loop", "streams", "grouped", "wgmma", "auto-cublas-wgrad"})
    EXPECT_TRUE(exits_with(std::string("check --ep 2 --routing skewed --tokens 32 --hidden 64 --ffn 32 --experts 8 --top-k 2 --gemm ") + g, 0)) << g;
}

/// The lines of a command's output.
std::vector<std::string> lines_of(const std::string& out) {
  std::vector<std::string> v;
  std::size_t pos = 0;
  while (pos < out.size()) {
    const std::size_t end = std::min(out.find('\n', pos), out.size());
    v.push_back(out.substr(pos, end - pos));
    pos = end + 1;
  }
  return v;
}

TEST(GpuMemory, PlansEqualTheMeasuredPeaksOnEveryRank) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the memory measurement runs only on a GPU machine";
  // every schedule and ring variant (fp32 and bf16 accumulators; whole hops, one expert per
  // chunk, and chunks of 8 rows, which split experts of about 12 rows at EP 4) at EP 1, 2
  // and 4: the plan of each rank (plan::plan_a2a / plan_ring from its counts) must equal
  // the peak its tracked allocator measured, to the byte (the `memory` column plan_err_B)
  const RunResult r = run_bin(
      "memory --ep 1,2,4 --tokens 48 --hidden 128 --ffn 64 --experts 16 --top-k 4 --schedules a2a,ring-expert,ring-token "
      "--ring-accum fp32,bf16 --hop-chunk-rows 0,-1,8");
  ASSERT_EQ(r.status, 0) << r.output;
  int rows = 0;
  for (const std::string& line : lines_of(r.output)) {
    int ep = 0;
    char sched[64] = {0};
    double peak = 0, above = 0, pool = 0, plan = 0;
    long long err = -1;
    if (std::sscanf(line.c_str(), "%d %63s %lf %lf %lf %lf %lld", &ep, sched, &peak, &above, &pool, &plan, &err) != 7)
      continue;
    ++rows;
    EXPECT_EQ(err, 0) << line;
    EXPECT_GT(peak, 0.0) << line;
  }
  // per EP: a2a once, and each ring schedule with 2 accumulator types x 3 chunk limits
  EXPECT_EQ(rows, 3 * (1 + 2 * 2 * 3)) << r.output;
  EXPECT_EQ(r.output.find("does not fit"), std::string::npos) << r.output;
}

// The measurement commands at small shapes: they run, and print what their docs say they
// print, with figures that can be true (the timed figures themselves are the device
// stages' business: scripts/gpu/device_run.sh).
TEST(GpuCommands, RunTimesEverySchedulesLayerAndReadsItsTraceBack) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the measurement commands run only on a GPU machine";
  for (const char* sched : {"a2a", "ring-expert", "ring-token", "ring"}) {
    const std::string dir = ::testing::TempDir() + "moehub_run_trace_" + sched;
    std::filesystem::remove_all(dir);  // the trace must be this run's
    const RunResult r = run_bin(std::string("run --schedule ") + sched +
                                " --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2 --iters 2 --trace-dir " + dir);
    ASSERT_EQ(r.status, 0) << sched << ":\n" << r.output;
    double median = -1;
    int iters = 0;
    std::size_t routing = 0, gemm = 0, hops = 0, memory = 0;
    bool timed = false, traced = false;
    int ranks_on_plan = 0;  // ranks whose measured peak equals the schedule's memory plan
    for (const std::string& l : lines_of(r.output)) {
      if (l.rfind("rank ", 0) == 0 && l.find("peak device memory") != std::string::npos)
        ranks_on_plan += l.find("equal to the memory plan") != std::string::npos ? 1 : 0;
      if (std::sscanf(l.c_str(), "layer forward+backward (host wall, all local ranks): median %lf us over %d iterations",
                      &median, &iters) == 2)
        timed = true;
      char path[512];
      if (std::sscanf(l.c_str(), "trace written to %511s and read back: %zu routing files, %zu gemm rows, %zu hop rows, %zu memory samples",
                      path, &routing, &gemm, &hops, &memory) == 5)
        traced = true;
    }
    EXPECT_TRUE(timed) << sched << ":\n" << r.output;
    EXPECT_EQ(ranks_on_plan, 2) << sched << ":\n" << r.output;
    EXPECT_GT(median, 0.0) << sched;
    EXPECT_EQ(iters, 2) << sched;
    ASSERT_TRUE(traced) << sched << ":\n" << r.output;
    EXPECT_GT(routing, 0u) << sched;
    EXPECT_GT(gemm, 0u) << sched;
    EXPECT_GT(hops, 0u) << sched;
    EXPECT_GT(memory, 0u) << sched;
  }
}

TEST(GpuCommands, BenchHopTimesBothPasses) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the measurement commands run only on a GPU machine";
  // weights of 0.8 MB a partition: the copy's MB column (one decimal) is not 0.0
  const RunResult r = run_bin("bench-hop --ep 2 --tokens 64 --hidden 256 --ffn 128 --experts 8 --top-k 2");
  ASSERT_EQ(r.status, 0) << r.output;
  int passes = 0;
  for (const std::string& l : lines_of(r.output)) {
    char pass[16] = {0};
    double compute = -1, copy = -1, mb = -1, gbs = -1, both = -1, ratio = -1;
    if (std::sscanf(l.c_str(), "%15s hop: compute %lf us, copy %lf us (%lf MB, %lf GB/s), overlapped %lf us = %lfx", pass,
                    &compute, &copy, &mb, &gbs, &both, &ratio) != 7)
      continue;
    ++passes;
    EXPECT_GT(compute, 0.0) << l;
    EXPECT_GT(copy, 0.0) << l;
    EXPECT_GT(mb, 0.0) << l;
    EXPECT_GT(both, 0.0) << l;
  }
  EXPECT_EQ(passes, 2) << r.output;  // forward and backward
}

TEST(GpuCommands, BenchGemmTimesEveryImplementationBesideDense) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the measurement commands run only on a GPU machine";
  const RunResult r = run_bin("bench-gemm --tokens 256 --models qwen3-30b-a3b --routing skewed");
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<std::string> names;
  for (const std::string& l : lines_of(r.output)) {
    // "<model> <name> gate+up T us F TFLOP/s | down T us F TFLOP/s"; a name may carry a
    // fallback's reason in parentheses, with spaces
    const std::size_t at = l.find(" gate+up ");
    const std::size_t sp = l.find(' ');
    if (at == std::string::npos || sp >= at) continue;
    double t1 = -1, f1 = -1, t2 = -1, f2 = -1;
    if (std::sscanf(l.c_str() + at, " gate+up %lf us %lf TFLOP/s | down %lf us %lf TFLOP/s", &t1, &f1, &t2, &f2) != 4) continue;
    const std::string model = l.substr(0, sp);
    std::string name = l.substr(sp, at - sp);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);  // printed padded to a column
    EXPECT_EQ(model, "qwen3-30b-a3b") << l;
    EXPECT_GT(t1, 0.0) << l;
    EXPECT_GT(t2, 0.0) << l;
    EXPECT_GT(f1, 0.0) << l;
    names.push_back(name);
  }
  // the forward implementations and dense, then the weight gradients and their dense
  for (const char* want : {"loop", "streams4", "streams8", "streams16", "grouped", "wgmma", "auto", "dense-same-flops",
                           "wgrad-loop", "wgrad-streams4", "wgrad-wgmma", "wgrad-auto", "wgrad-dense-same-flops"})
    EXPECT_NE(std::find_if(names.begin(), names.end(),
                           [&](const std::string& n) { return n.rfind(want, 0) == 0 && (n == want || n[std::strlen(want)] == '('); }),
              names.end())
        << want << " missing from:\n" << r.output;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The wgmma grouped GEMM against cuBLAS (one cublasGemmEx per group) on shapes with every
// kind of tail: groups of 0, 1, 127..129 and 300 rows, n and k that are not multiples of
// the 256 x 64 tile, both B layouts. Rows of C outside the groups (a guard band after the
// last group) must stay untouched.
// Routing ids for the kernel tests: uniform over the experts (distinct per token), or
// every token's first slot on expert 0 and the rest on the next experts (a hot expert).
std::vector<std::int32_t> test_ids(std::int64_t tokens, int experts, int top_k, bool hot, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(tokens * top_k));
  std::vector<std::int32_t> perm(static_cast<std::size_t>(experts));
  for (int e = 0; e < experts; ++e) perm[static_cast<std::size_t>(e)] = e;
  for (std::int64_t t = 0; t < tokens; ++t) {
    if (!hot) std::shuffle(perm.begin(), perm.end(), rng);
    for (int j = 0; j < top_k; ++j) ids[static_cast<std::size_t>(t * top_k + j)] = perm[static_cast<std::size_t>(j)];
  }
  return ids;
}

/// One shape of the layer kernels' tests.
struct KernelCase {
  std::int64_t tokens;
  int experts, top_k;
  bool hot = false;  ///< test_ids' hot expert
};

/// The layer kernels' tests: a device and a stream of their own.
class GpuKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_device()) GTEST_SKIP() << "no CUDA device: the kernel checks run only on a GPU machine";
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  }
  void TearDown() override {
    if (s) cudaStreamDestroy(s);
  }
  cudaStream_t s = nullptr;
};
namespace k = moehub::kernels;
using moehub::gpu::download;
using moehub::gpu::upload;

TEST_F(GpuKernels, PermutePairsGroupsEveryPairByExpert) {
  // 0 and 1 token; a partial last round of a block (1,000 x 3 pairs); many rounds and
  // blocks (16,384 x 8); 1,024 experts (a run of one expert per scan thread); 1 expert
  for (const KernelCase c : {KernelCase{0, 8, 2}, KernelCase{1, 8, 2}, KernelCase{1000, 7, 3}, KernelCase{16384, 128, 8},
                             KernelCase{16384, 128, 8, true}, KernelCase{3000, 1024, 8}, KernelCase{5000, 1, 1}}) {
    SCOPED_TRACE(testing::Message() << c.tokens << " tokens, " << c.experts << " experts, top-" << c.top_k
                                    << (c.hot ? ", hot expert" : ""));
    const std::vector<std::int32_t> ids = test_ids(c.tokens, c.experts, c.top_k, c.hot, 11);
    const std::size_t n = ids.size(), E = static_cast<std::size_t>(c.experts);
    std::int32_t *d_ids, *counts, *offsets, *src, *pos, *scratch;
    ASSERT_EQ(cudaMalloc(&d_ids, n * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&counts, E * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&offsets, E * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&src, n * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&pos, n * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&scratch, E * 4), cudaSuccess);
    upload(d_ids, ids, s);
    ASSERT_EQ(cudaMemset(offsets, 0xFF, E * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMemset(src, 0xFF, n * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMemset(pos, 0xFF, n * 4 + 4), cudaSuccess);
    ASSERT_EQ(k::permute_pairs(d_ids, c.tokens, c.top_k, c.experts, counts, offsets, src, pos, scratch, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto h_counts = download(counts, E, s), h_off = download(offsets, E + 1, s);
    const auto h_src = download(src, n, s), h_pos = download(pos, n, s);
    std::vector<std::int32_t> want(E, 0);
    for (const auto e : ids) ++want[static_cast<std::size_t>(e)];
    EXPECT_EQ(h_counts, want);
    std::int32_t acc = 0;
    for (std::size_t e = 0; e <= E; ++e) {
      ASSERT_EQ(h_off[e], acc) << "offsets[" << e << "]";
      if (e < E) acc += want[e];
    }
    // pair_src is a permutation of the pairs that lists them by expert, pair_pos its inverse
    std::vector<char> seen(n, 0);
    for (std::size_t p = 0; p < n; ++p) {
      const std::int32_t i = h_src[p];
      ASSERT_TRUE(i >= 0 && static_cast<std::size_t>(i) < n) << "pair_src[" << p << "] = " << i;
      ASSERT_FALSE(seen[static_cast<std::size_t>(i)]) << "pair " << i << " placed twice";
      seen[static_cast<std::size_t>(i)] = 1;
      const auto e = static_cast<std::size_t>(ids[static_cast<std::size_t>(i)]);
      ASSERT_TRUE(static_cast<std::int32_t>(p) >= h_off[e] && static_cast<std::int32_t>(p) < h_off[e + 1])
          << "pair " << i << " of expert " << e << " at position " << p;
      ASSERT_EQ(h_pos[static_cast<std::size_t>(i)], static_cast<std::int32_t>(p));
    }
    for (auto* p : {d_ids, counts, offsets, src, pos, scratch}) cudaFree(p);
  }
  // beyond the shared memory the kernels use: refused, nothing launched
  EXPECT_EQ(k::permute_pairs(nullptr, 1, 1, k::kMaxPermuteExperts + 1, nullptr, nullptr, nullptr, nullptr, nullptr, s),
            cudaErrorInvalidValue);
}

TEST_F(GpuKernels, SoftmaxTopkPicksTheLargestProbabilities) {
  // fewer experts than lanes, not a multiple of 32, the published 128, the most (1,024);
  // top-1 to top-32
  for (const KernelCase c : {KernelCase{5, 5, 5}, KernelCase{300, 20, 3}, KernelCase{777, 100, 6},
                             KernelCase{4096, 128, 8}, KernelCase{64, 1024, 32}, KernelCase{200, 64, 1}}) {
    SCOPED_TRACE(testing::Message() << c.tokens << " tokens, " << c.experts << " experts, top-" << c.top_k);
    const std::size_t TE = static_cast<std::size_t>(c.tokens * c.experts), TK = static_cast<std::size_t>(c.tokens * c.top_k);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-4.f, 4.f);
    std::vector<float> logits(TE);
    for (auto& x : logits) x = u(rng);
    // exact ties: every token's experts 1 and 2 (when there are three) share a logit
    for (std::int64_t t = 0; t < c.tokens && c.experts >= 3; ++t)
      logits[static_cast<std::size_t>(t * c.experts + 2)] = logits[static_cast<std::size_t>(t * c.experts + 1)];
    float *d_logits, *d_probs, *d_w;
    std::int32_t* d_ids;
    ASSERT_EQ(cudaMalloc(&d_logits, TE * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_probs, TE * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_w, TK * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_ids, TK * 4), cudaSuccess);
    upload(d_logits, logits, s);
    ASSERT_EQ(k::softmax_topk(d_logits, c.tokens, c.experts, c.top_k, d_probs, d_ids, d_w, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto probs = download(d_probs, TE, s), w = download(d_w, TK, s);
    const auto ids = download(d_ids, TK, s);
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      const float* row = logits.data() + t * c.experts;
      const float* p = probs.data() + t * c.experts;
      double mx = row[0], sum = 0;
      for (int e = 0; e < c.experts; ++e) mx = std::max<double>(mx, row[e]);
      for (int e = 0; e < c.experts; ++e) sum += std::exp(row[e] - mx);
      for (int e = 0; e < c.experts; ++e)
        ASSERT_NEAR(p[e], std::exp(row[e] - mx) / sum, 1e-5) << "token " << t << ", expert " << e;
      // the top-k of the GPU's own probabilities, descending, ties to the lower id
      std::vector<int> order(static_cast<std::size_t>(c.experts));
      for (int e = 0; e < c.experts; ++e) order[static_cast<std::size_t>(e)] = e;
      std::stable_sort(order.begin(), order.end(), [p](int a, int b) { return p[a] > p[b]; });
      double sel = 0;
      for (int j = 0; j < c.top_k; ++j) sel += p[order[static_cast<std::size_t>(j)]];
      for (int j = 0; j < c.top_k; ++j) {
        const auto i = static_cast<std::size_t>(t * c.top_k + j);
        ASSERT_EQ(ids[i], order[static_cast<std::size_t>(j)]) << "token " << t << ", slot " << j;
        ASSERT_NEAR(w[i], p[ids[i]] / sel, 1e-6) << "token " << t << ", slot " << j;
      }
    }
    for (void* q : {static_cast<void*>(d_logits), static_cast<void*>(d_probs), static_cast<void*>(d_w),
                    static_cast<void*>(d_ids)})
      cudaFree(q);
  }
  EXPECT_EQ(k::softmax_topk(nullptr, 1, 1025, 8, nullptr, nullptr, nullptr, s), cudaErrorInvalidValue);
  EXPECT_EQ(k::softmax_topk(nullptr, 1, 64, 33, nullptr, nullptr, nullptr, s), cudaErrorInvalidValue);
}

TEST_F(GpuKernels, RouterBackwardMatchesTheFormula) {
  // experts not a multiple of 32, fewer than 32, exactly top_k; top-32 (every lane a slot)
  for (const KernelCase c :
       {KernelCase{1, 8, 2}, KernelCase{777, 100, 6}, KernelCase{4096, 128, 8}, KernelCase{300, 5, 5}, KernelCase{64, 64, 32}}) {
    SCOPED_TRACE(testing::Message() << c.tokens << " tokens, " << c.experts << " experts, top-" << c.top_k);
    const std::vector<std::int32_t> ids = test_ids(c.tokens, c.experts, c.top_k, false, 5);
    const std::size_t n = ids.size(), TE = static_cast<std::size_t>(c.tokens * c.experts);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> w(n), dw(n);
    for (auto& x : w) x = u(rng);
    for (auto& x : dw) x = u(rng);
    std::int32_t* d_ids;
    float *d_w, *d_dw, *d_dl;
    ASSERT_EQ(cudaMalloc(&d_ids, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_w, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_dw, n * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_dl, TE * 4), cudaSuccess);
    upload(d_ids, ids, s);
    upload(d_w, w, s);
    upload(d_dw, dw, s);
    ASSERT_EQ(cudaMemset(d_dl, 0xFF, TE * 4), cudaSuccess);  // NaN: every value must be written
    ASSERT_EQ(k::router_backward(d_ids, d_w, d_dw, c.tokens, c.experts, c.top_k, d_dl, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto got = download(d_dl, TE, s);
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      // in double; the kernel's fp32 sum may use fused multiply-adds, so within 1e-5 (the
      // values are below 2 * top_k in magnitude); experts not selected must be exactly 0
      double sum = 0.0;
      for (int j = 0; j < c.top_k; ++j) {
        const auto i = static_cast<std::size_t>(t * c.top_k + j);
        sum += static_cast<double>(w[i]) * dw[i];
      }
      std::vector<double> row(static_cast<std::size_t>(c.experts), 0.0);
      std::vector<char> sel(static_cast<std::size_t>(c.experts), 0);
      for (int j = 0; j < c.top_k; ++j) {
        const auto i = static_cast<std::size_t>(t * c.top_k + j);
        row[static_cast<std::size_t>(ids[i])] = w[i] * (dw[i] - sum);
        sel[static_cast<std::size_t>(ids[i])] = 1;
      }
      for (int e = 0; e < c.experts; ++e) {
        const float g = got[static_cast<std::size_t>(t * c.experts + e)];
        if (!sel[static_cast<std::size_t>(e)]) {
          ASSERT_EQ(g, 0.0f) << "token " << t << ", expert " << e << " (not selected)";
        } else {
          ASSERT_NEAR(g, row[static_cast<std::size_t>(e)], 1e-5) << "token " << t << ", expert " << e;
        }
      }
    }
    for (void* p : {static_cast<void*>(d_ids), static_cast<void*>(d_w), static_cast<void*>(d_dw), static_cast<void*>(d_dl)})
      cudaFree(p);
  }
  EXPECT_EQ(k::router_backward(nullptr, nullptr, nullptr, 1, 64, 33, nullptr, s), cudaErrorInvalidValue);
}

TEST(GpuGemm, WgmmaMatchesCublas) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GEMM checks run only on a GPU machine";
  int dev = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (major != 9 || minor != 0) GTEST_SKIP() << "the wgmma kernel needs an sm_90 GPU";
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  {
    moehub::gpu::GemmRunner runner(s);
    const std::vector<std::int64_t> rows = {129, 0, 1, 128, 300, 127, 0, 64};
    std::int64_t total = 0;
    for (auto m : rows) total += m;
    const std::int64_t guard = 16;
    std::uint32_t seed = 7;
    for (const bool b_nk : {false, true}) {
      for (const auto& nk : std::vector<std::pair<std::int64_t, std::int64_t>>{{64, 8}, {200, 72}, {256, 128}, {520, 200}, {1536, 512}}) {
        const std::int64_t n = nk.first, k = nk.second, G = static_cast<std::int64_t>(rows.size());
        std::uint16_t *a, *b, *c1, *c2;
        ASSERT_EQ(cudaMalloc(&a, static_cast<std::size_t>(total * k) * 2), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&b, static_cast<std::size_t>(G * k * n) * 2), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&c1, static_cast<std::size_t>((total + guard) * n) * 2), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&c2, static_cast<std::size_t>((total + guard) * n) * 2), cudaSuccess);
        ASSERT_EQ(moehub::kernels::fill_random_bf16(a, total * k, seed++, 1.f, s), cudaSuccess);
        ASSERT_EQ(moehub::kernels::fill_random_bf16(b, G * k * n, seed++, 1.f, s), cudaSuccess);
        ASSERT_EQ(cudaMemsetAsync(c1, 0x7f, static_cast<std::size_t>((total + guard) * n) * 2, s), cudaSuccess);
        ASSERT_EQ(cudaMemsetAsync(c2, 0x7f, static_cast<std::size_t>((total + guard) * n) * 2, s), cudaSuccess);
        moehub::gpu::GemmCall call;
        call.trans_b = b_nk;
        std::int64_t off = 0;
        for (std::int64_t g = 0; g < G; ++g) {
          const std::int64_t m = rows[static_cast<std::size_t>(g)];
          call.groups.push_back({a + off * k, b + g * k * n, c1 + off * n, m, n, k});
          off += m;
        }
        runner.run(call, GemmImpl::kWgmma);
        EXPECT_EQ(runner.wgmma_refusal(), "") << "n " << n << " k " << k;
        for (std::size_t g = 0; g < call.groups.size(); ++g)
          call.groups[g].c = static_cast<std::uint16_t*>(call.groups[g].c) - c1 + c2;
        runner.run(call, GemmImpl::kLoop);
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        std::vector<std::uint16_t> h1(static_cast<std::size_t>((total + guard) * n)), h2(h1.size());
        ASSERT_EQ(cudaMemcpy(h1.data(), c1, h1.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(h2.data(), c2, h2.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
        double max_ref = 0, max_err = 0;
        for (std::size_t i = 0; i < static_cast<std::size_t>(total * n); ++i) {
          const double r = bf16_to_float(h2[i]), v = bf16_to_float(h1[i]);
          max_ref = std::max(max_ref, std::fabs(r));
          max_err = std::max(max_err, std::isfinite(v) ? std::fabs(v - r) : 1e30);
        }
        // both accumulate in fp32 and round once to bf16: a few bf16 ulps of the largest value
        EXPECT_GT(max_ref, 0.0);
        EXPECT_LE(max_err, 1e-2 * max_ref) << (b_nk ? "B [n][k]" : "B [k][n]") << " n " << n << " k " << k;
        std::size_t touched = 0;
        for (std::size_t i = static_cast<std::size_t>(total * n); i < h1.size(); ++i) touched += h1[i] != 0x7f7f;
        EXPECT_EQ(touched, 0u) << "guard rows written, n " << n << " k " << k;
        cudaFree(a);
        cudaFree(b);
        cudaFree(c1);
        cudaFree(c2);
      }
    }
  }
  cudaStreamDestroy(s);
}

// The weight-gradient wgmma kernel (C_g = A_g^T B_g + beta C_g) against cuBLAS (one
// cublasGemmEx per group) on groups of 0, 1, 63..65, 129 and 300 rows (K blocks that end
// inside a group and run into the next), m and n that are not multiples of the 128 x 256
// tile, fp32 C with beta 0 (poisoned first) and 1, bf16 C with beta 0 (poisoned first; the
// tensor-store epilogue) and 1 (the thread stores). C elements after the last group (a
// guard band) must stay untouched.
TEST(GpuGemm, WgradWgmmaMatchesCublas) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GEMM checks run only on a GPU machine";
  int dev = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (major != 9 || minor != 0) GTEST_SKIP() << "the wgmma kernel needs an sm_90 GPU";
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  {
    moehub::gpu::GemmRunner runner(s);
    const std::vector<std::int64_t> rows = {129, 0, 1, 64, 300, 63, 0, 65};
    std::int64_t total = 0;
    for (auto k : rows) total += k;
    const std::int64_t guard = 256, G = static_cast<std::int64_t>(rows.size());
    std::uint32_t seed = 31;
    struct Form { bool fp32; float beta; };
    for (const Form form : {Form{true, 0.f}, Form{true, 1.f}, Form{false, 0.f}, Form{false, 1.f}}) {
      for (const auto& mn : std::vector<std::pair<std::int64_t, std::int64_t>>{{8, 64}, {200, 72}, {128, 256}, {136, 520}, {768, 512}}) {
        const std::int64_t m = mn.first, n = mn.second;
        const std::size_t esize = form.fp32 ? 4 : 2, c_elems = static_cast<std::size_t>(G * m * n + guard);
        std::uint16_t *a, *b;
        void *c1, *c2;
        ASSERT_EQ(cudaMalloc(&a, static_cast<std::size_t>(total * m) * 2), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&b, static_cast<std::size_t>(total * n) * 2), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&c1, c_elems * esize), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&c2, c_elems * esize), cudaSuccess);
        ASSERT_EQ(moehub::kernels::fill_random_bf16(a, total * m, seed++, 1.f, s), cudaSuccess);
        ASSERT_EQ(moehub::kernels::fill_random_bf16(b, total * n, seed++, 1.f, s), cudaSuccess);
        if (form.beta == 0.f) {
          ASSERT_EQ(cudaMemsetAsync(c1, 0xff, c_elems * esize, s), cudaSuccess);  // NaN
        } else if (form.fp32) {
          // fp32 C as pairs of random bf16 values: each word's high half is a value in
          // [-1, 1), its low half random mantissa bits: finite floats of magnitude below 1
          ASSERT_EQ(moehub::kernels::fill_random_bf16(static_cast<std::uint16_t*>(c1), static_cast<std::int64_t>(2 * c_elems),
                                                      seed++, 1.f, s), cudaSuccess);
        } else {
          ASSERT_EQ(moehub::kernels::fill_random_bf16(static_cast<std::uint16_t*>(c1), static_cast<std::int64_t>(c_elems),
                                                      seed++, 1.f, s), cudaSuccess);
        }
        ASSERT_EQ(cudaMemcpyAsync(c2, c1, c_elems * esize, cudaMemcpyDeviceToDevice, s), cudaSuccess);
        std::vector<char> before(c_elems * esize);
        ASSERT_EQ(cudaMemcpyAsync(before.data(), c1, before.size(), cudaMemcpyDeviceToHost, s), cudaSuccess);
        moehub::gpu::GemmCall call;
        call.trans_a = true;
        call.c_fp32 = form.fp32;
        call.beta = form.beta;
        std::int64_t off = 0;
        for (std::int64_t g = 0; g < G; ++g) {
          const std::int64_t k = rows[static_cast<std::size_t>(g)];
          call.groups.push_back({a + off * m, b + off * n, static_cast<char*>(c1) + static_cast<std::size_t>(g * m * n) * esize, m, n, k});
          off += k;
        }
        runner.run(call, GemmImpl::kWgmma);
        EXPECT_EQ(runner.wgmma_refusal(), "") << "m " << m << " n " << n;
        for (auto& grp : call.groups) grp.c = static_cast<char*>(grp.c) - static_cast<char*>(c1) + static_cast<char*>(c2);
        runner.run(call, GemmImpl::kLoop);
        ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
        std::vector<char> h1(c_elems * esize), h2(h1.size());
        ASSERT_EQ(cudaMemcpy(h1.data(), c1, h1.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(h2.data(), c2, h2.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        auto value = [&](const std::vector<char>& h, std::size_t i) {
          if (form.fp32) {
            float f;
            std::memcpy(&f, h.data() + i * 4, 4);
            return static_cast<double>(f);
          }
          std::uint16_t u;
          std::memcpy(&u, h.data() + i * 2, 2);
          return static_cast<double>(bf16_to_float(u));
        };
        double max_ref = 0, max_err = 0;
        for (std::size_t i = 0; i < static_cast<std::size_t>(G * m * n); ++i) {
          const double r = value(h2, i), v = value(h1, i);
          max_ref = std::max(max_ref, std::fabs(r));
          max_err = std::max(max_err, std::isfinite(v) ? std::fabs(v - r) : 1e30);
        }
        // both accumulate in fp32 (in another order); bf16 C rounds once
        EXPECT_GT(max_ref, 0.0);
        EXPECT_LE(max_err, (form.fp32 ? 1e-4 : 1e-2) * max_ref)
            << (form.fp32 ? "fp32" : "bf16") << " beta " << form.beta << " m " << m << " n " << n;
        EXPECT_EQ(std::memcmp(h1.data() + static_cast<std::size_t>(G * m * n) * esize,
                              before.data() + static_cast<std::size_t>(G * m * n) * esize, guard * esize), 0)
            << "guard written, m " << m << " n " << n;
        cudaFree(a);
        cudaFree(b);
        cudaFree(c1);
        cudaFree(c2);
      }
    }
  }
  cudaStreamDestroy(s);
}

}  // namespace
