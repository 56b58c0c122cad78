#include "gpu/sm_array.hpp"

#include <algorithm>

#include "common/sc_time_util.hpp"

namespace moehub {

SmArray::SmArray(const sc_core::sc_module_name& name, const GpuConfig& gpu, int dtype_bytes, Hub* hub)
    : sc_core::sc_module(name), sm2hbm("sm2hbm"), gpu_(gpu), compute_(gpu, dtype_bytes), hub_(hub) {
  sm2hbm.bind(*this);
}

Tick SmArray::memory_kernel(double bytes, bool write) {
  const Tick now = now_ticks();
  Tick done = now;
  // large kernels are issued as chunks of at most 1 GiB (a payload length is 32 bits)
  constexpr double kChunk = 1024.0 * 1024.0 * 1024.0;
  double left = bytes;
  while (left > 0) {
    const double n = std::min(left, kChunk);
    gp_.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    gp_.set_address(0);
    gp_.set_data_ptr(nullptr);
    gp_.set_data_length(static_cast<unsigned int>(n));
    gp_.set_streaming_width(0);
    gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    sm2hbm->b_transport(gp_, delay);
    done = std::max(done, now + to_ticks(delay));
    left -= n;
  }
  return done;
}

double SmArray::store_issue_gbps(int sms) const {
  return gpu_.remote_store_bytes_per_cycle_per_sm * gpu_.sm_clock_ghz * std::max(1, sms);
}

}  // namespace moehub
