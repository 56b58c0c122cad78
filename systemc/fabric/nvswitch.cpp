#include "fabric/nvswitch.hpp"

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

#include "common/sc_time_util.hpp"
#include "fabric/nvlink_port.hpp"

namespace moehub {

NvSwitch::NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg,
                   Tick link_latency, Tick quantum)
    : TlmBlock(name),
      in("gpu2sw", static_cast<std::size_t>(num_gpus)),
      out("sw2gpu", static_cast<std::size_t>(num_gpus)),
      arch_(cfg.microarchitecture),
      speedup_(cfg.internal_speedup),
      n_(static_cast<std::size_t>(num_gpus)),
      crossing_(ns_to_ticks(cfg.crossing_latency_ns)) {
  for (auto& s : in) s.bind(*this);
  for (auto& s : out) s.bind(*this);
  // a packet handed to an input at time P arrives no earlier than P + link
  // latency (+ serialisation), and crosses the chip in crossing_ more
  queue_ = std::make_unique<ArrivalQueue>(
      "arrivals", link_latency + crossing_, quantum,
      [this](tlm::tlm_generic_payload& gp, Tick at, Tick&) { return forward(gp, at); },
      static_cast<std::size_t>(num_gpus));
  if (arch_ != SwitchMicroarchitecture::kOutputQueued) {
    if (!(speedup_ >= 1.0)) throw std::invalid_argument(std::string(this->name()) + ": internal speedup below 1");
    ports_.assign(n_, nullptr);
    queues_.resize(arch_ == SwitchMicroarchitecture::kVoq ? n_ * n_ : n_);
    in_free_.assign(n_, 0);
    out_free_.assign(n_, 0);
    grant_next_.assign(n_, 0);
    SC_METHOD(arbitrate);
    sensitive << arb_ev_;
    dont_initialize();
  }
}

void NvSwitch::attach_output(int g, NvlinkPort* port) {
  if (arch_ == SwitchMicroarchitecture::kOutputQueued) return;
  if (g < 0 || static_cast<std::size_t>(g) >= n_ || port == nullptr) {
    throw std::logic_error(std::string(name()) + ": attach_output to an unknown output");
  }
  ports_[static_cast<std::size_t>(g)] = port;
  // the switch learns the port's state itself: no start reports, and a wake
  // when credits come back
  port->set_release_reports(false);
  port->set_credit_listener([this](Tick) { wake(now_ticks()); });
  const NvlinkConfig& c = port->config();
  out_buffer_ticks_ =
      transfer_ticks(static_cast<double>(c.credits_flits) * c.flit_bytes, port->server().bw_gbps());
}

void NvSwitch::end_of_elaboration() {
  if (arch_ == SwitchMicroarchitecture::kOutputQueued) return;
  for (std::size_t g = 0; g < n_; ++g) {
    if (ports_[g] == nullptr) {
      throw std::logic_error(std::string(name()) + ": " + to_string(arch_) + " needs the port of output " +
                             std::to_string(g) + " (attach_output)");
    }
  }
}

tlm::tlm_sync_enum NvSwitch::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  auto* ext = &moe_ext(gp);
  if (phase != tlm::BEGIN_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase");
  if (ext->dst_gpu < 0 || static_cast<std::size_t>(ext->dst_gpu) >= out.size() || ext->src_gpu < 0 ||
      static_cast<std::size_t>(ext->src_gpu) >= in.size()) {
    throw std::logic_error(std::string(name()) + ": packet between unknown GPUs " + std::to_string(ext->src_gpu) +
                           " -> " + std::to_string(ext->dst_gpu));
  }
  // one lane per input link: a link delivers in arrival order
  queue_->push(&gp, now_ticks() + to_ticks(delay) + crossing_, static_cast<std::size_t>(ext->src_gpu));
  return tlm::TLM_ACCEPTED;
}

bool NvSwitch::forward(tlm::tlm_generic_payload& gp, Tick at) {
  auto* ext = &moe_ext(gp);
  ++packets_;
  ext->ready = at;
  const auto j = static_cast<std::size_t>(ext->dst_gpu);
  if (arch_ == SwitchMicroarchitecture::kOutputQueued || !ports_[j]->takes_credits(ext->kind)) {
    // the reference, and responses on a channel of their own: straight to
    // the output port
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time d = to_sc(at - now_ticks());
    out[j]->nb_transport_fw(gp, phase, d);
    return true;
  }
  const auto i = static_cast<std::size_t>(ext->src_gpu);
  queues_[arch_ == SwitchMicroarchitecture::kVoq ? i * n_ + j : i].push_back(Waiting{&gp, at});
  ++queued_;
  wake(at);
  return true;
}

void NvSwitch::wake(Tick t) {
  const Tick now = now_ticks();
  t = std::max(t, now);
  if (t >= wake_at_) return;
  wake_at_ = t;
  arb_ev_.notify(to_sc(t - now));  // an earlier notification overrides a later one
}

Tick NvSwitch::crossing_ticks(std::uint32_t flits) const {
  const NvlinkPort& p = *ports_.front();
  return transfer_ticks(static_cast<double>(flits) * p.config().flit_bytes, p.server().bw_gbps() * speedup_);
}

Tick NvSwitch::output_takes(std::size_t j, const Waiting& w, Tick t) const {
  const std::uint32_t flits = moe_ext(*w.gp).flits;
  const Tick start = ports_[j]->earliest_start(t, flits);
  if (start == kTickMax) return kTickMax;
  // the port must start it by the time a full output buffer ahead of it has
  // drained behind the crossing's end
  const Tick slack = crossing_ticks(flits) + out_buffer_ticks_;
  return start > slack ? std::max(t, start - slack) : t;
}

std::deque<NvSwitch::Waiting>* NvSwitch::candidate(std::size_t i, std::size_t j) {
  std::deque<Waiting>& q = queues_[arch_ == SwitchMicroarchitecture::kVoq ? i * n_ + j : i];
  if (q.empty()) return nullptr;
  if (arch_ == SwitchMicroarchitecture::kInputQueued &&
      static_cast<std::size_t>(moe_ext(*q.front().gp).dst_gpu) != j) {
    return nullptr;  // the head goes elsewhere
  }
  return &q;
}

void NvSwitch::cross(std::size_t i, std::size_t j, std::deque<Waiting>& q, Tick t) {
  const Waiting w = q.front();
  q.pop_front();
  --queued_;
  auto* ext = &moe_ext(*w.gp);
  queue_wait_ += t - w.ready;
  const Tick busy = crossing_ticks(ext->flits);
  in_free_[i] = t + busy;
  out_free_[j] = t + busy;
  const Tick now = now_ticks();
  // it left its input buffer: the credits go back to the input link
  {
    tlm::tlm_phase end_req = tlm::END_REQ;
    sc_core::sc_time up = to_sc(t - now);
    in[i]->nb_transport_bw(*w.gp, end_req, up);
  }
  // it streams through the crossbar into the output buffer: the port may
  // start it now (cut-through; the crossbar is no slower than the link)
  ext->ready = t;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(t - now);
  out[j]->nb_transport_fw(*w.gp, phase, d);
}

void NvSwitch::arbitrate() {
  ++arbitrations_;
  wake_at_ = kTickMax;
  const Tick t = now_ticks();
  // free outputs in turn, each granting the first requesting free input
  // after the one it granted last
  for (std::size_t k = 0; k < n_; ++k) {
    const std::size_t j = (first_output_ + k) % n_;
    if (out_free_[j] > t) continue;
    for (std::size_t m = 0; m < n_; ++m) {
      const std::size_t i = (grant_next_[j] + m) % n_;
      if (in_free_[i] > t) continue;
      std::deque<Waiting>* q = candidate(i, j);
      if (q == nullptr || q->front().ready > t) continue;
      // the output's buffer or credits do not cover this packet now; a
      // smaller one (a write response) may still fit
      if (output_takes(j, q->front(), t) > t) continue;
      cross(i, j, *q, t);
      grant_next_[j] = (i + 1) % n_;
      break;
    }
  }
  first_output_ = (first_output_ + 1) % n_;
  if (queued_ == 0) return;
  // the next time a waiting packet may cross (an output whose credits are
  // not known to be back wakes us through its credit listener). The matching
  // is maximal: a packet whose input and output are free and that its output
  // takes was granted, so every such time lies after t.
  Tick next = kTickMax;
  for (std::size_t i = 0; i < n_; ++i) {
    for (std::size_t j = 0; j < n_; ++j) {
      std::deque<Waiting>* q = candidate(i, j);
      if (q == nullptr) continue;
      const Tick from = std::max({q->front().ready, in_free_[i], out_free_[j], t});
      const Tick at = output_takes(j, q->front(), from);
      assert(at > t && "a packet that could cross now was not granted");
      if (at != kTickMax) next = std::min(next, std::max(at, t + 1));
    }
  }
  if (next != kTickMax) wake(next);
}

tlm::tlm_sync_enum NvSwitch::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  // an output port started the packet: it left its input buffer (the
  // reference only; the other microarchitectures release it as it crosses)
  in[static_cast<std::size_t>(moe_ext(gp).src_gpu)]->nb_transport_bw(gp, phase, delay);
  return tlm::TLM_ACCEPTED;
}

void NvSwitch::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": the switch is non-blocking (nb_transport_fw)");
}

}  // namespace moehub
