// The row transfers of the MoE-Hub schedules: regions, row-store kernels,
// data-availability signals, and their self-checks.
//
// - rowspMalloc (OpKind::kRowspMalloc): every region of the GPU is registered
//   with its hub's AAU (a MallocID naming GPU and APT slot) at a base the
//   address map lays out; with the DAM, the consumer GEMM's dependency on it
//   (rows_per_group = gpu.gemm_tile_m: one group per row of output tiles,
//   the total from the routing) is registered at the same time.
// - A row-store kernel (OpKind::kRowStores) issues its rows to peers as a
//   KernelStoreSource at their ready times (stores of store_bytes, never
//   crossing a 128-byte line); st.rowsp rows are followed by the .nop store
//   of their source-information column. A row to a local region enters the
//   hub's ingress as one local store (on_local_store); a plain row to this
//   GPU is an HBM copy. The kernel is done when its remote bytes are
//   acknowledged, its local stores are in memory and, for plain stores (a
//   combine), every row destined to this GPU has arrived.
// - Release of the consumer GEMM's groups: a DAM Ready signal (region,
//   group) raises flag dam_flag(region, group) on its GPU after
//   hub.dam_ready_latency_ns; without the DAM, software signals each step:
//   the producers count a row into its group's counter on the consumer once
//   its write is acknowledged (a fence and a remote atomic), and group g of a
//   region polls flag software_flag(region, group), raised when the group's
//   rows (LocalRowIDs g x gpu.gemm_tile_m onwards, as the DAM's groups) are
//   all in memory, plus the write response's trip back and the counter's
//   remote write (two flag latencies; approximation: the response's trip is
//   taken as one flag store's, and a local row pays the same).
// - Checks (verify): every row complete, once; all stores of a row at one
//   address (base + LocalRowID x row size); per region LocalRowIDs dense and
//   unique; plain rows at their slot; DAM: every group with rows released
//   exactly once, none of the others, AllReady once per region, and the
//   bytes it counted equal to the bytes delivered into its regions.
// - Trace (timeline.cpp): every release of a consumer group (DAM Ready,
//   AllReady, or the software flag) with its time, every region's rows over
//   time, and the hubs' RAT and RPM counters sampled when a row store is
//   delivered (RAT, consumer) or acknowledged (RPM, producer), at most once
//   per timeline bin. Recording does not change the simulation.
#pragma once

#include <systemc>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.hpp"
#include "golden/rat.hpp"
#include "golden/rpm.hpp"
#include "gpu/hub.hpp"
#include "gpu/memory_flows.hpp"
#include "gpu/sm_array.hpp"
#include "gpu/store_stream.hpp"
#include "platform/address_map.hpp"
#include "workload/schedule.hpp"

namespace moehub {

class RowTransfers : public TrafficSink {
 public:
  /// Tags of row-transfer stores start here (collectives use 0, 1, ...).
  static constexpr std::int32_t kTagBase = 1 << 20;
  /// Flags of this GPU's SmArray used for releases.
  static constexpr int kDamFlagBase = 1 << 25;
  static constexpr int kSoftwareFlagBase = 1 << 29;
  static constexpr int kMaxGroupsPerRegion = 1 << 16;

  RowTransfers(const Schedule& schedule, const SystemConfig& sys, AddressMap& map);
  void attach(std::vector<Hub*> hubs, std::vector<SmArray*> sms, std::vector<MemoryFlows*> hbm);

  int dam_flag(int region, int group) const { return kDamFlagBase + region * kMaxGroupsPerRegion + group; }
  int software_flag(int region, int group) const { return kSoftwareFlagBase + region * kMaxGroupsPerRegion + group; }

  /// OpKind::kRowspMalloc of GPU g.
  void malloc_regions(int g, const Op& op);
  /// OpKind::kRowStores of GPU g starts now; rows are ready over `window`.
  void start(int g, const Op& op, Tick window);
  sc_core::sc_event& done_event(int transfer, int g);
  /// A DAM Ready signal of GPU g's hub.
  void on_ready(int g, const golden::ReadySignal& rs, Tick t);

  void on_delivered(const MoePacketExt& write, Tick t) override;
  void on_acknowledged(const MoePacketExt& response, Tick t) override;

  /// What the timeline shows of the row transfers (see the header comment).
  struct Release {
    enum class Kind { kDamGroup, kAllReady, kSoftwareFlag };
    Kind kind = Kind::kDamGroup;
    int gpu = 0;
    int region = -1;
    int group = -1;     ///< thread-block group (kDamGroup, kSoftwareFlag)
    Tick at = 0;        ///< when the consumer's SMs see it (AllReady: when the DAM raised it)
  };
  struct RowsAt {
    int region = 0;
    Tick at = 0;
    std::int64_t rows = 0;  ///< LocalRowIDs in use after this delivery
  };
  struct RatAt {
    int gpu = 0;
    Tick at = 0;
    golden::RatStats rat;
  };
  struct RpmAt {
    int gpu = 0;
    Tick at = 0;
    golden::RpmStats rpm;
  };
  struct Trace {
    std::vector<Release> releases;
    std::vector<RowsAt> rows;
    std::vector<RatAt> rat;
    std::vector<RpmAt> rpm;
  };
  const Trace& trace() const { return trace_; }

  std::vector<std::string> verify() const;
  /// Statistics of the regions and the DAM's releases (results JSON).
  nlohmann::ordered_json stats() const;
  std::int64_t rows_delivered() const;
  /// NVLink data packets of the row transfers that reached their consumer (local stores not counted).
  std::uint64_t packets_delivered() const { return packets_; }
  /// Payload bytes the row-store kernels sent over the fabric (rows and their
  /// source columns to peers, counted when a kernel starts) and the bytes that
  /// reached a peer's memory; verify() checks that they are equal.
  std::uint64_t fabric_bytes_sent() const { return fabric_sent_; }
  std::uint64_t fabric_bytes_received() const { return fabric_received_; }
  /// Bytes that stayed within their GPU: st.rowsp rows to a local region (one
  /// local store each) and plain rows copied in HBM.
  std::uint64_t local_bytes() const { return local_bytes_; }

 private:
  struct PerGpu {
    bool started = false;
    bool done = false;
    std::uint64_t remote_bytes = 0, acked_bytes = 0;
    std::uint64_t local_stores = 0, local_done = 0;
    bool local_copy_done = true;
    std::uint64_t incoming_bytes = 0, received_bytes = 0;
    Tick last = 0;
    std::unique_ptr<KernelStoreSource> source;
    std::unique_ptr<sc_core::sc_event> done_ev;
  };
  struct Transfer {
    const RowTransfer* spec = nullptr;
    bool row_store = false;  ///< st.rowsp (else plain st)
    std::vector<PerGpu> gpus;
    std::vector<std::uint64_t> recv_base;  ///< plain st: receive buffer per GPU
    // plain st: per row id
    std::unordered_map<std::int64_t, std::int64_t> slot_of_row;
    std::vector<std::vector<std::int64_t>> row_of_slot;  ///< plain st: per GPU, the row each slot holds (-1: none)
    std::unordered_map<std::int64_t, std::uint32_t> bytes_of_row;
    std::uint64_t wrong_address = 0;
    std::int64_t expected_rows = 0;
    Tick all_done = 0;
    int gpus_done = 0;
  };
  struct RowState {
    std::uint64_t base = 0;
    std::int64_t local_row_id = -1;
    std::uint32_t bytes = 0;
    bool moved = false;  ///< a store landed at another base or got another LocalRowID
  };
  struct Region {
    const RowRegion* spec = nullptr;
    std::uint64_t base = 0;
    std::uint32_t malloc_id = 0;
    bool registered = false;
    std::vector<std::int64_t> row_of_lrid;   ///< LocalRowID -> RowID (-1: unused)
    std::uint64_t lrid_conflicts = 0;        ///< a LocalRowID given to two rows
    std::uint64_t bytes = 0;
    std::vector<std::uint8_t> released;      ///< DAM Ready signals per group
    std::vector<std::int64_t> rows_in_group;  ///< without the DAM: complete rows per group
    std::vector<std::uint8_t> flagged;        ///< without the DAM: software flags raised per group
    int all_ready = 0;
    std::int64_t groups_with_rows = 0;
    std::int64_t rows_used = 0;              ///< LocalRowIDs given to a row so far
  };
  void check_done(int transfer, int g);
  Transfer& transfer_of(std::int32_t tag);

  const Schedule& schedule_;
  PacketFormat fmt_;
  Tick sm_to_hub_;
  Tick dam_latency_;
  Tick flag_latency_;
  int tile_m_;
  std::vector<Hub*> hubs_;
  std::vector<SmArray*> sms_;
  std::vector<MemoryFlows*> hbm_;
  std::vector<Transfer> transfers_;
  std::vector<Region> regions_;
  std::unordered_map<std::uint64_t, RowState> rows_;  ///< (region, RowID) -> where it landed
  std::unordered_map<std::uint32_t, int> region_of_malloc_;  ///< MallocID (names the GPU) -> region  ///< (region, RowID) -> where it landed
  std::vector<std::string> errors_;
  std::uint64_t packets_ = 0;
  std::uint64_t fabric_sent_ = 0, fabric_received_ = 0, local_bytes_ = 0;
  Tick trace_bin_;
  std::vector<std::int64_t> rat_bin_, rpm_bin_;  ///< per GPU: last bin sampled (-1: none)
  Trace trace_;
};

}  // namespace moehub
