// Kernels' remote stores, as they reach the hub: the SM-to-hub interface.
//
// A StoreSource is one kernel's stream of stores in the kernel's own order
// and at its own times: head() is the next store and when the SMs issue it;
// the hub takes it into its write buffer when there is room (pop with the
// time it was taken). A store taken later than it was issued is back-pressure:
// the kernel's next stores issue no earlier than that (the SMs' store queues
// are full), so a hub that stalls slows the kernel down.
//
// StoreStream is the source of an all-to-all's send side: rows to peers,
// interleaved round robin over the peers that have joined (as a collective
// that progresses all peers at once does), issued at the kernel's store rate
// (sms x bytes per cycle x clock). A peer's rows become eligible only once
// that peer has joined the collective (enable()). Every store carries the
// address of its bytes at the destination (the row's slot in the peer's
// receive region).
//
// At packet granularity every store is one NVLink packet of at most
// max_payload_bytes; at row granularity one transaction stands for a run of
// consecutive packets of a row (`packets_per_transaction` of them: the
// platform uses one run per NVSwitch plane, so that a row still spreads over
// all planes as its packets would) with the same flits on the wire and far
// fewer simulated transfers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/config.hpp"
#include "common/units.hpp"
#include "golden/store.hpp"

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

/// One store of a kernel and when the SMs issue it.
struct SourceStore {
  golden::StoreRequest store;  ///< tag = the transfer (collective) it belongs to
  Tick issue = 0;
};

class StoreSource {
 public:
  virtual ~StoreSource() = default;
  /// A store can be issued (an enabled batch still has data).
  virtual bool has_head() const = 0;
  /// The next store (valid while has_head()).
  virtual const SourceStore& head() = 0;
  /// The hub took the head into its buffer at `taken` (>= when it reached the hub).
  virtual void pop(Tick taken) = 0;
  /// Every store has been taken.
  virtual bool finished() const = 0;
};

/// Rows of one source GPU towards one destination.
struct RowBatch {
  std::int32_t dst = 0;
  const std::int64_t* rows = nullptr;  ///< global row ids, owned by the collective
  std::int64_t count = 0;
  std::uint64_t base_address = 0;      ///< destination address of the batch's first row (rows are contiguous)
};

class StoreStream : public StoreSource {
 public:
  /// `packets_per_transaction` is 1 at packet granularity; `sm_to_hub` is the
  /// time from issue to the hub (back-pressure moves the issue clock to
  /// taken - sm_to_hub).
  StoreStream(std::int32_t src_gpu, std::uint64_t transfer, const std::vector<RowBatch>& batches, std::uint32_t row_bytes,
              PacketFormat fmt, std::uint32_t packets_per_transaction, double issue_gbps, Tick start,
              Tick sm_to_hub);

  /// Rows towards `dst` may be issued from `t` on.
  void enable(std::int32_t dst, Tick t);
  bool has_head() const override { return !active_.empty(); }
  const SourceStore& head() override {
    if (!head_valid_) fill_head();
    return head_;
  }
  void pop(Tick taken) override;
  bool finished() const override { return remaining_batches_ == 0; }

 private:
  struct Cursor {
    RowBatch batch;
    std::int64_t row = 0;
    std::uint32_t offset = 0;
    Tick enabled_at = kTickMax;
  };
  void fill_head();

  std::int32_t src_gpu_;
  std::uint64_t transfer_;
  std::vector<Cursor> cursors_;
  std::vector<std::size_t> active_;  ///< enabled cursors with data left
  std::size_t rr_ = 0;
  std::uint32_t row_bytes_;
  PacketFormat fmt_;
  std::uint32_t chunk_bytes_;  ///< payload of a full transaction
  double issue_gbps_;
  Tick clock_;
  Tick sm_to_hub_;
  std::size_t remaining_batches_ = 0;
  bool head_valid_ = false;
  SourceStore head_;
  std::uint32_t memo_bytes_ = 0;  ///< issue time of a store of memo_bytes_ (0: none yet)
  Tick memo_ticks_ = 0;
  std::uint32_t memo_mask_at_ = 0;     ///< memo_mask_ = ByteMask::range(memo_mask_at_, memo_mask_bytes_)
  std::uint32_t memo_mask_bytes_ = 0;  ///< (0: none yet)
  golden::ByteMask memo_mask_;
};

/// One row a kernel stores to a peer, in the kernel's order.
struct KernelRow {
  std::int32_t dst = 0;
  std::int64_t row_id = 0;
  std::uint64_t address = 0;   ///< destination address of the row's first byte (plain stores)
  std::uint32_t bytes = 0;
  Tick ready = 0;              ///< when the kernel has the row (e.g. its token's expert is known)
  golden::Opcode op = golden::Opcode::kStore;
  bool priority = true;
  std::uint32_t malloc_id = 0;  ///< row stores: the consumer's region
  std::uint32_t offset = 0;     ///< byte offset of the first byte within the row (a column of it)
  std::uint64_t tag = 0;        ///< the platform's bookkeeping (0: the source's transfer)
};

/// The stores of a kernel that writes rows in its own order and at its own
/// times (a routing kernel's thread blocks storing each token as soon as its
/// expert is known, say): row i is issued no earlier than its ready time and
/// after row i-1, packet by packet at the kernel's store rate. No interleaving
/// across peers is added: smoothing traffic over peers is the hub's job (its
/// packet manager), not the kernel's.
class KernelStoreSource : public StoreSource {
 public:
  KernelStoreSource(std::int32_t src_gpu, std::uint64_t transfer, std::vector<KernelRow> rows, PacketFormat fmt,
                    std::uint32_t packets_per_transaction, double issue_gbps, Tick start, Tick sm_to_hub);
  /// Stores of at most `bytes` (< a packet: a warp's store; row stores to
  /// the packet manager must not cross a 128-byte line of their row).
  void set_store_bytes(std::uint32_t bytes) { chunk_bytes_ = std::max<std::uint32_t>(1, bytes); }
  bool has_head() const override { return next_ < rows_.size(); }
  const SourceStore& head() override;
  void pop(Tick taken) override;
  bool finished() const override { return next_ >= rows_.size(); }

 private:
  std::int32_t src_gpu_;
  std::uint64_t transfer_;
  std::vector<KernelRow> rows_;
  std::uint32_t chunk_bytes_;
  double issue_gbps_;
  Tick clock_;
  Tick sm_to_hub_;
  std::size_t next_ = 0;
  std::uint32_t offset_ = 0;
  bool head_valid_ = false;
  SourceStore head_;
};

}  // namespace moehub
