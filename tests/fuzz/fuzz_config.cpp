// libFuzzer target: the strict YAML config loader.
//
// Each input is read as a system config and as a model config. The only
// acceptable failure is a ConfigError; any other exception, crash or sanitizer
// report is a bug. A config that loads must be plausible: every numeric key
// inside its range of the table (config_ranges.hpp) and the cross-field rules
// held. That oracle is what finds a loader with a missing bounds check (the
// planted copy built as fuzz_config_planted).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
          {"host.kernel_launch_us", s.host.kernel_launch_us},
          {"host.stream_sync_us", s.host.stream_sync_us},
          {"host.collective_setup_us", s.host.collective_setup_us},
          {"hub.clock_ghz", s.hub.clock_ghz},
          {"hub.write_buffer_entries", s.hub.write_buffer_entries},
          {"sim.sync_quantum_ns", s.sim.sync_quantum_ns},
          {"sim.timeline_bin_us", s.sim.timeline_bin_us},
          {"sim.hbm_slice_bytes", s.sim.hbm_slice_bytes}};
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
}

void check_model(const moehub::ModelConfig& m) {
  for (const auto& [key, value] : fields(m)) check(ConfigKind::kModel, key, value);
  if (m.top_k > m.num_experts) violation("top_k > num_experts");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
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
  return 0;
}
