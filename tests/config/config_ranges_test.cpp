// Tests of the table of allowed config ranges (config_ranges.hpp): the loader
// enforces every entry, docs/configs.md shows the same ranges, and values
// outside them (the two that used to crash a run among them) are rejected at
// load with file, key, value and range.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_loader.hpp"
#include "common/config_ranges.hpp"

namespace moehub {
namespace {

namespace fs = std::filesystem;

const std::string kSource = MOEHUB_SOURCE_DIR;

std::string number_text(double v, bool integer) {
  if (integer) return std::to_string(static_cast<long long>(v));
  std::ostringstream os;
  os.precision(15);
  os << v;
  return os.str();
}

/// The node of a dotted key inside `doc` (which it shares).
YAML::Node at(YAML::Node doc, const std::string& dotted) {
  YAML::Node n = doc;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t dot = dotted.find('.', begin);
    const std::string part = dotted.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (dot == std::string::npos) return n[part];
    n.reset(n[part]);
    begin = dot + 1;
  }
}

class RangeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "moehub-ranges-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// The shipped file of `kind` with `key` set to the plain scalar `text`.
  std::string edited(ConfigKind kind, const std::string& key, const std::string& text) {
    const std::string src = kSource + (kind == ConfigKind::kSystem ? "/configs/systems/dgx-h800.yaml"
                                                                   : "/configs/models/mixtral-8x7b.yaml");
    YAML::Node doc = YAML::LoadFile(src);
    at(doc, key) = text;
    const std::string path = (dir_ / ("edit" + std::to_string(count_++) + ".yaml")).string();
    std::ofstream(path) << YAML::Dump(doc) << "\n";
    return path;
  }

  /// Loads `path` as `kind`; the error message, or "" when it loads.
  static std::string load_error(ConfigKind kind, const std::string& path, std::string* key) {
    try {
      if (kind == ConfigKind::kSystem) {
        (void)load_system_config(path);
      } else {
        (void)load_model_config(path);
      }
    } catch (const ConfigError& e) {
      *key = e.key();
      return e.what();
    }
    return "";
  }

  fs::path dir_;
  int count_ = 0;
};

// Every entry of the table is enforced by the loader: a value just outside
// each bound is rejected with the file, the key, the value and the range.
TEST_F(RangeFiles, EveryTableEntryIsEnforcedAtLoad) {
  ASSERT_GT(key_range_count(), 30u);
  for (const KeyRange* r = key_ranges_begin(); r != key_ranges_end(); ++r) {
    SCOPED_TRACE(r->key);
    const double step = r->integer ? 1.0 : (r->lo > 0 ? r->lo / 2 : 1.0);
    const double below = r->lo_inclusive ? r->lo - step : r->lo;
    const double above = r->hi_inclusive ? r->hi + (r->integer ? 1.0 : r->hi) : r->hi;
    for (const double bad : {below, above}) {
      const std::string text = number_text(bad, r->integer);
      const std::string path = edited(r->kind, r->key, text);
      std::string key;
      const std::string msg = load_error(r->kind, path, &key);
      EXPECT_EQ(key, r->key);
      EXPECT_EQ(msg, path + ": key '" + r->key + "': must be " + describe_range(*r) + " (got " + text + ")");
    }
    // a value on an included bound passes the range check (a cross-field
    // rule may still reject it, with another message)
    for (const double ok : {r->lo, r->hi}) {
      if ((ok == r->lo && !r->lo_inclusive) || (ok == r->hi && !r->hi_inclusive)) continue;
      const std::string path = edited(r->kind, r->key, number_text(ok, r->integer));
      std::string key;
      const std::string msg = load_error(r->kind, path, &key);
      EXPECT_EQ(msg.find("must be in"), std::string::npos) << msg;
    }
  }
}

// The two edits of dgx-h800.yaml that once crashed a run (bad_alloc deep in
// the simulation) are now rejected at load.
TEST_F(RangeFiles, FormerCrashesAreRejectedAtLoad) {
  std::string key;
  std::string msg = load_error(ConfigKind::kSystem,
                               edited(ConfigKind::kSystem, "gpu.hbm_bw_gbps", "0.0000001"), &key);
  EXPECT_EQ(key, "gpu.hbm_bw_gbps");
  EXPECT_NE(msg.find("must be in [0.001, 100000] (got 0.0000001)"), std::string::npos) << msg;
  msg = load_error(ConfigKind::kSystem,
                   edited(ConfigKind::kSystem, "nvlink.gpu_switch_latency_ns", "1e308"), &key);
  EXPECT_EQ(key, "nvlink.gpu_switch_latency_ns");
  EXPECT_NE(msg.find("must be in [0, 1000000000] (got 1e308)"), std::string::npos) << msg;
}

TEST(RangeTable, KeysAreUniqueAndIntervalsNonEmpty) {
  std::set<std::pair<int, std::string>> seen;
  for (const KeyRange* r = key_ranges_begin(); r != key_ranges_end(); ++r) {
    EXPECT_TRUE(seen.insert({static_cast<int>(r->kind), r->key}).second) << r->key;
    EXPECT_LT(r->lo, r->hi) << r->key;
  }
  EXPECT_THROW(key_range(ConfigKind::kSystem, "gpu.no_such_key"), std::logic_error);
}

/// The rows `| \`key\` | type | range | meaning |` of one section of docs/configs.md.
struct DocRow {
  std::string type, range;
};
std::map<std::string, DocRow> doc_rows(const std::string& section_title) {
  std::ifstream f(kSource + "/docs/configs.md");
  std::map<std::string, DocRow> rows;
  std::string line;
  bool in = false;
  while (std::getline(f, line)) {
    if (line.rfind("## ", 0) == 0) in = line.rfind("## " + section_title, 0) == 0;
    if (!in || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::size_t p = 1;
    for (;;) {
      const std::size_t q = line.find(" | ", p);
      if (q == std::string::npos) break;
      cells.push_back(line.substr(p + (line[p] == ' ' ? 1 : 0), q - p - (line[p] == ' ' ? 1 : 0)));
      p = q + 2;
    }
    if (cells.size() < 3) continue;
    const std::string key = cells[0].substr(1, cells[0].size() - 2);  // strip backticks
    rows[key] = {cells[1], cells[2]};
  }
  return rows;
}

// docs/configs.md's range column is the table's: a test that fails when the
// two disagree, printing the row text the table implies.
TEST(RangeTable, DocsShowTheTablesRanges) {
  const auto system_rows = doc_rows("System config");
  const auto model_rows = doc_rows("Model config");
  ASSERT_GT(system_rows.size(), 30u);
  ASSERT_GT(model_rows.size(), 5u);
  for (const KeyRange* r = key_ranges_begin(); r != key_ranges_end(); ++r) {
    const auto& rows = r->kind == ConfigKind::kSystem ? system_rows : model_rows;
    const auto it = rows.find(r->key);
    ASSERT_NE(it, rows.end()) << "docs/configs.md has no row for " << r->key;
    EXPECT_EQ(it->second.type, r->integer ? "int" : "number") << r->key;
    EXPECT_EQ(it->second.range, describe_range_for_docs(*r))
        << "docs/configs.md: row of `" << r->key << "` should read | `" << r->key << "` | "
        << (r->integer ? "int" : "number") << " | " << describe_range_for_docs(*r) << " | ... |";
  }
  // and every numeric row of the docs is in the table
  for (const auto* rows : {&system_rows, &model_rows}) {
    for (const auto& [key, row] : *rows) {
      if (row.type != "int" && row.type != "number") continue;
      const ConfigKind kind = rows == &system_rows ? ConfigKind::kSystem : ConfigKind::kModel;
      EXPECT_NO_THROW(key_range(kind, key)) << "docs/configs.md documents " << key
                                            << " but the range table has no entry";
    }
  }
}

}  // namespace
}  // namespace moehub
