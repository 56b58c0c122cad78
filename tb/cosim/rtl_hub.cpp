#include "rtl_hub.hpp"

#include <memory>

#include "golden/aau.hpp"
#include "golden/dam.hpp"
#include "golden/hub_functions.hpp"
#include "golden/rpm.hpp"
#include "rtl_aau.hpp"
#include "rtl_rpm.hpp"

namespace moehub::cosim {

void register_rtl_hub(const std::string& trace_dir) {
  golden::register_hub_implementation("rtl", [trace_dir](const golden::HubParams& p) {
    golden::HubFunctions f;
    auto aau = std::make_unique<RtlAddressAllocationUnit>(golden::aau_params_from(p));
    auto rpm = std::make_unique<RtlRuntimePacketManager>(golden::rpm_params_from(p));
    if (!trace_dir.empty()) {
      const std::string stem = trace_dir + "/gpu" + std::to_string(p.gpu);
      aau->trace_to(stem + "_aau.fst");
      rpm->trace_to(stem + "_rpm.fst");
    }
    f.ingress = std::move(aau);
    f.egress = std::move(rpm);
    f.completion = std::make_unique<golden::DataAvailabilityManager>();
    return f;
  });
}

}  // namespace moehub::cosim
