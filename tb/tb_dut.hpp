// A clocked wrapper around a Verilated model for the RTL testbenches.
//
// Convention of every testbench: set the inputs of a cycle, call eval() to
// read combinational outputs, then step() for the rising edge; registered
// outputs then show the new state. The model is built with assertions on
// (MOEHUB_ASSERT_ON, --assert): a failed one stops the test.
//
// Waveforms: a Dut built with a path writes an FST there (the models are
// Verilated with --trace-fst; tracing costs nothing unless a path is given).
// Coverage: the models carry the user cover points of the RTL
// (MOEHUB_COVER, --coverage-user); a Dut adds its counts to the process-wide
// tally (tb_coverage.hpp) when it is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "tb_coverage.hpp"

namespace moehub::tb {

template <class Model>
class Dut {
 public:
  /// `fst_path` empty: no waveform.
  explicit Dut(const std::string& fst_path = "") : ctx_(std::make_unique<VerilatedContext>()) {
    if (!fst_path.empty()) ctx_->traceEverOn(true);
    m_ = std::make_unique<Model>(ctx_.get());
    if (!fst_path.empty()) {
      trace_ = std::make_unique<VerilatedFstC>();
      m_->trace(trace_.get(), 99);
      trace_->open(fst_path.c_str());
    }
    m_->clk_i = 0;
    m_->rst_ni = 1;
    eval();
    reset();
  }
  ~Dut() {
    m_->final();
    if (trace_) trace_->close();
    tally_coverage(*ctx_);
  }
  Dut(const Dut&) = delete;
  Dut& operator=(const Dut&) = delete;

  Model* operator->() { return m_.get(); }
  void eval() { m_->eval(); }
  /// Asynchronous reset: a falling edge of rst_ni, then released.
  void reset() {
    m_->rst_ni = 0;
    m_->eval();
    m_->rst_ni = 1;
    m_->eval();
  }
  /// One rising clock edge with the inputs as they are.
  void step() {
    if (trace_) trace_->dump(time_);
    time_ += 5;
    m_->clk_i = 1;
    m_->eval();
    if (trace_) trace_->dump(time_);
    time_ += 5;
    m_->clk_i = 0;
    m_->eval();
    ++cycles_;
  }
  std::uint64_t cycles() const { return cycles_; }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> m_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::uint64_t cycles_ = 0;
  std::uint64_t time_ = 0;  // waveform time, 10 units per cycle
};

/// Bits [lsb, lsb + width) of a wide port (width <= 32).
template <class Wide>
void set_bits(Wide& w, unsigned lsb, unsigned width, std::uint32_t value) {
  for (unsigned b = 0; b < width; ++b) {
    const unsigned bit = lsb + b;
    const std::uint32_t m = 1u << (bit % 32);
    if ((value >> b) & 1u) {
      w[bit / 32] |= m;
    } else {
      w[bit / 32] &= ~m;
    }
  }
}

}  // namespace moehub::tb
