#include "golden/hub_functions.hpp"

#include <stdexcept>

#include "golden/address_centric.hpp"

namespace moehub::golden {

std::vector<std::string> hub_implementations() { return {"address-centric"}; }

HubFunctions make_hub_functions(const std::string& implementation, const HubParams& p) {
  HubFunctions f;
  if (implementation == "address-centric") {
    f.ingress = std::make_unique<AddressCentricIngress>();
    f.egress = std::make_unique<AddressCentricEgress>(p.write_buffer_entries);
    f.completion = std::make_unique<NoCompletion>();
    return f;
  }
  throw std::invalid_argument("unknown hub implementation '" + implementation + "'");
}

}  // namespace moehub::golden
