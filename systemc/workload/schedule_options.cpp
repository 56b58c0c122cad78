#include "workload/schedule_options.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <type_traits>

#include "common/config_loader.hpp"

namespace moehub {

namespace {

/// One settable parameter: its key and how a value is read into the options.
struct OptionKey {
  const char* key;
  std::function<void(ScheduleOptions&, StrictMap&, const std::string& leaf)> set;
};

/// A number or integer of the options, reached through `field`, within `range`.
template <typename T>
OptionKey number_key(const char* key, T& (*field)(ScheduleOptions&), const Range& range) {
  return {key, [field, range](ScheduleOptions& o, StrictMap& m, const std::string& leaf) {
            if constexpr (std::is_floating_point_v<T>) {
              field(o) = m.get_double(leaf, range);
            } else {
              field(o) = m.get_int(leaf, range);
            }
          }};
}

/// 1, 2, 4 or 8 bytes per element.
OptionKey element_bytes_key(const char* key, int& (*field)(ScheduleOptions&)) {
  return {key, [field](ScheduleOptions& o, StrictMap& m, const std::string& leaf) {
            const int v = m.get_int(leaf, Range::closed(1, 8));
            if (v != 1 && v != 2 && v != 4 && v != 8) m.fail(leaf, "must be 1, 2, 4 or 8 (got " + std::to_string(v) + ")");
            field(o) = v;
          }};
}

using O = ScheduleOptions;

const std::vector<OptionKey>& option_keys() {
  // ranges: what the schedules can execute, wide enough for research; times
  // at most one second, rates at most 1 PB/s
  static const std::vector<OptionKey> keys = {
      number_key<double>("poll.poll_interval_ns", [](O& o) -> double& { return o.poll.poll_interval_ns; },
                         Range::left_open(0, 1e9)),
      number_key<double>("poll.poll_sm_ns", [](O& o) -> double& { return o.poll.poll_sm_ns; }, Range::closed(0, 1e9)),
      number_key<double>("poll.poll_bytes", [](O& o) -> double& { return o.poll.poll_bytes; }, Range::closed(0, 1e6)),
      element_bytes_key("ring_accum_bytes", [](O& o) -> int& { return o.ring_accum_bytes; }),
      element_bytes_key("ring_grad_bytes", [](O& o) -> int& { return o.ring_grad_bytes; }),
      number_key<std::int64_t>("ring_chunk_rows", [](O& o) -> std::int64_t& { return o.ring_chunk_rows; },
                               Range::closed(-1, 1e12)),
      number_key<int>("source_info_bytes", [](O& o) -> int& { return o.source_info_bytes; }, Range::closed(1, 128)),
      number_key<int>("baseline.tutel_pipeline_degree", [](O& o) -> int& { return o.baseline.tutel_pipeline_degree; },
                      Range::closed(0, 1024)),
      number_key<std::int64_t>("baseline.tutel_min_rows_per_chunk",
                               [](O& o) -> std::int64_t& { return o.baseline.tutel_min_rows_per_chunk; },
                               Range::at_least(1)),
      number_key<double>("baseline.tutel_capacity_factor",
                         [](O& o) -> double& { return o.baseline.tutel_capacity_factor; }, Range::left_open(0, 1000)),
      number_key<int>("baseline.comet_comm_sms", [](O& o) -> int& { return o.baseline.comet_comm_sms; },
                      Range::closed(1, 100000)),
      number_key<double>("baseline.layout_bytes_per_row",
                         [](O& o) -> double& { return o.baseline.layout_bytes_per_row; }, Range::closed(0, 1e6)),
      number_key<double>("megatron.unpermute_add_gbps", [](O& o) -> double& { return o.megatron.unpermute_add_gbps; },
                         Range::left_open(0, 1e6)),
  };
  return keys;
}

}  // namespace

std::vector<std::string> schedule_option_keys() {
  std::vector<std::string> out;
  for (const OptionKey& k : option_keys()) out.push_back(k.key);
  return out;
}

void set_schedule_option(ScheduleOptions& o, const std::string& key, const std::string& value) {
  const std::string flag = "--set schedule." + key;
  for (const OptionKey& k : option_keys()) {
    if (key != k.key) continue;
    // read the value as the config loader reads a file's: a one-key map
    const std::string text = key.substr(key.rfind('.') + 1);
    YAML::Node doc(YAML::NodeType::Map);
    try {
      doc[text] = YAML::Load(value);
    } catch (const YAML::Exception& e) {
      throw ConfigError("<command line>", flag, "the value is not valid YAML: " + e.msg);
    }
    const std::string parent = key.find('.') == std::string::npos ? "" : "." + key.substr(0, key.rfind('.'));
    StrictMap m(doc, "<command line>", "--set schedule" + parent);
    k.set(o, m, text);
    m.finish();
    return;
  }
  std::string all;
  for (const OptionKey& k : option_keys()) all += (all.empty() ? "" : ", ") + std::string(k.key);
  throw ConfigError("<command line>", flag, "not a schedule parameter; the keys: " + all);
}

void check_schedule_options(const ScheduleOptions& o, const SystemConfig& system) {
  if (!(o.poll.poll_sm_ns < o.poll.poll_interval_ns)) {
    throw ConfigError("<command line>", "--set schedule.poll.poll_sm_ns",
                      "must be below poll.poll_interval_ns = " + format_config_number(o.poll.poll_interval_ns) +
                          " (got " + format_config_number(o.poll.poll_sm_ns) + ")");
  }
  if (o.baseline.comet_comm_sms >= system.gpu.num_sms) {
    throw ConfigError("<command line>", "--set schedule.baseline.comet_comm_sms",
                      "must be below gpu.num_sms = " + std::to_string(system.gpu.num_sms) + " of system '" +
                          system.name + "' (got " + std::to_string(o.baseline.comet_comm_sms) + ")");
  }
}

}  // namespace moehub
