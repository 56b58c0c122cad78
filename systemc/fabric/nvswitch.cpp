#include "fabric/nvswitch.hpp"

#include <stdexcept>
#include <string>

#include "common/sc_time_util.hpp"

namespace moehub {

NvSwitch::NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg,
                   Tick link_latency, Tick quantum)
    : TlmBlock(name),
      in("gpu2sw", static_cast<std::size_t>(num_gpus)),
      out("sw2gpu", static_cast<std::size_t>(num_gpus)),
      crossing_(ns_to_ticks(cfg.crossing_latency_ns)) {
  for (auto& s : in) s.bind(*this);
  for (auto& s : out) s.bind(*this);
  // a packet handed to an input at time P arrives no earlier than P + link
  // latency (+ serialisation), and crosses the chip in crossing_ more
  queue_ = std::make_unique<ArrivalQueue>(
      "arrivals", link_latency + crossing_, quantum,
      [this](tlm::tlm_generic_payload& gp, Tick at, Tick&) { return forward(gp, at); },
      static_cast<std::size_t>(num_gpus));
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
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(at - now_ticks());
  out[static_cast<std::size_t>(ext->dst_gpu)]->nb_transport_fw(gp, phase, d);
  return true;
}

tlm::tlm_sync_enum NvSwitch::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  // an output port started the packet: it left its input buffer
  in[static_cast<std::size_t>(moe_ext(gp).src_gpu)]->nb_transport_bw(gp, phase, delay);
  return tlm::TLM_ACCEPTED;
}

void NvSwitch::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": the switch is non-blocking (nb_transport_fw)");
}

}  // namespace moehub
