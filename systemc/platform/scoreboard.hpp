// The scoreboard of a run's transfers: what arrived where, and the end-of-run
// self-checks.
//
// For every transfer (all-to-all) it knows each row's destination GPU and
// address (from the address map), and counts what the hubs report: every
// write that reached memory (bytes per row, at the right GPU and address),
// every write response. verify() lists every violation: rows missing,
// duplicated, misrouted or written to the wrong address, bytes sent != bytes
// received, responses missing or sent before their write was in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpu/hub.hpp"
#include "gpu/store_stream.hpp"
#include "platform/address_map.hpp"
#include "workload/schedule.hpp"

namespace moehub {

class Scoreboard : public TrafficSink {
 public:
  /// Allocates every transfer's receive region on each GPU in `map`.
  Scoreboard(const Schedule& schedule, int num_gpus, PacketFormat fmt, AddressMap& map);

  /// Destination address of row `index` of the rows src sends to dst in transfer c.
  std::uint64_t address_of(int c, int src, int dst, std::int64_t index) const;

  /// Called when GPU g's counts of transfer c change (received or
  /// acknowledged) and are complete (complete(c, g)): not for the changes
  /// before, which cannot end the transfer (a call per packet was 1.5 % of a
  /// packet-level run's instructions).
  void set_progress_listener(std::function<void(int c, int g)> f) { progress_ = std::move(f); }

  /// Local rows (src == dst) of GPU g in transfer c were copied.
  void local_copy(int c, int g);
  /// Bytes GPU g sends over the fabric in transfer c.
  void count_sent(int c, int g, double bytes);

  /// Where the writes of the MoE-Hub row transfers (tags from
  /// RowTransfers::kTagBase on) are reported instead.
  void set_row_sink(TrafficSink* sink) { row_sink_ = sink; }

  void on_delivered(const MoePacketExt& write, Tick t) override;
  void on_acknowledged(const MoePacketExt& response, Tick t) override;

  /// GPU g has received all its packets and all its writes were answered.
  bool complete(int c, int g) const;
  /// The latest time a packet of transfer c reached, or a response returned to, GPU g.
  Tick last_event(int c, int g) const;

  std::vector<std::string> verify() const;

  struct Totals {
    double payload_bytes_sent = 0;      ///< over the fabric
    double payload_bytes_received = 0;  ///< over the fabric
    double local_bytes = 0;             ///< copied within a GPU
    std::uint64_t data_packets = 0;
    std::int64_t rows_delivered = 0;
    std::uint64_t wrong_addresses = 0;
    std::uint64_t early_responses = 0;
  };
  Totals totals() const;

 private:
  struct PerGpu {
    std::uint64_t expect_recv = 0, recv = 0;
    std::uint64_t expect_acks = 0, acks = 0;
    Tick last = 0;
  };
  struct Transfer {
    const AllToAll* spec = nullptr;
    std::vector<PerGpu> gpus;
    std::vector<std::uint64_t> region;                 ///< receive region base per GPU
    std::vector<std::vector<std::int64_t>> recv_slot;  ///< [src][dst]: first slot of src's rows at dst
    std::vector<std::int64_t> slot_of_row;             ///< slot of each row id at its destination
    std::vector<std::uint32_t> bytes_at_row;
    std::vector<std::uint8_t> arrivals_ok;
    double sent = 0, received = 0, local = 0;
    std::uint64_t packets = 0, wrong_address = 0, early_responses = 0;
    std::vector<std::string> errors;
  };

  PacketFormat fmt_;
  std::vector<Transfer> transfers_;
  std::function<void(int, int)> progress_;
  TrafficSink* row_sink_ = nullptr;
};

}  // namespace moehub
