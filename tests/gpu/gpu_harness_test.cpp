// moehub-gpu: argument validation (everywhere) and the layer checks against the float64
// reference (only where a CUDA device is present; skipped with a message elsewhere).
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "gemm.hpp"
#include "layer.hpp"

namespace {

using moehub::gpu::GemmImpl;
using moehub::gpu::LayerConfig;
using moehub::gpu::Schedule;

int run_bin(const std::string& args) {
  const std::string cmd = std::string(MOEHUB_GPU_BIN) + " " + args + " > /dev/null 2>&1";
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(GpuHarnessArgs, BadArgumentsExitWithTwo) {
  EXPECT_EQ(run_bin(""), 2);
  EXPECT_EQ(run_bin("no-such-command"), 2);
  EXPECT_EQ(run_bin("check --ep 3"), 2);  // 3 does not divide the 32 experts
  EXPECT_EQ(run_bin("check --bogus 1"), 2);
  EXPECT_EQ(run_bin("check --ep"), 2);
  EXPECT_EQ(run_bin("memory --tokens abc"), 2);
  EXPECT_EQ(run_bin("memory --tokens 0"), 2);
  EXPECT_EQ(run_bin("check --schedules ring-sideways"), 2);
  EXPECT_EQ(run_bin("run --transport carrier-pigeon"), 2);
  EXPECT_EQ(run_bin("check --gemm fastest"), 2);
  EXPECT_EQ(run_bin("check --transport carrier-pigeon"), 2);
  EXPECT_EQ(run_bin("bench-gemm --models gpt-2"), 2);
  EXPECT_EQ(run_bin("run --schedule ring-sideways"), 2);
  // ring variants: accumulator names and chunk limits (0 = whole hop, never negative)
  EXPECT_EQ(run_bin("check --ring-accum fp16"), 2);
  EXPECT_EQ(run_bin("check --ring-accum fp32,half"), 2);
  EXPECT_EQ(run_bin("check --hop-chunk-rows -1"), 2);
  EXPECT_EQ(run_bin("check --hop-chunk-rows 8,many"), 2);
  EXPECT_EQ(run_bin("memory --ring-accum double"), 2);
  EXPECT_EQ(run_bin("memory --hop-chunk-rows -5"), 2);
  EXPECT_EQ(run_bin("run --ring-accum fp64"), 2);
  EXPECT_EQ(run_bin("run --hop-chunk-rows -1"), 2);
  EXPECT_EQ(run_bin("bench-hop --ring-accum bf16"), 2);  // not an option of bench-hop
}

TEST(GpuHarnessArgs, ParsersAcceptTheDocumentedNames) {
  EXPECT_EQ(moehub::gpu::parse_schedule("a2a"), Schedule::kA2A);
  EXPECT_EQ(moehub::gpu::parse_schedule("ring-expert"), Schedule::kRingExpert);
  EXPECT_EQ(moehub::gpu::parse_schedule("ring-token"), Schedule::kRingToken);
  EXPECT_THROW(moehub::gpu::parse_schedule("ring"), std::invalid_argument);
  EXPECT_EQ(moehub::gpu::parse_gemm_impl("grouped"), GemmImpl::kGrouped);
  EXPECT_EQ(moehub::gpu::parse_gemm_impl("auto"), GemmImpl::kAuto);
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
  bad = c;
  bad.hop_chunk_rows = -1;
  EXPECT_THROW(moehub::gpu::validate(bad), std::invalid_argument);
}

TEST(GpuHarnessArgs, WithoutADeviceCommandsFailWithOne) {
  if (have_device()) GTEST_SKIP() << "a CUDA device is present: this test covers machines without one";
  // valid arguments, no device: a failure (1), never success (0) or a usage error (2)
  EXPECT_EQ(run_bin("check --ep 1 --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2"), 1);
  EXPECT_EQ(run_bin("memory --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2"), 1);
  EXPECT_EQ(run_bin("run --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2"), 1);
  EXPECT_EQ(run_bin("check --ep 1 --tokens 16 --hidden 64 --ffn 32 --experts 8 --top-k 2 --ring-accum bf16 --hop-chunk-rows 4"), 1);
  EXPECT_EQ(run_bin("memory --ep 2 --tokens 64 --hidden 64 --ffn 32 --experts 8 --top-k 2 --ring-accum fp32,bf16 --hop-chunk-rows 0,16"), 1);
}

TEST(GpuLayer, AllSchedulesMatchTheReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  // uniform and skewed routing (experts with no tokens), EP 1, 2 and 8, folded ranks
  // (the ring schedules also run with bf16 accumulators and hop chunks of 8 and 40 rows)
  EXPECT_EQ(run_bin("check --ep 1,2,8 --tokens 48 --hidden 128 --ffn 64 --experts 16 --top-k 4"), 0);
}

TEST(GpuLayer, RingVariantsMatchTheReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  // bf16 accumulators with chunks of one row (every expert alone) and of 20 rows (below
  // one hop's rows), on more experts per rank than the default case
  EXPECT_EQ(run_bin("check --ep 1,2,8 --schedules ring-expert,ring-token --ring-accum bf16,fp32 --hop-chunk-rows 1,20 "
                    "--tokens 64 --hidden 128 --ffn 64 --experts 32 --top-k 4"),
            0);
}

TEST(GpuLayer, GemmImplementationsAgree) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device: the GPU layer checks run only on a GPU machine";
  for (const char* g : {"loop", "streams", "grouped"})
    EXPECT_EQ(run_bin(std::string("check --ep 2 --routing skewed --tokens 32 --hidden 64 --ffn 32 --experts 8 --top-k 2 --gemm ") + g), 0) << g;
}

}  // namespace
