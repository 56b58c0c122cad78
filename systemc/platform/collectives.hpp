// Bookkeeping of the all-to-all collectives of a run: who has joined, which
// rows have arrived where, when each GPU's part is complete, and the
// end-of-run self-checks (every byte sent arrives exactly once at the GPU it
// was meant for; every row is delivered exactly once).
#pragma once

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "gpu/hub.hpp"
#include "gpu/sm_array.hpp"
#include "gpu/store_stream.hpp"
#include "workload/schedule.hpp"

namespace moehub {

class Collectives : public TrafficSink {
 public:
  /// `packets_per_transaction`: 1 at packet granularity; 0 at row granularity
  /// (one transaction per row and NVSwitch plane).
  Collectives(const Schedule& schedule, int num_gpus, PacketFormat fmt, std::uint32_t packets_per_transaction);
  /// The GPUs' hubs and SM arrays (once they exist).
  void attach(std::vector<Hub*> hubs, std::vector<SmArray*> sms);

  /// GPU `g` starts its part of collective `c` now; `local_done` is when its
  /// local rows (src == dst) have been copied.
  void join(int c, int g, Tick local_done);
  /// Notified when GPU g's part of collective c is complete.
  sc_core::sc_event& done_event(int c, int g);

  void on_delivered(const MoePacketExt& write, Tick t) override;
  void on_acknowledged(const MoePacketExt& response, Tick t) override;

  /// End-of-run checks; returns one message per violation (empty = pass).
  std::vector<std::string> verify() const;

  struct Totals {
    double payload_bytes_sent = 0;      ///< over the fabric
    double payload_bytes_received = 0;  ///< over the fabric
    double local_bytes = 0;             ///< copied within a GPU
    std::uint64_t data_packets = 0;
    std::int64_t rows_delivered = 0;
  };
  Totals totals() const;

 private:
  struct PerGpu {
    bool joined = false;
    bool done = false;
    Tick join_time = 0;
    Tick local_done = 0;
    Tick last = 0;
    std::uint64_t expect_recv = 0, recv = 0;
    std::uint64_t expect_acks = 0, acks = 0;
    std::unique_ptr<StoreStream> stream;
    std::unique_ptr<sc_core::sc_event> done_ev;
  };
  struct State {
    const AllToAll* spec = nullptr;
    std::vector<PerGpu> gpus;
    std::vector<std::uint32_t> bytes_at_row;  ///< payload bytes received per row id
    std::vector<std::uint8_t> arrivals_ok;    ///< 0: never / wrong GPU seen
    double sent = 0, received = 0, local = 0;
    std::uint64_t packets = 0;
    std::vector<std::string> errors;
  };
  void check_done(State& s, int g);

  PacketFormat fmt_;
  std::uint32_t packets_per_transaction_;
  std::vector<Hub*> hubs_;
  std::vector<SmArray*> sms_;
  std::vector<State> states_;
};

}  // namespace moehub
