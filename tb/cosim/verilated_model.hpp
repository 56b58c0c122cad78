// One Verilated model with its own context and an optional FST waveform: the
// part the co-simulation adapters (rtl_aau_core.hpp, rtl_rpm_core.hpp) share.
// An adapter derives from VerilatedModel<V>, sets the model's inputs, calls
// reset_pulse(), and clocks m_ itself; trace_ (when open) is dumped by it.
#pragma once

#include <memory>
#include <string>

#include <verilated.h>
#include <verilated_fst_c.h>

namespace moehub::cosim {

template <class V>
class VerilatedModel {
 public:
  VerilatedModel(const VerilatedModel&) = delete;
  VerilatedModel& operator=(const VerilatedModel&) = delete;

 protected:
  VerilatedModel() : ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->traceEverOn(true);
    m_ = std::make_unique<V>(ctx_.get());
  }
  ~VerilatedModel() {
    // Verilator 5.006 unregisters a model's scopes from the calling thread's
    // current context, which is the context of the model used last (possibly
    // destroyed already): make it this model's own
    Verilated::threadContextp(ctx_.get());
    m_->final();
    if (trace_) trace_->close();
    trace_.reset();
    m_.reset();
  }

  /// Pulses the active-low reset rst_ni, evaluating after each level (set the
  /// other inputs first).
  void reset_pulse() {
    m_->rst_ni = 1;
    m_->eval();
    m_->rst_ni = 0;
    m_->eval();
    m_->rst_ni = 1;
    m_->eval();
  }

  /// Starts a waveform of every signal into `fst_path` (closing an earlier one).
  void open_trace(const std::string& fst_path) {
    if (trace_) trace_->close();
    trace_ = std::make_unique<VerilatedFstC>();
    m_->trace(trace_.get(), 99);
    trace_->open(fst_path.c_str());
  }

  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<V> m_;
  std::unique_ptr<VerilatedFstC> trace_;
};

}  // namespace moehub::cosim
