// Tests of the strict config loader and of the shipped system/model configs.
//
// Malformed inputs are derived from a shipped file with one edit and written
// to a temporary folder, so that the test data follows the real schema.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/config_loader.hpp"
#include "common/config_ranges.hpp"

namespace moehub {
namespace {

namespace fs = std::filesystem;

const std::string kConfigDir = MOEHUB_SOURCE_DIR "/configs";

std::string shipped(const std::string& kind, const std::string& stem) {
  return kConfigDir + "/" + kind + "/" + stem + ".yaml";
}

/// Runs `f`, which must throw a ConfigError, and returns that error.
ConfigError expect_config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a ConfigError, got another exception: " << e.what();
    return ConfigError("", "", "wrong exception");
  }
  ADD_FAILURE() << "expected a ConfigError, nothing was thrown";
  return ConfigError("", "", "no exception");
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// Whether a YAML line is `key: <number>...` (a numeric scalar value).
bool has_numeric_value(const std::string& line) {
  std::size_t i = line.find_first_not_of(' ');
  if (i == std::string::npos || !(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_')) {
    return false;
  }
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
  if (i >= line.size() || line[i] != ':') return false;
  i = line.find_first_not_of(' ', i + 1);
  if (i == std::string::npos) return false;
  const char c = line[i];
  return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.';
}

/// Whether `text` starts with "line <digits>, column <digits>: ".
bool starts_with_line_and_column(const std::string& text) {
  std::size_t i = 0;
  for (const char* word : {"line ", ", column "}) {
    if (text.compare(i, std::strlen(word), word) != 0) return false;
    i += std::strlen(word);
    const std::size_t digits_begin = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == digits_begin) return false;
  }
  return text.compare(i, 2, ": ") == 0;
}

/// A fresh folder for the malformed files of one test, removed afterwards.
class ConfigFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("moehub-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string write_text(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out << text;
    return path;
  }
  std::string write_yaml(const std::string& name, const YAML::Node& node) {
    YAML::Emitter emitter;
    emitter << node;
    return write_text(name, std::string(emitter.c_str()) + "\n");
  }
  static std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static YAML::Node system_doc() { return YAML::LoadFile(shipped("systems", "dgx-h800")); }
  static YAML::Node model_doc() { return YAML::LoadFile(shipped("models", "mixtral-8x7b")); }

  /// Loads the system file at `path`; it must fail naming `path` and `key`.
  static ConfigError system_error(const std::string& path, const std::string& key) {
    return check_names(expect_config_error([&] { load_system_config(path); }), path, key);
  }
  static ConfigError model_error(const std::string& path, const std::string& key) {
    return check_names(expect_config_error([&] { load_model_config(path); }), path, key);
  }
  static ConfigError check_names(ConfigError e, const std::string& path, const std::string& key) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.key(), key);
    EXPECT_TRUE(contains(e.what(), path)) << e.what();
    if (!key.empty()) {
      EXPECT_TRUE(contains(e.what(), "key '" + key + "'")) << e.what();
    }
    return e;
  }

  fs::path dir_;
};

/// The node at a dotted path (a handle into `root`, so edits reach `root`).
YAML::Node at(YAML::Node root, const std::string& dotted) {
  YAML::Node n;
  n.reset(root);
  std::stringstream ss(dotted);
  std::string part;
  while (std::getline(ss, part, '.')) {
    YAML::Node next = n[part];
    n.reset(next);
  }
  return n;
}

/// Removes the key at a dotted path.
void remove_key(YAML::Node root, const std::string& dotted) {
  const auto dot = dotted.rfind('.');
  if (dot == std::string::npos) {
    ASSERT_TRUE(root.remove(dotted)) << dotted;
    return;
  }
  YAML::Node parent = at(root, dotted.substr(0, dot));
  ASSERT_TRUE(parent.remove(dotted.substr(dot + 1))) << dotted;
}

/// Dotted paths of every leaf (scalar) and every map of a document.
void collect_paths(const YAML::Node& node, const std::string& prefix,
                   std::vector<std::string>* leaves, std::vector<std::string>* maps) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    if (it->second.IsMap()) {
      maps->push_back(key);
      collect_paths(it->second, key, leaves, maps);
    } else {
      leaves->push_back(key);
    }
  }
}

// ---------------------------------------------------------------------------
// Shipped configs

TEST(ShippedConfigs, ListsTheExpectedFiles) {
  const std::vector<std::string> systems = list_configs("systems");
  for (const char* name : {"dgx-h800", "dgx-h100", "hgx-h200"}) {
    EXPECT_NE(std::find(systems.begin(), systems.end(), name), systems.end()) << name;
  }
  const std::vector<std::string> models = list_configs("models");
  for (const char* name : {"mixtral-8x7b", "qwen1.5-moe-a2.7b", "phi-3.5-moe", "qwen3-30b-a3b",
                           "qwen2-57b-a14b", "qwen3-235b-a22b", "deepseek-v3"}) {
    EXPECT_NE(std::find(models.begin(), models.end(), name), models.end()) << name;
  }
}

TEST(ShippedConfigs, EverySystemLoadsWithPlausibleValues) {
  const std::vector<std::string> names = list_configs("systems");
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::string path = shipped("systems", name);
    const SystemConfig s = load_system_config(path);
    EXPECT_EQ(s.source_file, path);
    EXPECT_EQ(s.name, name);  // the name is the file stem, so it can be looked up
    // HGX/DGX nodes, the lent two-GPU machine, and the two-GPU stand-in for the measured single H200
    EXPECT_TRUE(s.num_gpus == 8 || name == "hgx-h200-x2" || name == "h200-megatron") << s.num_gpus;
    EXPECT_GE(s.num_gpus, 2);
    EXPECT_EQ(s.gpu.num_sms, 132);
    EXPECT_GT(s.gpu.sm_clock_ghz, 1.0);
    EXPECT_LT(s.gpu.sm_clock_ghz, 2.5);
    EXPECT_GT(s.gpu.dense_bf16_tflops, 500);
    EXPECT_LT(s.gpu.dense_bf16_tflops, 2000);
    EXPECT_GT(s.gpu.gemm.max_efficiency, 0.5);
    EXPECT_LE(s.gpu.gemm.max_efficiency, 1.0);
    EXPECT_GE(s.gpu.hbm_bw_gbps, 3000);
    EXPECT_LE(s.gpu.hbm_bw_gbps, 5000);
    EXPECT_GT(s.gpu.xbar_bw_gbps, s.nvlink.bw_gbps_per_direction_per_gpu);
    EXPECT_EQ(s.nvlink.flit_bytes, 16);
    EXPECT_EQ(s.nvlink.max_payload_bytes, 128);
    EXPECT_EQ(s.nvlink.header_flits, 1);
    EXPECT_GE(s.nvlink.bw_gbps_per_direction_per_gpu, 100);
    EXPECT_LE(s.nvlink.bw_gbps_per_direction_per_gpu, 450);
    EXPECT_EQ(s.nvlink.gpu_switch_latency_ns, 250);
    // credits cover one GPU-switch port's credit round trip at its rate
    const double port_gbps = s.nvlink.bw_gbps_per_direction_per_gpu / s.nvswitch.num_switches;
    const double round_trip_bytes = port_gbps * 2 * s.nvlink.gpu_switch_latency_ns;  // GB/s * ns = B
    EXPECT_GE(s.nvlink.credits_flits * s.nvlink.flit_bytes, round_trip_bytes);
    EXPECT_EQ(s.nvswitch.num_switches, 4);
    EXPECT_GT(s.host.kernel_launch_us, 0);
    // a bare CUDA launch is a few us; with PyTorch eager on the measured host,
    // 26-77 us per operation across the Megatron-Core runs (docs/results/megatron-h200.md)
    EXPECT_LT(s.host.kernel_launch_us, 100);
    EXPECT_GT(s.host.stream_sync_us, 0);
    EXPECT_LT(s.host.stream_sync_us, 100);
    EXPECT_EQ(s.sim.granularity, "packet");
  }
}

TEST(ShippedConfigs, DefaultSystemIsThePapersNode) {
  // MoE-Hub paper, section V-A: 400 GB/s per GPU read as 200 GB/s per direction.
  const SystemConfig s = load_system_config(shipped("systems", "dgx-h800"));
  EXPECT_EQ(s.nvlink.bw_gbps_per_direction_per_gpu, 200);
  EXPECT_EQ(s.gpu.hbm_bw_gbps, 3350);
  EXPECT_EQ(s.sim.sync_quantum_ns, 10);
  EXPECT_EQ(s.sim.timeline_bin_us, 1);
  EXPECT_EQ(load_system_config(shipped("systems", "dgx-h100")).nvlink.bw_gbps_per_direction_per_gpu,
            450);
  const SystemConfig h200 = load_system_config(shipped("systems", "hgx-h200"));
  EXPECT_EQ(h200.nvlink.bw_gbps_per_direction_per_gpu, 450);
  EXPECT_EQ(h200.gpu.hbm_bw_gbps, 4800);
}

struct ModelFacts {
  const char* stem;
  int hidden, ffn, experts, top_k, shared, layers;
};

TEST(ShippedConfigs, EveryModelMatchesItsPublishedShape) {
  // The public configuration figures (reference table) each file must carry.
  const ModelFacts facts[] = {
      {"mixtral-8x7b", 4096, 14336, 8, 2, 0, 32},
      {"phi-3.5-moe", 4096, 6400, 16, 2, 0, 32},
      {"qwen1.5-moe-a2.7b", 2048, 1408, 60, 4, 5632, 24},
      {"qwen2-57b-a14b", 3584, 2560, 64, 8, 20480, 28},
      {"qwen3-30b-a3b", 2048, 768, 128, 8, 0, 48},
      {"qwen3-235b-a22b", 4096, 1536, 128, 8, 0, 94},
      {"deepseek-v3", 7168, 2048, 256, 8, 2048, 61},
  };
  for (const ModelFacts& f : facts) {
    SCOPED_TRACE(f.stem);
    const std::string path = shipped("models", f.stem);
    const ModelConfig m = load_model_config(path);
    EXPECT_EQ(m.source_file, path);
    EXPECT_EQ(m.name, f.stem);
    EXPECT_EQ(m.hidden_size, f.hidden);
    EXPECT_EQ(m.expert_ffn_size, f.ffn);
    EXPECT_EQ(m.num_experts, f.experts);
    EXPECT_EQ(m.top_k, f.top_k);
    EXPECT_EQ(m.shared_expert_ffn_size, f.shared);
    EXPECT_EQ(m.num_layers, f.layers);
    EXPECT_EQ(m.dtype_bytes, 2);
  }
  // and every other shipped model loads too
  for (const std::string& name : list_configs("models")) {
    SCOPED_TRACE(name);
    const ModelConfig m = load_model_config(shipped("models", name));
    EXPECT_EQ(m.name, name);
    EXPECT_LE(m.top_k, m.num_experts);
  }
}

TEST(ShippedConfigs, EveryNumberHasAComment) {
  // Project rule: each number in a config says where it comes from.
  int checked = 0;
  for (const std::string& kind : {std::string("systems"), std::string("models")}) {
    for (const std::string& name : list_configs(kind)) {
      std::ifstream in(shipped(kind, name));
      std::string line;
      int line_no = 0;
      while (std::getline(in, line)) {
        ++line_no;
        if (!has_numeric_value(line)) continue;
        ++checked;
        EXPECT_TRUE(contains(line, "#")) << kind << "/" << name << ".yaml:" << line_no << ": "
                                         << line;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// ---------------------------------------------------------------------------
// Every key of the schema, for both kinds of file

TEST_F(ConfigFiles, EveryMissingKeyIsNamed) {
  struct Kind {
    YAML::Node doc;
    bool system;
  };
  for (const Kind& k : {Kind{system_doc(), true}, Kind{model_doc(), false}}) {
    std::vector<std::string> leaves, maps;
    collect_paths(k.doc, "", &leaves, &maps);
    std::vector<std::string> all = leaves;
    all.insert(all.end(), maps.begin(), maps.end());
    ASSERT_GE(all.size(), k.system ? 30u : 8u);
    for (const std::string& key : all) {
      SCOPED_TRACE(key);
      YAML::Node doc = YAML::Clone(k.doc);
      remove_key(doc, key);
      const std::string path = write_yaml("missing-" + key + ".yaml", doc);
      const ConfigError e = k.system ? system_error(path, key) : model_error(path, key);
      EXPECT_TRUE(contains(e.message(), "missing")) << e.what();
    }
  }
}

TEST_F(ConfigFiles, EveryLeafRejectsAMap) {
  struct Kind {
    YAML::Node doc;
    bool system;
  };
  for (const Kind& k : {Kind{system_doc(), true}, Kind{model_doc(), false}}) {
    std::vector<std::string> leaves, maps;
    collect_paths(k.doc, "", &leaves, &maps);
    for (const std::string& key : leaves) {
      SCOPED_TRACE(key);
      YAML::Node doc = YAML::Clone(k.doc);
      YAML::Node value;
      value["x"] = 1;
      at(doc, key) = value;
      const std::string path = write_yaml("map-" + key + ".yaml", doc);
      const ConfigError e = k.system ? system_error(path, key) : model_error(path, key);
      EXPECT_TRUE(contains(e.message(), "expected")) << e.what();
      EXPECT_TRUE(contains(e.message(), "(got a map)")) << e.what();
    }
  }
}

TEST_F(ConfigFiles, EveryMapRejectsAnUnknownKey) {
  struct Kind {
    YAML::Node doc;
    bool system;
  };
  for (const Kind& k : {Kind{system_doc(), true}, Kind{model_doc(), false}}) {
    std::vector<std::string> leaves, maps;
    collect_paths(k.doc, "", &leaves, &maps);
    maps.push_back("");  // the document root
    for (const std::string& map_key : maps) {
      SCOPED_TRACE(map_key);
      YAML::Node doc = YAML::Clone(k.doc);
      YAML::Node target = map_key.empty() ? doc : at(doc, map_key);
      // one real key of this map must be listed as allowed
      const std::string real_key = target.begin()->first.Scalar();
      target["bogus_key_ns"] = 3;
      const std::string key = map_key.empty() ? "bogus_key_ns" : map_key + ".bogus_key_ns";
      const std::string path = write_yaml("unknown-" + key + ".yaml", doc);
      const ConfigError e = k.system ? system_error(path, key) : model_error(path, key);
      EXPECT_TRUE(contains(e.message(), "unknown key")) << e.what();
      EXPECT_TRUE(contains(e.message(), real_key)) << e.what();
    }
  }
}

TEST_F(ConfigFiles, MisspelledKeyIsPointedAt) {
  // renamed: the required key is missing and the misspelling is named
  YAML::Node doc = system_doc();
  doc["gpu"]["hbm_bw_gbs"] = doc["gpu"]["hbm_bw_gbps"].as<double>();
  doc["gpu"].remove("hbm_bw_gbps");
  EXPECT_EQ(system_error(write_yaml("typo.yaml", doc), "gpu.hbm_bw_gbps").message(),
            "missing (every key is required); the map has a similar key 'hbm_bw_gbs'");
  // added next to the real key: unknown, with a suggestion
  doc = system_doc();
  doc["nvlink"]["flit_byte"] = 16;
  const ConfigError e = system_error(write_yaml("extra.yaml", doc), "nvlink.flit_byte");
  EXPECT_TRUE(contains(e.message(), "unknown key (did you mean 'flit_bytes'?); allowed keys here: "
                                    "flit_bytes, max_payload_bytes"))
      << e.what();
}

// ---------------------------------------------------------------------------
// Single edits with exact messages

TEST_F(ConfigFiles, NegativeBandwidthNamesFileKeyRangeAndValue) {
  YAML::Node doc = system_doc();
  doc["gpu"]["hbm_bw_gbps"] = -5;
  const std::string path = write_yaml("neg-hbm.yaml", doc);
  const ConfigError e = system_error(path, "gpu.hbm_bw_gbps");
  EXPECT_EQ(std::string(e.what()), path + ": key 'gpu.hbm_bw_gbps': must be in [0.001, 100000] (got -5)");

  doc = system_doc();
  doc["nvlink"]["bw_gbps_per_direction_per_gpu"] = "-0.5";
  const std::string path2 = write_yaml("neg-nvlink.yaml", doc);
  const ConfigError e2 = system_error(path2, "nvlink.bw_gbps_per_direction_per_gpu");
  EXPECT_EQ(e2.message(), "must be in [0.001, 100000] (got -0.5)");

  doc = system_doc();
  doc["gpu"]["xbar_bw_gbps"] = 0;
  EXPECT_EQ(system_error(write_yaml("zero-xbar.yaml", doc), "gpu.xbar_bw_gbps").message(),
            "must be in [0.001, 100000] (got 0)");
}

TEST_F(ConfigFiles, NegativeLatencyAndEfficiencyOutOfRange) {
  YAML::Node doc = system_doc();
  doc["nvlink"]["gpu_switch_latency_ns"] = -1;
  EXPECT_EQ(system_error(write_yaml("neg-lat.yaml", doc), "nvlink.gpu_switch_latency_ns").message(),
            "must be in [0, 1000000000] (got -1)");

  doc = system_doc();
  doc["gpu"]["gemm"]["max_efficiency"] = 1.5;
  EXPECT_EQ(system_error(write_yaml("eff.yaml", doc), "gpu.gemm.max_efficiency").message(),
            "must be in (0, 1] (got 1.5)");

  doc = system_doc();
  doc["gpu"]["memory_kernel_efficiency"] = 0;
  EXPECT_EQ(system_error(write_yaml("meff.yaml", doc), "gpu.memory_kernel_efficiency").message(),
            "must be in (0, 1] (got 0)");

  doc = system_doc();
  doc["sim"]["sync_quantum_ns"] = 0;
  EXPECT_EQ(system_error(write_yaml("quantum.yaml", doc), "sim.sync_quantum_ns").message(),
            "must be in [0.001, 1000000] (got 0)");
}

TEST_F(ConfigFiles, ZeroAndNegativeCounts) {
  struct Edit {
    const char* section;
    const char* key;
    int value;
    const char* expected;
  };
  const Edit edits[] = {
      {"", "num_gpus", 1, "must be in [2, 1024] (got 1)"},
      {"", "num_gpus", -8, "must be in [2, 1024] (got -8)"},
      {"gpu", "num_sms", 0, "must be in [1, 4096] (got 0)"},
      {"gpu", "gemm_tile_m", 0, "must be in [1, 65536] (got 0)"},
      {"nvlink", "flit_bytes", 0, "must be in [1, 4096] (got 0)"},
      {"nvlink", "header_flits", -1, "must be in [0, 1024] (got -1)"},
      {"nvswitch", "num_switches", 0, "must be in [1, 64] (got 0)"},
  };
  for (const Edit& ed : edits) {
    const std::string section = ed.section;
    const std::string key = section.empty() ? ed.key : section + "." + ed.key;
    SCOPED_TRACE(key);
    YAML::Node doc = system_doc();
    at(doc, key) = ed.value;
    EXPECT_EQ(system_error(write_yaml("count.yaml", doc), key).message(), ed.expected);
  }

  const Edit model_edits[] = {
      {"", "num_experts", 0, "must be in [1, 65536] (got 0)"},
      {"", "hidden_size", -4096, "must be in [1, 1048576] (got -4096)"},
      {"", "expert_ffn_size", 0, "must be in [1, 1048576] (got 0)"},
      {"", "top_k", 0, "must be in [1, 1024] (got 0)"},
      {"", "shared_expert_ffn_size", -1, "must be in [0, 1048576] (got -1)"},
      {"", "num_layers", 0, "must be in [1, 10000] (got 0)"},
      {"", "dtype_bytes", 0, "must be in [1, 16] (got 0)"},
  };
  for (const Edit& ed : model_edits) {
    SCOPED_TRACE(ed.key);
    YAML::Node doc = model_doc();
    doc[ed.key] = ed.value;
    EXPECT_EQ(model_error(write_yaml("model-count.yaml", doc), ed.key).message(), ed.expected);
  }
}

TEST_F(ConfigFiles, TopKLargerThanNumExperts) {
  YAML::Node doc = model_doc();
  doc["top_k"] = 9;  // Mixtral has 8 experts
  EXPECT_EQ(model_error(write_yaml("topk.yaml", doc), "top_k").message(),
            "must be <= num_experts = 8 (got 9)");
  doc["top_k"] = 8;  // the boundary is allowed
  EXPECT_EQ(load_model_config(write_yaml("topk8.yaml", doc)).top_k, 8);
}

TEST_F(ConfigFiles, PacketGeometryCrossChecks) {
  YAML::Node doc = system_doc();
  doc["nvlink"]["max_payload_bytes"] = 120;  // not a multiple of 16-byte flits
  EXPECT_EQ(system_error(write_yaml("payload.yaml", doc), "nvlink.max_payload_bytes").message(),
            "must be a multiple of flit_bytes = 16 (got 120)");

  doc = system_doc();
  doc["nvlink"]["credits_flits"] = 8;  // one 128-byte packet is 1 + 8 flits
  const ConfigError e = system_error(write_yaml("credits.yaml", doc), "nvlink.credits_flits");
  EXPECT_TRUE(contains(e.message(), "must be >= one maximum packet")) << e.what();
  EXPECT_TRUE(contains(e.message(), "= 9 flits (got 8)")) << e.what();
  doc["nvlink"]["credits_flits"] = 9;
  EXPECT_EQ(load_system_config(write_yaml("credits9.yaml", doc)).nvlink.credits_flits, 9);
}

TEST_F(ConfigFiles, BadEnumString) {
  YAML::Node doc = system_doc();
  doc["sim"]["granularity"] = "flit";
  EXPECT_EQ(system_error(write_yaml("gran.yaml", doc), "sim.granularity").message(),
            "must be one of packet, row (got 'flit')");
  doc["sim"]["granularity"] = "row";
  EXPECT_EQ(load_system_config(write_yaml("row.yaml", doc)).sim.granularity, "row");
}

TEST_F(ConfigFiles, SwitchMicroarchitectureAndSpeedup) {
  YAML::Node doc = system_doc();
  EXPECT_EQ(load_system_config(write_yaml("oq.yaml", doc)).nvswitch.microarchitecture,
            SwitchMicroarchitecture::kOutputQueued);
  doc["nvswitch"]["microarchitecture"] = "crossbar";
  EXPECT_EQ(system_error(write_yaml("arch.yaml", doc), "nvswitch.microarchitecture").message(),
            "must be one of output-queued, input-queued, voq (got 'crossbar')");
  doc["nvswitch"]["microarchitecture"] = "voq";
  doc["nvswitch"]["internal_speedup"] = 2;
  const SystemConfig voq = load_system_config(write_yaml("voq.yaml", doc));
  EXPECT_EQ(voq.nvswitch.microarchitecture, SwitchMicroarchitecture::kVoq);
  EXPECT_EQ(voq.nvswitch.internal_speedup, 2.0);
  doc["nvswitch"]["microarchitecture"] = "input-queued";
  EXPECT_EQ(load_system_config(write_yaml("iq.yaml", doc)).nvswitch.microarchitecture,
            SwitchMicroarchitecture::kInputQueued);
  doc["nvswitch"]["internal_speedup"] = 0.5;
  EXPECT_EQ(system_error(write_yaml("speedup.yaml", doc), "nvswitch.internal_speedup").message(),
            "must be in [1, 64] (got 0.5)");
  doc["nvswitch"]["internal_speedup"] = 65;
  EXPECT_EQ(system_error(write_yaml("speedup.yaml", doc), "nvswitch.internal_speedup").message(),
            "must be in [1, 64] (got 65)");
}

TEST_F(ConfigFiles, WrongTypes) {
  // a word where a number is expected
  YAML::Node doc = system_doc();
  doc["gpu"]["hbm_bw_gbps"] = "fast";
  EXPECT_EQ(system_error(write_yaml("word.yaml", doc), "gpu.hbm_bw_gbps").message(),
            "expected a number (got fast)");

  // a fraction where an integer is expected
  doc = system_doc();
  doc["gpu"]["num_sms"] = 132.5;
  EXPECT_EQ(system_error(write_yaml("frac.yaml", doc), "gpu.num_sms").message(),
            "expected an integer (got 132.5)");
  doc["gpu"]["num_sms"] = "1e2";
  EXPECT_EQ(system_error(write_yaml("exp.yaml", doc), "gpu.num_sms").message(),
            "expected an integer (got 1e2)");

  doc["gpu"]["num_sms"] = "+-132";
  EXPECT_EQ(system_error(write_yaml("signs.yaml", doc), "gpu.num_sms").message(),
            "expected an integer (got +-132)");
  doc["gpu"]["num_sms"] = "+132";  // an explicit plus sign is fine
  EXPECT_EQ(load_system_config(write_yaml("plus.yaml", doc)).gpu.num_sms, 132);
  doc = system_doc();
  doc["gpu"]["hbm_bw_gbps"] = "1e3";  // exponents are fine for numbers
  EXPECT_EQ(load_system_config(write_yaml("exp-ok.yaml", doc)).gpu.hbm_bw_gbps, 1000);

  // an integer beyond int
  doc = system_doc();
  doc["gpu"]["num_sms"] = "99999999999";
  EXPECT_TRUE(contains(system_error(write_yaml("big.yaml", doc), "gpu.num_sms").message(),
                       "out of range"));

  // beyond what any integer or number type holds, and two signs: key under gpu, value, message
  const std::array<std::array<std::string, 3>, 3> refused = {{
      {"num_sms", "99999999999999999999", "integer out of range (got 99999999999999999999)"},
      {"hbm_bw_gbps", "1e999", "number out of range (got 1e999)"},
      {"hbm_bw_gbps", "+-3350", "expected a number (got +-3350)"},
  }};
  for (const auto& [key, value, message] : refused) {
    doc = system_doc();
    doc["gpu"][key] = value;
    EXPECT_EQ(system_error(write_yaml("refused.yaml", doc), "gpu." + key).message(), message);
  }
  doc = system_doc();
  doc["gpu"]["hbm_bw_gbps"] = "+3350.5";
  EXPECT_EQ(load_system_config(write_yaml("plus-real.yaml", doc)).gpu.hbm_bw_gbps, 3350.5);

  // a boolean where a number is expected
  YAML::Node model = model_doc();
  model["top_k"] = true;
  EXPECT_EQ(model_error(write_yaml("bool.yaml", model), "top_k").message(),
            "expected an integer (got true)");

  // a sequence where a scalar is expected, a scalar where a map is expected
  doc = system_doc();
  doc["num_gpus"] = std::vector<int>{1, 2};
  EXPECT_EQ(system_error(write_yaml("seq.yaml", doc), "num_gpus").message(),
            "expected an integer (got a sequence)");
  doc = system_doc();
  doc["gpu"] = 5;
  EXPECT_EQ(system_error(write_yaml("scalar-map.yaml", doc), "gpu").message(),
            "expected a map of keys (got 5)");

  // an empty value
  doc = system_doc();
  doc["host"]["kernel_launch_us"] = YAML::Node(YAML::NodeType::Null);
  EXPECT_EQ(system_error(write_yaml("null.yaml", doc), "host.kernel_launch_us").message(),
            "expected a number (got an empty value)");

  // not finite
  doc = system_doc();
  doc["host"]["stream_sync_us"] = "nan";
  EXPECT_EQ(system_error(write_yaml("nan.yaml", doc), "host.stream_sync_us").message(),
            "expected a finite number (got nan)");
}

TEST_F(ConfigFiles, QuotedNumberIsAString) {
  const std::string text = read_text(shipped("models", "mixtral-8x7b"));
  const std::string line = "\nhidden_size: 4096";
  const std::size_t at_line = text.find(line);
  ASSERT_NE(at_line, std::string::npos);
  std::string edited = text;
  edited.replace(at_line, line.size(), "\nhidden_size: \"4096\"");
  EXPECT_EQ(model_error(write_text("quoted.yaml", edited), "hidden_size").message(),
            "expected an integer (got the quoted string \"4096\")");
}

TEST_F(ConfigFiles, DuplicateKey) {
  const std::string text = read_text(shipped("models", "mixtral-8x7b"));
  const std::string path = write_text("dup.yaml", text + "top_k: 1\n");
  EXPECT_EQ(model_error(path, "top_k").message(), "duplicate key");
}

TEST_F(ConfigFiles, EmptyStringName) {
  YAML::Node doc = system_doc();
  doc["gpu"]["name"] = "";
  EXPECT_EQ(system_error(write_yaml("empty-name.yaml", doc), "gpu.name").message(),
            "must not be empty");
}

TEST_F(ConfigFiles, SourceFileIsNotAKey) {
  YAML::Node doc = model_doc();
  doc["source_file"] = "x.yaml";
  EXPECT_TRUE(contains(model_error(write_yaml("src.yaml", doc), "source_file").message(),
                       "unknown key"));
}

// ---------------------------------------------------------------------------
// Documents that are not configs

TEST_F(ConfigFiles, YamlSyntaxErrorHasLineAndColumn) {
  const std::string text = read_text(shipped("systems", "dgx-h800"));
  // an unclosed flow sequence appended after the last line
  const std::string path = write_text("syntax.yaml", text + "extra: [1, 2\n");
  const ConfigError e = system_error(path, "");
  EXPECT_TRUE(contains(e.message(), "YAML syntax error")) << e.what();
  EXPECT_TRUE(starts_with_line_and_column(e.message())) << e.what();

  // a tab-indented key inside a block
  const std::string path2 = write_text("tab.yaml", "name: x\ngpu:\n  a: 1\n\tb: 2\n");
  EXPECT_TRUE(contains(system_error(path2, "").message(), "line 4")) << path2;
}

TEST_F(ConfigFiles, NonexistentFileDirectoryAndEmptyFile) {
  const std::string missing = (dir_ / "no-such.yaml").string();
  EXPECT_EQ(system_error(missing, "").message(), "cannot read the file: no such file");
  EXPECT_EQ(model_error(missing, "").message(), "cannot read the file: no such file");
  EXPECT_EQ(system_error(dir_.string(), "").message(), "cannot read the file: it is a directory");
  EXPECT_TRUE(contains(model_error(write_text("empty.yaml", ""), "").message(), "empty"));
  EXPECT_TRUE(contains(model_error(write_text("comment.yaml", "# nothing\n"), "").message(),
                       "empty"));
  EXPECT_EQ(model_error(write_text("list.yaml", "- 1\n- 2\n"), "").message(),
            "expected a map of keys (got a sequence) at the top level");
  EXPECT_TRUE(contains(model_error(write_text("two.yaml", "a: 1\n---\nb: 2\n"), "").message(),
                       "2 YAML documents"));
  EXPECT_EQ(model_error(write_text("seq-key.yaml", "? [a, b]\n: 1\n"), "").message(),
            "a key is a sequence; keys must be plain names");
}

// ---------------------------------------------------------------------------
// Names and paths

TEST_F(ConfigFiles, ResolveByNameAndByPath) {
  EXPECT_EQ(resolve_config_path("dgx-h800", "systems"),
            std::string(MOEHUB_CONFIG_DIR) + "/systems/dgx-h800.yaml");
  EXPECT_EQ(resolve_config_path("qwen3-30b-a3b", "models"),
            std::string(MOEHUB_CONFIG_DIR) + "/models/qwen3-30b-a3b.yaml");
  // a path that exists is returned unchanged
  const std::string own = write_yaml("own.yaml", system_doc());
  EXPECT_EQ(resolve_config_path(own, "systems"), own);
  EXPECT_EQ(load_system_config(resolve_config_path(own, "systems")).name, "dgx-h800");
  // a name resolved and loaded
  EXPECT_EQ(load_model_config(resolve_config_path("deepseek-v3", "models")).num_experts, 256);
}

TEST_F(ConfigFiles, ResolveUnknownNameListsTheAvailableOnes) {
  const ConfigError e = expect_config_error([] { resolve_config_path("dgx-h900", "systems"); });
  EXPECT_EQ(e.file(), "dgx-h900");
  EXPECT_TRUE(contains(e.message(), "available: dgx-h100, dgx-h800, h200-megatron, hgx-h200")) << e.what();

  const ConfigError m = expect_config_error([] { resolve_config_path("mixtral", "models"); });
  EXPECT_TRUE(contains(m.message(), "mixtral-8x7b")) << m.what();
  EXPECT_TRUE(contains(m.message(), "qwen3-30b-a3b")) << m.what();

  // something that looks like a path is reported as a missing file
  const std::string missing = (dir_ / "none.yaml").string();
  const ConfigError p = expect_config_error([&] { resolve_config_path(missing, "systems"); });
  EXPECT_EQ(p.file(), missing);
  EXPECT_EQ(p.message(), "cannot read the file: no such file");

  // a model name is not a system name
  EXPECT_NO_THROW(resolve_config_path("phi-3.5-moe", "models"));
  expect_config_error([] { resolve_config_path("phi-3.5-moe", "systems"); });
  expect_config_error([] { resolve_config_path("x", "../systems"); });
  EXPECT_TRUE(contains(expect_config_error([] { resolve_config_path("x", "nonsense"); }).message(),
                       "no config folder"));
}

// ---------------------------------------------------------------------------
// Overrides (moehub-sim --set)

TEST(ConfigOverrides, ParseTargetKeyAndValue) {
  const ConfigOverride o = parse_config_override("system.gpu.gemm.k_half=512");
  EXPECT_EQ(o.target, "system");
  EXPECT_EQ(o.key, "gpu.gemm.k_half");
  EXPECT_EQ(o.value, "512");
  EXPECT_EQ(o.text(), "system.gpu.gemm.k_half=512");
  // everything after the first '=' is the value
  EXPECT_EQ(parse_config_override("model.name=a=b").value, "a=b");
  for (const char* bad : {"gpu.num_sms=1", "system=1", "system.num_gpus", "system.=1", "system.nvlink..x=1",
                          "system.nvlink.=1", "modl.top_k=2", "=1"}) {
    SCOPED_TRACE(bad);
    const ConfigError e = expect_config_error([&] { parse_config_override(bad); });
    EXPECT_EQ(e.file(), "<command line>");
    EXPECT_EQ(e.key(), "--set");
  }
  const ConfigError empty = expect_config_error([] { parse_config_override("system.num_gpus="); });
  EXPECT_EQ(empty.key(), "--set system.num_gpus");
  EXPECT_EQ(empty.message(), "no value after '='");
}

TEST(ConfigOverrides, ChangeOnlyTheirKeyAndAreRecorded) {
  const std::string path = shipped("systems", "dgx-h800");
  const SystemConfig plain = load_system_config(path);
  const SystemConfig set = load_system_config(
      path, parse_config_overrides({"system.nvlink.credits_flits=1024", "system.gpu.gemm.k_half=500.5", "model.top_k=1",
                       "system.hub.implementation=moehub"}));
  EXPECT_EQ(set.nvlink.credits_flits, 1024);
  EXPECT_NE(plain.nvlink.credits_flits, 1024);
  EXPECT_DOUBLE_EQ(set.gpu.gemm.k_half, 500.5);
  EXPECT_EQ(set.hub.implementation, "moehub");
  EXPECT_EQ(set.overrides, (std::vector<std::string>{"nvlink.credits_flits=1024", "gpu.gemm.k_half=500.5",
                                                      "hub.implementation=moehub"}));
  EXPECT_TRUE(plain.overrides.empty());
  EXPECT_EQ(plain.source_file, path);
  EXPECT_EQ(set.source_file, path + " with --set system.nvlink.credits_flits=1024, --set system.gpu.gemm.k_half=500.5, "
                                    "--set system.hub.implementation=moehub");
  // the rest is the file's (the whole run's equality with an edited file: Cli.SetEqualsAnEditedConfigFile)
  EXPECT_EQ(set.num_gpus, plain.num_gpus);
  EXPECT_EQ(set.nvlink.flit_bytes, plain.nvlink.flit_bytes);
  EXPECT_EQ(set.nvlink.bw_gbps_per_direction_per_gpu, plain.nvlink.bw_gbps_per_direction_per_gpu);
  EXPECT_EQ(set.gpu.gemm.n_half, plain.gpu.gemm.n_half);
  EXPECT_EQ(set.hub.rat_entries, plain.hub.rat_entries);
  // the model's override goes to the model only
  const ModelConfig m = load_model_config(shipped("models", "mixtral-8x7b"), parse_config_overrides({"model.top_k=1"}));
  EXPECT_EQ(m.top_k, 1);
  EXPECT_EQ(m.overrides, std::vector<std::string>{"top_k=1"});
  // the same value as the file's is accepted and still recorded
  const SystemConfig same = load_system_config(
      path, parse_config_overrides({"system.num_gpus=" + std::to_string(plain.num_gpus)}));
  EXPECT_EQ(same.num_gpus, plain.num_gpus);
  EXPECT_EQ(same.overrides.size(), 1u);
}

TEST(ConfigOverrides, RefusedOverridesNameTheirFlag) {
  const std::string path = shipped("systems", "dgx-h800");
  struct Case {
    const char* set;
    const char* message_part;
  };
  const Case cases[] = {
      {"system.nvlink.credits_flits=0", "must be in [1, "},            // the file's range check
      {"system.nvlink.credits_flits=many", "expected an integer"},     // the file's type check
      {"system.nvlink.credit_flits=8", "did you mean 'credits_flits'?"},  // unknown key, with a hint
      {"system.nvlink.credit_flits=8", "no key 'nvlink.credit_flits' in " MOEHUB_SOURCE_DIR},
      {"system.links.x=1", "its top-level keys: name, num_gpus, gpu"},
      {"system.nvlink=8", "'nvlink' holds a map; set one of its keys (flit_bytes,"},
      {"system.num_gpus.x=1", "'num_gpus' in "},                        // a value, not a map
      {"system.num_gpus=[8, 16]", "must be a single value (got a sequence)"},
      {"system.num_gpus={a: 1}", "must be a single value (got a map)"},
      {"system.num_gpus=~", "must be a single value (got an empty value)"},
      {"system.num_gpus=[8", "the value is not valid YAML"},
      {"system.hub.implementation=fast", "must be one of"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.set);
    const ConfigOverride o = parse_config_override(c.set);
    const ConfigError e = expect_config_error([&] { load_system_config(path, {o}); });
    EXPECT_EQ(e.file(), "<command line>");
    EXPECT_EQ(e.key(), "--set system." + o.key);
    EXPECT_TRUE(contains(e.message(), c.message_part)) << e.what();
  }
  const ConfigError twice = expect_config_error(
      [&] { load_system_config(path, parse_config_overrides({"system.num_gpus=4", "system.num_gpus=8"})); });
  EXPECT_EQ(twice.key(), "--set system.num_gpus");
  EXPECT_EQ(twice.message(), "set twice");
  // a cross-check that the override breaks names the override too
  const ConfigError topk = expect_config_error(
      [] { load_model_config(shipped("models", "mixtral-8x7b"), parse_config_overrides({"model.top_k=9"})); });
  EXPECT_EQ(topk.key(), "--set model.top_k");
  EXPECT_EQ(topk.message(), "must be <= num_experts = 8 (got 9)");
  // an error of the file itself still names the file
  const ConfigError file = expect_config_error(
      [] { load_system_config(MOEHUB_SOURCE_DIR "/no-such.yaml", parse_config_overrides({"system.num_gpus=4"})); });
  EXPECT_EQ(file.file(), MOEHUB_SOURCE_DIR "/no-such.yaml");
}

// ---------------------------------------------------------------------------
// Run checks

TEST(ValidateRun, AcceptsTheDefaults) {
  const SystemConfig s = load_system_config(shipped("systems", "dgx-h800"));
  const ModelConfig m = load_model_config(shipped("models", "mixtral-8x7b"));
  WorkloadConfig w;
  EXPECT_NO_THROW(validate_run(s, m, w));
  w.tokens = s.num_gpus;  // boundary: one token per GPU
  w.distribution = "zipf";
  w.zipf_s = 0;
  w.imbalance_std = 0;
  EXPECT_NO_THROW(validate_run(s, m, w));
}

TEST(ValidateRun, RejectsBadRunsNamingTheFlag) {
  const SystemConfig s = load_system_config(shipped("systems", "dgx-h800"));
  const ModelConfig m = load_model_config(shipped("models", "mixtral-8x7b"));
  struct Case {
    std::function<void(ModelConfig&, WorkloadConfig&)> edit;
    const char* flag;
    const char* message;
  };
  const Case cases[] = {
      {[](ModelConfig&, WorkloadConfig& w) { w.tokens = 0; }, "--tokens", "must be >= 1 (got 0)"},
      {[](ModelConfig&, WorkloadConfig& w) { w.tokens = 7; }, "--tokens",
       "must be >= num_gpus = 8 of system 'dgx-h800' (got 7)"},
      {[](ModelConfig& mm, WorkloadConfig&) { mm.top_k = 9; }, "model.top_k",
       "must be in [1, num_experts = 8] of model 'mixtral-8x7b' (got 9)"},
      {[](ModelConfig& mm, WorkloadConfig&) { mm.top_k = 0; }, "model.top_k",
       "must be in [1, num_experts = 8] of model 'mixtral-8x7b' (got 0)"},
      {[](ModelConfig&, WorkloadConfig& w) { w.tokens = kMaxTokens + 1; }, "--tokens",
       "must be in [num_gpus = 8, 16777216] (got 16777217)"},
      {[](ModelConfig& mm, WorkloadConfig& w) {
         mm.num_experts = 64;
         mm.top_k = 32;
         w.tokens = kMaxTokens;
       },
       "--tokens", "tokens x top_k = 16777216 x 32 must be <= 268435456 routed tokens"},
      {[](ModelConfig&, WorkloadConfig& w) { w.distribution = "uniform"; }, "--distribution",
       "must be one of normal, zipf (got 'uniform')"},
      {[](ModelConfig&, WorkloadConfig& w) { w.imbalance_std = -0.1; }, "--imbalance-std",
       "must be a finite number >= 0 (got -0.1)"},
      {[](ModelConfig&, WorkloadConfig& w) { w.zipf_s = -1; }, "--zipf-s",
       "must be a finite number >= 0 (got -1)"},
      {[](ModelConfig&, WorkloadConfig& w) { w.zipf_s = std::numeric_limits<double>::infinity(); },
       "--zipf-s", "must be a finite number >= 0 (got inf)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flag);
    ModelConfig mm = m;
    WorkloadConfig w;
    c.edit(mm, w);
    const ConfigError e = expect_config_error([&] { validate_run(s, mm, w); });
    EXPECT_EQ(e.file(), "<command line>");
    EXPECT_EQ(e.key(), c.flag);
    EXPECT_EQ(e.message(), c.message);
    EXPECT_EQ(std::string(e.what()),
              std::string("<command line>: key '") + c.flag + "': " + c.message);
  }
}

TEST(RangeDescription, ReadsLikeTheSchema) {
  EXPECT_EQ(Range::greater_than(0).describe(), "> 0");
  EXPECT_EQ(Range::at_least(1).describe(), ">= 1");
  EXPECT_EQ(Range::left_open(0, 1).describe(), "in (0, 1]");
  EXPECT_EQ(Range::closed(1, 8).describe(), "in [1, 8]");
  EXPECT_TRUE(Range::left_open(0, 1).contains(1));
  EXPECT_FALSE(Range::left_open(0, 1).contains(0));
  EXPECT_FALSE(Range::at_least(0).contains(std::numeric_limits<double>::quiet_NaN()));
}

}  // namespace
}  // namespace moehub
