// libFuzzer target: the strict YAML config loader.
//
// Each input is read as a system config and as a model config. The only
// acceptable failure is a ConfigError; any other exception, crash or sanitizer
// report is a bug. A config that loads must be plausible: every numeric key
// inside its range of the table (config_ranges.hpp) and the cross-field rules
// held. That oracle is what finds a loader with a missing bounds check (the
// planted copy built as fuzz_config_planted). Half of the mutations are
// structure-aware: a number after "key: " is replaced by a value at or past
// the edge of a plausible range; the rest are libFuzzer's byte mutations.
// Each line of the input that starts with "system." or "model." is also read
// as a --set override and applied to the shipped dgx-h800 and mixtral-8x7b
// configs: an override must not get a value past the same checks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "common/config_loader.hpp"
#include "common/config_ranges.hpp"

namespace {

using moehub::ConfigKind;

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "fuzz_config: loaded config violates its ranges: %s\n", what.c_str());
  std::abort();
}

void check(ConfigKind kind, const char* key, double value) {
  const moehub::KeyRange& r = moehub::key_range(kind, key);
  const bool above_lo = r.lo_inclusive ? value >= r.lo : value > r.lo;
  const bool below_hi = r.hi_inclusive ? value <= r.hi : value < r.hi;
  if (!(above_lo && below_hi)) {
    violation(std::string(key) + " = " + std::to_string(value) + " is not " + moehub::describe_range(r));
  }
}

/// Every numeric field of a system config with its key.
std::vector<std::pair<const char*, double>> fields(const moehub::SystemConfig& s) {
  return {{"num_gpus", s.num_gpus},
          {"gpu.num_sms", s.gpu.num_sms},
          {"gpu.sm_clock_ghz", s.gpu.sm_clock_ghz},
          {"gpu.dense_bf16_tflops", s.gpu.dense_bf16_tflops},
          {"gpu.gemm.max_efficiency", s.gpu.gemm.max_efficiency},
          {"gpu.gemm.m_half", s.gpu.gemm.m_half},
          {"gpu.gemm.n_half", s.gpu.gemm.n_half},
          {"gpu.gemm.k_half", s.gpu.gemm.k_half},
          {"gpu.gemm_tile_m", s.gpu.gemm_tile_m},
          {"gpu.gemm_tile_n", s.gpu.gemm_tile_n},
          {"gpu.remote_store_bytes_per_cycle_per_sm", s.gpu.remote_store_bytes_per_cycle_per_sm},
          {"gpu.hbm_bw_gbps", s.gpu.hbm_bw_gbps},
          {"gpu.hbm_latency_ns", s.gpu.hbm_latency_ns},
          {"gpu.memory_kernel_efficiency", s.gpu.memory_kernel_efficiency},
          {"gpu.xbar_bw_gbps", s.gpu.xbar_bw_gbps},
          {"gpu.xbar_latency_ns", s.gpu.xbar_latency_ns},
          {"gpu.hub_latency_ns", s.gpu.hub_latency_ns},
          {"nvlink.flit_bytes", s.nvlink.flit_bytes},
          {"nvlink.max_payload_bytes", s.nvlink.max_payload_bytes},
          {"nvlink.header_flits", s.nvlink.header_flits},
          {"nvlink.ack_flits", s.nvlink.ack_flits},
          {"nvlink.bw_gbps_per_direction_per_gpu", s.nvlink.bw_gbps_per_direction_per_gpu},
          {"nvlink.gpu_switch_latency_ns", s.nvlink.gpu_switch_latency_ns},
          {"nvlink.credits_flits", s.nvlink.credits_flits},
          {"nvswitch.num_switches", s.nvswitch.num_switches},
          {"nvswitch.crossing_latency_ns", s.nvswitch.crossing_latency_ns},
          {"nvswitch.internal_speedup", s.nvswitch.internal_speedup},
          {"host.kernel_launch_us", s.host.kernel_launch_us},
          {"host.stream_sync_us", s.host.stream_sync_us},
          {"host.collective_setup_us", s.host.collective_setup_us},
          {"hub.clock_ghz", s.hub.clock_ghz},
          {"hub.write_buffer_entries", s.hub.write_buffer_entries},
          {"hub.rat_entries", s.hub.rat_entries},
          {"hub.rat_banks", s.hub.rat_banks},
          {"hub.rat_ports_per_bank", s.hub.rat_ports_per_bank},
          {"hub.rat_lookup_cycles", s.hub.rat_lookup_cycles},
          {"hub.rat_restore_cycles", s.hub.rat_restore_cycles},
          {"hub.rat_spill_entry_bytes", s.hub.rat_spill_entry_bytes},
          {"hub.apt_regions", s.hub.apt_regions},
          {"hub.apt_alloc_cycles", s.hub.apt_alloc_cycles},
          {"hub.region_full_retry_cycles", s.hub.region_full_retry_cycles},
          {"hub.rpm_entries_per_peer", s.hub.rpm_entries_per_peer},
          {"hub.rpm_timer_cycles", s.hub.rpm_timer_cycles},
          {"hub.rpm_pick_cycles", s.hub.rpm_pick_cycles},
          {"hub.congestion_packets", s.hub.congestion_packets},
          {"hub.dam_ready_latency_ns", s.hub.dam_ready_latency_ns},
          {"sim.sync_quantum_ns", s.sim.sync_quantum_ns},
          {"sim.timeline_bin_us", s.sim.timeline_bin_us},
          {"sim.hbm_slice_bytes", s.sim.hbm_slice_bytes},
          {"sim.response_window_ns", s.sim.response_window_ns}};
}

std::vector<std::pair<const char*, double>> fields(const moehub::ModelConfig& m) {
  return {{"hidden_size", m.hidden_size},         {"expert_ffn_size", m.expert_ffn_size},
          {"num_experts", m.num_experts},         {"top_k", m.top_k},
          {"shared_expert_ffn_size", m.shared_expert_ffn_size},
          {"num_layers", m.num_layers},           {"dtype_bytes", m.dtype_bytes}};
}

void check_system(const moehub::SystemConfig& s) {
  for (const auto& [key, value] : fields(s)) check(ConfigKind::kSystem, key, value);
  const auto& n = s.nvlink;
  if (n.max_payload_bytes % n.flit_bytes != 0) violation("max_payload_bytes is not a multiple of flit_bytes");
  if (n.credits_flits < n.header_flits + n.max_payload_bytes / n.flit_bytes) {
    violation("credits_flits below one maximum packet");
  }
  if (s.name.empty() || s.gpu.name.empty()) violation("empty name");
  if (s.hub.rat_entries % s.hub.rat_banks != 0) violation("rat_entries is not a multiple of rat_banks");
}

void check_model(const moehub::ModelConfig& m) {
  for (const auto& [key, value] : fields(m)) check(ConfigKind::kModel, key, value);
  if (m.top_k > m.num_experts) violation("top_k > num_experts");
}

}  // namespace

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  // the numbers of the input: runs of [-+.0-9eE] right after ": "
  std::vector<std::pair<std::size_t, std::size_t>> numbers;
  for (std::size_t i = 0; i + 2 < size; ++i) {
    if (data[i] != ':' || data[i + 1] != ' ') continue;
    std::size_t end = i + 2;
    while (end < size && std::strchr("-+.0123456789eE", data[end]) != nullptr && data[end] != '\0') ++end;
    if (end > i + 2) numbers.emplace_back(i + 2, end);
  }
  if (numbers.empty()) return LLVMFuzzerMutate(data, size, max_size);
  static const char* const kValues[] = {"0", "-0", "-1", "1", "2", "0.5", "-0.5", "1e-9", "0.0000001",
                                        "1e9", "1e10", "1e308", "-1e308", "4.9e-324", "65537", "2147483647",
                                        "2147483648", "1073741825", "100001", "1000000001"};
  const auto [begin, end] = numbers[rng() % numbers.size()];
  std::string value = kValues[rng() % std::size(kValues)];
  if (rng() % 4 == 0) {  // the old number, scaled
    value = std::string(reinterpret_cast<const char*>(data) + begin, end - begin) +
            (rng() % 2 ? "000000" : "e-6");
  }
  const std::size_t new_size = size - (end - begin) + value.size();
  if (new_size > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memmove(data + begin + value.size(), data + end, size - end);
  std::memcpy(data + begin, value.data(), value.size());
  return new_size;
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f) {
    std::fprintf(stderr, "fuzz_config: cannot read %s\n", path.c_str());
    std::abort();
  }
  return ss.str();
}

std::string& shipped_system() {
  static std::string text;
  return text;
}

std::string& shipped_model() {
  static std::string text;
  return text;
}

/// The input's override lines ("system.KEY=VALUE" / "model.KEY=VALUE"), at most 8.
std::vector<moehub::ConfigOverride> override_lines(const std::string& text) {
  std::vector<moehub::ConfigOverride> out;
  std::istringstream in(text);
  std::string line;
  while (out.size() < 8 && std::getline(in, line)) {
    if (line.rfind("system.", 0) != 0 && line.rfind("model.", 0) != 0) continue;
    try {
      out.push_back(moehub::parse_config_override(line));
    } catch (const moehub::ConfigError&) {
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  shipped_system() = slurp(MOEHUB_CONFIG_DIR "/systems/dgx-h800.yaml");
  shipped_model() = slurp(MOEHUB_CONFIG_DIR "/models/mixtral-8x7b.yaml");
  // the oracle must know every key of the table
  moehub::SystemConfig s;
  moehub::ModelConfig m;
  if (fields(s).size() + fields(m).size() != moehub::key_range_count()) {
    std::fprintf(stderr, "fuzz_config: the oracle's field list does not cover the range table\n");
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    check_system(moehub::parse_system_config(text, "fuzz.yaml"));
  } catch (const moehub::ConfigError&) {
  }
  try {
    check_model(moehub::parse_model_config(text, "fuzz.yaml"));
  } catch (const moehub::ConfigError&) {
  }
  const std::vector<moehub::ConfigOverride> overrides = override_lines(text);
  if (!overrides.empty()) {
    try {
      check_system(moehub::parse_system_config(shipped_system(), "dgx-h800.yaml", overrides));
    } catch (const moehub::ConfigError&) {
    }
    try {
      check_model(moehub::parse_model_config(shipped_model(), "mixtral-8x7b.yaml", overrides));
    } catch (const moehub::ConfigError&) {
    }
  }
  return 0;
}
