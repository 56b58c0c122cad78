// The clocking of one Verilated moehub_aau, for any geometry it was
// Verilated with (internal to the co-simulation library; the public class is
// RtlAddressAllocationUnit in rtl_aau.hpp).
//
// AauModelT<V> drives the ports of the model class V: a configuration
// request held until cfg_ready_o, a translation request from its arrival
// cycle until its response shows, the spill channel always ready (the spill
// area is a map here; a spill is on the channel, from the unit's spill
// register, in the cycle after the fill that evicted it, and is taken at the
// end of that cycle), and restore queries answered restore_cycles later.
// Cycles in which nothing is pending are skipped (the cycle counter jumps),
// not simulated. Each geometry's model is instantiated in a generated source
// (tb/CMakeLists.txt) and listed by aau_models().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <verilated.h>

#include "verilated_model.hpp"

#include "rtl_aau.hpp"

namespace moehub::cosim::detail {

/// A region as the configuration channel presents it.
struct AauRegionCfg {
  std::uint64_t base = 0;
  std::uint32_t size_log2 = 0;
  std::uint64_t capacity = 0;
};

/// The answer of one translation.
struct AauAnswer {
  bool ok = false;
  bool hit = false;
  bool restored = false;
  std::uint64_t local = 0, address = 0, done_cycle = 0, spills = 0, queries = 0;
};

class AauModel {
 public:
  virtual ~AauModel() = default;
  /// Registers (flush = false) or flushes region `region`; completes before returning.
  virtual void configure(std::uint32_t region, bool flush, const AauRegionCfg& cfg) = 0;
  /// Runs one request offered at cycle `arrival` (>= cycle) until its response shows.
  virtual AauAnswer translate(std::uint32_t region, std::uint32_t row, std::uint32_t offset,
                              std::uint64_t arrival) = 0;
  virtual void trace_to(const std::string& fst_path) = 0;

  std::uint64_t cycle = 0;  ///< the hub cycle the model is in
  std::uint64_t simulated = 0, skipped = 0, spills = 0, queries = 0;
};

struct AauModelEntry {
  RtlAauGeometry geometry;
  std::unique_ptr<AauModel> (*make)(const golden::AauParams&);
};
/// The geometries this build Verilated (generated source).
const std::vector<AauModelEntry>& aau_models();

/// Assigns `v` to a port of any integral type.
template <class P, class T>
void put(P& port, T v) {
  port = static_cast<P>(v);
}

template <class V>
class AauModelT final : public AauModel, private VerilatedModel<V> {
  using VerilatedModel<V>::m_;
  using VerilatedModel<V>::trace_;

 public:
  static constexpr std::uint64_t kMaxCycles = 1000000;  // a translation that takes longer is a model fault

  explicit AauModelT(const golden::AauParams& p) : p_(p) {
    m_->clk_i = 0;
    m_->cfg_valid_i = 0;
    m_->req_valid_i = 0;
    m_->rsp_ready_i = 1;
    m_->spill_ready_i = 1;
    m_->restore_req_ready_i = 1;
    m_->restore_rsp_valid_i = 0;
    this->reset_pulse();
  }

  void configure(std::uint32_t region, bool flush, const AauRegionCfg& r) override {
    m_->cfg_valid_i = 1;
    m_->cfg_flush_i = flush;
    put(m_->cfg_region_i, region);
    put(m_->cfg_rows_i, r.capacity);
    put(m_->cfg_base_i, r.base);
    put(m_->cfg_row_size_log2_i, r.size_log2);
    for (std::uint64_t i = 0;; ++i) {
      if (i > kMaxCycles) throw std::logic_error("RTL AAU: configuration never completes");
      m_->eval();
      const bool done = m_->cfg_ready_o != 0;
      edge();
      if (done) break;
    }
    m_->cfg_valid_i = 0;
    if (flush) {
      for (auto it = spill_area_.begin(); it != spill_area_.end();) {
        it = it->first.first == region ? spill_area_.erase(it) : std::next(it);
      }
    }
  }

  AauAnswer translate(std::uint32_t region, std::uint32_t row, std::uint32_t offset, std::uint64_t arrival) override {
    skip_to(arrival);
    AauAnswer a;
    m_->req_valid_i = 1;
    put(m_->req_malloc_i, region);
    put(m_->req_row_i, row);
    put(m_->req_offset_i, offset);
    bool fired = false;
    bool pending = false;  // a restore query awaits its answer
    std::pair<std::uint32_t, std::uint32_t> asked{};
    std::uint64_t answer_at = 0;
    for (std::uint64_t i = 0;; ++i) {
      if (i > kMaxCycles) throw std::logic_error("RTL AAU: no response");
      if (pending && cycle < answer_at) skip_to(answer_at);  // the unit only waits for memory
      const bool answer = pending && cycle >= answer_at;
      m_->restore_rsp_valid_i = answer;
      const auto found = answer ? spill_area_.find(asked) : spill_area_.end();
      m_->restore_rsp_found_i = found != spill_area_.end();
      put(m_->restore_rsp_local_i, found != spill_area_.end() ? found->second : 0U);
      m_->eval();
      if (m_->req_valid_i && m_->req_ready_o) fired = true;
      if (answer && m_->restore_rsp_ready_o) pending = false;
      if (m_->restore_req_valid_o) {
        pending = true;
        asked = {m_->restore_req_malloc_o, m_->restore_req_row_o};
        answer_at = cycle + (p_.rat.restore_cycles == 0 ? 1 : p_.rat.restore_cycles);
        ++a.queries;
        ++queries;
      }
      if (edge()) ++a.spills;  // this write's fill evicted it
      if (fired) m_->req_valid_i = 0;
      // the response is registered (rsp_*_o are flip-flop outputs): the
      // evaluation of the edge shows it, whatever the inputs are now
      if (fired && m_->rsp_valid_o) return respond(a);
    }
  }

  void trace_to(const std::string& fst_path) override { this->open_trace(fst_path); }

 private:
  /// The response on the model's outputs, shown in the current cycle; it is
  /// taken (rsp_ready_i) at the next edge, whenever that comes. The request
  /// and restore answer are withdrawn (the next operation evaluates the
  /// model before it reads an output).
  AauAnswer& respond(AauAnswer& a) {
    m_->req_valid_i = 0;
    m_->restore_rsp_valid_i = 0;
    a.ok = m_->rsp_ok_o != 0;
    a.hit = m_->rsp_hit_o != 0;
    a.restored = m_->rsp_restored_o != 0;
    a.local = m_->rsp_local_o;
    a.address = m_->rsp_addr_o;
    a.done_cycle = cycle;
    return a;
  }

  /// One rising edge; returns true if the spill register shows an entry
  /// after it (then written to the spill area: the channel is always ready,
  /// so it is taken at the next edge and shown only this once).
  bool edge() {
    // waveform time: 10 units per hub cycle, so cycle c is at 10 c (skipped cycles leave gaps)
    if (trace_) trace_->dump(cycle * 10);
    m_->clk_i = 1;
    m_->eval();
    const bool spill = m_->spill_valid_o != 0;
    if (spill) {
      spill_area_[{m_->spill_malloc_o, m_->spill_row_o}] = static_cast<std::uint32_t>(m_->spill_local_o);
      ++spills;
    }
    if (trace_) trace_->dump(cycle * 10 + 5);
    m_->clk_i = 0;
    // Nothing in the unit is clocked on the falling edge: without a waveform
    // it is evaluated with the next evaluation (every cycle starts with one,
    // after the inputs of the cycle are set).
    if (trace_) m_->eval();
    ++cycle;
    ++simulated;
    return spill;
  }
  void skip_to(std::uint64_t c) {
    if (c <= cycle) return;
    skipped += c - cycle;
    cycle = c;
  }

  golden::AauParams p_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> spill_area_;  // the device memory's spill area
};

}  // namespace moehub::cosim::detail
