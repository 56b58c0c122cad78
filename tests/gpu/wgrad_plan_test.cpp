// The weight-gradient kernel's schedule rules, decided on the host (grouped_gemm_wgrad_plan):
// which grids a call launches, on which schedule and tile order, for the shapes and memory
// bandwidths that docs/results/gpu-h200.md measured (runs W5, W26, W27, W28). No GPU needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "expert_rows.hpp"
#include "grouped_gemm.hpp"

namespace {

using moehub::gpu::balanced_rows;
using moehub::gpu::skewed_rows;
using moehub::kernels::GroupedGemmWgradArgs;
using moehub::kernels::grouped_gemm_wgrad_plan;
using moehub::kernels::WgradPlan;

constexpr double kH100Gbps = 3352;  // 2 x 2,619 MHz x 5,120 bits, as the driver reports them
constexpr double kH200Gbps = 4916;  // 2 x 3,201 MHz x 6,144 bits

GroupedGemmWgradArgs call(std::int64_t m, std::int64_t n, bool fp32, float beta, std::vector<std::int64_t> rows) {
  GroupedGemmWgradArgs a;
  a.m = m;
  a.n = n;
  a.c_fp32 = fp32;
  a.beta = beta;
  a.rows = std::move(rows);
  return a;
}

// Sets one environment switch for the scope of a test.
class Env {
 public:
  Env(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~Env() { unsetenv(name_); }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  const char* name_;
};

// Every group with tiles appears in exactly one grid, each grid longest reduction first.
void expect_partition(const WgradPlan& plan, const GroupedGemmWgradArgs& a) {
  std::multiset<int> seen;
  for (const auto& g : plan.grids) {
    for (std::size_t i = 0; i < g.groups.size(); ++i) {
      seen.insert(g.groups[i]);
      if (i > 0) {
        EXPECT_GE(a.rows[static_cast<std::size_t>(g.groups[i - 1])], a.rows[static_cast<std::size_t>(g.groups[i])]);
      }
    }
  }
  std::multiset<int> want;
  for (std::size_t g = 0; g < a.rows.size(); ++g)
    if (a.rows[g] > 0 || a.beta == 0.f) want.insert(static_cast<int>(g));
  EXPECT_EQ(seen, want);
}

// The plan of call a at gbps must be one grid of `schedule`, in snake order or strided.
void expect_one_grid(const GroupedGemmWgradArgs& a, double gbps, const std::string& schedule, bool snake) {
  const WgradPlan plan = grouped_gemm_wgrad_plan(a, gbps);
  ASSERT_TRUE(plan.error.empty()) << plan.error;
  ASSERT_EQ(plan.grids.size(), 1u) << schedule << " at " << gbps << " GB/s";
  EXPECT_EQ(plan.grids[0].schedule, schedule) << gbps << " GB/s";
  EXPECT_EQ(plan.grids[0].snake, snake) << gbps << " GB/s";
  expect_partition(plan, a);
}

TEST(GpuWgradPlan, SkewedFp32GateUpSplitsOnH100ClassMemoryOnly) {
  // Qwen3-30B-A3B's gate+up weight gradient, 16,384 tokens x top-8 over 128 experts, skewed
  const auto a = call(2048, 1536, true, 0.f, skewed_rows(16384 * 8, 128));
  const WgradPlan h100 = grouped_gemm_wgrad_plan(a, kH100Gbps);
  ASSERT_TRUE(h100.error.empty()) << h100.error;
  ASSERT_EQ(h100.grids.size(), 2u);
  EXPECT_EQ(h100.grids[0].schedule, "cooperative");
  EXPECT_FALSE(h100.grids[0].snake);  // the long groups' mean is 2,574 rows: strided order
  EXPECT_EQ(h100.grids[1].schedule, "pingpong");
  EXPECT_TRUE(h100.grids[1].snake);
  for (int g : h100.grids[0].groups) EXPECT_GE(a.rows[static_cast<std::size_t>(g)], 1536);
  for (int g : h100.grids[1].groups) EXPECT_LT(a.rows[static_cast<std::size_t>(g)], 1536);
  EXPECT_EQ(h100.grids[0].groups.size(), 16u);
  expect_partition(h100, a);

  expect_one_grid(a, kH200Gbps, "pingpong", true);
  expect_one_grid(a, 0.0, "pingpong", true);  // a card whose bandwidth is unknown
}

TEST(GpuWgradPlan, DownProjectionsBf16AndAccumulationKeepOneGrid) {
  const auto rows = skewed_rows(16384 * 8, 128);
  // the down projection's C has 768 rows
  expect_one_grid(call(768, 2048, true, 0.f, rows), kH100Gbps, "pingpong", true);
  // bf16 C with beta 0: the bf16 rule's one cooperative grid in snake order on the H100, ...
  expect_one_grid(call(2048, 1536, false, 0.f, rows), kH100Gbps, "cooperative", true);
  // ... ping-pong on the H200
  expect_one_grid(call(2048, 1536, false, 0.f, rows), kH200Gbps, "pingpong", true);
  // fp32 C accumulated (beta 1), as the ring's fp32 mode does
  expect_one_grid(call(2048, 1536, true, 1.f, rows), kH100Gbps, "pingpong", true);
}

TEST(GpuWgradPlan, EvenOrAllLongGroupsKeepTheRuleOfTheMean) {
  // even Qwen1.5-MoE at 24,576 tokens: 1,638-1,639 rows each, every group past the split point;
  // one ping-pong grid (one cooperative grid lost 4 % there, run W28)
  expect_one_grid(call(2048, 2816, true, 0.f, balanced_rows(24576 * 4, 60)), kH100Gbps, "pingpong", true);
  // skewed Mixtral-8x7B (2,650-7,496 rows): one cooperative grid in the strided order
  expect_one_grid(call(4096, 28672, true, 0.f, skewed_rows(16384 * 2, 8)), kH100Gbps, "cooperative", false);
}

TEST(GpuWgradPlan, EmptyGroupsHaveTilesOnlyWhenTheirCIsCleared) {
  const std::vector<std::int64_t> rows = {4000, 0, 900, 0, 3000, 700};
  Env split("MOEHUB_WGRAD_SPLIT_ROWS", "1536");  // the rule's point, also for beta 1 (where the rule keeps one grid)
  for (float beta : {0.f, 1.f}) {
    const auto a = call(2048, 1536, true, beta, rows);
    const WgradPlan plan = grouped_gemm_wgrad_plan(a, kH100Gbps);
    ASSERT_EQ(plan.grids.size(), 2u) << beta;
    EXPECT_EQ(plan.grids[0].groups, (std::vector<int>{0, 4}));
    EXPECT_EQ(plan.grids[1].groups, beta == 0.f ? (std::vector<int>{2, 5, 1, 3}) : (std::vector<int>{2, 5}));
    expect_partition(plan, a);
  }
}

TEST(GpuWgradPlan, SwitchesOverrideTheRules) {
  const auto a = call(2048, 1536, true, 0.f, skewed_rows(16384 * 8, 128));
  {
    Env one("MOEHUB_WGRAD_SPLIT_ROWS", "0");
    EXPECT_EQ(grouped_gemm_wgrad_plan(a, kH100Gbps).grids.size(), 1u);
  }
  {
    Env split("MOEHUB_WGRAD_SPLIT_ROWS", "1792");  // any card, any point
    const WgradPlan plan = grouped_gemm_wgrad_plan(a, kH200Gbps);
    ASSERT_EQ(plan.grids.size(), 2u);
    for (int g : plan.grids[0].groups) EXPECT_GE(a.rows[static_cast<std::size_t>(g)], 1792);
    expect_partition(plan, a);
    Env sched("MOEHUB_WGRAD_SCHEDULE", "pingpong");
    Env order("MOEHUB_WGRAD_ORDER", "stride");
    const WgradPlan forced = grouped_gemm_wgrad_plan(a, kH200Gbps);
    ASSERT_EQ(forced.grids.size(), 2u);
    for (const auto& g : forced.grids) {
      EXPECT_EQ(g.schedule, "pingpong");
      EXPECT_FALSE(g.snake);
    }
  }
  for (const char* bad : {"-1", "1.5", "x", "12x"}) {
    Env split("MOEHUB_WGRAD_SPLIT_ROWS", bad);
    const WgradPlan plan = grouped_gemm_wgrad_plan(a, kH100Gbps);
    EXPECT_NE(plan.error.find("MOEHUB_WGRAD_SPLIT_ROWS"), std::string::npos) << bad;
    EXPECT_TRUE(plan.grids.empty()) << bad;
  }
}

}  // namespace
