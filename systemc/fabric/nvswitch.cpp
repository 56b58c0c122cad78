#include "fabric/nvswitch.hpp"

#include <stdexcept>
#include <string>

#include "common/sc_time_util.hpp"

namespace moehub {

NvSwitch::NvSwitch(const sc_core::sc_module_name& name, int num_gpus, const NvswitchConfig& cfg)
    : TlmBlock(name),
      in("gpu2sw", static_cast<std::size_t>(num_gpus)),
      out("sw2gpu", static_cast<std::size_t>(num_gpus)),
      crossing_(to_sc(ns_to_ticks(cfg.crossing_latency_ns))) {
  for (auto& s : in) s.bind(*this);
  for (auto& s : out) s.bind(*this);
}

void NvSwitch::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  auto* ext = gp.get_extension<MoePacketExt>();
  if (ext->dst_gpu < 0 || static_cast<std::size_t>(ext->dst_gpu) >= out.size()) {
    throw std::logic_error(std::string(name()) + ": packet to unknown GPU " +
                           std::to_string(ext->dst_gpu));
  }
  ++packets_;
  delay += crossing_;
  ext->ready = now_ticks() + to_ticks(delay);
  out[static_cast<std::size_t>(ext->dst_gpu)]->b_transport(gp, delay);
  // the output port began sending at link_start: the packet left our input buffer then
  ext->buffer_exit = ext->link_start;
}

}  // namespace moehub
