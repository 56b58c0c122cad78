// moehub_assert.svh: assertion macros of the hub RTL, in a form that
// both Yosys 0.23 and Verilator 5.006 read (after OpenTitan's prim_assert):
// immediate assertions inside always blocks, no concurrent assertions
// (Yosys 0.23 rejects them). A module includes this header inside
// `ifdef MOEHUB_ASSERT_ON (synthesis never reads it) and uses the macros
// there; they expect the module's clk_i and rst_ni (active-low reset) and
// check nothing while rst_ni is low.
//
//   `MOEHUB_ASSERT(Name, cond)
//       cond holds in every cycle out of reset.
//   `MOEHUB_ASSERT_HANDSHAKE(Name, valid, ready, payload)
//       a valid/ready channel: once valid is high without ready, the next
//       cycle has valid high again with the same payload (valid is held until
//       ready; the payload is stable while held). The previous cycle's valid,
//       ready and payload are kept in flip-flops (Name_v_q, Name_r_q,
//       Name_p_q). For a channel the module drives it checks the module; for
//       one it receives it checks the environment (the formal harnesses
//       assume the same of the top's inputs, `MOEHUB_ASSUME_HANDSHAKE).
//   `MOEHUB_ASSUME_HANDSHAKE(Name, valid, ready, payload)
//       the same rule as an assumption, for the formal harnesses.
//
// Names: each assertion's label is its name; Yosys writes it into the SMT2
// model (yosys-smtbmc names a failing assertion by it), and in Verilator a
// failure calls the DPI function moehub_assert_failed with the assertion's
// hierarchical name (tb/tb_assert.cpp: the benches fail with it).
`ifndef MOEHUB_ASSERT_SVH
`define MOEHUB_ASSERT_SVH

`ifdef VERILATOR
import "DPI-C" function void moehub_assert_failed(input string where);
`define MOEHUB_ASSERT_I(__name, __cond) __name: assert (__cond) else moehub_assert_failed($sformatf("%m"));
`define MOEHUB_ASSUME_I(__name, __cond) `MOEHUB_ASSERT_I(__name, __cond)
`else
`define MOEHUB_ASSERT_I(__name, __cond) __name: assert (__cond);
`define MOEHUB_ASSUME_I(__name, __cond) __name: assume (__cond);
`endif

`define MOEHUB_ASSERT(__name, __cond) \
  always_comb begin \
    if (rst_ni) begin \
      `MOEHUB_ASSERT_I(__name, __cond) \
    end \
  end

`define MOEHUB_HANDSHAKE_Q(__name, __valid, __ready, __payload) \
  logic __name``_v_q, __name``_r_q; \
  logic [$bits(__payload)-1:0] __name``_p_q; \
  always_ff @(posedge clk_i or negedge rst_ni) begin \
    if (!rst_ni) begin \
      __name``_v_q <= 1'b0; \
      __name``_r_q <= 1'b0; \
      __name``_p_q <= '0; \
    end else begin \
      __name``_v_q <= __valid; \
      __name``_r_q <= __ready; \
      __name``_p_q <= __payload; \
    end \
  end

`define MOEHUB_ASSERT_HANDSHAKE(__name, __valid, __ready, __payload) \
  `MOEHUB_HANDSHAKE_Q(__name, __valid, __ready, __payload) \
  `MOEHUB_ASSERT(__name, !(__name``_v_q && !__name``_r_q) || ((__valid) && (__payload) == __name``_p_q))

`define MOEHUB_ASSUME_HANDSHAKE(__name, __valid, __ready, __payload) \
  `MOEHUB_HANDSHAKE_Q(__name, __valid, __ready, __payload) \
  always_comb begin \
    if (rst_ni) begin \
      `MOEHUB_ASSUME_I(__name, !(__name``_v_q && !__name``_r_q) || ((__valid) && (__payload) == __name``_p_q)) \
    end \
  end

`endif
