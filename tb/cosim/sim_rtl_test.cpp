// moehub-sim --hub-impl rtl against --hub-impl moehub: the whole platform
// with the Verilated AAU and RPM scheduler in place of the behavioural ones.
// Two processes per comparison (SystemC runs one simulation per process),
// each writing --hub-digest; the runs must agree on every GPU's ingress order
// (with the LocalRowIDs and addresses), every GPU-to-GPU link's packet order,
// the LocalRowID of every row, and the layer time within 1 %. On the hub of
// dgx-h800 (a RAT of 4096 entries) and on the same hub with a RAT of 64
// entries (evictions, spills and restores).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

fs::path temp_dir(const std::string& tag) {
  std::string tmpl = (fs::temp_directory_path() / ("moehub-rtlsim-" + tag + "-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

struct Run {
  int status = -1;
  std::string err;
  J results, digest;
};

Run run(const std::string& args, const fs::path& dir, const std::string& name) {
  const fs::path res = dir / (name + ".json"), dig = dir / (name + "-digest.json"), err = dir / (name + ".err");
  const std::string cmd = std::string(MOEHUB_SIM_BINARY) + " " + args + " --quiet --no-timeline --results " +
                          res.string() + " --hub-digest " + dig.string() + " >/dev/null 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  Run r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.err = slurp(err);
  if (r.status == 0) {
    r.results = J::parse(slurp(res));
    r.digest = J::parse(slurp(dig));
  }
  return r;
}

/// dgx-h800 with a RAT of `entries` entries, written into `dir`.
fs::path system_with_rat(const fs::path& dir, int entries) {
  const std::string base = slurp(fs::path(MOEHUB_SOURCE_DIR) / "configs/systems/dgx-h800.yaml");
  const std::regex key("rat_entries: *[0-9]+");
  EXPECT_TRUE(std::regex_search(base, key));
  const fs::path p = dir / ("rat" + std::to_string(entries) + ".yaml");
  std::ofstream(p) << std::regex_replace(base, key, "rat_entries: " + std::to_string(entries));
  return p;
}

/// Differences between two digests (empty: the same orders and LocalRowIDs).
std::string differences(const J& a, const J& b) {
  std::string d;
  if (a.at("local_rows") != b.at("local_rows")) d += "LocalRowIDs differ; ";
  if (a.at("local_rows").at("remapped_writes") != 0 || b.at("local_rows").at("remapped_writes") != 0) {
    d += "a row got two LocalRowIDs; ";
  }
  const J& ga = a.at("gpus");
  const J& gb = b.at("gpus");
  if (ga.size() != gb.size()) return d + "GPU count differs";
  for (std::size_t g = 0; g < ga.size(); ++g) {
    const std::string gs = "gpu" + ga[g].at("gpu").dump();
    if (ga[g].at("ingress").at("order") != gb[g].at("ingress").at("order") ||
        ga[g].at("ingress").at("writes") != gb[g].at("ingress").at("writes")) {
      d += gs + " ingress order; ";
    }
    const J& ea = ga[g].at("egress");
    const J& eb = gb[g].at("egress");
    if (ea.size() != eb.size()) {
      d += gs + " egress link count; ";
      continue;
    }
    for (std::size_t l = 0; l < ea.size(); ++l) {
      if (ea[l].at("dst") != eb[l].at("dst") || ea[l].at("order") != eb[l].at("order") ||
          ea[l].at("packets") != eb[l].at("packets")) {
        d += gs + "->gpu" + ea[l].at("dst").dump() + " packet order; ";
      }
    }
  }
  return d;
}

bool timed_equal(const J& a, const J& b) {
  for (std::size_t g = 0; g < a.at("gpus").size(); ++g) {
    if (a["gpus"][g]["ingress"]["timed"] != b["gpus"][g]["ingress"]["timed"]) return false;
    for (std::size_t l = 0; l < a["gpus"][g]["egress"].size(); ++l) {
      if (a["gpus"][g]["egress"][l]["timed"] != b["gpus"][g]["egress"][l]["timed"]) return false;
    }
  }
  return true;
}

void compare(const std::string& args, const std::string& tag) {
  const fs::path d = temp_dir(tag);
  const Run golden = run(args + " --hub-impl moehub", d, "moehub");
  ASSERT_EQ(golden.status, 0) << golden.err;
  const Run rtl = run(args + " --hub-impl rtl", d, "rtl");
  ASSERT_EQ(rtl.status, 0) << rtl.err;
  EXPECT_TRUE(golden.results.at("checks").at("passed").get<bool>());
  EXPECT_TRUE(rtl.results.at("checks").at("passed").get<bool>());
  EXPECT_EQ(differences(golden.digest, rtl.digest), "");
  const double tg = golden.results.at("layer_time_us").get<double>();
  const double tr = rtl.results.at("layer_time_us").get<double>();
  EXPECT_LE(std::fabs(tr - tg), 0.01 * tg) << "layer time: moehub " << tg << " us, rtl " << tr << " us";
  const J& rat = rtl.results.at("moehub").at("rat");
  std::printf("%s: layer time moehub %.3f us, rtl %.3f us; rows %s; rtl RAT %s; timed digests %s; "
              "wall moehub %.2f s, rtl %.2f s\n",
              tag.c_str(), tg, tr, rtl.digest.at("local_rows").at("rows").dump().c_str(), rat.dump().c_str(),
              timed_equal(golden.digest, rtl.digest) ? "equal (cycle-matched)" : "differ",
              golden.results.at("host").at("wall_seconds").get<double>(),
              rtl.results.at("host").at("wall_seconds").get<double>());
  fs::remove_all(d);
}

// a reduced job keeps each run to seconds (the default is 8192 tokens)
const std::string kJob = "--schedule moehub --tokens 1024";
const std::string kSmallJob = "--schedule moehub --tokens 256";
const std::string kTinyJob = "--schedule moehub --tokens 64";

TEST(SimRtl, DefaultHubSameAsBehavioural) { compare(kJob, "default"); }

TEST(SimRtl, SmallRatSameAsBehavioural) {
  const fs::path d = temp_dir("cfg");
  const fs::path sys = system_with_rat(d, 64);
  compare(kJob + " --system " + sys.string(), "rat64");
  const Run r = run(kJob + " --hub-impl rtl --system " + sys.string(), d, "stats");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(r.results.at("moehub").at("rat").at("spills").get<std::uint64_t>(), 0u);  // evictions happened
  fs::remove_all(d);
}

// The comparison can fail: another routing gives other digests.
TEST(SimRtl, ComparisonSeesADifferentRun) {
  const fs::path d = temp_dir("diff");
  const Run a = run(kSmallJob + " --hub-impl rtl", d, "a");
  const Run b = run(kSmallJob + " --hub-impl rtl --seed 7", d, "b");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(differences(a.digest, b.digest), "");
  fs::remove_all(d);
}

TEST(SimRtl, WritesWaveformsAndRefusesUnbuiltGeometries) {
  const fs::path d = temp_dir("wave");
  const std::string sim = std::string(MOEHUB_SIM_BINARY) + " ";
  const std::string quiet = " --quiet --no-timeline --results " + (d / "r.json").string();
  ASSERT_EQ(std::system((sim + kTinyJob + " --hub-impl rtl --rtl-trace " + (d / "wave").string() + quiet +
                         " >/dev/null 2>&1")
                            .c_str()),
            0);
  for (int g = 0; g < 8; ++g) {
    for (const char* b : {"aau", "rpm"}) {
      const fs::path f = d / "wave" / ("gpu" + std::to_string(g) + "_" + b + ".fst");
      ASSERT_TRUE(fs::exists(f)) << f;
      EXPECT_GT(fs::file_size(f), 100u) << f;
    }
  }
  // a RAT of 128 entries was not Verilated: a clear error, exit status 2
  const fs::path sys = system_with_rat(d, 128);
  const int rc = std::system((sim + kTinyJob + " --hub-impl rtl --system " + sys.string() + quiet + " 2>" +
                              (d / "err.txt").string() + " >/dev/null")
                                 .c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 2);
  EXPECT_NE(slurp(d / "err.txt").find("no model Verilated"), std::string::npos) << slurp(d / "err.txt");
  // --rtl-trace without the rtl implementation
  const int rc2 = std::system((sim + kTinyJob + " --hub-impl moehub --rtl-trace " + (d / "w2").string() +
                               quiet + " >/dev/null 2>&1")
                                  .c_str());
  EXPECT_EQ(WIFEXITED(rc2) ? WEXITSTATUS(rc2) : -1, 2);
  fs::remove_all(d);
}

}  // namespace
