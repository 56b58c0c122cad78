// The Chrome-trace timeline carries the statistics of the results JSON over
// time: a moehub run's timeline holds every GPU's routing-to-GEMM1 window,
// its DAM releases as instants, its regions' occupancy and its RAT and RPM
// counters as counter tracks, and their last samples equal the run's totals;
// the polling variant shows its flag releases instead; megatron only the
// window. Each test runs one simulation (one process per test under CTest).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "common/config_loader.hpp"
#include "platform/simulate.hpp"

namespace moehub {
namespace {

using json = nlohmann::json;

RunRequest request(const std::string& schedule, bool moehub_units) {
  RunRequest req;
  req.system = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/dgx-h800.yaml");
  if (moehub_units) req.system.hub.implementation = "moehub";
  req.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/mixtral-8x7b.yaml");
  req.model.expert_ffn_size = 512;  // short GEMMs keep the run short; the traffic keeps its row size
  req.workload.tokens = 512;
  req.workload.seed = 3;
  req.schedule = schedule;
  req.timeline = true;
  return req;
}

struct Parsed {
  json trace;
  std::map<std::string, int> instants;                    ///< name -> count
  std::map<std::pair<int, std::string>, json> last;       ///< (pid, counter) -> args of its last sample
  std::map<std::pair<int, std::string>, int> samples;     ///< (pid, counter) -> samples
  std::map<int, double> window_first_us, window_end_us;   ///< pid -> durations
  bool counters_monotonic = true;                         ///< cumulative counters never fall
};

Parsed parse(const RunOutput& out) {
  Parsed p;
  p.trace = json::parse(out.timeline);
  std::map<std::pair<int, std::string>, double> last_ts;
  for (const auto& e : p.trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    const std::string name = e.value("name", "");
    if (ph == "i") ++p.instants[name];
    if (ph == "X" && e.value("cat", "") == "window") {
      (name == "routing to first GEMM1 tile" ? p.window_first_us : p.window_end_us)[e.at("pid").get<int>()] =
          e.at("dur").get<double>();
    }
    if (ph != "C") continue;
    const auto key = std::make_pair(e.at("pid").get<int>(), name);
    const double ts = e.at("ts").get<double>();
    if (p.samples[key]++ > 0) {
      if (ts < last_ts[key]) p.counters_monotonic = false;
      if (name.rfind("RAT", 0) == 0 || name.rfind("RPM", 0) == 0 || name.rfind("region", 0) == 0) {
        for (const auto& [k, v] : e.at("args").items()) {
          if (v.get<double>() < p.last[key].at(k).get<double>()) p.counters_monotonic = false;
        }
      }
    }
    last_ts[key] = ts;
    p.last[key] = e.at("args");
  }
  return p;
}

int samples(const Parsed& p, int pid, const std::string& name) {
  const auto it = p.samples.find({pid, name});
  return it == p.samples.end() ? 0 : it->second;
}

void expect_windows(const Parsed& p, const json& results) {
  const auto& w = results.at("routing_to_gemm1");
  const int gpus = results.at("num_gpus");
  ASSERT_EQ(static_cast<int>(p.window_first_us.size()), gpus);
  for (int g = 0; g < gpus; ++g) {
    ASSERT_FALSE(w.at("per_gpu_us").at(static_cast<std::size_t>(g)).is_null());
    EXPECT_NEAR(p.window_first_us.at(g), w.at("per_gpu_us").at(static_cast<std::size_t>(g)).get<double>(), 1e-3);
    EXPECT_NEAR(p.window_end_us.at(g), w.at("end_per_gpu_us").at(static_cast<std::size_t>(g)).get<double>(), 1e-3);
  }
}

TEST(Timeline, MoehubRunCarriesItsHubStatistics) {
  const RunOutput out = simulate(request("moehub", true));
  ASSERT_FALSE(out.fatal) << out.fatal_message;
  ASSERT_TRUE(out.check_errors.empty());
  Parsed p = parse(out);
  const json& r = out.results;
  const auto& mh = r.at("moehub");
  expect_windows(p, r);
  EXPECT_TRUE(p.counters_monotonic);

  // DAM releases: one instant per released group, one AllReady per region
  EXPECT_GT(mh.at("dam").at("groups_released").get<int>(), 0);
  EXPECT_EQ(p.instants["DAM ready"], mh.at("dam").at("groups_released").get<int>());
  EXPECT_EQ(p.instants["AllReady"], mh.at("dam").at("all_ready").get<int>());
  EXPECT_EQ(p.instants.count("flag release"), 0u);

  // region occupancy: every region's track ends at its occupancy in the results
  const auto& regions = mh.at("row_transfers").at("regions");
  ASSERT_FALSE(regions.empty());
  for (std::size_t ri = 0; ri < regions.size(); ++ri) {
    const auto& rg = regions[ri];
    const std::string name = "region " + std::to_string(ri) + " occupancy (expert " +
                             std::to_string(rg.at("expert").get<int>()) + ", " +
                             std::to_string(rg.at("capacity_rows").get<std::int64_t>()) + " rows)";
    const auto key = std::make_pair(rg.at("gpu").get<int>(), name);
    ASSERT_EQ(p.last.count(key), 1u) << name;
    EXPECT_GT(p.samples.at(key), 2);  // more than the zero and the final sample: it moves over time
    EXPECT_NEAR(p.last.at(key).at("occupancy").get<double>(), rg.at("occupancy").get<double>(), 1e-4);
  }

  // RAT and RPM: the last samples summed over the GPUs are the run's totals
  std::map<std::string, double> rat, rpm;
  std::vector<double> flits(9, 0.0);
  const int gpus = r.at("num_gpus");
  for (int g = 0; g < gpus; ++g) {
    ASSERT_GT(samples(p, g, "RAT lookups"), 2);
    for (const auto& [k, v] : p.last.at({g, "RAT lookups"}).items()) rat[k] += v.get<double>();
    for (const auto& [k, v] : p.last.at({g, "RAT evictions"}).items()) rat[k] += v.get<double>();
    for (const auto& [k, v] : p.last.at({g, "RPM stores and packets"}).items()) rpm[k] += v.get<double>();
    const auto& sizes = p.last.at({g, "RPM packets by payload flits"});
    for (std::size_t i = 0; i < flits.size(); ++i) {
      flits[i] += sizes.at(std::to_string(i) + (i == 1 ? " flit" : " flits")).get<double>();
    }
  }
  EXPECT_GT(rat["hits"], 0);
  EXPECT_EQ(rat["hits"], mh.at("rat").at("hits").get<double>());
  EXPECT_EQ(rat["misses"], mh.at("rat").at("misses").get<double>());
  EXPECT_EQ(rat["evictions"], mh.at("rat").at("evictions").get<double>());
  EXPECT_EQ(rat["restores"], mh.at("rat").at("restores").get<double>());
  EXPECT_EQ(rat["bank_conflicts"], mh.at("rat").at("bank_conflicts").get<double>());
  EXPECT_EQ(rpm["stores"], mh.at("rpm").at("stores_accepted").get<double>());
  EXPECT_EQ(rpm["packets"], mh.at("rpm").at("packets_sent").get<double>());
  for (std::size_t i = 0; i < flits.size(); ++i) {
    EXPECT_EQ(flits[i], mh.at("rpm").at("packet_payload_flits_histogram").at(i).get<double>()) << i << " flits";
  }
}

TEST(Timeline, PollingVariantShowsItsFlagReleases) {
  const RunOutput out = simulate(request("moehub-base", true));
  ASSERT_FALSE(out.fatal) << out.fatal_message;
  Parsed p = parse(out);
  expect_windows(p, out.results);
  // software signalling per step: one flag release per group of GEMM1 (an
  // expert's row of tiles, gpu.gemm_tile_m rows); no DAM, no packet manager
  const RunRequest req = request("moehub-base", true);
  const Routing routing = generate_routing(req.model, req.workload, req.system.num_gpus);
  int groups = 0;
  for (const auto rows : routing.expert_load()) groups += static_cast<int>((rows + 127) / 128);
  ASSERT_EQ(req.system.gpu.gemm_tile_m, 128) << "test setup";
  EXPECT_EQ(p.instants["flag release"], groups);
  EXPECT_EQ(p.instants.count("DAM ready"), 0u);
  EXPECT_EQ(samples(p, 0, "RPM stores and packets"), 0);
  EXPECT_GT(samples(p, 0, "RAT lookups"), 0);
}

TEST(Timeline, MegatronShowsOnlyItsWindow) {
  const RunOutput out = simulate(request("megatron", false));
  ASSERT_FALSE(out.fatal) << out.fatal_message;
  Parsed p = parse(out);
  expect_windows(p, out.results);
  EXPECT_TRUE(p.instants.empty());
  EXPECT_EQ(samples(p, 0, "RAT lookups"), 0);
}

}  // namespace
}  // namespace moehub
