// Formal harness of moehub_rpm_sched (formal/run_formal.sh rpm).
//
// Safety (k-induction; FV_SAFETY_ONLY): the grant is one-hot, agrees with
// gnt_valid_o and the indices, lands on a valid entry, a new offer on an
// eligible entry of an uncongested destination, and an offer not taken is
// held, the same grant, until gnt_ready_i (the module's MOEHUB_ASSERT_ON
// assertions plus the ones below); the pool's ready is free here.
// Liveness within the timer bound (bounded model check; the harness leaves
// it out when FV_SAFETY_ONLY is defined): one watched entry (f_entry, any
// constant) whose destination is never congested is granted at most
// timeout + Dests*Depth - 1 cycles after it became valid: after `timeout`
// cycles it has expired and only older (or as old, lower-index) expired
// entries of its partition, at most Depth - 1, go before it, and round
// robin serves its partition at least once in every Dests grants.
// Environment: for the liveness check the pool takes every grant
// (gnt_ready_i = 1); an entry stays valid with its priority and RowID until
// its grant is taken (its mask may only fill up, and not at all while it is
// offered: no store merges into an offered entry); the timeout is constant
// and timeout + Dests*Depth stays below the age counter's saturation
// 2**TimerWidth - 1 (beyond it, ages tie).
`include "moehub_assert.svh"

module fv_rpm #(
  parameter int unsigned Dests      = 2,
  parameter int unsigned Depth      = 2,
  parameter int unsigned RowIdWidth = 2,
  parameter int unsigned TimerWidth = 3
) (
  input logic                              clk_i,
  input logic                              rst_ni,
  input logic [Dests*Depth-1:0]            entry_valid_i,
  input logic [Dests*Depth-1:0]            entry_full_i,
  input logic [Dests*Depth-1:0]            entry_prio_i,
  input logic [Dests*Depth*RowIdWidth-1:0] entry_row_i,
  input logic [Dests-1:0]                  congested_i,
  input logic                              drain_i,
  input logic                              gnt_ready_i
);
  localparam int unsigned Total    = Dests * Depth;
  localparam int unsigned DestIdxW = (Dests > 1) ? $clog2(Dests) : 1;
  localparam int unsigned EntryIdxW = (Depth > 1) ? $clog2(Depth) : 1;
  localparam int unsigned IdxW     = (Total > 1) ? $clog2(Total) : 1;

  (* anyconst *) logic [TimerWidth-1:0] f_timeout;
  (* anyconst *) logic [IdxW-1:0]       f_entry;
  // (Depth and Dests are powers of two here: indices are bit fields, no division)
  logic [DestIdxW-1:0] f_dest;
  assign f_dest = DestIdxW'(f_entry >> EntryIdxW);

  logic                   gnt_valid;
  logic [Total-1:0]       gnt;
  logic [DestIdxW-1:0]    gnt_dest;
  logic [EntryIdxW-1:0]   gnt_entry;

  moehub_rpm_sched #(
    .Dests(Dests), .Depth(Depth), .RowIdWidth(RowIdWidth), .TimerWidth(TimerWidth)
  ) u_dut (
    .clk_i, .rst_ni, .entry_valid_i, .entry_full_i, .entry_prio_i, .entry_row_i, .congested_i,
    .timeout_i(f_timeout), .drain_i, .gnt_valid_o(gnt_valid), .gnt_ready_i, .gnt_o(gnt),
    .gnt_dest_o(gnt_dest), .gnt_entry_o(gnt_entry)
  );

  // ---- environment -----------------------------------------------------------
  logic init_q = 1'b1;
  always_ff @(posedge clk_i) init_q <= 1'b0;
  logic [Total-1:0]            held_q;     // valid and not taken last cycle
  logic [Total-1:0]            offered_q;  // offered and not taken last cycle
  logic [Total-1:0]            full_q, prio_q;
  logic [Total*RowIdWidth-1:0] row_q;
  always_ff @(posedge clk_i) begin
    held_q    <= rst_ni ? (entry_valid_i & ~(gnt & {Total{gnt_ready_i}})) : '0;
    offered_q <= rst_ni ? (gnt & {Total{!gnt_ready_i}}) : '0;
    full_q <= entry_full_i;
    prio_q <= entry_prio_i;
    row_q  <= entry_row_i;
  end
  always_comb begin
    assume (rst_ni == !init_q);
    assume ((TimerWidth+1)'(f_timeout) + (TimerWidth+1)'(Dests * Depth) < (TimerWidth+1)'((1 << TimerWidth) - 1));
    assume (!congested_i[f_dest]);
`ifndef FV_SAFETY_ONLY
    assume (gnt_ready_i);
`endif
    for (int unsigned i = 0; i < Total; i++) begin
      if (!init_q && held_q[i]) begin
        assume (entry_valid_i[i] && entry_prio_i[i] == prio_q[i] && (entry_full_i[i] || !full_q[i]) &&
                entry_row_i[i*RowIdWidth +: RowIdWidth] == row_q[i*RowIdWidth +: RowIdWidth]);
      end
      if (!init_q && offered_q[i]) assume (entry_full_i[i] == full_q[i]);
    end
  end

  // ---- properties ------------------------------------------------------------
  always_comb begin
    if (rst_ni) begin
      assert (gnt_valid == (gnt != '0));
      assert ((gnt & (gnt - 1'b1)) == '0);
      if (gnt_valid) assert (gnt == (Total'(1) << {gnt_dest, gnt_entry}));
      assert ((gnt & ~entry_valid_i) == '0);
    end
  end
  // an offer not taken stays, the same grant (also inside the module)
  `MOEHUB_ASSERT_HANDSHAKE(FvGntHeld, gnt_valid, gnt_ready_i, {gnt, gnt_dest, gnt_entry})

`ifndef FV_SAFETY_ONLY
  logic [TimerWidth:0] wait_q;  // cycles the watched entry has waited before this one
  always_ff @(posedge clk_i) begin
    if (!rst_ni || !entry_valid_i[f_entry] || gnt[f_entry]) wait_q <= '0;
    else if (wait_q != '1) wait_q <= wait_q + 1'b1;
  end
  always_comb begin
    if (rst_ni && entry_valid_i[f_entry]) assert (wait_q < (TimerWidth+1)'(f_timeout) + (TimerWidth+1)'(Dests * Depth));
  end
`endif
endmodule
