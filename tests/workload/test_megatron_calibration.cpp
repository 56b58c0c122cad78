// Holds the megatron schedule on the fitted system (configs/systems/h200-megatron.yaml,
// kernel counts in MegatronProfile) to the Megatron-Core measurements on one H200
// (docs/results/data/megatron_h200_2026-12-02_run{9,10}_*.csv, two machines of the
// lent kind minutes apart) at the sizes the fit (host/scripts/fit_megatron.py --stat
// median, both runs) did not use: the layer time within 10 % and every phase that
// takes at least 5 % of the layer within 20 %, forward and forward+backward, and
// the unpermutation within 20 % at 16,384 tokens, where the GPU sets its time.
//
// The reference of a size is the median of its timed calls in both runs'
// interleaved rounds (megatron_moe_measure.py --rounds 30: each round visits every
// model and size once in a shuffled order, two timed and two instrumented calls
// per mode). The machines' host runs at two speeds about 1.7x apart and moves
// between them over seconds (runs 3-8); spread over the rounds, every size
// samples both in the same proportion, so the medians compare across sizes, and
// the fit takes its figures from the same statistic at its own sizes. Pooling the
// two machines takes in the spread between machines of the kind (their medians
// differ by up to 19 % at host-bound sizes). The earlier reference (the range of
// per-size passes of runs 1-4, each pass a few seconds at one size) mixed the
// levels differently at every size and needed four cases skipped
// (docs/results/megatron-h200.md).
//
// The measurement ran Megatron-Core at one expert-parallel rank; the simulator
// needs two GPUs or more, so each simulated GPU holds the measured GPU's tokens
// and experts (a model with twice the experts, every token routed to experts of
// its own GPU) and the schedule runs Megatron-Core's single-rank path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/config_loader.hpp"
#include "platform/simulate.hpp"

namespace moehub {
namespace {

const std::string kData = std::string(MOEHUB_SOURCE_DIR) + "/docs/results/data/megatron_h200_2026-12-02_";
/// The two runs of interleaved rounds, on two machines of the lent kind minutes apart;
/// their calls are pooled.
const std::vector<std::string> kRuns = {"run9", "run10"};
/// The fit of both runs (fit_megatron.py --stat median run9 run10).
const std::string kFit = kData + "run9-10_fit.json";

std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::string line;
  std::getline(f, line);
  std::vector<std::string> head;
  {
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) head.push_back(c);
  }
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::string c;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; std::getline(ss, c, ',') && i < head.size(); ++i) row[head[i]] = c;
    rows.push_back(row);
  }
  return rows;
}

/// The first pass of a run's interleaved rounds (the passes before them visit
/// each size once, for the profiler's kernel counts).
int first_round_pass(const std::string& run) {
  std::ifstream f(kData + run + "_meta.json");
  if (!f) throw std::runtime_error("cannot read " + kData + run + "_meta.json");
  return nlohmann::json::parse(f).at("interleaved").at("first_pass").get<int>();
}

struct Case {
  std::string model;
  std::string mode;  // "fwd" or "fwdbwd"
  std::int64_t tokens;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.mode << " " << c.tokens; }

std::string case_name(const testing::TestParamInfo<Case>& i) {
  std::string m = i.param.model;
  std::replace_if(m.begin(), m.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return m + "_" + i.param.mode + "_" + std::to_string(i.param.tokens);
}

bool is_case(const std::map<std::string, std::string>& r, const Case& c) {
  return r.at("model") == c.model && r.at("mode") == c.mode && std::stoll(r.at("tokens")) == c.tokens;
}

double median(std::vector<double> v) {
  if (v.empty()) throw std::runtime_error("median of no values");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Device time (us) of every timed layer call of the case in the runs' interleaved rounds.
std::vector<double> round_calls(const Case& c) {
  std::vector<double> v;
  for (const auto& run : kRuns) {
    const int first = first_round_pass(run);
    for (const auto& r : read_csv(kData + run + "_iters.csv")) {
      if (r.at("kind") == "layer" && r.at("impl") == "megatron" && is_case(r, c) &&
          std::stoi(r.at("pass")) >= first) {
        v.push_back(std::stod(r.at("device_us")));
      }
    }
  }
  return v;
}

/// The simulator's phase of a measured phase.
std::string sim_phase(const std::string& p) {
  static const std::map<std::string, std::string> m = {
      {"router", "routing"},          {"permutation", "permute"},     {"count_sync", "count_exchange"},
      {"dispatch", "dispatch"},       {"sort_chunks", "dispatch"},    {"experts", "expert_compute"},
      {"unsort_chunks", "combine"},   {"combine", "combine"},         {"unpermutation", "unpermute"},
      {"shared_expert", "shared_expert"}, {"backward", "backward"}};
  return m.at(p);
}

/// Per simulator phase, the median over the rounds' instrumented calls of its
/// device time (the measured phases that map to it summed per call), scaled so
/// that the phases add up to `layer` (the uninstrumented calls' median).
std::map<std::string, double> round_phases(const Case& c, double layer) {
  std::map<std::tuple<std::string, int, int>, std::map<std::string, double>> per_call;  // (run, pass, iter)
  for (const auto& run : kRuns) {
    const int first = first_round_pass(run);
    for (const auto& r : read_csv(kData + run + "_phase_iters.csv")) {
      if (!is_case(r, c) || std::stoi(r.at("pass")) < first) continue;
      per_call[{run, std::stoi(r.at("pass")), std::stoi(r.at("iter"))}][sim_phase(r.at("phase"))] +=
          std::stod(r.at("device_us"));
    }
  }
  std::map<std::string, std::vector<double>> v;
  for (const auto& [call, ph] : per_call) {
    for (const auto& [p, t] : ph) v[p].push_back(t);
  }
  std::map<std::string, double> out;
  double total = 0;
  for (const auto& [p, x] : v) total += out[p] = median(x);
  for (auto& [p, x] : out) x *= layer / total;
  return out;
}

/// Simulated time per phase of GPU 0: each op's own time plus the launch gap
/// the host left before it (the measured phases include their launches).
std::map<std::string, double> simulated_phases(const nlohmann::ordered_json& results) {
  std::map<std::string, double> ph;
  const auto& list = results["gpus"][0]["phases"];
  double pending_gap = 0;
  for (const auto& p : list) {
    if (p["stream"].get<int>() != 0) continue;
    const double d = p["end_us"].get<double>() - p["start_us"].get<double>();
    const auto phase = p["phase"].get<std::string>();
    if (p["kind"] == "launch_gap" && phase == "launch_overhead") {
      pending_gap += d;
      continue;
    }
    ph[phase] += d + pending_gap;
    pending_gap = 0;
  }
  return ph;
}

// The shipped figures are the fit's: h200-megatron.yaml's host and GEMM keys and
// MegatronProfile's defaults equal what fit_megatron.py --stat median wrote for
// runs 9 and 10 (docs/results/data/megatron_h200_2026-12-02_run9-10_fit.json), and the
// carried host keys of dgx-h800 and dgx-h100 equal the measured machine's.
TEST(MegatronFit, ShippedFiguresAreTheFits) {
  std::ifstream f(kFit);
  ASSERT_TRUE(f) << kFit;
  const auto fit = nlohmann::json::parse(f);
  EXPECT_EQ(fit.at("statistic"), "median");
  const auto sys = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/h200-megatron.yaml");
  EXPECT_DOUBLE_EQ(sys.host.kernel_launch_us, fit.at("kernel_launch_us").get<double>());
  EXPECT_DOUBLE_EQ(sys.host.stream_sync_us, fit.at("stream_sync_us").get<double>());
  EXPECT_DOUBLE_EQ(sys.host.collective_setup_us, fit.at("collective_setup_us").get<double>());
  EXPECT_DOUBLE_EQ(sys.gpu.gemm.max_efficiency, fit.at("gemm_max_efficiency").get<double>());
  for (const char* carried : {"dgx-h800", "dgx-h100"}) {
    SCOPED_TRACE(carried);
    const auto c = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/" + carried + ".yaml");
    EXPECT_DOUBLE_EQ(c.host.kernel_launch_us, sys.host.kernel_launch_us);
    EXPECT_DOUBLE_EQ(c.host.stream_sync_us, sys.host.stream_sync_us);
    EXPECT_DOUBLE_EQ(c.host.collective_setup_us, sys.host.collective_setup_us);
  }
  const MegatronProfile prof;
  const auto same = [](const PhaseKernels& k, const nlohmann::json& j, const std::string& what) {
    EXPECT_DOUBLE_EQ(k.fixed, j.at(0).get<double>()) << what;
    EXPECT_DOUBLE_EQ(k.per_local_expert, j.at(1).get<double>()) << what;
  };
  const std::vector<std::pair<std::string, const MegatronForwardKernels*>> modes = {
      {"forward", &prof.forward}, {"train_forward", &prof.train_forward}};
  for (const auto& [name, k] : modes) {
    const auto& j = fit.at("profile").at(name);
    same(k->router, j.at("router"), name + " router");
    same(k->permute, j.at("permute"), name + " permute");
    same(k->dispatch_calls, j.at("dispatch_calls"), name + " dispatch_calls");
    same(k->sort, j.at("sort"), name + " sort");
    same(k->experts, j.at("experts"), name + " experts");
    same(k->unsort, j.at("unsort"), name + " unsort");
    same(k->combine_calls, j.at("combine_calls"), name + " combine_calls");
    same(k->unpermute, j.at("unpermute"), name + " unpermute");
    same(k->shared_expert, j.at("shared_expert"), name + " shared_expert");
  }
  same(prof.backward, fit.at("backward"), "backward");
  EXPECT_DOUBLE_EQ(prof.unpermute_add_gbps, fit.at("unpermute_add_gbps").get<double>());
  EXPECT_GE(fit.at("unpermute_points").get<int>(), 2);
}

class MegatronCalibration : public testing::TestWithParam<Case> {};

TEST_P(MegatronCalibration, HeldOutSizeWithinTolerance) {
  const Case c = GetParam();
  RunRequest req;
  req.system = load_system_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/systems/h200-megatron.yaml");
  req.model = load_model_config(std::string(MOEHUB_SOURCE_DIR) + "/configs/models/" + c.model + ".yaml");
  const int E = req.model.num_experts;
  const int k = req.model.top_k;
  const int G = req.system.num_gpus;
  req.model.num_experts = E * G;  // every GPU holds the measured GPU's E experts
  req.workload.tokens = c.tokens * G;
  req.schedule = c.mode == "fwd" ? "megatron" : "megatron-train";
  req.options.megatron.single_rank = true;
  req.timeline = false;
  Routing r;
  r.num_gpus = G;
  r.num_experts = E * G;
  r.top_k = k;
  r.tokens_per_gpu.assign(static_cast<std::size_t>(G), c.tokens);
  for (int g = 0; g < G; ++g) {
    std::vector<std::int32_t> ids;
    std::vector<float> w;
    for (std::int64_t t = 0; t < c.tokens; ++t) {
      for (int j = 0; j < k; ++j) {
        ids.push_back(static_cast<std::int32_t>(g * E + (t * k + j) % E));
        w.push_back(1.0f / static_cast<float>(k));
      }
    }
    r.expert_ids.push_back(ids);
    r.gate_weights.push_back(w);
  }
  req.routing = r;
  req.routing_source = "all-local (calibration)";
  const RunOutput out = simulate(req);
  ASSERT_FALSE(out.time_limit_exceeded);
  EXPECT_TRUE(out.check_errors.empty());

  const double sim = out.results["layer_time_us"].get<double>();
  const auto calls = round_calls(c);
  ASSERT_GE(calls.size(), 120u);  // two runs of 30 rounds, two timed calls each
  const double meas = median(calls);
  std::cout << c.model << " " << c.mode << " " << c.tokens << ": simulated " << sim << " us, measured median "
            << meas << " us over " << calls.size() << " calls (" << 100.0 * (sim / meas - 1.0) << " %)\n";
  EXPECT_GE(sim, 0.9 * meas);
  EXPECT_LE(sim, 1.1 * meas);

  const auto sp = simulated_phases(out.results);
  const auto mp = round_phases(c, meas);
  ASSERT_FALSE(mp.empty());
  for (const auto& [p, m] : mp) {
    const double s = sp.count(p) ? sp.at(p) : 0.0;
    // phases under 5 % of the layer are printed, not held; the unpermutation is
    // held where its scatter-add, not the host, sets its time (its rate is fitted
    // at the GPU-bound sizes 8,192 and 32,768)
    const bool held = m >= 0.05 * meas || (p == "unpermute" && c.tokens >= 16384);
    std::cout << "  " << p << ": simulated " << s << " us, measured " << m << " us (" << 100.0 * (s / m - 1.0)
              << " %)" << (held ? "" : ", under 5 % of the layer: not held") << "\n";
    if (!held) continue;
    EXPECT_GE(s, 0.8 * m) << p;
    EXPECT_LE(s, 1.2 * m) << p;
  }
}

std::vector<Case> held_out() {
  std::vector<Case> v;
  for (const char* m : {"mixtral-8x7b", "qwen1.5-moe-a2.7b"}) {
    for (const char* mode : {"fwd", "fwdbwd"}) {
      for (const std::int64_t t : {256, 1024, 4096, 16384}) v.push_back({m, mode, t});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(HeldOut, MegatronCalibration, testing::ValuesIn(held_out()), case_name);

}  // namespace
}  // namespace moehub
