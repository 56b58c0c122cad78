// A clocked wrapper around a Verilated model for the RTL testbenches.
//
// Convention of every testbench: set the inputs of a cycle, call eval() to
// read combinational outputs, then step() for the rising edge; registered
// outputs then show the new state. The model is built with assertions on
// (MOEHUB_ASSERT_ON, --assert): a failed one stops the test.
#pragma once

#include <cstdint>
#include <memory>

#include <verilated.h>

namespace moehub::tb {

template <class Model>
class Dut {
 public:
  Dut() : ctx_(std::make_unique<VerilatedContext>()), m_(std::make_unique<Model>(ctx_.get())) {
    m_->clk_i = 0;
    m_->rst_ni = 1;
    m_->eval();
    m_->rst_ni = 0;  // asynchronous reset: a falling edge
    m_->eval();
    m_->rst_ni = 1;
    m_->eval();
  }
  ~Dut() { m_->final(); }
  Dut(const Dut&) = delete;
  Dut& operator=(const Dut&) = delete;

  Model* operator->() { return m_.get(); }
  void eval() { m_->eval(); }
  /// One rising clock edge with the inputs as they are.
  void step() {
    m_->clk_i = 1;
    m_->eval();
    m_->clk_i = 0;
    m_->eval();
    ++cycles_;
  }
  std::uint64_t cycles() const { return cycles_; }

 private:
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> m_;
  std::uint64_t cycles_ = 0;
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
