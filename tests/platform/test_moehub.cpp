// The MoE-Hub schedules on the platform: every variant passes the run's
// self-checks on a small job, and the stress cases end with defined
// behaviour (no deadlock): a RAT of 16 entries, all tokens to one expert,
// empty experts, a region one row too small (error), a pool of one entry.
// Each test runs one simulation (SystemC elaborates once per process; CTest
// runs every test in a process of its own).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "common/config_loader.hpp"
#include "golden/aau.hpp"
#include "golden/hub_functions.hpp"
#include "platform/simulate.hpp"

namespace moehub {
namespace {

RunRequest request(const std::string& schedule, std::int64_t tokens) {
  RunRequest req;
  req.system = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/dgx-h800.yaml");
  req.system.hub.implementation = "moehub";
  req.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/mixtral-8x7b.yaml");
  // small expert GEMMs keep the runs short; the traffic keeps its row size
  req.model.expert_ffn_size = 512;
  req.workload.tokens = tokens;
  req.workload.seed = 3;
  req.schedule = schedule;
  req.timeline = false;
  return req;
}

/// Every token on every GPU routed to the experts `pick(token)` (top_k of them).
Routing fixed_routing(const ModelConfig& m, int gpus, std::int64_t tokens,
                      const std::vector<std::int32_t>& experts) {
  Routing r;
  r.num_gpus = gpus;
  r.num_experts = m.num_experts;
  r.top_k = static_cast<int>(experts.size());
  for (int g = 0; g < gpus; ++g) {
    const std::int64_t t = tokens / gpus + (g < tokens % gpus ? 1 : 0);
    r.tokens_per_gpu.push_back(t);
    std::vector<std::int32_t> ids;
    std::vector<float> w;
    for (std::int64_t i = 0; i < t; ++i) {
      for (const auto e : experts) {
        ids.push_back(e);
        w.push_back(1.0f / static_cast<float>(experts.size()));
      }
    }
    r.expert_ids.push_back(ids);
    r.gate_weights.push_back(w);
  }
  return r;
}

std::int64_t sum_groups(const std::vector<std::int64_t>& load, int tile_m) {
  std::int64_t n = 0;
  for (const auto l : load) n += (l + tile_m - 1) / tile_m;
  return n;
}

/// Payload bytes the routing moves over the fabric: every (token, expert) pair
/// whose expert lives on another GPU crosses it twice, its row to the expert
/// (plus `dispatch_extra_bytes`: MoE-Hub's source column) and its result back.
double routed_fabric_bytes(const ModelConfig& m, const Routing& r, int num_gpus, double dispatch_extra_bytes) {
  const ExpertPlacement p = ExpertPlacement::contiguous(m.num_experts, num_gpus);
  const double row = static_cast<double>(m.hidden_size) * m.dtype_bytes;
  double bytes = 0;
  for (int g = 0; g < num_gpus; ++g) {
    for (const auto e : r.expert_ids[static_cast<std::size_t>(g)]) {
      if (p.owner[static_cast<std::size_t>(e)] != g) bytes += 2 * row + dispatch_extra_bytes;
    }
  }
  return bytes;
}

/// The fabric payload of results.json: its totals and the per-port counters
/// (GPU to switch, and switch to GPU) equal `expected`.
void expect_fabric_payload(const nlohmann::ordered_json& results, double expected) {
  ASSERT_GT(expected, 0.0);
  const auto& t = results.at("totals");
  EXPECT_DOUBLE_EQ(t.at("fabric_payload_bytes_sent").get<double>(), expected);
  EXPECT_DOUBLE_EQ(t.at("fabric_payload_bytes_received").get<double>(), expected);
  double up = 0, down = 0;
  for (const auto& l : results.at("links")) {
    (l.at("from").get<std::string>().rfind("gpu", 0) == 0 ? up : down) += l.at("payload_bytes").get<double>();
  }
  EXPECT_DOUBLE_EQ(up, expected);
  EXPECT_DOUBLE_EQ(down, expected);
}

void expect_passed(const RunOutput& out) {
  ASSERT_FALSE(out.time_limit_exceeded) << out.time_limit_message;
  ASSERT_FALSE(out.fatal) << out.fatal_message;
  EXPECT_TRUE(out.check_errors.empty()) << (out.check_errors.empty() ? "" : out.check_errors.front());
  EXPECT_TRUE(out.results.at("checks").at("passed").get<bool>());
}

class Variant : public ::testing::TestWithParam<const char*> {};

TEST_P(Variant, SmallJobPassesTheSelfChecks) {
  const std::string name = GetParam();
  RunRequest req = request(name, 512);
  const Routing routing = generate_routing(req.model, req.workload, req.system.num_gpus);
  const RunOutput out = simulate(req);
  expect_passed(out);
  const auto& mh = out.results.at("moehub");
  const bool rpm = name == "moehub" || name == "moehub-pkt";
  const bool dam = name == "moehub" || name == "moehub-dep";
  EXPECT_TRUE(mh.at("units").at("aau").get<bool>());
  EXPECT_EQ(mh.at("units").at("rpm").get<bool>(), rpm);
  EXPECT_EQ(mh.at("units").at("dam").get<bool>(), dam);
  const std::int64_t pairs = routing.total_tokens() * routing.top_k;
  // every dispatched pair got exactly one LocalRowID; dispatch and combine rows all arrived
  EXPECT_EQ(mh.at("rat").at("allocations").get<std::int64_t>(), pairs);
  EXPECT_EQ(mh.at("row_transfers").at("rows_delivered").get<std::int64_t>(), 2 * pairs);
  const std::int64_t groups = sum_groups(routing.expert_load(), req.system.gpu.gemm_tile_m);
  EXPECT_EQ(mh.at("row_transfers").at("dam_group_releases").get<std::int64_t>(), dam ? groups : 0);
  if (dam) {
    EXPECT_EQ(mh.at("dam").at("groups_released").get<std::int64_t>(), groups);
    EXPECT_EQ(mh.at("dam").at("all_ready").get<int>(), req.model.num_experts);
  }
  if (rpm) {
    EXPECT_GT(mh.at("rpm").at("packets_sent").get<std::int64_t>(), 0);
  }
  // the expert GEMM starts after the routing, and the window is reported for every GPU
  for (const auto& w : out.results.at("routing_to_gemm1").at("per_gpu_us")) EXPECT_GT(w.get<double>(), 0.0);
  // the row stores' payload is counted: every remote pair's row and source column, and its result
  expect_fabric_payload(out.results, routed_fabric_bytes(req.model, routing, req.system.num_gpus,
                                                         ScheduleOptions{}.source_info_bytes));
}

// A job of fewer tokens than one GEMM tile: a region's DAM range covers whole
// thread-block groups (tile rows), beyond the rows the region holds; no other
// buffer may lie there, or its writes (the combine's) count as the region's.
TEST_P(Variant, JobSmallerThanOneTilePassesTheSelfChecks) {
  RunRequest req = request(GetParam(), 64);
  ASSERT_LT(req.workload.tokens, req.system.gpu.gemm_tile_m);
  const RunOutput out = simulate(req);
  expect_passed(out);
}

INSTANTIATE_TEST_SUITE_P(MoeHub, Variant, ::testing::Values("moehub", "moehub-base", "moehub-pkt", "moehub-dep"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string n = p.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(MoeHubStress, RatOf16EntriesEvictsAndRestores) {
  RunRequest req = request("moehub", 512);
  req.system.hub.rat_entries = 16;
  const RunOutput out = simulate(req);
  expect_passed(out);
  const auto& rat = out.results.at("moehub").at("rat");
  EXPECT_GT(rat.at("evictions").get<std::int64_t>(), 0);
  EXPECT_GT(rat.at("restores").get<std::int64_t>(), 0);
  EXPECT_EQ(rat.at("allocations").get<std::int64_t>(), 512 * 2);
}

TEST(MoeHubStress, AllTokensToOneExpert) {
  RunRequest req = request("moehub", 256);
  req.model.top_k = 1;
  req.routing = fixed_routing(req.model, req.system.num_gpus, 256, {5});
  const RunOutput out = simulate(req);
  expect_passed(out);
  const auto& regions = out.results.at("moehub").at("row_transfers").at("regions");
  for (const auto& r : regions) {
    EXPECT_EQ(r.at("rows").get<std::int64_t>(), r.at("expert").get<int>() == 5 ? 256 : 0);
  }
}

TEST(MoeHubStress, EmptyExpertsAreRetired) {
  RunRequest req = request("moehub", 256);
  req.routing = fixed_routing(req.model, req.system.num_gpus, 256, {1, 6});
  const RunOutput out = simulate(req);
  expect_passed(out);
  const auto& mh = out.results.at("moehub");
  // every region raises AllReady, only the two busy ones release groups
  EXPECT_EQ(mh.at("dam").at("all_ready").get<int>(), req.model.num_experts);
  EXPECT_EQ(mh.at("dam").at("groups_released").get<int>(), 2 * ((256 + 127) / 128));
}

/// Runs `req` in a child process and returns "fatal:<message>" or "ok": a run
/// stopped early leaves its SystemC threads suspended, and what they hold
/// must not reach this process's exit-time leak check.
std::string run_in_child(const RunRequest& req) {
  int fd[2];
  if (pipe(fd) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fd[0]);
    const RunOutput out = simulate(req);
    const std::string r = out.fatal ? "fatal:" + out.fatal_message : "ok";
    const bool ok = write(fd[1], r.data(), r.size()) == static_cast<ssize_t>(r.size());
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  std::string r;
  char buf[512];
  for (ssize_t n; (n = read(fd[0], buf, sizeof buf)) > 0;) r.append(buf, static_cast<std::size_t>(n));
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return r;
}

TEST(MoeHubStress, RegionOneRowTooSmallIsAnError) {
  RunRequest req = request("moehub", 256);
  req.system.hub.region_full = "error";
  req.routing = fixed_routing(req.model, req.system.num_gpus, 256, {2, 3});
  req.options.rowsp_region_rows = 255;
  const std::string out = run_in_child(req);
  ASSERT_EQ(out.rfind("fatal:", 0), 0u) << out;
  EXPECT_NE(out.find("is full: all 255 rows allocated"), std::string::npos) << out;
  EXPECT_NE(out.find("hub.region_full: error"), std::string::npos) << out;
}

TEST(MoeHubStress, PoolOfOneEntryDrains) {
  RunRequest req = request("moehub", 512);
  req.system.hub.rpm_entries_per_peer = 1;
  const RunOutput out = simulate(req);
  expect_passed(out);
  const auto& rpm = out.results.at("moehub").at("rpm");
  EXPECT_EQ(rpm.at("stores_accepted").get<std::int64_t>(), rpm.at("stores_merged").get<std::int64_t>() +
                                                               rpm.at("packets_sent").get<std::int64_t>());
  // the partial .nop entries leave because their partition is full, not by their timer
  EXPECT_GT(rpm.at("pressure_flushes").get<std::int64_t>(), 0);
}

// The self-checks can fail: an AAU that gives wrong answers (wrapped around the
// behavioural one through the hub-functions observer) is caught by the row
// transfers' checks, and the run reports them.
enum class AauFault { kSharedLocalRowId, kAddressOfAnotherRow };

class FaultyAau : public golden::ForwardingAau {
 public:
  FaultyAau(std::unique_ptr<golden::AddressAllocationUnit> inner, const golden::HubParams& p, AauFault fault,
            int rows_per_group)
      : golden::ForwardingAau(std::move(inner), golden::aau_params_from(p)),
        fault_(fault),
        rows_per_group_(rows_per_group) {}
  std::uint32_t rowsp_malloc(std::uint64_t base, std::uint32_t row_bytes, std::uint64_t rows) override {
    const std::uint32_t id = golden::ForwardingAau::rowsp_malloc(base, row_bytes, rows);
    regions_[id] = {base, row_bytes};
    return id;
  }
  golden::IngressResult on_write(const golden::StoreRequest& w, Tick now) override {
    return corrupt(w, golden::ForwardingAau::on_write(w, now));
  }
  golden::IngressResult on_local_store(const golden::StoreRequest& w, Tick now) override {
    return corrupt(w, golden::ForwardingAau::on_local_store(w, now));
  }

 private:
  golden::IngressResult corrupt(const golden::StoreRequest& w, golden::IngressResult r) const {
    const auto region = regions_.find(w.malloc_id);
    if (!r.accepted || r.local_row_id < 1 || region == regions_.end()) return r;
    const auto [base, row_bytes] = region->second;
    if (fault_ == AauFault::kSharedLocalRowId) {
      if (r.local_row_id % 2 == 1) --r.local_row_id;  // rows 2i and 2i + 1 share one LocalRowID and its address
      r.address = base + static_cast<std::uint64_t>(r.local_row_id) * row_bytes + w.row_offset;
    } else if (r.local_row_id % rows_per_group_ != 0) {
      // the row before's address, under this row's own LocalRowID; within the
      // row's thread-block group, so that the DAM's byte counts stay right
      r.address -= row_bytes;
    }
    return r;
  }

  AauFault fault_;
  int rows_per_group_;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::uint32_t>> regions_;  // MallocID -> base, row bytes
};

RunOutput run_with_faulty_aau(AauFault fault) {
  const RunRequest req = request("moehub", 512);
  const int rows_per_group = req.system.gpu.gemm_tile_m;  // the DAM's group: one row of output tiles
  golden::set_hub_functions_observer([=](golden::HubFunctions& f, const golden::HubParams& p) {
    auto* aau = dynamic_cast<golden::AddressAllocationUnit*>(f.ingress.get());
    ASSERT_NE(aau, nullptr);
    f.ingress.release();
    f.ingress =
        std::make_unique<FaultyAau>(std::unique_ptr<golden::AddressAllocationUnit>(aau), p, fault, rows_per_group);
  });
  RunOutput out = simulate(req);
  golden::set_hub_functions_observer({});
  return out;
}

bool has_error(const RunOutput& out, const std::string& text) {
  return std::any_of(out.check_errors.begin(), out.check_errors.end(),
                     [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

std::string all_errors(const RunOutput& out) {
  std::string s;
  for (const auto& e : out.check_errors) s += "\n  " + e;
  return s;
}

TEST(MoeHubSelfChecks, CatchTwoRowsGivenOneLocalRowId) {
  const RunOutput out = run_with_faulty_aau(AauFault::kSharedLocalRowId);
  ASSERT_FALSE(out.fatal) << out.fatal_message;
  EXPECT_FALSE(out.results.at("checks").at("passed").get<bool>());
  EXPECT_TRUE(has_error(out, "LocalRowIDs given to two rows")) << all_errors(out);
}

TEST(MoeHubSelfChecks, CatchARowWrittenAtAnotherRowsAddress) {
  const RunOutput out = run_with_faulty_aau(AauFault::kAddressOfAnotherRow);
  ASSERT_FALSE(out.fatal) << out.fatal_message;
  EXPECT_FALSE(out.results.at("checks").at("passed").get<bool>());
  EXPECT_TRUE(has_error(out, "rows whose stores landed at more than one address")) << all_errors(out);
}

// moehub-base signals per step in software: a group of GEMM1 (an expert's row
// of tiles) polls its own flag, raised once its rows are in memory and
// counted, so GEMM1 starts while the dispatch still runs, as under the DAM;
// one flag per layer would hold every group until all dispatches are done.
TEST(MoeHubBase, Gemm1GroupsStartWhileTheDispatchRuns) {
  RunRequest req = request("moehub-base", 8192);
  req.system.sim.granularity = "row";
  const RunOutput out = simulate(req);
  expect_passed(out);
  const auto& win = out.results.at("routing_to_gemm1");
  for (std::size_t g = 0; g < out.results.at("gpus").size(); ++g) {
    double topk_start = -1, dispatch_end = -1;
    for (const auto& ph : out.results.at("gpus")[g].at("phases")) {
      if (ph.at("name") == "router_softmax_topk") topk_start = ph.at("start_us").get<double>();
      if (ph.at("name") == "dispatch") dispatch_end = ph.at("end_us").get<double>();
    }
    ASSERT_GE(topk_start, 0.0);
    ASSERT_GE(dispatch_end, 0.0);
    EXPECT_LT(topk_start + win.at("per_gpu_us")[g].get<double>(), dispatch_end) << "GPU " << g;
  }
}

// The software baselines' all-to-alls count the same payload: megatron sends
// each remote pair's gate probability (fp32) beside its row, and every GPU
// sends its int64 count per expert to every peer before the dispatch.
TEST(FabricPayload, MegatronCountsEveryRemotePairTwice) {
  RunRequest req = request("megatron", 512);
  req.system.hub.implementation = "address-centric";
  const Routing routing = generate_routing(req.model, req.workload, req.system.num_gpus);
  const RunOutput out = simulate(req);
  expect_passed(out);
  const int G = req.system.num_gpus;
  const double count_exchange = static_cast<double>(G) * (G - 1) * req.model.num_experts * 8;
  expect_fabric_payload(out.results, routed_fabric_bytes(req.model, routing, G, 4) + count_exchange);
}

TEST(MoeHubStress, ScheduleNeedsTheMoeHubImplementation) {
  RunRequest req = request("moehub-dep", 256);
  req.system.hub.implementation = "address-centric";
  EXPECT_THROW(simulate(req), std::invalid_argument);
}

}  // namespace
}  // namespace moehub
