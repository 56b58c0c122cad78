// Strict YAML reading of system and model configs; see config_loader.hpp.
#include "common/config_loader.hpp"

#include <yaml-cpp/eventhandler.h>

#include "common/config_ranges.hpp"

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

const char* to_string(SwitchMicroarchitecture m) {
  switch (m) {
    case SwitchMicroarchitecture::kInputQueued: return "input-queued";
    case SwitchMicroarchitecture::kVoq: return "voq";
    case SwitchMicroarchitecture::kOutputQueued: break;
  }
  return "output-queued";
}

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
  return parse_yaml_document(text, path);
}

namespace {

/// Counts the documents of a YAML stream through the parser's events, and
/// notices a parser that reports document after document without consuming
/// input (yaml-cpp 0.7 does so on an input of a lone ","; YAML::LoadAll then
/// never returns and exhausts memory).
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    stuck_ = documents_ > 0 && mark.pos == last_.pos;
    last_ = mark;
    ++documents_;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  std::size_t documents() const { return documents_; }
  bool stuck() const { return stuck_; }
  const YAML::Mark& last() const { return last_; }

 private:
  std::size_t documents_ = 0;
  bool stuck_ = false;
  YAML::Mark last_ = YAML::Mark::null_mark();
};

constexpr std::size_t kMaxDocumentsCounted = 16;

}  // namespace

YAML::Node parse_yaml_document(const std::string& text, const std::string& path) {
  const auto syntax_error = [&](const YAML::Mark& mark, const std::string& msg) {
    return ConfigError(path, "",
                       "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
                           ": YAML syntax error: " + msg);
  };
  YAML::Node doc;
  std::size_t documents = 0;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentCounter counter;
    while (counter.documents() < kMaxDocumentsCounted && parser.HandleNextDocument(counter)) {
      if (counter.stuck()) throw syntax_error(counter.last(), "the parser makes no progress here");
    }
    documents = counter.documents();
    if (documents == 1) doc = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw syntax_error(e.mark, e.msg);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path, "", std::string("YAML error: ") + e.what());
  }
  if (documents > 1) {
    throw ConfigError(path, "",
                      "holds " + (documents >= kMaxDocumentsCounted ? "more than " : std::string()) +
                          std::to_string(documents >= kMaxDocumentsCounted ? documents - 1 : documents) +
                          " YAML documents; expected one");
  }
  if (documents == 0 || doc.IsNull()) {
    throw ConfigError(path, "", "the file is empty; expected a map of keys");
  }
  return doc;
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

/// The range of `key` of map `m` from the table of config_ranges.hpp.
Range table_range(const StrictMap& m, const std::string& key, ConfigKind kind, bool integer) {
  const KeyRange& r = key_range(kind, m.key_path(key));
  if (r.integer != integer) {
    throw std::logic_error("config key '" + m.key_path(key) + "' is read as " +
                           (integer ? "an integer" : "a number") + " but the range table says otherwise");
  }
  return Range::bounded(r.lo, r.lo_inclusive, r.hi, r.hi_inclusive);
}

int int_key(StrictMap& m, const std::string& key, ConfigKind kind = ConfigKind::kSystem) {
  return m.get_int(key, table_range(m, key, kind, true));
}

double number_key(StrictMap& m, const std::string& key, ConfigKind kind = ConfigKind::kSystem) {
  return m.get_double(key, table_range(m, key, kind, false));
}

void read_gemm(StrictMap m, GemmEfficiencyConfig& g) {
  g.max_efficiency = number_key(m, "max_efficiency");
  g.m_half = number_key(m, "m_half");
  g.n_half = number_key(m, "n_half");
  g.k_half = number_key(m, "k_half");
  m.finish();
}

void read_gpu(StrictMap m, GpuConfig& g) {
  g.name = m.get_string("name");
  g.num_sms = int_key(m, "num_sms");
  g.sm_clock_ghz = number_key(m, "sm_clock_ghz");
  g.dense_bf16_tflops = number_key(m, "dense_bf16_tflops");
  read_gemm(m.get_map("gemm"), g.gemm);
  g.gemm_tile_m = int_key(m, "gemm_tile_m");
  g.gemm_tile_n = int_key(m, "gemm_tile_n");
  g.remote_store_bytes_per_cycle_per_sm =
      number_key(m, "remote_store_bytes_per_cycle_per_sm");
  g.hbm_bw_gbps = number_key(m, "hbm_bw_gbps");
  g.hbm_latency_ns = number_key(m, "hbm_latency_ns");
  g.memory_kernel_efficiency = number_key(m, "memory_kernel_efficiency");
  g.xbar_bw_gbps = number_key(m, "xbar_bw_gbps");
  g.xbar_latency_ns = number_key(m, "xbar_latency_ns");
  g.hub_latency_ns = number_key(m, "hub_latency_ns");
  m.finish();
}

void read_nvlink(StrictMap m, NvlinkConfig& n) {
  n.flit_bytes = int_key(m, "flit_bytes");
  n.max_payload_bytes = int_key(m, "max_payload_bytes");
  if (n.max_payload_bytes % n.flit_bytes != 0) {
    m.fail("max_payload_bytes", "must be a multiple of flit_bytes = " +
                                    std::to_string(n.flit_bytes) + " (got " +
                                    std::to_string(n.max_payload_bytes) + ")");
  }
  n.header_flits = int_key(m, "header_flits");
  n.ack_flits = int_key(m, "ack_flits");
  n.bw_gbps_per_direction_per_gpu =
      number_key(m, "bw_gbps_per_direction_per_gpu");
  n.gpu_switch_latency_ns = number_key(m, "gpu_switch_latency_ns");
  n.credits_flits = int_key(m, "credits_flits");
  const long long max_packet_flits =
      static_cast<long long>(n.header_flits) + n.max_payload_bytes / n.flit_bytes;
  if (n.credits_flits < max_packet_flits) {
    m.fail("credits_flits", "must be >= one maximum packet = header_flits + max_payload_bytes / "
                            "flit_bytes = " + std::to_string(max_packet_flits) +
                                " flits (got " + std::to_string(n.credits_flits) + ")");
  }
  n.response_channel = m.get_enum("response_channel", {"shared", "own"});
  m.finish();
}

void read_nvswitch(StrictMap m, NvswitchConfig& s) {
  s.num_switches = int_key(m, "num_switches");
  s.crossing_latency_ns = number_key(m, "crossing_latency_ns");
  const std::string arch = m.get_enum("microarchitecture", {"output-queued", "input-queued", "voq"});
  s.microarchitecture = arch == "voq"            ? SwitchMicroarchitecture::kVoq
                        : arch == "input-queued" ? SwitchMicroarchitecture::kInputQueued
                                                 : SwitchMicroarchitecture::kOutputQueued;
  s.internal_speedup = number_key(m, "internal_speedup");
  m.finish();
}

void read_host(StrictMap m, HostConfig& h) {
  h.kernel_launch_us = number_key(m, "kernel_launch_us");
  h.stream_sync_us = number_key(m, "stream_sync_us");
  h.collective_setup_us = number_key(m, "collective_setup_us");
  m.finish();
}

void read_hub(StrictMap m, HubConfig& h) {
  h.implementation = m.get_enum("implementation", {"address-centric", "moehub", "rtl"});
  h.clock_ghz = number_key(m, "clock_ghz");
  h.write_buffer_entries = int_key(m, "write_buffer_entries");
  h.rat_entries = int_key(m, "rat_entries");
  h.rat_banks = int_key(m, "rat_banks");
  if (h.rat_entries % h.rat_banks != 0) {
    m.fail("rat_entries", "must be a multiple of hub.rat_banks (" + std::to_string(h.rat_banks) + ") (got " +
                              std::to_string(h.rat_entries) + ")");
  }
  h.rat_ports_per_bank = int_key(m, "rat_ports_per_bank");
  h.rat_lookup_cycles = int_key(m, "rat_lookup_cycles");
  h.rat_restore_cycles = int_key(m, "rat_restore_cycles");
  h.rat_spill_entry_bytes = int_key(m, "rat_spill_entry_bytes");
  h.rat_spill_record = m.get_enum("rat_spill_record", {"exact", "region"});
  h.apt_regions = int_key(m, "apt_regions");
  h.apt_alloc_cycles = int_key(m, "apt_alloc_cycles");
  h.region_full = m.get_enum("region_full", {"stall", "error"});
  h.region_full_retry_cycles = int_key(m, "region_full_retry_cycles");
  h.rpm_entries_per_peer = int_key(m, "rpm_entries_per_peer");
  h.rpm_timer_cycles = int_key(m, "rpm_timer_cycles");
  h.rpm_hold_partial = m.get_enum("rpm_hold_partial", {"true", "false"}) == "true";
  h.rpm_pick_cycles = int_key(m, "rpm_pick_cycles");
  h.congestion_packets = int_key(m, "congestion_packets");
  h.fifo_passes_congested = m.get_enum("fifo_passes_congested", {"true", "false"}) == "true";
  h.dam_ready_latency_ns = number_key(m, "dam_ready_latency_ns");
  m.finish();
}

void read_sim(StrictMap m, SimConfig& s) {
  s.granularity = m.get_enum("granularity", {"packet", "row"});
  s.bulk_granularity = m.get_enum("bulk_granularity", {"packet", "row"});
  s.sync_quantum_ns = number_key(m, "sync_quantum_ns");
  s.timeline_bin_us = number_key(m, "timeline_bin_us");
  s.hbm_slice_bytes = int_key(m, "hbm_slice_bytes");
  s.response_window_ns = number_key(m, "response_window_ns");
  m.finish();
}

}  // namespace

SystemConfig load_system_config(const std::string& path) {
  return read_system_config(load_yaml_document(path), path);
}

SystemConfig parse_system_config(const std::string& yaml_text, const std::string& name) {
  return read_system_config(parse_yaml_document(yaml_text, name), name);
}

SystemConfig read_system_config(const YAML::Node& document, const std::string& path) {
  StrictMap root(document, path, "");
  SystemConfig s;
  s.source_file = path;
  s.name = root.get_string("name");
  s.num_gpus = int_key(root, "num_gpus");
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
  return read_model_config(load_yaml_document(path), path);
}

ModelConfig parse_model_config(const std::string& yaml_text, const std::string& name) {
  return read_model_config(parse_yaml_document(yaml_text, name), name);
}

ModelConfig read_model_config(const YAML::Node& document, const std::string& path) {
  StrictMap root(document, path, "");
  ModelConfig m;
  m.source_file = path;
  m.name = root.get_string("name");
  m.hidden_size = int_key(root, "hidden_size", ConfigKind::kModel);
  m.expert_ffn_size = int_key(root, "expert_ffn_size", ConfigKind::kModel);
  m.num_experts = int_key(root, "num_experts", ConfigKind::kModel);
  m.top_k = int_key(root, "top_k", ConfigKind::kModel);
  if (m.top_k > m.num_experts) {
    root.fail("top_k", "must be <= num_experts = " + std::to_string(m.num_experts) + " (got " +
                           std::to_string(m.top_k) + ")");
  }
  m.shared_expert_ffn_size = int_key(root, "shared_expert_ffn_size", ConfigKind::kModel);
  m.num_layers = int_key(root, "num_layers", ConfigKind::kModel);
  m.dtype_bytes = int_key(root, "dtype_bytes", ConfigKind::kModel);
  root.finish();
  return m;
}

// ---------------------------------------------------------------------------
// Overrides (--set)

namespace {

constexpr const char* kCommandLine = "<command line>";

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const std::size_t dot = key.find('.', from);
    parts.push_back(key.substr(from, dot == std::string::npos ? std::string::npos : dot - from));
    if (dot == std::string::npos) return parts;
    from = dot + 1;
  }
}

/// The value of `name` in the map `map`, or an undefined node (without inserting it).
YAML::Node child(const YAML::Node& map, const std::string& name) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == name) return it->second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string key_list(const YAML::Node& map, const std::string& wanted) {
  std::vector<std::string> names;
  std::string hint;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    names.push_back(it->first.Scalar());
    if (hint.empty() && similar(wanted, names.back())) hint = " (did you mean '" + names.back() + "'?)";
  }
  return join(names) + hint;
}

/// Applies the overrides of `target` to `document` (the config read from `file`).
std::vector<std::string> apply_overrides(YAML::Node& document, const std::vector<ConfigOverride>& overrides,
                                         const std::string& target, const std::string& file) {
  std::vector<std::string> applied;
  for (const ConfigOverride& o : overrides) {
    if (o.target != target) continue;
    const std::string flag = "--set " + o.target + "." + o.key;
    const std::vector<std::string> parts = split_key(o.key);
    YAML::Node map;
    map.reset(document);
    std::string walked;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string& part = parts[i];
      if (!map.IsMap()) throw ConfigError(kCommandLine, flag, "'" + walked + "' in " + file + " holds no keys");
      const YAML::Node next = child(map, part);
      if (!next.IsDefined()) {
        throw ConfigError(kCommandLine, flag,
                          "no key '" + (walked.empty() ? part : walked + "." + part) + "' in " + file +
                              (walked.empty() ? "; its top-level keys: " : "; the keys of '" + walked + "': ") +
                              key_list(map, part));
      }
      walked = walked.empty() ? part : walked + "." + part;
      if (i + 1 < parts.size()) {
        map.reset(next);
        continue;
      }
      if (next.IsMap() || next.IsSequence()) {
        throw ConfigError(kCommandLine, flag, "'" + walked + "' holds " + describe_node(next) +
                                                  "; set one of its keys (" + key_list(next, "") + ")");
      }
      YAML::Node value;
      try {
        value = YAML::Load(o.value);
      } catch (const YAML::Exception& e) {
        throw ConfigError(kCommandLine, flag, "the value is not valid YAML: " + e.msg);
      }
      if (!value.IsScalar()) {
        throw ConfigError(kCommandLine, flag, "must be a single value (got " + describe_node(value) + ")");
      }
      YAML::Node slot = map[part];  // exists: assigning replaces the file's value
      slot = value;
    }
    applied.push_back(o.key + "=" + o.value);
  }
  return applied;
}

/// Reads the config with `read` after the overrides of `target`, answering a refused
/// override value for its --set flag.
template <typename Config>
Config read_with_overrides(YAML::Node document, const std::string& path, const std::vector<ConfigOverride>& overrides,
                           const std::string& target, Config (*read)(const YAML::Node&, const std::string&)) {
  std::vector<std::string> applied = apply_overrides(document, overrides, target, path);
  try {
    Config c = read(document, path);
    if (!applied.empty()) {
      // later messages about the config's values name where they came from
      std::vector<std::string> flags;
      for (const std::string& a : applied) flags.push_back("--set " + target + "." + a);
      c.source_file = path + " with " + join(flags);
    }
    c.overrides = std::move(applied);
    return c;
  } catch (const ConfigError& e) {
    for (const ConfigOverride& o : overrides) {
      if (o.target == target && e.key() == o.key) {
        throw ConfigError(kCommandLine, "--set " + o.target + "." + o.key, e.message());
      }
    }
    throw;
  }
}

}  // namespace

ConfigOverride parse_config_override(const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::string usage =
      "expected system.KEY=VALUE, model.KEY=VALUE or schedule.KEY=VALUE, KEY a dotted key (got '" + text + "')";
  if (eq == std::string::npos) throw ConfigError(kCommandLine, "--set", usage);
  const std::string lhs = text.substr(0, eq);
  const std::size_t dot = lhs.find('.');
  if (dot == std::string::npos) throw ConfigError(kCommandLine, "--set", usage);
  ConfigOverride o;
  o.target = lhs.substr(0, dot);
  o.key = lhs.substr(dot + 1);
  o.value = text.substr(eq + 1);
  if (o.target != "system" && o.target != "model" && o.target != "schedule") {
    throw ConfigError(kCommandLine, "--set",
                      "the key must start with 'system.', 'model.' or 'schedule.' (got '" + lhs + "')");
  }
  for (const std::string& part : split_key(o.key)) {
    if (part.empty()) throw ConfigError(kCommandLine, "--set", usage);
  }
  if (o.value.empty()) throw ConfigError(kCommandLine, "--set " + lhs, "no value after '='");
  return o;
}

std::vector<ConfigOverride> parse_config_overrides(const std::vector<std::string>& texts) {
  std::vector<ConfigOverride> out;
  for (const std::string& t : texts) {
    ConfigOverride o = parse_config_override(t);
    for (const ConfigOverride& earlier : out) {
      if (earlier.target == o.target && earlier.key == o.key) {
        throw ConfigError(kCommandLine, "--set " + o.target + "." + o.key, "set twice");
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string format_config_number(double v) { return format_number(v); }

SystemConfig load_system_config(const std::string& path, const std::vector<ConfigOverride>& overrides) {
  return read_with_overrides(load_yaml_document(path), path, overrides, "system", &read_system_config);
}

ModelConfig load_model_config(const std::string& path, const std::vector<ConfigOverride>& overrides) {
  return read_with_overrides(load_yaml_document(path), path, overrides, "model", &read_model_config);
}

SystemConfig parse_system_config(const std::string& yaml_text, const std::string& name,
                                 const std::vector<ConfigOverride>& overrides) {
  return read_with_overrides(parse_yaml_document(yaml_text, name), name, overrides, "system", &read_system_config);
}

ModelConfig parse_model_config(const std::string& yaml_text, const std::string& name,
                               const std::vector<ConfigOverride>& overrides) {
  return read_with_overrides(parse_yaml_document(yaml_text, name), name, overrides, "model", &read_model_config);
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
  if (workload.tokens > kMaxTokens) {
    throw ConfigError(cl, "--tokens",
                      "must be in [num_gpus = " + std::to_string(system.num_gpus) + ", " +
                          std::to_string(kMaxTokens) + "] (got " + std::to_string(workload.tokens) +
                          ")");
  }
  if (workload.tokens * model.top_k > kMaxRoutedTokens) {
    throw ConfigError(cl, "--tokens",
                      "tokens x top_k = " + std::to_string(workload.tokens) + " x " +
                          std::to_string(model.top_k) + " must be <= " +
                          std::to_string(kMaxRoutedTokens) + " routed tokens");
  }
  if (model.top_k < 1 || model.top_k > model.num_experts) {
    throw ConfigError(cl, "model.top_k",  // the model file's top_k, or --set model.top_k
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
