#include "fabric/nvlink_port.hpp"

#include <stdexcept>

#include "common/sc_time_util.hpp"

namespace moehub {

NvlinkPort::NvlinkPort(const sc_core::sc_module_name& name, const NvlinkConfig& cfg,
                       double bw_gbps)
    : TlmBlock(name),
      in("in"),
      out("out"),
      cfg_(cfg),
      max_packet_flits_(static_cast<std::uint32_t>(cfg.max_payload_bytes / cfg.flit_bytes + cfg.header_flits)),
      latency_(ns_to_ticks(cfg.gpu_switch_latency_ns)),
      server_(std::string(this->name()), bw_gbps, latency_),
      credits_available_(static_cast<std::uint32_t>(cfg.credits_flits)) {
  in.bind(*this);
  out.bind(*this);
}

void NvlinkPort::release_until(Tick t) {
  while (!pending_.empty() && pending_.front().first <= t) {
    credits_available_ += pending_.front().second;
    pending_.pop_front();
  }
}

Tick NvlinkPort::earliest_start(Tick t, std::uint32_t flits) const {
  flits = credit_flits(flits);
  Tick start = server_.earliest_start(t);
  // credits come back in FIFO order with non-decreasing times: walk them
  // until enough are back (without taking them: this is only a question)
  std::uint32_t available = credits_available_;
  for (const auto& [when, n] : pending_) {
    if (available >= flits) break;
    available += n;
    start = std::max(start, when);
  }
  if (available < flits) {
    throw std::logic_error(std::string(name()) + ": packet larger than the receive buffer");
  }
  return start;
}

void NvlinkPort::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  auto* ext = gp.get_extension<MoePacketExt>();
  const Tick now = now_ticks();
  const Tick arrival = now + to_ticks(delay);
  const std::uint32_t flits = ext->flits;

  const Tick start = earliest_start(arrival, flits);
  release_until(start);
  // time lost waiting for credits, measured from when the packet was ready
  const Tick bw_start = server_.earliest_start(std::min(arrival, ext->ready));
  if (start > bw_start) credit_stall_ += start - bw_start;
  const auto slot = server_.serve(arrival, static_cast<double>(flits) * cfg_.flit_bytes, start);
  const std::uint32_t held = credit_flits(flits);
  credits_available_ -= held;
  ++transactions_;
  packets_ += ext->packets;
  flits_ += flits;
  if (ext->kind == PacketKind::kWrite) {
    write_packets_ += ext->packets;
    payload_bytes_ += ext->payload_bytes;
  } else {
    response_packets_ += ext->packets;
  }

  ext->link_start = slot.start;
  ext->buffer_exit = slot.done;  // a receiver that does not report keeps the arrival time
  sc_core::sc_time down = to_sc(slot.done - now);
  out->b_transport(gp, down);
  // the receiver reported when the packet left its input buffer: credits are
  // back at the transmitter one link latency later
  if (held > 0) {
    const Tick back = ext->buffer_exit + latency_;
    pending_.emplace_back(pending_.empty() ? back : std::max(back, pending_.back().first), held);
  }
  delay = down;
}

}  // namespace moehub
