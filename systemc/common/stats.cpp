// The statistics registry. See stats.hpp.
#include "common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace moehub {

Histogram::Histogram(double lo, double hi, int bins) : lo_(lo), hi_(hi) {
  if (bins < 1) throw std::invalid_argument("Histogram: bins = " + std::to_string(bins) + " must be >= 1");
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi)) {
    throw std::invalid_argument("Histogram: need finite lo < hi (got lo = " + std::to_string(lo) +
                                ", hi = " + std::to_string(hi) + ")");
  }
  counts_.assign(static_cast<std::size_t>(bins), 0);
}

void Histogram::add(double value, std::uint64_t count) {
  samples_ += count;
  if (std::isnan(value)) {
    overflow_ += count;
    return;
  }
  sum_ += value * static_cast<double>(count);
  if (value < lo_) {
    underflow_ += count;
  } else if (value > hi_) {
    overflow_ += count;
  } else {
    const double width = (hi_ - lo_) / static_cast<double>(counts_.size());
    // hi itself, and a value just below it that rounding puts past the end, go to the last bin
    const auto i = std::min(counts_.size() - 1, static_cast<std::size_t>((value - lo_) / width));
    counts_[i] += count;
  }
}

nlohmann::ordered_json Histogram::to_json() const {
  return {{"lo", lo_},           {"hi", hi_},           {"counts", counts_}, {"underflow", underflow_},
          {"overflow", overflow_}, {"samples", samples_}, {"sum", sum_}};
}

namespace {

template <class T>
const char* kind_name() {
  if constexpr (std::is_same_v<T, std::uint64_t>) return "counter";
  else if constexpr (std::is_same_v<T, double>) return "value";
  else return "histogram";
}

template <class T>
T& entry_as(std::variant<std::uint64_t, double, Histogram>& e, const std::string& name) {
  if (T* p = std::get_if<T>(&e)) return *p;
  throw std::logic_error("statistic '" + name + "' is not a " + kind_name<T>());
}

template <class T>
const T& find_as(const std::map<std::string, std::variant<std::uint64_t, double, Histogram>>& m,
                 const std::string& name) {
  const auto it = m.find(name);
  if (it == m.end()) throw std::out_of_range("no statistic named '" + name + "'");
  if (const T* p = std::get_if<T>(&it->second)) return *p;
  throw std::logic_error("statistic '" + name + "' is not a " + kind_name<T>());
}

}  // namespace

BlockStats& BlockStats::add(const std::string& name, std::uint64_t amount) {
  auto it = entries_.try_emplace(name, std::uint64_t{0}).first;
  entry_as<std::uint64_t>(it->second, name) += amount;
  return *this;
}

BlockStats& BlockStats::set(const std::string& name, double value) {
  auto it = entries_.try_emplace(name, 0.0).first;
  entry_as<double>(it->second, name) = value;
  return *this;
}

Histogram& BlockStats::histogram(const std::string& name, double lo, double hi, int bins) {
  auto it = entries_.find(name);
  if (it == entries_.end()) it = entries_.emplace(name, Histogram(lo, hi, bins)).first;
  Histogram& h = entry_as<Histogram>(it->second, name);
  if (h.lo() != lo || h.hi() != hi || h.counts().size() != static_cast<std::size_t>(bins)) {
    throw std::logic_error("histogram '" + name + "' was created with other bins");
  }
  return h;
}

std::uint64_t BlockStats::counter(const std::string& name) const { return find_as<std::uint64_t>(entries_, name); }
double BlockStats::value(const std::string& name) const { return find_as<double>(entries_, name); }
const Histogram& BlockStats::histogram(const std::string& name) const { return find_as<Histogram>(entries_, name); }

nlohmann::ordered_json BlockStats::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, e] : entries_) {
    std::visit(
        [&, n = name](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, Histogram>) {
            j[n] = v.to_json();
          } else {
            j[n] = v;
          }
        },
        e);
  }
  return j;
}

const BlockStats* StatsRegistry::find(const std::string& name) const {
  const auto it = blocks_.find(name);
  return it == blocks_.end() ? nullptr : &it->second;
}

nlohmann::ordered_json StatsRegistry::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, b] : blocks_) j[name] = b.to_json();
  return j;
}

}  // namespace moehub
