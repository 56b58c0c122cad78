#include "golden/hub_functions.hpp"

#include <map>
#include <stdexcept>
#include <utility>

#include "golden/aau.hpp"
#include "golden/address_centric.hpp"
#include "golden/dam.hpp"
#include "golden/rpm.hpp"

namespace moehub::golden {

namespace {

bool is_builtin(const std::string& name) { return name == "address-centric" || name == "moehub"; }

std::map<std::string, HubFunctionsFactory>& registered() {
  static std::map<std::string, HubFunctionsFactory> r;
  return r;
}

HubFunctionsObserver& observer() {
  static HubFunctionsObserver o;
  return o;
}

HubFunctions build(const std::string& implementation, const HubParams& p);

}  // namespace

void set_hub_functions_observer(HubFunctionsObserver o) { observer() = std::move(o); }

HubFunctions make_hub_functions(const std::string& implementation, const HubParams& p) {
  HubFunctions f = build(implementation, p);
  if (observer()) observer()(f, p);
  return f;
}

std::vector<std::string> hub_implementations() {
  std::vector<std::string> names{"address-centric", "moehub"};
  for (const auto& [name, factory] : registered()) names.push_back(name);
  return names;
}

void register_hub_implementation(const std::string& name, HubFunctionsFactory factory) {
  if (name.empty() || is_builtin(name)) {
    throw std::invalid_argument("hub implementation '" + name + "' cannot be registered (built-in or empty name)");
  }
  if (!factory) throw std::invalid_argument("hub implementation '" + name + "': no factory");
  registered()[name] = std::move(factory);
}

AauParams aau_params_from(const HubParams& p) {
  AauParams a;
  a.gpu = p.gpu;
  a.clock_ghz = p.clock_ghz;
  a.rat.entries = p.rat_entries;
  a.rat.banks = p.rat_banks;
  a.rat.ports_per_bank = p.rat_ports_per_bank;
  a.rat.lookup_cycles = p.rat_lookup_cycles;
  a.rat.apt_cycles = p.apt_alloc_cycles;
  a.rat.restore_cycles = p.rat_restore_cycles;
  a.rat.spill_entry_bytes = p.rat_spill_entry_bytes;
  a.rat.spill_record = spill_record_from(p.rat_spill_record);
  a.apt_regions = p.apt_regions;
  a.region_full = region_full_policy_from(p.region_full);
  a.region_full_retry_cycles = p.region_full_retry_cycles;
  return a;
}

RpmParams rpm_params_from(const HubParams& p) {
  RpmParams r;
  r.gpu = p.gpu;
  r.num_gpus = p.num_gpus;
  r.clock_ghz = p.clock_ghz;
  r.entries_per_peer = p.rpm_entries_per_peer;
  r.timer_cycles = p.rpm_timer_cycles;
  r.hold_partial = p.rpm_hold_partial;
  r.pick_cycles = p.rpm_pick_cycles;
  return r;
}

namespace {

HubFunctions build(const std::string& implementation, const HubParams& p) {
  HubFunctions f;
  if (implementation == "address-centric") {
    f.ingress = std::make_unique<AddressCentricIngress>();
    f.egress = std::make_unique<AddressCentricEgress>(p.write_buffer_entries, p.fifo_passes_congested);
    f.completion = std::make_unique<NoCompletion>();
    return f;
  }
  if (implementation == "moehub") {
    f.ingress = std::make_unique<AddressAllocationUnit>(aau_params_from(p));
    f.egress = std::make_unique<RuntimePacketManager>(rpm_params_from(p));
    f.completion = std::make_unique<DataAvailabilityManager>();
    return f;
  }
  const auto it = registered().find(implementation);
  if (it != registered().end()) return it->second(p);
  throw std::invalid_argument("unknown hub implementation '" + implementation + "'");
}

}  // namespace

}  // namespace moehub::golden
