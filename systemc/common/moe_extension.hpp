// The TLM-2.0 payload extension that carries MoE packet fields.
//
// Every transaction that crosses the hub, NVLink and NVSwitch is a
// tlm_generic_payload (command, address, data length) plus this extension.
// `store` is the store as the hub functions see it (opcode, MallocID, RowID,
// RowOffset, priority, byte mask, LocalRowID once assigned: see
// systemc/golden/include/golden/store.hpp); the rest is transport: where the
// transaction goes, which transfer it belongs to, how many flits it occupies,
// and per-hop times that flow control and statistics need.
#pragma once

#include <tlm>

#include <cstdint>

#include "common/units.hpp"
#include "golden/store.hpp"

namespace moehub {

enum class PacketKind : std::uint8_t {
  kWrite,     ///< remote store carrying payload
  kResponse,  ///< write response travelling back to the producer
};

struct MoePacketExt : tlm::tlm_extension<MoePacketExt> {
  PacketKind kind = PacketKind::kWrite;
  std::int32_t src_gpu = 0;       ///< GPU that transmits this transaction (the consumer, for a response)
  std::int32_t dst_gpu = 0;       ///< GPU it goes to
  std::int32_t plane = 0;         ///< NVSwitch chip it crosses
  std::int32_t transfer = 0;      ///< index of the transfer (collective) the data belongs to
  std::uint32_t flits = 0;        ///< flits on the wire, header included
  std::uint32_t packets = 1;      ///< NVLink packets this transaction stands for (>1 at row granularity)
  /// A response: the valid bytes (mask bits) of the writes it answers, summed
  /// when responses travel together (sim.response_window_ns).
  std::uint32_t answered_bytes = 0;
  // per-hop times, written by the fabric on the way
  Tick ready = 0;         ///< when it was ready for the port it is entering (for stall accounting)
  Tick sent = 0;          ///< when it started on its first link (left its hub)
  Tick written = 0;       ///< a response: when the write it answers was complete in memory
  // last: the transport fields above are what every hop touches
  golden::StoreRequest store;     ///< the store (for a response: the write it answers)

  tlm::tlm_extension_base* clone() const override { return new MoePacketExt(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const MoePacketExt&>(other);
  }
};

}  // namespace moehub
