// A bandwidth/latency server: the contention model used for every shared
// resource (link direction, crossbar, HBM). A server has a next-free time;
// a request that arrives at `t` starts at max(t, next_free), occupies the
// server for bytes / bandwidth and leaves after the server's latency.
// Busy time is accumulated for utilisation, optionally into time bins for
// timeline counters. The bins are bounded: when a request reaches past
// max_bins bins, adjacent bins are merged pairwise and the bin width doubles
// (as often as needed), so a server holds at most max_bins counters however
// long the simulated span; readers take the width from bin_ticks().
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/units.hpp"

namespace moehub {

class BandwidthServer {
 public:
  BandwidthServer() = default;
  BandwidthServer(std::string name, double bw_gbps, Tick latency)
      : name_(std::move(name)), bw_gbps_(bw_gbps), latency_(latency) {}

  /// Earliest time a request arriving at `t` could start.
  Tick earliest_start(Tick t) const { return std::max(t, next_free_); }

  struct Slot {
    Tick start;   ///< service begins
    Tick finish;  ///< server becomes free again
    Tick done;    ///< request has left the server (finish + latency)
  };

  /// Serves `bytes` arriving at `t` (no earlier than `not_before`).
  Slot serve(Tick t, double bytes, Tick not_before = 0) {
    const Tick start = std::max({t, next_free_, not_before});
    const Tick service = service_ticks(bytes);
    next_free_ = saturating_add(start, service);
    account(start, next_free_ - start);
    bytes_ += bytes;
    ++requests_;
    return {start, next_free_, saturating_add(next_free_, latency_)};
  }

  /// Default bound on a server's utilisation bins (256 KiB of counters).
  static constexpr std::size_t kDefaultMaxBins = std::size_t{1} << 15;

  /// Enables utilisation bins of `bin` ticks (0 disables), at most `max_bins`
  /// of them (>= 1); past that the bins coarsen, see the header comment.
  void set_bin(Tick bin, std::size_t max_bins = kDefaultMaxBins) {
    bin_ = bin;
    max_bins_ = std::max<std::size_t>(1, max_bins);
    bins_.clear();
    set_span();
  }

  const std::string& name() const { return name_; }
  double bw_gbps() const { return bw_gbps_; }
  Tick latency() const { return latency_; }
  Tick next_free() const { return next_free_; }
  Tick busy() const { return busy_; }
  double bytes() const { return bytes_; }
  std::uint64_t requests() const { return requests_; }
  /// Busy ticks per bin (bin i covers [i*bin_ticks(), (i+1)*bin_ticks())).
  const std::vector<Tick>& bins() const { return bins_; }
  /// Current bin width: the configured one times 2^(coarsenings).
  Tick bin_ticks() const { return bin_; }
  std::size_t max_bins() const { return max_bins_; }

 private:
  void account(Tick start, Tick service) {
    busy_ = saturating_add(busy_, service);
    if (bin_ == 0 || service == 0) return;
    Tick t = start;
    const Tick end = start + service;  // serve() saturates it below kTickMax
    while (end - 1 >= bins_span_) coarsen();  // = (end - 1) / bin_ >= max_bins_
    // requests come in time order: the bin of the last one is usually this
    // one's too (no division per request)
    if (t < bin_lo_ || t - bin_lo_ >= bin_) {
      bin_i_ = static_cast<std::size_t>(t / bin_);
      bin_lo_ = static_cast<Tick>(bin_i_) * bin_;
    }
    for (;;) {
      if (bins_.size() <= bin_i_) bins_.resize(bin_i_ + 1, 0);
      const Tick bin_end = bin_lo_ + bin_;
      const Tick upto = std::min(end, bin_end);
      bins_[bin_i_] += upto - t;
      if (upto == end) break;
      t = upto;
      ++bin_i_;
      bin_lo_ = bin_end;
    }
  }

  /// transfer_ticks(bytes, bw_gbps_), remembered for two sizes: a server
  /// sees few sizes (a link: data packets and responses, alternating), and
  /// the conversion (a division and a rounding) is per request. A new size
  /// replaces the older of the two; a hit moves nothing.
  Tick service_ticks(double bytes) {
    if (bytes == memo_bytes_[0]) return memo_ticks_[0];
    if (bytes == memo_bytes_[1]) return memo_ticks_[1];
    const Tick ticks = transfer_ticks(bytes, bw_gbps_);
    memo_bytes_[memo_next_] = bytes;
    memo_ticks_[memo_next_] = ticks;
    memo_next_ ^= 1;
    return ticks;
  }

  /// Merges bins pairwise and doubles the bin width.
  void coarsen() {
    const std::size_t n = (bins_.size() + 1) / 2;
    for (std::size_t k = 0; k < n; ++k) {
      bins_[k] = bins_[2 * k] + (2 * k + 1 < bins_.size() ? bins_[2 * k + 1] : 0);
    }
    bins_.resize(n);
    bin_ *= 2;
    set_span();
  }
  /// bins_span_ = max_bins_ x bin_ (saturated: a product past kTickMax is
  /// beyond every end); the bin memo starts over.
  void set_span() {
    bins_span_ = bin_ == 0 ? kTickMax
                           : (static_cast<Tick>(max_bins_) > kTickMax / bin_ ? kTickMax
                                                                             : static_cast<Tick>(max_bins_) * bin_);
    bin_i_ = 0;
    bin_lo_ = 0;
  }

  std::string name_;
  double bw_gbps_ = 1;
  Tick latency_ = 0;
  Tick next_free_ = 0;
  Tick busy_ = 0;
  double bytes_ = 0;
  std::uint64_t requests_ = 0;
  Tick bin_ = 0;
  std::size_t max_bins_ = kDefaultMaxBins;
  std::vector<Tick> bins_;
  Tick bins_span_ = kTickMax;  ///< max_bins_ x bin_: an end past it coarsens
  std::size_t bin_i_ = 0;      ///< the bin of the last request
  Tick bin_lo_ = 0;            ///< = bin_i_ x bin_
  double memo_bytes_[2] = {std::numeric_limits<double>::quiet_NaN(),  // equal to no size
                           std::numeric_limits<double>::quiet_NaN()};
  Tick memo_ticks_[2] = {0, 0};
  unsigned memo_next_ = 0;  ///< the slot a new size replaces
};

}  // namespace moehub
