// moehub-sim --hub-impl rtl against --hub-impl moehub: the whole platform
// with the Verilated AAU and RPM scheduler in place of the behavioural ones.
// Two processes per comparison (SystemC runs one simulation per process),
// each writing --hub-digest; the runs must agree on the layer time (within
// 1 %), on the writes every GPU receives and the packets every GPU-to-GPU
// link carries (as multisets), on the rows of every region, and both must
// give every row one LocalRowID, dense per region. On the hub of dgx-h800 (a
// RAT of 4096 entries) the runs are cycle-matched: every GPU's writes in the
// same order with the same LocalRowIDs, every link's packets in the same
// order. On the same hub with a RAT of 64 entries (evictions, spills) the
// RTL's restore queries differ (docs/rtl.md): packet orders per link must
// agree. The test prints on how many streams order and times agree.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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

struct SimRun {
  int status = -1;
  std::string err;
  J results, digest;
};

SimRun run(const std::string& args, const fs::path& dir, const std::string& name) {
  const fs::path res = dir / (name + ".json"), dig = dir / (name + "-digest.json"), err = dir / (name + ".err");
  const std::string cmd = std::string(MOEHUB_SIM_BINARY) + " " + args + " --quiet --no-timeline --results " +
                          res.string() + " --hub-digest " + dig.string() + " >/dev/null 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  SimRun r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.err = slurp(err);
  if (r.status == 0) {
    r.results = J::parse(slurp(res));
    r.digest = J::parse(slurp(dig));
  }
  return r;
}

/// Differences between two digests in what does not depend on the order of
/// equal-priority packets: per GPU the writes that arrived (without the AAU's
/// answers), per link the packets sent, per region its rows, and LocalRowIDs
/// that are distinct, dense and stable per row (empty: none).
std::string content_differences(const J& a, const J& b) {
  std::string d;
  for (const J* x : {&a, &b}) {
    if (x->at("local_rows").at("remapped_writes") != 0) d += "a row got two LocalRowIDs; ";
    if (!x->at("local_rows").at("dense").get<bool>()) d += "LocalRowIDs not dense; ";
  }
  for (const char* k : {"rows", "regions", "region_rows"}) {
    if (a.at("local_rows").at(k) != b.at("local_rows").at(k)) d += std::string("local_rows.") + k + "; ";
  }
  const J& ga = a.at("gpus");
  const J& gb = b.at("gpus");
  if (ga.size() != gb.size()) return d + "GPU count differs";
  for (std::size_t g = 0; g < ga.size(); ++g) {
    const std::string gs = "gpu" + ga[g].at("gpu").dump();
    for (const char* k : {"writes", "content"}) {
      if (ga[g].at("ingress").at(k) != gb[g].at("ingress").at(k)) d += gs + " ingress " + k + "; ";
    }
    const J& ea = ga[g].at("egress");
    const J& eb = gb[g].at("egress");
    if (ea.size() != eb.size()) {
      d += gs + " egress link count; ";
      continue;
    }
    for (std::size_t l = 0; l < ea.size(); ++l) {
      for (const char* k : {"dst", "packets", "content"}) {
        if (ea[l].at(k) != eb[l].at(k)) d += gs + "->gpu" + ea[l].at("dst").dump() + " " + k + "; ";
      }
    }
  }
  return d;
}

/// Links (GPU-to-GPU egress streams and per-GPU ingress streams) whose order
/// digests agree, of all; and whether the LocalRowIDs agree row by row.
struct OrderAgreement {
  int same = 0, links = 0;
  bool local_rows = false;
};
OrderAgreement order_agreement(const J& a, const J& b, const char* key) {
  OrderAgreement o;
  o.local_rows = a.at("local_rows").at("digest") == b.at("local_rows").at("digest");
  for (std::size_t g = 0; g < a.at("gpus").size(); ++g) {
    ++o.links;
    o.same += a["gpus"][g]["ingress"][key] == b["gpus"][g]["ingress"][key] ? 1 : 0;
    for (std::size_t l = 0; l < a["gpus"][g]["egress"].size(); ++l) {
      ++o.links;
      o.same += a["gpus"][g]["egress"][l][key] == b["gpus"][g]["egress"][l][key] ? 1 : 0;
    }
  }
  return o;
}

/// Streams whose order differs: every GPU-to-GPU link's packets, and with
/// `ingress` every GPU's writes (with their LocalRowIDs) and the LocalRowID
/// of every row (empty: none).
std::string order_differences(const J& a, const J& b, bool ingress) {
  std::string d;
  if (ingress && a.at("local_rows").at("digest") != b.at("local_rows").at("digest")) d += "LocalRowIDs; ";
  for (std::size_t g = 0; g < a.at("gpus").size() && g < b.at("gpus").size(); ++g) {
    const std::string gs = "gpu" + a["gpus"][g]["gpu"].dump();
    if (ingress && a["gpus"][g]["ingress"]["order"] != b["gpus"][g]["ingress"]["order"]) d += gs + " ingress; ";
    for (std::size_t l = 0; l < a["gpus"][g]["egress"].size() && l < b["gpus"][g]["egress"].size(); ++l) {
      if (a["gpus"][g]["egress"][l]["order"] != b["gpus"][g]["egress"][l]["order"]) {
        d += gs + "->gpu" + a["gpus"][g]["egress"][l]["dst"].dump() + "; ";
      }
    }
  }
  return d;
}

void compare(const std::string& args, const std::string& tag, bool ingress_order) {
  const fs::path d = temp_dir(tag);
  const SimRun golden = run(args + " --hub-impl moehub", d, "moehub");
  ASSERT_EQ(golden.status, 0) << golden.err;
  const SimRun rtl = run(args + " --hub-impl rtl", d, "rtl");
  ASSERT_EQ(rtl.status, 0) << rtl.err;
  EXPECT_TRUE(golden.results.at("checks").at("passed").get<bool>());
  EXPECT_TRUE(rtl.results.at("checks").at("passed").get<bool>());
  EXPECT_EQ(content_differences(golden.digest, rtl.digest), "");
  const double tg = golden.results.at("layer_time_us").get<double>();
  const double tr = rtl.results.at("layer_time_us").get<double>();
  EXPECT_LE(std::fabs(tr - tg), 0.01 * tg) << "layer time: moehub " << tg << " us, rtl " << tr << " us";
  EXPECT_EQ(rtl.results.at("moehub").at("rat").at("allocations"), golden.results.at("moehub").at("rat").at("allocations"));
  if (ingress_order) {
    // every RAT count but evictions: the adapter sees evictions only on the
    // spill channel (a victim that was restored, clean, is dropped inside
    // the RTL without a signal), so its evictions are the spills
    J rat_g = golden.results.at("moehub").at("rat"), rat_r = rtl.results.at("moehub").at("rat");
    EXPECT_EQ(rat_r.at("evictions"), rat_r.at("spills"));
    rat_g.erase("evictions");
    rat_r.erase("evictions");
    EXPECT_EQ(rat_r, rat_g);
  }
  // the RPM's statistics are reported by the RTL adapter too (also while
  // --hub-digest records): the same stores and packets; with the same order
  // and times (ingress_order) the same flush reasons
  ASSERT_TRUE(rtl.results.at("moehub").at("units").at("rpm").get<bool>());
  const J& rg = golden.results.at("moehub").at("rpm");
  const J& rr = rtl.results.at("moehub").at("rpm");
  for (const char* k : {"stores_accepted", "stores_merged", "packets_sent", "bytes_sent"}) {
    EXPECT_EQ(rr.at(k), rg.at(k)) << k;
  }
  if (ingress_order) {
    EXPECT_EQ(rr, rg);
  }
  EXPECT_EQ(order_differences(golden.digest, rtl.digest, ingress_order), "");
  const OrderAgreement order = order_agreement(golden.digest, rtl.digest, "order");
  const OrderAgreement timed = order_agreement(golden.digest, rtl.digest, "timed");
  std::printf("%s: layer time moehub %.3f us, rtl %.3f us; %s rows; same order on %d of %d streams, same order and "
              "times on %d; LocalRowIDs row by row %s; rtl RAT %s; rtl RPM %s; wall moehub %.2f s, rtl %.2f s\n",
              tag.c_str(), tg, tr, rtl.digest.at("local_rows").at("rows").dump().c_str(), order.same, order.links,
              timed.same, order.local_rows ? "equal" : "differ", rtl.results.at("moehub").at("rat").dump().c_str(),
              rr.dump().c_str(),
              golden.results.at("host").at("wall_seconds").get<double>(),
              rtl.results.at("host").at("wall_seconds").get<double>());
  fs::remove_all(d);
}

// a reduced job keeps each run to seconds (the default is 8192 tokens)
const std::string kJob = "--schedule moehub --tokens 256";
const std::string kSmallJob = "--schedule moehub --tokens 128";
const std::string kTinyJob = "--schedule moehub --tokens 64";

/// dgx-h800 with `key: value` in place of its value, written into `dir`.
fs::path system_with(const fs::path& dir, const std::vector<std::pair<std::string, int>>& changes) {
  std::string text = slurp(fs::path(MOEHUB_SOURCE_DIR) / "configs/systems/dgx-h800.yaml");
  std::string name = "sys";
  for (const auto& [key, value] : changes) {
    // "key: <digits>" -> "key: value"
    const std::size_t at = text.find("\n  " + key + ":");
    EXPECT_NE(at, std::string::npos) << key;
    if (at == std::string::npos) continue;
    std::size_t b = at + 4 + key.size();
    while (b < text.size() && text[b] == ' ') ++b;
    std::size_t e = b;
    while (e < text.size() && text[e] >= '0' && text[e] <= '9') ++e;
    EXPECT_GT(e, b) << key;
    text.replace(b, e - b, std::to_string(value));
    name += "-" + key + std::to_string(value);
  }
  const fs::path p = dir / (name + ".yaml");
  std::ofstream(p) << text;
  return p;
}

// The hub of dgx-h800: the RTL AAU is Verilated with AllocCycles = its
// apt_alloc_cycles (1), so a new row is answered rat_lookup_cycles +
// apt_alloc_cycles = 2 cycles after the request as by the behavioural AAU:
// the runs agree on every GPU's writes in order, every row's LocalRowID and
// every link's packets in order.
TEST(SimRtl, DefaultHubSamePacketOrderAsBehavioural) { compare(kJob, "default", true); }

/// `path` with "rat_spill_record: exact" set to `record`.
fs::path with_spill_record(const fs::path& path, const std::string& record) {
  std::string text = slurp(path);
  const std::string key = "\n  rat_spill_record: exact";
  const std::size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) text.replace(at, key.size(), "\n  rat_spill_record: " + record);
  const fs::path p = path.parent_path() / (path.stem().string() + "-" + record + ".yaml");
  std::ofstream(p) << text;
  return p;
}

// A RAT of 64 entries: evictions and spills. The RTL keeps one spilled bit
// per region and asks the spill area on every miss of a region that has
// spilled; with the behavioural RAT on the same record (rat_spill_record:
// region) the runs agree on every GPU's writes in order, every row's
// LocalRowID and every link's packets in order, and on the RAT's counts,
// spill-area reads that found nothing included.
TEST(SimRtl, SmallRatSameLocalRowIdsAndOrdersAsBehavioural) {
  const fs::path d = temp_dir("cfg");
  const fs::path sys = with_spill_record(system_with(d, {{"rat_entries", 64}}), "region");
  compare(kJob + " --system " + sys.string(), "rat64", true);
  const SimRun r = run(kSmallJob + " --hub-impl rtl --system " + sys.string(), d, "stats");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(r.results.at("moehub").at("rat").at("spills").get<std::uint64_t>(), 0u);         // evictions happened
  EXPECT_GT(r.results.at("moehub").at("rat").at("empty_queries").get<std::uint64_t>(), 0u);  // and reads for new rows
  fs::remove_all(d);
}

// The same RAT with the behavioural default (rat_spill_record: exact: no
// memory read for a new row): the RTL's extra reads change write timings and
// LocalRowIDs, not what is sent: packets per link and their order, rows per
// region and the layer time agree.
TEST(SimRtl, SmallRatExactRecordSamePacketOrderAsBehavioural) {
  const fs::path d = temp_dir("cfg");
  const fs::path sys = system_with(d, {{"rat_entries", 64}});
  compare(kJob + " --system " + sys.string(), "rat64-exact", false);
  fs::remove_all(d);
}

// The comparison can fail: another routing gives other digests.
TEST(SimRtl, ComparisonSeesADifferentRun) {
  const fs::path d = temp_dir("diff");
  const SimRun a = run(kSmallJob + " --hub-impl rtl", d, "a");
  const SimRun b = run(kSmallJob + " --hub-impl rtl --seed 7", d, "b");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(content_differences(a.digest, b.digest), "");
  fs::remove_all(d);
}

// hub.implementation: rtl in the system file selects the RTL as --hub-impl
// does: --rtl-trace (which needs the rtl implementation) then writes the
// blocks' waveforms.
TEST(SimRtl, SystemFileSelectsTheRtl) {
  const fs::path d = temp_dir("yaml");
  std::string text = slurp(fs::path(MOEHUB_SOURCE_DIR) / "configs/systems/dgx-h800.yaml");
  const std::size_t at = text.find("\n  implementation: ");
  ASSERT_NE(at, std::string::npos);
  const std::size_t eol = text.find('\n', at + 1);
  text.replace(at, eol - at, "\n  implementation: rtl");
  const fs::path sys = d / "rtl.yaml";
  std::ofstream(sys) << text;
  const std::string cmd = std::string(MOEHUB_SIM_BINARY) + " " + kTinyJob + " --system " + sys.string() +
                          " --rtl-trace " + (d / "wave").string() + " --quiet --no-timeline --results " +
                          (d / "r.json").string() + " >/dev/null 2>" + (d / "err.txt").string();
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << slurp(d / "err.txt");
  EXPECT_TRUE(fs::exists(d / "wave" / "gpu0_aau.fst"));
  EXPECT_TRUE(fs::exists(d / "wave" / "gpu7_rpm.fst"));
  fs::remove_all(d);
}

// The timeline's RAT counters read the RTL's RAT, as the results do: the last
// sample of every GPU, summed, equals the results' hits and misses.
TEST(SimRtl, TimelineCountsTheRtlRat) {
  const fs::path d = temp_dir("timeline");
  const std::string cmd = std::string(MOEHUB_SIM_BINARY) + " " + kTinyJob + " --hub-impl rtl --quiet --out-dir " +
                          d.string() + " >/dev/null 2>" + (d / "err.txt").string();
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0) << slurp(d / "err.txt");
  const J rat = J::parse(slurp(d / "results.json")).at("moehub").at("rat");
  const J timeline = J::parse(slurp(d / "timeline.json"));
  std::map<int, J> last;  // GPU (pid) -> its last "RAT lookups" sample
  for (const J& e : timeline.at("traceEvents")) {
    if (e.value("name", "") == "RAT lookups") last[e.at("pid").get<int>()] = e.at("args");
  }
  ASSERT_FALSE(last.empty());
  std::uint64_t hits = 0, misses = 0;
  for (const auto& [pid, args] : last) {
    hits += args.at("hits").get<std::uint64_t>();
    misses += args.at("misses").get<std::uint64_t>();
  }
  EXPECT_GT(misses, 0u);
  EXPECT_EQ(hits, rat.at("hits").get<std::uint64_t>());
  EXPECT_EQ(misses, rat.at("misses").get<std::uint64_t>());
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
  const fs::path sys = system_with(d, {{"rat_entries", 128}});
  const int rc = std::system((sim + kTinyJob + " --hub-impl rtl --system " + sys.string() + quiet + " 2>" +
                              (d / "err.txt").string() + " >/dev/null")
                                 .c_str());
  EXPECT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 2);
  EXPECT_NE(slurp(d / "err.txt").find("no model Verilated"), std::string::npos) << slurp(d / "err.txt");
  // nor an allocation latency of 0 (the models have AllocCycles = 1)
  const fs::path sys0 = system_with(d, {{"apt_alloc_cycles", 0}});
  const int rc0 = std::system((sim + kTinyJob + " --hub-impl rtl --system " + sys0.string() + quiet + " 2>" +
                               (d / "err0.txt").string() + " >/dev/null")
                                  .c_str());
  EXPECT_EQ(WIFEXITED(rc0) ? WEXITSTATUS(rc0) : -1, 2);
  EXPECT_NE(slurp(d / "err0.txt").find("apt_alloc_cycles 0"), std::string::npos) << slurp(d / "err0.txt");
  // --rtl-trace without the rtl implementation
  const int rc2 = std::system((sim + kTinyJob + " --hub-impl moehub --rtl-trace " + (d / "w2").string() +
                               quiet + " >/dev/null 2>&1")
                                  .c_str());
  EXPECT_EQ(WIFEXITED(rc2) ? WEXITSTATUS(rc2) : -1, 2);
  // a waveform folder that cannot be made (its parent is a file): exit 2, no results
  const int rc3 = std::system((sim + kTinyJob + " --hub-impl rtl --rtl-trace " + (d / "r.json" / "wave").string() +
                               " --quiet --no-timeline --results " + (d / "r3.json").string() + " >/dev/null 2>" +
                               (d / "err3.txt").string())
                                  .c_str());
  EXPECT_EQ(WIFEXITED(rc3) ? WEXITSTATUS(rc3) : -1, 2);
  EXPECT_NE(slurp(d / "err3.txt").find("key '--rtl-trace': cannot create the folder"), std::string::npos)
      << slurp(d / "err3.txt");
  EXPECT_FALSE(fs::exists(d / "r3.json"));
  fs::remove_all(d);
}

}  // namespace
