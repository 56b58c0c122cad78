// The TLM-2.0 payload extension that carries MoE packet fields.
//
// Every transaction that crosses the hub, NVLink and NVSwitch is a
// tlm_generic_payload (command, address, data length) plus this extension,
// which says where the packet goes, what row of which phase it belongs to,
// how many flits it occupies, and returns per-hop timing that flow control
// needs (when the packet left a receiver's input buffer).
#pragma once

#include <tlm>

#include <cstdint>

#include "common/units.hpp"

namespace moehub {

enum class PacketKind : std::uint8_t {
  kWrite,     ///< remote store carrying payload
  kResponse,  ///< write response travelling back to the producer
};

struct MoePacketExt : tlm::tlm_extension<MoePacketExt> {
  PacketKind kind = PacketKind::kWrite;
  std::int32_t src_gpu = 0;   ///< producer GPU
  std::int32_t dst_gpu = 0;   ///< consumer GPU
  std::int32_t plane = 0;     ///< NVSwitch chip the packet crosses
  std::int32_t phase = 0;     ///< index of the collective the packet belongs to
  std::int64_t row_id = -1;   ///< global row (token-expert pair) index within the phase
  std::uint32_t row_offset = 0;     ///< byte offset of the payload within its row
  std::uint32_t payload_bytes = 0;  ///< bytes of data carried
  std::uint32_t flits = 0;          ///< flits on the wire, header included
  std::uint32_t packets = 1;        ///< NVLink packets this transaction stands for (>1 at row granularity)
  // per-hop timing, written by the fabric on the way
  Tick ready = 0;         ///< when the packet was ready for the port it is entering (for stall accounting)
  Tick link_start = 0;    ///< when the last link began transmitting the packet
  Tick buffer_exit = 0;   ///< when the packet left the receiver's input buffer (credit release)
  Tick delivered_at = 0;  ///< when a write reached its consumer's memory side

  tlm::tlm_extension_base* clone() const override { return new MoePacketExt(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const MoePacketExt&>(other);
  }
};

}  // namespace moehub
