// The conventional, address-centric hub: a store's address is where it goes.
//
// - Ingress: the address is taken as it is (row stores are not understood:
//   they are rejected as a logic error).
// - Egress: a FIFO write buffer of `write_buffer_entries` packets; stores
//   leave in the order they were issued, with no merging. The congestion
//   signal is ignored: a store to a backed-up peer holds back the stores
//   behind it, as in the MoE-Hub paper's baseline (its Fig. 5). With
//   `passes_congested` (hub.fifo_passes_congested) the buffer is searched for
//   the oldest store to an uncongested peer instead, and holds its data while
//   every store it holds is for a congested peer.
// - Completion: signals nothing (consumers poll flags in software).
#pragma once

#include <deque>

#include "golden/hub_functions.hpp"

namespace moehub::golden {

class AddressCentricIngress : public IngressFunction {
 public:
  IngressResult on_write(const StoreRequest& w, Tick now) override;
};

class AddressCentricEgress : public EgressFunction {
 public:
  AddressCentricEgress(std::uint32_t entries, bool passes_congested)
      : entries_(entries), passes_congested_(passes_congested) {}
  bool can_accept(const StoreRequest& s, Tick now) const override;
  void accept(const StoreRequest& s, Tick now) override;
  bool pick(Tick now, const std::vector<std::uint8_t>& congested, EgressPick& out) override;
  Tick next_event(Tick) const override { return kNever; }
  std::size_t occupancy() const override { return count_; }

 private:
  std::uint32_t entries_;
  bool passes_congested_;
  std::deque<StoreRequest> fifo_;
  std::size_t count_ = 0;  ///< = fifo_.size(), asked for on every decision (a deque computes it)
};

class NoCompletion : public CompletionFunction {
 public:
  void on_write_complete(const StoreRequest&, Tick, std::vector<ReadySignal>&) override {}
};

}  // namespace moehub::golden
