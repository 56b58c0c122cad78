// The statistics registry: blocks report named counters, values and fixed-bin
// histograms under their own name (registry.block("gpu0_hub").add("data_packets",
// n)); the results writer puts to_json() under the "stats" key of the results
// JSON. Plain C++ (no SystemC) so that any block, model or test can use it.
//
// Ordering is deterministic: blocks, and the entries of a block, appear in the
// JSON sorted by name, whatever the order in which they were reported. A name
// holds one kind of entry; reporting a counter under a value's name (or a
// histogram of another shape under a histogram's name) is a programming error
// and throws std::logic_error.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace moehub {

/// Counts of samples in `bins` equal bins over [lo, hi] (each bin holds its lower
/// edge; the last one also holds hi, as numpy's histogram does), with samples
/// below lo and above hi (or NaN) counted apart, plus the number and sum of all
/// samples.
class Histogram {
 public:
  /// Throws std::invalid_argument unless bins >= 1 and lo < hi (both finite).
  Histogram(double lo, double hi, int bins);

  void add(double value, std::uint64_t count = 1);

  double lo() const { return lo_; }
  double hi() const { return hi_; }
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  std::uint64_t underflow() const { return underflow_; }
  std::uint64_t overflow() const { return overflow_; }
  std::uint64_t samples() const { return samples_; }
  double sum() const { return sum_; }

  /// {"lo", "hi", "counts", "underflow", "overflow", "samples", "sum"}
  nlohmann::ordered_json to_json() const;

 private:
  double lo_, hi_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t underflow_ = 0, overflow_ = 0, samples_ = 0;
  double sum_ = 0;
};

/// The statistics of one block.
class BlockStats {
 public:
  /// Adds `amount` to the counter `name` (created at 0).
  BlockStats& add(const std::string& name, std::uint64_t amount = 1);
  /// Sets the value `name` (the last report wins).
  BlockStats& set(const std::string& name, double value);
  /// The histogram `name`, created with the given bins on first use; a later
  /// call must give the same bins.
  Histogram& histogram(const std::string& name, double lo, double hi, int bins);

  /// Throws std::out_of_range when absent (std::logic_error when of another kind).
  std::uint64_t counter(const std::string& name) const;
  double value(const std::string& name) const;
  const Histogram& histogram(const std::string& name) const;
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  bool empty() const { return entries_.empty(); }

  /// Entries by name: counters as integers, values as numbers, histograms as objects.
  nlohmann::ordered_json to_json() const;

 private:
  using Entry = std::variant<std::uint64_t, double, Histogram>;
  std::map<std::string, Entry> entries_;
};

/// Every block's statistics, by block name.
class StatsRegistry {
 public:
  /// The block's statistics, created empty on first use.
  BlockStats& block(const std::string& name) { return blocks_[name]; }
  /// nullptr when the block has reported nothing.
  const BlockStats* find(const std::string& name) const;
  bool empty() const { return blocks_.empty(); }
  std::size_t size() const { return blocks_.size(); }
  void clear() { blocks_.clear(); }

  /// {block name: block's to_json()} sorted by block name.
  nlohmann::ordered_json to_json() const;

 private:
  std::map<std::string, BlockStats> blocks_;
};

}  // namespace moehub
