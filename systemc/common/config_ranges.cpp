// The table of allowed ranges of numeric config keys; see config_ranges.hpp.
#include "common/config_ranges.hpp"

#include <iterator>
#include <stdexcept>

#include "common/config_loader.hpp"

namespace moehub {

namespace {

constexpr ConfigKind S = ConfigKind::kSystem;
constexpr ConfigKind M = ConfigKind::kModel;
constexpr bool kInt = true;
constexpr bool kNum = false;
constexpr bool kIn = true;    // bound included
constexpr bool kOut = false;  // bound excluded

// Shared limits (see the header comment for the reasoning).
constexpr double kMinGbps = 1e-3;    // 1 MB/s
constexpr double kMaxGbps = 1e5;     // 100 TB/s
constexpr double kMaxNs = 1e9;       // 1 s
constexpr double kMaxUs = 1e6;       // 1 s
constexpr double kMinGhz = 1e-2;     // 10 MHz
constexpr double kMaxGhz = 100;      // 100 GHz
constexpr double kMaxDim = 1 << 20;  // model dimensions, tile sizes, packet bytes

// Document order of docs/configs.md.
constexpr KeyRange kTable[] = {
    {S, "num_gpus", kInt, 2, kIn, 1024, kIn, ""},
    {S, "gpu.num_sms", kInt, 1, kIn, 4096, kIn, ""},
    {S, "gpu.sm_clock_ghz", kNum, kMinGhz, kIn, kMaxGhz, kIn, ""},
    {S, "gpu.dense_bf16_tflops", kNum, 1e-3, kIn, 1e6, kIn, ""},
    {S, "gpu.gemm.max_efficiency", kNum, 0, kOut, 1, kIn, ""},
    {S, "gpu.gemm.m_half", kNum, 0, kIn, 1e9, kIn, ""},
    {S, "gpu.gemm.n_half", kNum, 0, kIn, 1e9, kIn, ""},
    {S, "gpu.gemm.k_half", kNum, 0, kIn, 1e9, kIn, ""},
    {S, "gpu.gemm_tile_m", kInt, 1, kIn, 65536, kIn, ""},
    {S, "gpu.gemm_tile_n", kInt, 1, kIn, 65536, kIn, ""},
    {S, "gpu.remote_store_bytes_per_cycle_per_sm", kNum, 1e-2, kIn, 4096, kIn, ""},
    {S, "gpu.hbm_bw_gbps", kNum, kMinGbps, kIn, kMaxGbps, kIn, ""},
    {S, "gpu.hbm_latency_ns", kNum, 0, kIn, kMaxNs, kIn, ""},
    {S, "gpu.memory_kernel_efficiency", kNum, 0, kOut, 1, kIn, ""},
    {S, "gpu.xbar_bw_gbps", kNum, kMinGbps, kIn, kMaxGbps, kIn, ""},
    {S, "gpu.xbar_latency_ns", kNum, 0, kIn, kMaxNs, kIn, ""},
    {S, "gpu.hub_latency_ns", kNum, 0, kIn, kMaxNs, kIn, ""},
    {S, "nvlink.flit_bytes", kInt, 1, kIn, 4096, kIn, ""},
    {S, "nvlink.max_payload_bytes", kInt, 1, kIn, kMaxDim, kIn, "a multiple of `flit_bytes`"},
    {S, "nvlink.header_flits", kInt, 0, kIn, 1024, kIn, ""},
    {S, "nvlink.ack_flits", kInt, 0, kIn, 1024, kIn, ""},
    {S, "nvlink.bw_gbps_per_direction_per_gpu", kNum, kMinGbps, kIn, kMaxGbps, kIn, ""},
    {S, "nvlink.gpu_switch_latency_ns", kNum, 0, kIn, kMaxNs, kIn, ""},
    {S, "nvlink.credits_flits", kInt, 1, kIn, 1 << 30, kIn,
     ">= `header_flits + max_payload_bytes / flit_bytes` (one maximum packet)"},
    {S, "nvswitch.num_switches", kInt, 1, kIn, 64, kIn, ""},
    {S, "nvswitch.crossing_latency_ns", kNum, 0, kIn, kMaxNs, kIn, ""},
    {S, "nvswitch.internal_speedup", kNum, 1, kIn, 64, kIn, ""},
    {S, "host.kernel_launch_us", kNum, 0, kIn, kMaxUs, kIn, ""},
    {S, "host.stream_sync_us", kNum, 0, kIn, kMaxUs, kIn, ""},
    {S, "host.collective_setup_us", kNum, 0, kIn, kMaxUs, kIn, ""},
    {S, "hub.clock_ghz", kNum, kMinGhz, kIn, kMaxGhz, kIn, ""},
    {S, "hub.write_buffer_entries", kInt, 1, kIn, 65536, kIn, ""},
    {S, "hub.rat_entries", kInt, 1, kIn, 1 << 20, kIn, "a multiple of `rat_banks`"},
    {S, "hub.rat_banks", kInt, 1, kIn, 1024, kIn, ""},
    {S, "hub.rat_ports_per_bank", kInt, 1, kIn, 64, kIn, ""},
    {S, "hub.rat_lookup_cycles", kInt, 0, kIn, 1 << 20, kIn, ""},
    {S, "hub.rat_restore_cycles", kInt, 0, kIn, 1 << 24, kIn, ""},
    {S, "hub.rat_spill_entry_bytes", kInt, 1, kIn, 4096, kIn, ""},
    {S, "hub.apt_regions", kInt, 1, kIn, 65536, kIn, ""},
    {S, "hub.apt_alloc_cycles", kInt, 0, kIn, 1 << 20, kIn, ""},
    {S, "hub.region_full_retry_cycles", kInt, 1, kIn, 1 << 24, kIn, ""},
    {S, "hub.rpm_entries_per_peer", kInt, 1, kIn, 65536, kIn, ""},
    {S, "hub.rpm_timer_cycles", kInt, 0, kIn, 1 << 24, kIn, ""},
    {S, "hub.rpm_pick_cycles", kInt, 0, kIn, 1 << 20, kIn, ""},
    {S, "hub.congestion_packets", kInt, 0, kIn, 1 << 24, kIn, ""},
    {S, "hub.dam_ready_latency_ns", kNum, 0, kIn, kMaxNs, kIn, ""},
    {S, "sim.sync_quantum_ns", kNum, 1e-3, kIn, 1e6, kIn, ""},
    {S, "sim.timeline_bin_us", kNum, 1e-3, kIn, kMaxUs, kIn, ""},
    {S, "sim.hbm_slice_bytes", kInt, 128, kIn, 1 << 30, kIn, ""},
    {S, "sim.response_window_ns", kNum, 0, kIn, 1e6, kIn, ""},
    {M, "hidden_size", kInt, 1, kIn, kMaxDim, kIn, ""},
    {M, "expert_ffn_size", kInt, 1, kIn, kMaxDim, kIn, ""},
    {M, "num_experts", kInt, 1, kIn, 65536, kIn, ""},
    {M, "top_k", kInt, 1, kIn, 1024, kIn, "<= `num_experts`"},
    {M, "shared_expert_ffn_size", kInt, 0, kIn, kMaxDim, kIn, ""},
    {M, "num_layers", kInt, 1, kIn, 10000, kIn, ""},
    {M, "dtype_bytes", kInt, 1, kIn, 16, kIn, ""},
};

}  // namespace

const KeyRange* key_ranges_begin() { return std::begin(kTable); }
const KeyRange* key_ranges_end() { return std::end(kTable); }
std::size_t key_range_count() { return std::size(kTable); }

const KeyRange& key_range(ConfigKind kind, std::string_view key) {
  for (const KeyRange& r : kTable) {
    if (r.kind == kind && key == r.key) return r;
  }
  throw std::logic_error("config key '" + std::string(key) + "' has no entry in the range table");
}

std::string describe_range(const KeyRange& r) {
  return Range::bounded(r.lo, r.lo_inclusive, r.hi, r.hi_inclusive).describe();
}

std::string describe_range_for_docs(const KeyRange& r) {
  std::string out = describe_range(r);
  if (r.constraint[0] != '\0') out += std::string(", ") + r.constraint;
  return out;
}

}  // namespace moehub
