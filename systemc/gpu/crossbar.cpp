#include "gpu/crossbar.hpp"

#include <stdexcept>
#include <string>

#include "common/sc_time_util.hpp"

namespace moehub {

Crossbar::Crossbar(const sc_core::sc_module_name& name, double bw_gbps, double latency_ns)
    : TlmBlock(name), server_(std::string(this->name()), bw_gbps, ns_to_ticks(latency_ns)) {
  in.bind(*this);
  out.bind(*this);
}

tlm::tlm_sync_enum Crossbar::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  const Tick now = now_ticks();
  const auto slot = server_.serve(now + to_ticks(delay), static_cast<double>(gp.get_data_length()));
  sc_core::sc_time d = to_sc(slot.done - now);
  return out->nb_transport_fw(gp, phase, d);
}

tlm::tlm_sync_enum Crossbar::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                             sc_core::sc_time& delay) {
  return in->nb_transport_bw(gp, phase, delay);
}

void Crossbar::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": the crossbar is non-blocking (nb_transport_fw)");
}

}  // namespace moehub
