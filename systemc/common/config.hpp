// Configuration structures for systems, models and workloads.
//
// Every field carries its unit in its name. The defaults below are those of
// the shipped default system (configs/systems/dgx-h800.yaml, where each
// number's source is given); runs always load a YAML file, the defaults serve
// code that builds a config by hand. The YAML files under configs/
// mirror these structures key for key (same names, same nesting); the loader
// (config_loader.hpp) rejects missing keys, unknown keys, wrong types and
// values out of range, naming the file and the key. The ranges noted on the
// fields below are lower bounds only; the full allowed range of every numeric
// key (upper bounds included) is the table in config_ranges.cpp, shown in
// docs/configs.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moehub {

/// Efficiency of a GEMM on the tensor cores as a function of its shape.
/// eff(M, N, K) = max_efficiency * M/(M + m_half) * N/(N + n_half) * K/(K + k_half)
/// where M is the token (row) count and N, K the weight dimensions. The
/// half-saturation constants say at which size a dimension reaches half of its
/// asymptotic efficiency.
struct GemmEfficiencyConfig {
  double max_efficiency = 0.757; ///< fraction of peak at large shapes, (0, 1]
  double m_half = 0;            ///< rows at which the M factor is 0.5, >= 0
  double n_half = 96;           ///< >= 0
  double k_half = 384;          ///< >= 0
};

struct GpuConfig {
  std::string name;
  int num_sms = 132;                          ///< streaming multiprocessors, >= 1
  double sm_clock_ghz = 1.98;                ///< SM clock, > 0
  double dense_bf16_tflops = 989.4;           ///< whole-chip dense bf16 tensor rate, > 0
  GemmEfficiencyConfig gemm;                  ///< shape-dependent efficiency
  int gemm_tile_m = 128;                      ///< output tile rows per thread block, >= 1
  int gemm_tile_n = 128;                      ///< output tile columns per thread block, >= 1
  double remote_store_bytes_per_cycle_per_sm = 64;  ///< store issue limit towards the hub, > 0
  double hbm_bw_gbps = 3350;                  ///< HBM bandwidth, > 0
  double hbm_latency_ns = 500;                ///< HBM access latency, >= 0
  double memory_kernel_efficiency = 0.88;     ///< achieved fraction of hbm_bw for streaming kernels, (0, 1]
  double xbar_bw_gbps = 5000;                 ///< crossbar bandwidth between hub and L2/HBM side, > 0
  double xbar_latency_ns = 100;               ///< crossbar traversal latency, >= 0
  double hub_latency_ns = 20;                 ///< hub processing latency per packet, >= 0
};

struct NvlinkConfig {
  int flit_bytes = 16;                 ///< bytes per flit, >= 1
  int max_payload_bytes = 128;         ///< largest payload of one packet, multiple of flit_bytes
  int header_flits = 1;                ///< header flits per packet, >= 0
  int ack_flits = 1;                   ///< flits of a write response on the reverse direction, >= 0
  double bw_gbps_per_direction_per_gpu = 200;  ///< all of one GPU's links together, one direction, > 0
  double gpu_switch_latency_ns = 250;  ///< one-way GPU <-> switch latency (wire + PHY + port), >= 0
  int credits_flits = 2048;            ///< receive-buffer credits of each link endpoint, in flits, >= max packet flits
  /// Write responses: "shared" (they take the data's credits and report their
  /// release, one channel) or "own" (a channel of their own whose receivers
  /// always take them: no credits, no release reports)
  std::string response_channel = "shared";
};

/// How a switch chip queues packets between its inputs and outputs
/// (docs/ARCHITECTURE.md, "The NVLink fabric"; docs/results/switch-models.md).
enum class SwitchMicroarchitecture {
  kOutputQueued,  ///< "output-queued": a packet reaches its output's queue on arrival (ideal crossbar)
  kInputQueued,   ///< "input-queued": one FIFO per input; its head blocks what is behind it
  kVoq,           ///< "voq": per input one queue per output (virtual output queues)
};

struct NvswitchConfig {
  int num_switches = 4;            ///< switch chips; each GPU has one port on each, >= 1
  double crossing_latency_ns = 0;  ///< extra latency inside a switch chip, >= 0
  SwitchMicroarchitecture microarchitecture = SwitchMicroarchitecture::kOutputQueued;
  /// crossbar rate over the input link rate (input-queued, voq; unused by
  /// output-queued, whose crossbar is ideal), in [1, 64]
  double internal_speedup = 1.0;
};

/// The config name of a switch microarchitecture ("output-queued", ...).
const char* to_string(SwitchMicroarchitecture m);

struct HostConfig {
  double kernel_launch_us = 4;     ///< host-side cost of one kernel launch, >= 0
  double stream_sync_us = 15;      ///< device-to-host copy + stream synchronisation, >= 0
  double collective_setup_us = 10; ///< host/NCCL overhead to start one all-to-all, >= 0
};

/// The GPU hub: which implementation of its functions runs, its clock, and
/// the parameters of the MoE-Hub units (read for every implementation, used
/// by "moehub"; docs/moehub-units.md gives their meaning and sources).
struct HubConfig {
  std::string implementation = "address-centric";  ///< "address-centric" (conventional hub) or "moehub"
  double clock_ghz = 1.5;            ///< hub clock (cycle-annotated functions), > 0
  int write_buffer_entries = 64;     ///< egress write-buffer entries (packets) before stores stall, >= 1
  int rat_entries = 4096;            ///< Row Allocation Table entries, a multiple of rat_banks
  int rat_banks = 16;                ///< RAT banks, >= 1
  int rat_ports_per_bank = 2;        ///< accesses per bank and cycle, >= 1
  int rat_lookup_cycles = 1;         ///< one RAT access, >= 0
  int rat_restore_cycles = 750;      ///< restore of a spilled entry from device memory, >= 0
  int rat_spill_entry_bytes = 8;     ///< metadata bytes of one spilled entry, >= 1
  /// What the RAT knows of its spilled entries: "exact" (which RowIDs it
  /// spilled: a miss of any other row allocates without reading memory) or
  /// "region" (one bit per region: once a region has spilled, every miss in
  /// it reads the spill area first, as the RTL does)
  std::string rat_spill_record = "exact";
  int apt_regions = 64;              ///< Allocation Pointer Table slots (rowsp regions), >= 1
  int apt_alloc_cycles = 1;          ///< one LocalRowID allocation, >= 0
  std::string region_full = "stall"; ///< a full rowsp region: "stall" or "error"
  int region_full_retry_cycles = 64; ///< stall: the write is offered again after, >= 1
  int rpm_entries_per_peer = 64;     ///< packet-manager write-buffer entries per peer GPU, >= 1
  int rpm_timer_cycles = 64;         ///< bypass timer of a partial entry, >= 0
  bool rpm_hold_partial = true;      ///< partial entries wait for merging until the timer
  int rpm_pick_cycles = 1;           ///< one scheduler decision, >= 0
  /// Writes in flight to one peer at which the hub's egress counts the peer
  /// congested and takes other peers' stores first (the packet manager, and
  /// the conventional hub's FIFO with fifo_passes_congested), holding its data
  /// while every store it holds is for a congested peer: a window of writes in
  /// flight per peer. 0: twice the GPU's egress bandwidth-delay product over an
  /// unloaded write round trip (the default). >= 0.
  int congestion_packets = 0;
  /// The conventional hub's FIFO lets stores to uncongested peers pass older
  /// stores to congested ones (the window of congestion_packets). false (the
  /// default): stores leave in issue order whatever the congestion, as in the
  /// MoE-Hub paper's baseline.
  bool fifo_passes_congested = false;
  double dam_ready_latency_ns = 10;  ///< DAM Ready signal to the thread-block scheduler, >= 0
};

struct SimConfig {
  std::string granularity = "packet";  ///< "packet" (reference) or "row"
  std::string bulk_granularity = "row";  ///< bulk transfers (ring hops): "packet" or "row"
  double sync_quantum_ns = 10;         ///< TLM temporal-decoupling quantum, > 0
  double timeline_bin_us = 1;          ///< width of link-utilisation counter bins, > 0
  int hbm_slice_bytes = 65536;         ///< HBM flows are served in slices of this size, >= 128
  /// Write responses that one consumer owes one producer for one transfer on
  /// one plane, completed within this window of the first, travel as one
  /// transaction of all their flits, leaving at the window's end. 0 (the
  /// reference): one transaction per response. >= 0.
  double response_window_ns = 0;
};

struct SystemConfig {
  std::string source_file;  ///< where it was loaded from (for messages)
  /// The overrides applied on top of source_file, in order, as "KEY=VALUE"
  /// with KEY a dotted key of this config (moehub-sim --set system.KEY=VALUE).
  std::vector<std::string> overrides;
  std::string name;
  int num_gpus = 8;  ///< >= 2
  GpuConfig gpu;
  NvlinkConfig nvlink;
  NvswitchConfig nvswitch;
  HostConfig host;
  HubConfig hub;
  SimConfig sim;
};

struct ModelConfig {
  std::string source_file;
  std::vector<std::string> overrides;  ///< as SystemConfig::overrides (--set model.KEY=VALUE)
  std::string name;
  int hidden_size = 4096;       ///< model hidden dimension H, >= 1
  int expert_ffn_size = 14336;  ///< expert intermediate width F, >= 1
  int num_experts = 8;          ///< routed experts E, >= 1
  int top_k = 2;                ///< experts per token, 1..num_experts
  int shared_expert_ffn_size = 0;  ///< width of the shared expert FFN, 0 = none
  int num_layers = 32;          ///< layers of the full model (for reports)
  int dtype_bytes = 2;          ///< activation / weight element size (bf16 = 2), >= 1
};

struct WorkloadConfig {
  std::int64_t tokens = 8192;  ///< total tokens over all GPUs, >= 1
  std::uint64_t seed = 1;
  std::string distribution = "normal";  ///< "normal" (imbalance_std) or "zipf" (zipf_s)
  double imbalance_std = 0.0;  ///< std of per-expert load fractions, >= 0
  double zipf_s = 1.0;         ///< Zipf exponent over expert ranks, >= 0
};

}  // namespace moehub
