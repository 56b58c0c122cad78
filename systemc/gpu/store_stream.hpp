// The remote stores of one communication kernel on one GPU, in issue order.
//
// A kernel that sends rows to peers (an all-to-all's send side) runs on a
// number of SMs; each SM issues stores at a bounded rate, so the kernel as a
// whole issues at most sms * bytes_per_cycle * clock. Rows to different peers
// are interleaved packet by packet (round robin over peers, as a collective
// that progresses all peers at once does). A peer's rows become eligible only
// once that peer has joined the collective (enable()).
//
// At packet granularity every store is one NVLink packet of at most
// max_payload_bytes; at row granularity one transaction stands for a run of
// consecutive packets of a row (`packets_per_transaction` of them: the
// platform uses one run per NVSwitch plane, so that a row still spreads over
// all planes as its packets would) with the same flits on the wire and far
// fewer simulated transfers.
#pragma once

#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "common/units.hpp"

namespace moehub {

struct PacketFormat {
  std::uint32_t flit_bytes = 16;
  std::uint32_t max_payload_bytes = 128;
  std::uint32_t header_flits = 1;
  static PacketFormat from(const NvlinkConfig& c) {
    return {static_cast<std::uint32_t>(c.flit_bytes), static_cast<std::uint32_t>(c.max_payload_bytes),
            static_cast<std::uint32_t>(c.header_flits)};
  }
  /// Flits of one packet carrying `payload` bytes (payload <= max_payload_bytes).
  std::uint32_t packet_flits(std::uint32_t payload) const {
    return ceil_div(payload, flit_bytes) + header_flits;
  }
  /// Packets needed for a row of `row_bytes`.
  std::uint32_t packets_per_row(std::uint32_t row_bytes) const {
    return ceil_div(row_bytes, max_payload_bytes);
  }
  /// Flits on the wire for a whole row.
  std::uint64_t row_flits(std::uint32_t row_bytes) const {
    const std::uint32_t full = row_bytes / max_payload_bytes;
    const std::uint32_t rest = row_bytes % max_payload_bytes;
    std::uint64_t f = std::uint64_t{full} * packet_flits(max_payload_bytes);
    if (rest) f += packet_flits(rest);
    return f;
  }
};

struct StorePacket {
  std::int32_t dst = 0;
  std::int64_t row_id = 0;
  std::uint32_t row_offset = 0;
  std::uint32_t bytes = 0;
  std::uint32_t flits = 0;
  std::uint32_t packets = 1;
  Tick issue = 0;  ///< when the SMs have issued it
};

/// Rows of one source GPU towards one destination.
struct RowBatch {
  std::int32_t dst = 0;
  const std::int64_t* rows = nullptr;  ///< global row ids, owned by the collective
  std::int64_t count = 0;
};

class StoreStream {
 public:
  /// `packets_per_transaction` is 1 at packet granularity.
  StoreStream(std::vector<RowBatch> batches, std::uint32_t row_bytes, PacketFormat fmt,
              std::uint32_t packets_per_transaction, double issue_gbps, Tick start);

  /// Rows towards `dst` may be issued from `t` on.
  void enable(std::int32_t dst, Tick t);
  /// True if an enabled batch still has data.
  bool has_head() const { return !active_.empty(); }
  /// The next packet (valid while has_head()).
  const StorePacket& head();
  void pop();
  /// All batches sent.
  bool finished() const { return remaining_batches_ == 0; }
  std::uint64_t total_packets() const;

 private:
  struct Cursor {
    RowBatch batch;
    std::int64_t row = 0;
    std::uint32_t offset = 0;
    Tick enabled_at = kTickMax;
  };
  void fill_head();

  std::vector<Cursor> cursors_;
  std::vector<std::size_t> active_;  ///< enabled cursors with data left
  std::size_t rr_ = 0;
  std::uint32_t row_bytes_;
  PacketFormat fmt_;
  std::uint32_t chunk_bytes_;  ///< payload of a full transaction
  double issue_gbps_;
  Tick clock_;
  std::size_t remaining_batches_ = 0;
  bool head_valid_ = false;
  StorePacket head_;
};

}  // namespace moehub
