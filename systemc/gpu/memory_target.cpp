#include "gpu/memory_target.hpp"

#include "common/sc_time_util.hpp"

namespace moehub {

ServerTarget::ServerTarget(const sc_core::sc_module_name& name, int num_inputs, double bw_gbps,
                           double latency_ns, bool forwards)
    : TlmBlock(name),
      in("in", static_cast<std::size_t>(num_inputs)),
      server_(std::string(this->name()), bw_gbps, ns_to_ticks(latency_ns)),
      forwards_(forwards) {
  for (auto& s : in) s.bind(*this);
  if (forwards_) {
    out_ = std::make_unique<tlm::tlm_initiator_socket<>>("out");
    out_->bind(*this);
  }
}

void ServerTarget::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const Tick now = now_ticks();
  const double bytes = static_cast<double>(gp.get_data_length());
  if (gp.is_write()) {
    bytes_written_ += bytes;
  } else {
    bytes_read_ += bytes;
  }
  const auto slot = server_.serve(now + to_ticks(delay), bytes);
  delay = to_sc(slot.done - now);
  if (forwards_) (*out_)->b_transport(gp, delay);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace moehub
