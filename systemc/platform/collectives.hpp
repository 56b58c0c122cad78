// The all-to-all transfers of a run: rendezvous and traffic generation.
//
// A GPU joins a transfer when its stream reaches it: its local rows (src ==
// dst) are copied through HBM, and a StoreStream with its rows to every peer
// starts feeding its hub; the rows towards a peer flow once that peer has
// joined too (both sides ready, as a collective's handshake requires). A
// GPU's part is complete when its local copy is done, all its packets have
// arrived and all its own writes are answered (counted by the Scoreboard).
// Transfers marked `bulk` (ring hops' weights and accumulators) use
// sim.bulk_granularity, all others sim.granularity.
#pragma once

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "gpu/hub.hpp"
#include "gpu/memory_flows.hpp"
#include "gpu/sm_array.hpp"
#include "gpu/store_stream.hpp"
#include "platform/scoreboard.hpp"
#include "workload/schedule.hpp"

namespace moehub {

class Collectives {
 public:
  Collectives(const Schedule& schedule, const SystemConfig& sys, Scoreboard& scoreboard);
  /// The GPUs' hubs, SM arrays and HBMs (once they exist).
  void attach(std::vector<Hub*> hubs, std::vector<SmArray*> sms, std::vector<MemoryFlows*> hbm);

  /// GPU `g` starts its part of transfer `c` now.
  void join(int c, int g);
  /// Notified when GPU g's part of transfer c is complete.
  sc_core::sc_event& done_event(int c, int g);

  /// Rendezvous checks: every GPU joined and completed every transfer.
  std::vector<std::string> verify() const;

 private:
  struct PerGpu {
    bool joined = false;
    bool done = false;
    bool local_done = false;
    Tick local_at = 0;
    std::unique_ptr<StoreStream> stream;
    std::unique_ptr<sc_core::sc_event> done_ev;
  };
  struct State {
    const AllToAll* spec = nullptr;
    std::vector<PerGpu> gpus;
  };
  void check_done(int c, int g);

  PacketFormat fmt_;
  std::string granularity_, bulk_granularity_;
  Tick sm_to_hub_;
  Scoreboard& scoreboard_;
  std::vector<Hub*> hubs_;
  std::vector<SmArray*> sms_;
  std::vector<MemoryFlows*> hbm_;
  std::vector<State> states_;
};

}  // namespace moehub
