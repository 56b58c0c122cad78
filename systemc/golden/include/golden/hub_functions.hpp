// The functions of a GPU hub, as interfaces: plain C++17, no SystemC or TLM.
//
// The TLM hub (systemc/gpu/hub) owns one implementation of each and calls it
// in time order; what a function computes is here, how long it takes is the
// cycle count it returns (converted with hub.clock_ghz) plus the platform's
// configured latencies. The same interfaces are implemented by the
// behavioural models of the MoE-Hub units and by the adapters around the
// Verilated RTL, so that either can stand in for the other.
//
// Call order guarantees the platform gives every implementation:
// - IngressFunction::on_write is called in non-decreasing arrival time;
// - EgressFunction calls carry non-decreasing `now`;
// - CompletionFunction::on_write_complete is called in non-decreasing
//   completion time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "golden/store.hpp"

namespace moehub::golden {

struct RpmStats;  // golden/rpm.hpp

/// Consumer side: what happens to a write that arrives from the fabric.
struct IngressResult {
  bool accepted = true;            ///< false: not taken now (the hub stalls its input), retry at retry_at
  Tick retry_at = 0;               ///< when to offer it again (accepted == false)
  std::uint64_t address = 0;       ///< physical address the payload is written to
  std::int64_t local_row_id = -1;  ///< row stores: the row's LocalRowID
  std::uint32_t cycles = 0;        ///< hub cycles the ingress pipeline is busy with this write (0: fully pipelined)
  std::uint64_t metadata_read_bytes = 0;   ///< device-memory traffic of the function (restores)
  std::uint64_t metadata_write_bytes = 0;  ///< (spills)
};

class IngressFunction {
 public:
  virtual ~IngressFunction() = default;
  /// A write reached the hub's input at `now`.
  virtual IngressResult on_write(const StoreRequest& w, Tick now) = 0;
};

/// Producer side: the write buffer between the SMs' stores and the NVLink ports.
struct EgressPick {
  StoreRequest store;        ///< the packet to send (a merge of one or more stores)
  std::uint32_t merged = 1;  ///< stores it carries
  std::uint32_t cycles = 0;  ///< hub cycles the egress is busy with this decision (0: fully pipelined)
};

class EgressFunction {
 public:
  virtual ~EgressFunction() = default;
  /// Whether `s` can enter the buffer at `now` (false: the issuing SM stalls).
  virtual bool can_accept(const StoreRequest& s, Tick now) const = 0;
  /// Takes `s` into the buffer (only after can_accept returned true).
  virtual void accept(const StoreRequest& s, Tick now) = 0;
  /// The next packet to send at `now`, removed from the buffer; false if none
  /// may leave now. `congested[d]` tells that the ports towards GPU d cannot
  /// take a packet now (the implementation may prefer other peers).
  virtual bool pick(Tick now, const std::vector<std::uint8_t>& congested, EgressPick& out) = 0;
  /// The earliest time after `now` at which pick() could return a packet it
  /// cannot return at `now` without any new accept (a flush timer); kNever if none.
  virtual Tick next_event(Tick now) const = 0;
  /// Stores held in the buffer.
  virtual std::size_t occupancy() const = 0;
  /// Hub cycles one pick() takes (EgressPick::cycles). The hub decides a
  /// port's next packet this long before the port can start it, as a
  /// pipelined picker would, so that picking does not add to every packet.
  virtual std::uint32_t pick_cycles() const { return 0; }
  /// The packet manager's counters, for an implementation that keeps them
  /// (the RPM and its RTL stand-in; a wrapper forwards its inner one's);
  /// nullptr otherwise.
  virtual const RpmStats* rpm_stats() const { return nullptr; }
};

/// Consumer side: what a completed write (its payload in memory) signals.
struct ReadySignal {
  std::int32_t kernel = -1;  ///< the consumer kernel whose thread-block group is released
  std::int32_t group = -1;
};

class CompletionFunction {
 public:
  virtual ~CompletionFunction() = default;
  /// `w` is in local memory at `now`; appends the groups it makes ready.
  virtual void on_write_complete(const StoreRequest& w, Tick now, std::vector<ReadySignal>& ready) = 0;
};

/// Parameters every implementation is built from (the hub section of the
/// system config, in plain types).
struct HubParams {
  std::int32_t gpu = 0;
  std::int32_t num_gpus = 2;
  double clock_ghz = 1.5;
  std::uint32_t write_buffer_entries = 64;
  bool fifo_passes_congested = false;  ///< the FIFO's stores to uncongested peers pass those to congested ones

  // The "moehub" implementation (aau, rat, apt, rpm, dam); sources of the
  // defaults in docs/moehub-units.md.
  std::uint32_t rat_entries = 4096;              ///< RAT entries, a multiple of rat_banks (assumption)
  std::uint32_t rat_banks = 16;                  ///< paper VI-E: a 16-bank SRAM
  std::uint32_t rat_ports_per_bank = 2;          ///< paper VI-E: dual-port
  std::uint32_t rat_lookup_cycles = 1;           ///< assumption
  std::uint32_t rat_restore_cycles = 750;        ///< assumption: 500 ns device-memory read at 1.5 GHz
  std::uint32_t rat_spill_entry_bytes = 8;       ///< assumption: one LocalRowID with a valid bit
  std::string rat_spill_record = "exact";        ///< "exact" or "region" (see RatParams::spill_record)
  std::uint32_t apt_regions = 64;                ///< APT entries (assumption)
  std::uint32_t apt_alloc_cycles = 1;            ///< assumption
  std::string region_full = "stall";             ///< full rowsp region: "stall" or "error"
  std::uint32_t region_full_retry_cycles = 64;   ///< stall: retry after (assumption)
  std::uint32_t rpm_entries_per_peer = 64;       ///< write-buffer entries per peer partition (assumption)
  std::uint32_t rpm_timer_cycles = 64;           ///< bypass timer (assumption)
  bool rpm_hold_partial = true;                  ///< partial entries wait for merging until the timer
  std::uint32_t rpm_pick_cycles = 1;             ///< assumption
};

struct HubFunctions {
  std::unique_ptr<IngressFunction> ingress;
  std::unique_ptr<EgressFunction> egress;
  std::unique_ptr<CompletionFunction> completion;
};

/// Names accepted by make_hub_functions: the built-in ones
/// ("address-centric", "moehub"), then the registered ones in name order.
std::vector<std::string> hub_implementations();
/// Builds the named implementation; throws std::invalid_argument for an unknown name.
HubFunctions make_hub_functions(const std::string& implementation, const HubParams& params);

struct AauParams;
struct RpmParams;
/// The parameters of the "moehub" implementation's AAU and RPM (also used by
/// registered implementations of the same units).
AauParams aau_params_from(const HubParams& p);
RpmParams rpm_params_from(const HubParams& p);

/// Builds the functions of one hub from its parameters.
using HubFunctionsFactory = std::function<HubFunctions(const HubParams&)>;
/// Adds an implementation that a separately built library provides (the RTL
/// co-simulation registers "rtl"); registering a name again replaces its
/// factory. The built-in names cannot be replaced (std::invalid_argument).
/// Not thread-safe: register before the first simulation is built.
void register_hub_implementation(const std::string& name, HubFunctionsFactory factory);

/// Called with every HubFunctions that make_hub_functions builds, after the
/// implementation's factory (e.g. to wrap the functions with recorders of
/// what they compute); an empty function removes it. Not thread-safe.
using HubFunctionsObserver = std::function<void(HubFunctions&, const HubParams&)>;
void set_hub_functions_observer(HubFunctionsObserver observer);

}  // namespace moehub::golden
