// Loading and checking of system and model configs (YAML) and of run settings.
//
// The YAML files mirror the structures of config.hpp key for key and nesting
// for nesting. Reading is strict: every key is required, unknown keys, wrong
// types and values out of range are errors. Every error is a ConfigError whose
// what() is one line for people:
//
//   <file>: key 'gpu.hbm_bw_gbps': must be in [0.001, 100000] (got -5)
//
// Keys are dotted paths from the document root. Every numeric key's allowed
// range comes from one table (config_ranges.hpp). The strict reader below
// (StrictMap) is public so that other YAML loaders get the same behaviour.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace moehub {

/// A bad config file, config value or run setting. what() is the full message.
class ConfigError : public std::runtime_error {
 public:
  /// `file` is a path (or "<command line>"), `key` a dotted key or a flag
  /// ("--tokens"); either may be empty when it does not apply.
  ConfigError(std::string file, std::string key, const std::string& message);
  const std::string& file() const { return file_; }
  const std::string& key() const { return key_; }
  /// The message without the file and key prefix.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string key_;
  std::string message_;
};

/// Reads, checks and returns a system config; `source_file` is set to `path`.
SystemConfig load_system_config(const std::string& path);
/// Reads, checks and returns a model config; `source_file` is set to `path`.
ModelConfig load_model_config(const std::string& path);

/// As load_system_config / load_model_config, from YAML text held in memory;
/// `name` stands for the file in messages and in `source_file`.
SystemConfig parse_system_config(const std::string& yaml_text, const std::string& name);
ModelConfig parse_model_config(const std::string& yaml_text, const std::string& name);
/// As above, from a document already read (load_yaml_document).
SystemConfig read_system_config(const YAML::Node& document, const std::string& path);
ModelConfig read_model_config(const YAML::Node& document, const std::string& path);

/// One override of a config key, as moehub-sim's `--set` takes it:
/// "system.KEY=VALUE" or "model.KEY=VALUE", KEY a dotted key of that config
/// ("nvlink.credits_flits") that holds a single value, VALUE written as in the
/// YAML file. The value replaces the file's before the config is read, so it
/// passes the same checks (type, range, cross-checks) as a value in the file.
/// "schedule.KEY=VALUE" sets a software parameter of the schedules instead
/// (workload/schedule_options.hpp); the config loaders skip those.
struct ConfigOverride {
  std::string target;  ///< "system", "model" or "schedule"
  std::string key;     ///< dotted key within that config
  std::string value;
  std::string text() const { return target + "." + key + "=" + value; }
};

/// Parses one `--set` argument. A malformed one is a ConfigError naming
/// "<command line>" and "--set".
ConfigOverride parse_config_override(const std::string& text);
/// Parses every `--set` argument of a command line; a key given twice (same
/// target and key) is a ConfigError naming "--set TARGET.KEY": "set twice".
std::vector<ConfigOverride> parse_config_overrides(const std::vector<std::string>& texts);

/// A number as config messages print it: shortest readable form (3350, 0.5, 1e+20).
std::string format_config_number(double v);

/// As load_system_config / load_model_config, with the overrides of the
/// matching target (the others are skipped) applied in order and recorded in
/// `overrides` of the result. A key that the file lacks, one that holds a map,
/// or a value that is not a single YAML scalar is a
/// ConfigError naming "<command line>" and "--set TARGET.KEY"; so is a value
/// the checks refuse (with the message they give for a value in the file).
SystemConfig load_system_config(const std::string& path, const std::vector<ConfigOverride>& overrides);
ModelConfig load_model_config(const std::string& path, const std::vector<ConfigOverride>& overrides);
/// The same from YAML text held in memory; `name` stands for the file.
SystemConfig parse_system_config(const std::string& yaml_text, const std::string& name,
                                 const std::vector<ConfigOverride>& overrides);
ModelConfig parse_model_config(const std::string& yaml_text, const std::string& name,
                               const std::vector<ConfigOverride>& overrides);

/// A path that exists is returned as is; otherwise `name_or_path` is taken as
/// the name of a shipped config, MOEHUB_CONFIG_DIR "/" kind "/" name ".yaml"
/// (kind is "systems" or "models"). An unknown name is a ConfigError whose
/// message lists the available names.
std::string resolve_config_path(const std::string& name_or_path, const std::string& kind);

/// Names (file stems, sorted) of the shipped configs of one kind.
std::vector<std::string> list_configs(const std::string& kind);

/// Cross-checks of one run: tokens >= 1 and >= num_gpus, 1 <= top_k <=
/// num_experts, distribution "normal" or "zipf", imbalance_std and zipf_s
/// finite and >= 0. Errors name the command-line flag ("--tokens",
/// "--top-k", "--distribution", "--imbalance-std", "--zipf-s") and the file
/// "<command line>".
void validate_run(const SystemConfig& system, const ModelConfig& model,
                  const WorkloadConfig& workload);

// ---------------------------------------------------------------------------
// Strict YAML reading, reusable by other loaders.

/// An allowed interval for a number, with its human description
/// ("> 0", ">= 1", "in (0, 1]").
class Range {
 public:
  static Range any() { return Range(); }
  static Range at_least(double lo) { return Range(lo, true, std::nullopt, false); }
  static Range greater_than(double lo) { return Range(lo, false, std::nullopt, false); }
  static Range closed(double lo, double hi) { return Range(lo, true, hi, true); }
  static Range left_open(double lo, double hi) { return Range(lo, false, hi, true); }
  static Range bounded(double lo, bool lo_inclusive, double hi, bool hi_inclusive) {
    return Range(lo, lo_inclusive, hi, hi_inclusive);
  }

  bool contains(double v) const;
  std::string describe() const;

 private:
  Range() = default;
  Range(std::optional<double> lo, bool lo_inclusive, std::optional<double> hi, bool hi_inclusive)
      : lo_(lo), hi_(hi), lo_inclusive_(lo_inclusive), hi_inclusive_(hi_inclusive) {}
  std::optional<double> lo_;
  std::optional<double> hi_;
  bool lo_inclusive_ = true;
  bool hi_inclusive_ = true;
};

/// Reads the YAML document of `path` (exactly one document). Unreadable
/// files, syntax errors (with line and column) and empty files are
/// ConfigErrors naming the file.
YAML::Node load_yaml_document(const std::string& path);
/// The same checks on YAML text held in memory; `path` names it in messages.
YAML::Node parse_yaml_document(const std::string& text, const std::string& path);

/// One YAML map read strictly: each getter marks its key as allowed and read;
/// finish() rejects every key of the map that no getter asked for, listing the
/// allowed ones. Missing keys, wrong types and out-of-range values throw at
/// the getter. Duplicate and non-scalar keys are rejected on construction.
class StrictMap {
 public:
  /// `path` is the dotted key of this map ("" for the document root).
  StrictMap(const YAML::Node& node, std::string file, std::string path);

  /// A decimal integer within `range` (no fraction, exponent, quotes or hex).
  int get_int(const std::string& key, const Range& range);
  /// A finite decimal number (integers are accepted) within `range`.
  double get_double(const std::string& key, const Range& range);
  /// A non-empty string scalar.
  std::string get_string(const std::string& key);
  /// A string scalar that is one of `allowed`.
  std::string get_enum(const std::string& key, const std::vector<std::string>& allowed);
  /// A nested map, read strictly as well (call finish() on it too).
  StrictMap get_map(const std::string& key);

  /// Rejects keys that no getter asked for.
  void finish() const;

  /// Throws a ConfigError for `key` of this map (for cross-field checks).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  /// Dotted path of `key` inside this map.
  std::string key_path(const std::string& key) const;
  const std::string& file() const { return file_; }

 private:
  YAML::Node require(const std::string& key);

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::vector<std::string> present_;  ///< keys of the map, in document order
  std::vector<std::string> allowed_;  ///< keys asked for, in order
};

}  // namespace moehub
