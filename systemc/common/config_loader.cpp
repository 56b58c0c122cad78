// Strict YAML reading of system and model configs; see config_loader.hpp.
#include "common/config_loader.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <system_error>
#include <utility>

namespace moehub {

namespace fs = std::filesystem;

namespace {

std::string compose_message(const std::string& file, const std::string& key,
                            const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!key.empty()) out += "key '" + key + "': ";
  return out + message;
}

/// Shortest readable form of a number: 3350, 0.5, 1e+20.
std::string format_number(double v) {
  std::ostringstream os;
  os.precision(15);
  os << v;
  return os.str();
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

/// What a node that is not the expected kind of value is, for messages.
std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "an empty value";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Scalar:
      if (node.Tag() == "?") return node.Scalar();  // plain scalar: show it as written
      return "the quoted string \"" + node.Scalar() + "\"";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

/// A plain (unquoted, untagged) scalar; quoted scalars are strings even when
/// they hold digits.
bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

/// Parses the whole of `text` as a decimal integer (optional sign).
std::optional<long long> parse_integer(const std::string& text, bool* out_of_range) {
  *out_of_range = false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') {
    ++first;  // from_chars takes no '+'; "+-5" stays an error
    if (first != last && *first == '-') return std::nullopt;
  }
  if (first == last || *first == '+') return std::nullopt;
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ptr != last) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    *out_of_range = true;
    return std::nullopt;
  }
  if (ec != std::errc()) return std::nullopt;
  return value;
}

/// Parses the whole of `text` as a decimal floating-point number.
std::optional<double> parse_real(const std::string& text, bool* out_of_range) {
  *out_of_range = false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') {
    ++first;  // from_chars takes no '+'; "+-5" stays an error
    if (first != last && *first == '-') return std::nullopt;
  }
  if (first == last || *first == '+') return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(first, last, value, std::chars_format::general);
  if (ptr != last) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    *out_of_range = true;
    return std::nullopt;
  }
  if (ec != std::errc()) return std::nullopt;
  return value;
}

/// Edit distance (insertions, deletions, substitutions) for spelling hints.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// Whether `a` looks like a misspelling of `b`.
bool similar(const std::string& a, const std::string& b) {
  const std::size_t d = edit_distance(a, b);
  return d > 0 && d <= 2 && 2 * d <= std::max(a.size(), b.size());
}

std::string config_root() { return MOEHUB_CONFIG_DIR; }

/// The folder of one kind of shipped config; `kind` must be a plain name.
std::string config_kind_dir(const std::string& kind) {
  if (kind.empty() || kind.find('/') != std::string::npos || kind == "." || kind == "..") {
    throw ConfigError(config_root(), "", "invalid config kind '" + kind +
                                             "'; expected a folder name such as systems or models");
  }
  return config_root() + "/" + kind;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// ConfigError

ConfigError::ConfigError(std::string file, std::string key, const std::string& message)
    : std::runtime_error(compose_message(file, key, message)),
      file_(std::move(file)),
      key_(std::move(key)),
      message_(message) {}

// ---------------------------------------------------------------------------
// Range

bool Range::contains(double v) const {
  if (std::isnan(v)) return false;
  if (lo_ && (lo_inclusive_ ? v < *lo_ : v <= *lo_)) return false;
  if (hi_ && (hi_inclusive_ ? v > *hi_ : v >= *hi_)) return false;
  return true;
}

std::string Range::describe() const {
  if (lo_ && hi_) {
    return std::string("in ") + (lo_inclusive_ ? "[" : "(") + format_number(*lo_) + ", " +
           format_number(*hi_) + (hi_inclusive_ ? "]" : ")");
  }
  if (lo_) return std::string(lo_inclusive_ ? ">= " : "> ") + format_number(*lo_);
  if (hi_) return std::string(hi_inclusive_ ? "<= " : "< ") + format_number(*hi_);
  return "any number";
}

// ---------------------------------------------------------------------------
// Documents

YAML::Node load_yaml_document(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw ConfigError(path, "", "cannot read the file: no such file");
  if (fs::is_directory(st)) throw ConfigError(path, "", "cannot read the file: it is a directory");

  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string why = errno != 0 ? std::strerror(errno) : "open failed";
    throw ConfigError(path, "", "cannot read the file: " + why);
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw ConfigError(path, "", "cannot read the file: read error");

  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(path, "",
                      "line " + std::to_string(e.mark.line + 1) + ", column " +
                          std::to_string(e.mark.column + 1) + ": YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path, "", std::string("YAML error: ") + e.what());
  }
  if (docs.size() > 1) {
    throw ConfigError(path, "",
                      "holds " + std::to_string(docs.size()) + " YAML documents; expected one");
  }
  if (docs.empty() || docs.front().IsNull()) {
    throw ConfigError(path, "", "the file is empty; expected a map of keys");
  }
  return docs.front();
}

// ---------------------------------------------------------------------------
// StrictMap

StrictMap::StrictMap(const YAML::Node& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap()) {
    const std::string what = "expected a map of keys (got " + describe_node(node_) + ")";
    throw ConfigError(file_, path_, path_.empty() ? what + " at the top level" : what);
  }
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) {
      fail("", "a key is " + describe_node(it->first) + "; keys must be plain names");
    }
    const std::string& name = it->first.Scalar();
    if (std::find(present_.begin(), present_.end(), name) != present_.end()) {
      fail(name, "duplicate key");
    }
    present_.push_back(name);
  }
}

std::string StrictMap::key_path(const std::string& key) const {
  if (path_.empty()) return key;
  if (key.empty()) return path_;
  return path_ + "." + key;
}

void StrictMap::fail(const std::string& key, const std::string& message) const {
  throw ConfigError(file_, key_path(key), message);
}

YAML::Node StrictMap::require(const std::string& key) {
  if (std::find(allowed_.begin(), allowed_.end(), key) == allowed_.end()) allowed_.push_back(key);
  if (std::find(present_.begin(), present_.end(), key) == present_.end()) {
    // Point at a present key that nobody has read yet and that looks like a
    // misspelling of this one (it is reported as unknown otherwise).
    for (const std::string& name : present_) {
      if (std::find(allowed_.begin(), allowed_.end(), name) == allowed_.end() &&
          similar(name, key)) {
        fail(key, "missing (every key is required); the map has a similar key '" + name + "'");
      }
    }
    fail(key, "missing (every key is required)");
  }
  const YAML::Node& map = node_;
  return map[key];
}

int StrictMap::get_int(const std::string& key, const Range& range) {
  const YAML::Node v = require(key);
  if (!is_plain_scalar(v)) fail(key, "expected an integer (got " + describe_node(v) + ")");
  const std::string& text = v.Scalar();
  bool out_of_range = false;
  const std::optional<long long> parsed = parse_integer(text, &out_of_range);
  if (!parsed) {
    if (out_of_range) fail(key, "integer out of range (got " + text + ")");
    fail(key, "expected an integer (got " + text + ")");
  }
  if (*parsed < std::numeric_limits<int>::min() || *parsed > std::numeric_limits<int>::max()) {
    fail(key, "integer out of range, must be " + range.describe() + " (got " + text + ")");
  }
  if (!range.contains(static_cast<double>(*parsed))) {
    fail(key, "must be " + range.describe() + " (got " + text + ")");
  }
  return static_cast<int>(*parsed);
}

double StrictMap::get_double(const std::string& key, const Range& range) {
  const YAML::Node v = require(key);
  if (!is_plain_scalar(v)) fail(key, "expected a number (got " + describe_node(v) + ")");
  const std::string& text = v.Scalar();
  bool out_of_range = false;
  const std::optional<double> parsed = parse_real(text, &out_of_range);
  if (!parsed) {
    if (out_of_range) fail(key, "number out of range (got " + text + ")");
    fail(key, "expected a number (got " + text + ")");
  }
  if (!std::isfinite(*parsed)) fail(key, "expected a finite number (got " + text + ")");
  if (!range.contains(*parsed)) fail(key, "must be " + range.describe() + " (got " + text + ")");
  return *parsed;
}

std::string StrictMap::get_string(const std::string& key) {
  const YAML::Node v = require(key);
  if (!v.IsScalar()) fail(key, "expected a string (got " + describe_node(v) + ")");
  if (v.Scalar().empty()) fail(key, "must not be empty");
  return v.Scalar();
}

std::string StrictMap::get_enum(const std::string& key, const std::vector<std::string>& allowed) {
  const YAML::Node v = require(key);
  if (!v.IsScalar()) {
    fail(key, "expected one of " + join(allowed) + " (got " + describe_node(v) + ")");
  }
  const std::string& text = v.Scalar();
  if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
    fail(key, "must be one of " + join(allowed) + " (got '" + text + "')");
  }
  return text;
}

StrictMap StrictMap::get_map(const std::string& key) {
  const YAML::Node v = require(key);
  if (!v.IsMap()) fail(key, "expected a map of keys (got " + describe_node(v) + ")");
  return StrictMap(v, file_, key_path(key));
}

void StrictMap::finish() const {
  for (const std::string& name : present_) {
    if (std::find(allowed_.begin(), allowed_.end(), name) == allowed_.end()) {
      std::string hint;
      for (const std::string& a : allowed_) {
        if (similar(name, a)) {
          hint = " (did you mean '" + a + "'?)";
          break;
        }
      }
      fail(name, "unknown key" + hint + "; allowed keys here: " + join(allowed_));
    }
  }
}

// ---------------------------------------------------------------------------
// Systems

namespace {

void read_gemm(StrictMap m, GemmEfficiencyConfig& g) {
  g.max_efficiency = m.get_double("max_efficiency", Range::left_open(0, 1));
  g.m_half = m.get_double("m_half", Range::at_least(0));
  g.n_half = m.get_double("n_half", Range::at_least(0));
  g.k_half = m.get_double("k_half", Range::at_least(0));
  m.finish();
}

void read_gpu(StrictMap m, GpuConfig& g) {
  g.name = m.get_string("name");
  g.num_sms = m.get_int("num_sms", Range::at_least(1));
  g.sm_clock_ghz = m.get_double("sm_clock_ghz", Range::greater_than(0));
  g.dense_bf16_tflops = m.get_double("dense_bf16_tflops", Range::greater_than(0));
  read_gemm(m.get_map("gemm"), g.gemm);
  g.gemm_tile_m = m.get_int("gemm_tile_m", Range::at_least(1));
  g.gemm_tile_n = m.get_int("gemm_tile_n", Range::at_least(1));
  g.remote_store_bytes_per_cycle_per_sm =
      m.get_double("remote_store_bytes_per_cycle_per_sm", Range::greater_than(0));
  g.hbm_bw_gbps = m.get_double("hbm_bw_gbps", Range::greater_than(0));
  g.hbm_latency_ns = m.get_double("hbm_latency_ns", Range::at_least(0));
  g.memory_kernel_efficiency = m.get_double("memory_kernel_efficiency", Range::left_open(0, 1));
  g.xbar_bw_gbps = m.get_double("xbar_bw_gbps", Range::greater_than(0));
  g.xbar_latency_ns = m.get_double("xbar_latency_ns", Range::at_least(0));
  g.hub_latency_ns = m.get_double("hub_latency_ns", Range::at_least(0));
  m.finish();
}

void read_nvlink(StrictMap m, NvlinkConfig& n) {
  n.flit_bytes = m.get_int("flit_bytes", Range::at_least(1));
  n.max_payload_bytes = m.get_int("max_payload_bytes", Range::at_least(1));
  if (n.max_payload_bytes % n.flit_bytes != 0) {
    m.fail("max_payload_bytes", "must be a multiple of flit_bytes = " +
                                    std::to_string(n.flit_bytes) + " (got " +
                                    std::to_string(n.max_payload_bytes) + ")");
  }
  n.header_flits = m.get_int("header_flits", Range::at_least(0));
  n.ack_flits = m.get_int("ack_flits", Range::at_least(0));
  n.bw_gbps_per_direction_per_gpu =
      m.get_double("bw_gbps_per_direction_per_gpu", Range::greater_than(0));
  n.gpu_switch_latency_ns = m.get_double("gpu_switch_latency_ns", Range::at_least(0));
  n.credits_flits = m.get_int("credits_flits", Range::at_least(1));
  const long long max_packet_flits =
      static_cast<long long>(n.header_flits) + n.max_payload_bytes / n.flit_bytes;
  if (n.credits_flits < max_packet_flits) {
    m.fail("credits_flits", "must be >= one maximum packet = header_flits + max_payload_bytes / "
                            "flit_bytes = " + std::to_string(max_packet_flits) +
                                " flits (got " + std::to_string(n.credits_flits) + ")");
  }
  m.finish();
}

void read_nvswitch(StrictMap m, NvswitchConfig& s) {
  s.num_switches = m.get_int("num_switches", Range::at_least(1));
  s.crossing_latency_ns = m.get_double("crossing_latency_ns", Range::at_least(0));
  m.finish();
}

void read_host(StrictMap m, HostConfig& h) {
  h.kernel_launch_us = m.get_double("kernel_launch_us", Range::at_least(0));
  h.stream_sync_us = m.get_double("stream_sync_us", Range::at_least(0));
  h.collective_setup_us = m.get_double("collective_setup_us", Range::at_least(0));
  m.finish();
}

void read_hub(StrictMap m, HubConfig& h) {
  h.implementation = m.get_enum("implementation", {"address-centric"});
  h.clock_ghz = m.get_double("clock_ghz", Range::greater_than(0));
  h.write_buffer_entries = m.get_int("write_buffer_entries", Range::at_least(1));
  m.finish();
}

void read_sim(StrictMap m, SimConfig& s) {
  s.granularity = m.get_enum("granularity", {"packet", "row"});
  s.bulk_granularity = m.get_enum("bulk_granularity", {"packet", "row"});
  s.sync_quantum_ns = m.get_double("sync_quantum_ns", Range::greater_than(0));
  s.timeline_bin_us = m.get_double("timeline_bin_us", Range::greater_than(0));
  s.hbm_slice_bytes = m.get_int("hbm_slice_bytes", Range::at_least(128));
  m.finish();
}

}  // namespace

SystemConfig load_system_config(const std::string& path) {
  StrictMap root(load_yaml_document(path), path, "");
  SystemConfig s;
  s.source_file = path;
  s.name = root.get_string("name");
  s.num_gpus = root.get_int("num_gpus", Range::at_least(2));
  read_gpu(root.get_map("gpu"), s.gpu);
  read_nvlink(root.get_map("nvlink"), s.nvlink);
  read_nvswitch(root.get_map("nvswitch"), s.nvswitch);
  read_host(root.get_map("host"), s.host);
  read_hub(root.get_map("hub"), s.hub);
  read_sim(root.get_map("sim"), s.sim);
  root.finish();
  return s;
}

// ---------------------------------------------------------------------------
// Models

ModelConfig load_model_config(const std::string& path) {
  StrictMap root(load_yaml_document(path), path, "");
  ModelConfig m;
  m.source_file = path;
  m.name = root.get_string("name");
  m.hidden_size = root.get_int("hidden_size", Range::at_least(1));
  m.expert_ffn_size = root.get_int("expert_ffn_size", Range::at_least(1));
  m.num_experts = root.get_int("num_experts", Range::at_least(1));
  m.top_k = root.get_int("top_k", Range::at_least(1));
  if (m.top_k > m.num_experts) {
    root.fail("top_k", "must be <= num_experts = " + std::to_string(m.num_experts) + " (got " +
                           std::to_string(m.top_k) + ")");
  }
  m.shared_expert_ffn_size = root.get_int("shared_expert_ffn_size", Range::at_least(0));
  m.num_layers = root.get_int("num_layers", Range::at_least(1));
  m.dtype_bytes = root.get_int("dtype_bytes", Range::at_least(1));
  root.finish();
  return m;
}

// ---------------------------------------------------------------------------
// Names of shipped configs

std::vector<std::string> list_configs(const std::string& kind) {
  const std::string dir = config_kind_dir(kind);
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".yaml" && it->is_regular_file(ec)) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_config_path(const std::string& name_or_path, const std::string& kind) {
  std::error_code ec;
  if (!name_or_path.empty() && fs::exists(name_or_path, ec)) return name_or_path;
  const std::string dir = config_kind_dir(kind);
  const bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                               ends_with(name_or_path, ".yaml") || ends_with(name_or_path, ".yml");
  if (looks_like_path) throw ConfigError(name_or_path, "", "cannot read the file: no such file");
  if (!name_or_path.empty()) {
    const std::string candidate = dir + "/" + name_or_path + ".yaml";
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  if (!fs::is_directory(dir, ec)) {
    throw ConfigError(name_or_path.empty() ? "<empty name>" : name_or_path, "",
                      "neither a file nor a shipped config: there is no config folder " + dir);
  }
  const std::vector<std::string> names = list_configs(kind);
  throw ConfigError(name_or_path.empty() ? "<empty name>" : name_or_path, "",
                    "neither a file nor the name of a shipped " + kind + " config (in " + dir +
                        "); available: " + (names.empty() ? std::string("none") : join(names)));
}

// ---------------------------------------------------------------------------
// Run checks

void validate_run(const SystemConfig& system, const ModelConfig& model,
                  const WorkloadConfig& workload) {
  const std::string cl = "<command line>";
  if (workload.tokens < 1) {
    throw ConfigError(cl, "--tokens", "must be >= 1 (got " + std::to_string(workload.tokens) + ")");
  }
  if (workload.tokens < system.num_gpus) {
    throw ConfigError(cl, "--tokens",
                      "must be >= num_gpus = " + std::to_string(system.num_gpus) + " of system '" +
                          system.name + "' (got " + std::to_string(workload.tokens) + ")");
  }
  if (model.top_k < 1 || model.top_k > model.num_experts) {
    throw ConfigError(cl, "--top-k",
                      "must be in [1, num_experts = " + std::to_string(model.num_experts) +
                          "] of model '" + model.name + "' (got " + std::to_string(model.top_k) +
                          ")");
  }
  if (workload.distribution != "normal" && workload.distribution != "zipf") {
    throw ConfigError(cl, "--distribution",
                      "must be one of normal, zipf (got '" + workload.distribution + "')");
  }
  if (!std::isfinite(workload.imbalance_std) || workload.imbalance_std < 0) {
    throw ConfigError(cl, "--imbalance-std",
                      "must be a finite number >= 0 (got " + format_number(workload.imbalance_std) +
                          ")");
  }
  if (!std::isfinite(workload.zipf_s) || workload.zipf_s < 0) {
    throw ConfigError(cl, "--zipf-s",
                      "must be a finite number >= 0 (got " + format_number(workload.zipf_s) + ")");
  }
}

}  // namespace moehub
