#include "golden/hub_functions.hpp"

#include <stdexcept>

#include "golden/aau.hpp"
#include "golden/address_centric.hpp"
#include "golden/dam.hpp"
#include "golden/rpm.hpp"

namespace moehub::golden {

std::vector<std::string> hub_implementations() { return {"address-centric", "moehub"}; }

HubFunctions make_hub_functions(const std::string& implementation, const HubParams& p) {
  HubFunctions f;
  if (implementation == "address-centric") {
    f.ingress = std::make_unique<AddressCentricIngress>();
    f.egress = std::make_unique<AddressCentricEgress>(p.write_buffer_entries);
    f.completion = std::make_unique<NoCompletion>();
    return f;
  }
  if (implementation == "moehub") {
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
    a.apt_regions = p.apt_regions;
    a.region_full = region_full_policy_from(p.region_full);
    a.region_full_retry_cycles = p.region_full_retry_cycles;
    RpmParams r;
    r.gpu = p.gpu;
    r.num_gpus = p.num_gpus;
    r.clock_ghz = p.clock_ghz;
    r.entries_per_peer = p.rpm_entries_per_peer;
    r.timer_cycles = p.rpm_timer_cycles;
    r.hold_partial = p.rpm_hold_partial;
    r.pick_cycles = p.rpm_pick_cycles;
    f.ingress = std::make_unique<AddressAllocationUnit>(a);
    f.egress = std::make_unique<RuntimePacketManager>(r);
    f.completion = std::make_unique<DataAvailabilityManager>();
    return f;
  }
  throw std::invalid_argument("unknown hub implementation '" + implementation + "'");
}

}  // namespace moehub::golden
