// A clocked wrapper around a Verilated model for the RTL testbenches.
//
// Convention of every testbench: set the inputs of a cycle, call eval() to
// read combinational outputs, then step() for the rising edge; registered
// outputs then show the new state. The model is built with assertions on
// (MOEHUB_ASSERT_ON, --assert): a failed one (rtl/moehub_assert.svh) makes
// the next eval() or step() throw AssertionFailure naming it, which fails the
// test (the context does not abort the process on it).
//
// Waveforms: a Dut built with a path writes an FST there (the models are
// Verilated with --trace-fst; tracing costs nothing unless a path is given).
// Coverage: the models carry the user cover points of the RTL
// (MOEHUB_COVER, --coverage-user); a Dut adds its counts to the process-wide
// tally (tb_coverage.hpp) when it is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <verilated.h>
#include <verilated_fst_c.h>

#include "tb_assert.hpp"
#include "tb_coverage.hpp"

namespace moehub::tb {

/// An RTL assertion failed in a Verilated model; what() names every assertion that did.
class AssertionFailure : public std::runtime_error {
 public:
  explicit AssertionFailure(const std::vector<std::string>& names)
      : std::runtime_error(message(names)), names_(names) {}
  const std::vector<std::string>& names() const { return names_; }

 private:
  static std::string message(const std::vector<std::string>& names) {
    std::string m = "RTL assertion failed:";
    for (const std::string& n : names) m += " " + n;
    return m;
  }
  std::vector<std::string> names_;
};

/// Throws AssertionFailure if an RTL assertion failed since the last check.
inline void check_assertions() {
  const std::vector<std::string> f = take_assert_failures();
  if (!f.empty()) throw AssertionFailure(f);
}

template <class Model>
class Dut {
 public:
  /// `fst_path` empty: no waveform.
  explicit Dut(const std::string& fst_path = "") : ctx_(std::make_unique<VerilatedContext>()) {
    ctx_->fatalOnError(false);  // a failed assertion is reported by check_assertions()
    take_assert_failures();     // (failures of an earlier model are not this one's)
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
  void eval() {
    m_->eval();
    check_assertions();
  }
  /// Asynchronous reset: a falling edge of rst_ni, then released.
  void reset() {
    m_->rst_ni = 0;
    m_->eval();
    m_->rst_ni = 1;
    m_->eval();
    check_assertions();
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
    check_assertions();
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
