#include "fabric/nvlink_port.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/sc_time_util.hpp"

namespace moehub {

NvlinkPort::NvlinkPort(const sc_core::sc_module_name& name, const NvlinkConfig& cfg, double bw_gbps)
    : TlmBlock(name),
      EgressPort(std::string(this->name()), bw_gbps, ns_to_ticks(cfg.gpu_switch_latency_ns),
                 static_cast<std::uint32_t>(cfg.max_payload_bytes / cfg.flit_bytes + cfg.header_flits),
                 static_cast<std::uint32_t>(cfg.credits_flits)),
      in("in"),
      out("out"),
      cfg_(cfg),
      latency_(ns_to_ticks(cfg.gpu_switch_latency_ns)),
      credits_total_(static_cast<std::uint32_t>(cfg.credits_flits)),
      responses_own_(cfg.response_channel == "own") {
  lanes_.resize(kLanes);
  in.bind(*this);
  out.bind(*this);
}

std::uint32_t NvlinkPort::credits_outstanding() const {
  return credits_total_ - credits_available_ - returning_flits_;
}

void NvlinkPort::release_until(Tick t) const {
  if (earliest_return_ > t) return;
  Tick earliest = kTickMax;
  for (std::uint64_t m = nonempty_; m != 0; m &= m - 1) {
    const auto i = static_cast<std::size_t>(__builtin_ctzll(m));
    Ring<Return>& lane = lanes_[i];
    while (!lane.empty() && lane.front().t <= t) {
      credits_available_ += lane.front().flits;
      returning_flits_ -= lane.front().flits;
      lane.pop_front();
    }
    if (lane.empty()) {
      nonempty_ &= ~(std::uint64_t{1} << i);
    } else {
      earliest = std::min(earliest, lane.front().t);
    }
  }
  earliest_return_ = earliest;
  // the memo stays right: moving returns into the available count changes
  // neither the total nor the time the needed amount is back
}

Tick NvlinkPort::earliest_start_short(Tick start, std::uint32_t flits) const {
  if (flits > credits_total_) {
    throw std::logic_error(std::string(name()) + ": packet larger than the receive buffer");
  }
  release_until(released_to_);
  if (credits_available_ >= flits) return start;
  const Tick credits = credits_back(flits);
  return credits == kTickMax ? kTickMax : std::max(start, credits);
}

Tick NvlinkPort::credits_back(std::uint32_t flits) const {
  if (credits_available_ + returning_flits_ < flits) return kTickMax;
  if (memo_valid_ && memo_flits_ == flits) return memo_time_;
  // take the returns in time order (a merge of the lanes) until enough are back
  std::size_t pos[kLanes];  // set for the non-empty lanes only (64 words to clear otherwise)
  for (std::uint64_t m = nonempty_; m != 0; m &= m - 1) pos[__builtin_ctzll(m)] = 0;
  std::uint32_t available = credits_available_;
  Tick when = 0;
  while (available < flits) {
    std::size_t best = kLanes;
    Tick best_t = kTickMax;
    for (std::uint64_t m = nonempty_; m != 0; m &= m - 1) {
      const auto i = static_cast<std::size_t>(__builtin_ctzll(m));
      if (pos[i] < lanes_[i].size() && lanes_[i][pos[i]].t < best_t) {
        best_t = lanes_[i][pos[i]].t;
        best = i;
      }
    }
    available += lanes_[best][pos[best]++].flits;  // there is one: the total suffices
    when = best_t;
  }
  memo_valid_ = true;
  memo_flits_ = flits;
  memo_time_ = when;
  return when;
}

bool NvlinkPort::try_send(tlm::tlm_generic_payload& gp, Tick arrival) {
  auto* ext = &moe_ext(gp);
  const std::uint32_t flits = ext->flits;
  const bool credited = takes_credits(ext->kind);
  const Tick start = credited ? earliest_start(arrival, flits) : server_.earliest_start(arrival);
  if (start == kTickMax) return false;
  const Tick now = now_ticks();
  released_to_ = start;
  if (credited && credits_available_ < credit_flits(flits)) release_until(start);
  // time lost waiting for credits, measured from when the packet was ready
  const Tick bw_start = server_.earliest_start(std::min(arrival, ext->ready));
  if (start > bw_start) credit_stall_ += start - bw_start;
  const auto slot = server_.serve(arrival, static_cast<double>(flits) * cfg_.flit_bytes, start);
  if (credited) {
    credits_available_ -= credit_flits(flits);
    memo_valid_ = false;
  }
  ++transactions_;
  packets_ += ext->packets;
  flits_ += flits;
  if (ext->kind == PacketKind::kWrite) {
    write_packets_ += ext->packets;
    payload_bytes_ += static_cast<double>(gp.get_data_length());  // = store.bytes, without reading the store's cache lines
  } else {
    response_packets_ += ext->packets;
  }
  // the sender's buffer is free once we start sending (a response on its own
  // channel held no credits there)
  if (release_reports_ && credited) {
    tlm::tlm_phase end_req = tlm::END_REQ;
    sc_core::sc_time up = to_sc(slot.start - now);
    in->nb_transport_bw(gp, end_req, up);
  }
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
  // A response on its own channel passes the data waiting for credits: a
  // waiting packet's credits are not known to come back, and a report made
  // from now on brings them back no sooner than now + the link latency,
  // which is no earlier than this arrival (a hub hands a response over when
  // it may leave, a switch at most the link latency ahead), so none of them
  // could have started before it. A switch with nvswitch.crossing_latency_ns
  // > 0 hands packets over up to that much more ahead: there a waiting packet
  // could have started up to that crossing latency before the response (0 in
  // every shipped system).
  const bool credited = takes_credits(moe_ext(gp).kind);
  if ((credited && !waiting_.empty()) || !try_send(gp, arrival)) {
    waiting_.push_back({&gp, arrival});
    ++parked_total_;
    if (moe_ext(gp).kind == PacketKind::kResponse) ++responses_parked_;
  }
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_sync_enum NvlinkPort::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                               sc_core::sc_time& delay) {
  if (phase != tlm::END_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase on the way back");
  const MoePacketExt& ext = moe_ext(gp);
  const std::uint32_t held = takes_credits(ext.kind) ? credit_flits(ext.flits) : 0;
  const Tick back = now_ticks() + to_ticks(delay) + latency_;
  if (held > 0) {
    const auto i = static_cast<std::size_t>(ext.dst_gpu) % kLanes;
    Ring<Return>& lane = lanes_[i];
    if (lane.empty() || lane.back().t <= back) {
      lane.push_back(Return{back, held});
    } else {
      insert_late(lane, Return{back, held});
    }
    nonempty_ |= std::uint64_t{1} << i;
    earliest_return_ = std::min(earliest_return_, back);
    returning_flits_ += held;
    memo_valid_ = false;
  }
  if (!waiting_.empty()) send_waiting();
  if (listener_) listener_(back);
  return tlm::TLM_ACCEPTED;
}

void NvlinkPort::insert_late(Ring<Return>& lane, const Return& r) {
  lane.insert_sorted(r, [](const Return& a, const Return& b) { return a.t < b.t; });
}

void NvlinkPort::send_waiting() {
  while (!waiting_.empty() && try_send(*waiting_.front().gp, waiting_.front().arrival)) waiting_.pop_front();
}

void NvlinkPort::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": NVLink ports are non-blocking (nb_transport_fw)");
}

}  // namespace moehub
