#include "fabric/nvlink_port.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/sc_time_util.hpp"

namespace moehub {

NvlinkPort::NvlinkPort(const sc_core::sc_module_name& name, const NvlinkConfig& cfg, double bw_gbps)
    : TlmBlock(name),
      in("in"),
      out("out"),
      cfg_(cfg),
      max_packet_flits_(static_cast<std::uint32_t>(cfg.max_payload_bytes / cfg.flit_bytes + cfg.header_flits)),
      latency_(ns_to_ticks(cfg.gpu_switch_latency_ns)),
      server_(std::string(this->name()), bw_gbps, latency_),
      credits_available_(static_cast<std::uint32_t>(cfg.credits_flits)),
      credits_total_(static_cast<std::uint32_t>(cfg.credits_flits)) {
  in.bind(*this);
  out.bind(*this);
}

std::uint32_t NvlinkPort::credits_outstanding() const {
  return credits_total_ - credits_available_ - returning_flits_;
}

void NvlinkPort::release_until(Tick t) {
  while (!returning_.empty() && returning_.front().first <= t) {
    credits_available_ += returning_.front().second;
    returning_flits_ -= returning_.front().second;
    returning_.pop_front();
  }
}

Tick NvlinkPort::earliest_start(Tick t, std::uint32_t flits) const {
  flits = credit_flits(flits);
  if (flits > credits_total_) {
    throw std::logic_error(std::string(name()) + ": packet larger than the receive buffer");
  }
  Tick start = server_.earliest_start(t);
  if (credits_available_ >= flits) return start;
  if (credits_available_ + returning_flits_ < flits) return kTickMax;
  // walk the returns in time order until enough are back
  std::uint32_t available = credits_available_;
  for (const auto& [when, n] : returning_) {
    available += n;
    start = std::max(start, when);
    if (available >= flits) break;
  }
  return start;
}

bool NvlinkPort::try_send(tlm::tlm_generic_payload& gp, Tick arrival) {
  auto* ext = &moe_ext(gp);
  const std::uint32_t flits = ext->flits;
  const Tick start = earliest_start(arrival, flits);
  if (start == kTickMax) return false;
  const Tick now = now_ticks();
  release_until(start);
  // time lost waiting for credits, measured from when the packet was ready
  const Tick bw_start = server_.earliest_start(std::min(arrival, ext->ready));
  if (start > bw_start) credit_stall_ += start - bw_start;
  const auto slot = server_.serve(arrival, static_cast<double>(flits) * cfg_.flit_bytes, start);
  credits_available_ -= credit_flits(flits);
  ++transactions_;
  packets_ += ext->packets;
  flits_ += flits;
  if (ext->kind == PacketKind::kWrite) {
    write_packets_ += ext->packets;
    payload_bytes_ += ext->store.bytes;
  } else {
    response_packets_ += ext->packets;
  }
  ext->link_start = slot.start;
  // the sender's buffer is free once we start sending
  tlm::tlm_phase end_req = tlm::END_REQ;
  sc_core::sc_time up = to_sc(slot.start - now);
  in->nb_transport_bw(gp, end_req, up);
  // store and forward: the far end has it after serialisation and latency
  tlm::tlm_phase begin = tlm::BEGIN_REQ;
  sc_core::sc_time down = to_sc(slot.done - now);
  out->nb_transport_fw(gp, begin, down);
  return true;
}

tlm::tlm_sync_enum NvlinkPort::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                               sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase");
  const Tick arrival = now_ticks() + to_ticks(delay);
  if (!waiting_.empty() || !try_send(gp, arrival)) {
    waiting_.push_back({&gp, arrival});
    ++parked_total_;
  }
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_sync_enum NvlinkPort::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                               sc_core::sc_time& delay) {
  if (phase != tlm::END_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase on the way back");
  const std::uint32_t held = credit_flits(moe_ext(gp).flits);
  const Tick back = now_ticks() + to_ticks(delay) + latency_;
  if (returning_.empty() || returning_.back().first <= back) {
    returning_.emplace_back(back, held);
  } else {
    const auto it = std::upper_bound(returning_.begin(), returning_.end(), std::make_pair(back, ~0u));
    returning_.insert(it, {back, held});
  }
  returning_flits_ += held;
  while (!waiting_.empty() && try_send(*waiting_.front().gp, waiting_.front().arrival)) waiting_.pop_front();
  if (listener_) listener_(back);
  return tlm::TLM_ACCEPTED;
}

void NvlinkPort::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": NVLink ports are non-blocking (nb_transport_fw)");
}

}  // namespace moehub
