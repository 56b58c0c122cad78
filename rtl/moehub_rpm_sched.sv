// moehub_rpm_sched: packet scheduler of the MoE-Hub Runtime Packet Manager.
//
// Picks the next merged write-buffer entry to send. The buffer pool (not in
// this module) has one partition of Depth entries per destination GPU and
// presents, per entry, a valid bit, whether its byte mask is full, its
// priority (1: st / st.rowsp, 0: st.rowsp.nop) and its RowID.
//
// Policy, in order:
//  1. An entry is eligible when it is valid and either full (a complete
//     merge), or expired: at least timeout_i cycles old (timer bypass: a
//     poorly merged entry cannot wait forever), or its partition is full
//     (pressure: a full partition always drains), or drain_i is set (end of
//     a phase, or no holding of partial entries at all).
//  2. Within a partition: expired entries first, the oldest first; then
//     priority entries before .nop, full masks before partial ones, the
//     smallest RowID, the oldest; then the lowest entry index (a tournament
//     tree, so the compare depth grows with log2(Depth)).
//  3. Across partitions, round-robin over the destinations, skipping those
//     marked congested_i (their ports cannot take a packet now); the pointer
//     moves past a destination when its grant is taken.
// The grant is one-hot over all Dests*Depth entries, with the destination
// and entry indices beside it; it is a valid/ready offer: a new offer is
// combinational from the inputs (the decision above), and an offer that is
// not taken in its cycle is held, the same entry, until gnt_ready_i (held_q;
// the decision waits meanwhile, and the destination's congestion no longer
// withdraws it). The pool removes the entry when it takes the grant, and it
// keeps an offered entry as it is until then: valid, with its priority,
// RowID and mask (no store merges into it; assertions below).
//
// Timer: an entry's age counts cycles since its slot became valid (or since
// the last grant of that slot) and saturates at 2**TimerWidth - 1 (older
// entries then tie on age); it resets when the slot is invalid. Not implemented: merging (the pool's job), the entry payload,
// several grants per cycle, weighting of destinations.
`ifdef MOEHUB_ASSERT_ON
`include "moehub_assert.svh"
`endif
module moehub_rpm_sched #(
  /// Number of destination partitions (peer GPUs).
  parameter int unsigned Dests = 8,
  /// Entries per partition.
  parameter int unsigned Depth = 8,
  /// Width of a RowID.
  parameter int unsigned RowIdWidth = 16,
  /// Width of an entry's age counter (cycles, saturating).
  parameter int unsigned TimerWidth = 8
) (
  /// Clock.
  input  logic                             clk_i,
  /// Asynchronous reset, active low.
  input  logic                             rst_ni,
  /// Per entry (index dest*Depth + entry): holds a packet.
  input  logic [Dests*Depth-1:0]           entry_valid_i,
  /// Per entry: its byte mask is complete.
  input  logic [Dests*Depth-1:0]           entry_full_i,
  /// Per entry: 1 for a priority store, 0 for .nop.
  input  logic [Dests*Depth-1:0]           entry_prio_i,
  /// Per entry: RowID (entry i at [i*RowIdWidth +: RowIdWidth]).
  input  logic [Dests*Depth*RowIdWidth-1:0] entry_row_i,
  /// Per destination: its ports cannot take a packet now.
  input  logic [Dests-1:0]                 congested_i,
  /// Age in cycles after which a partial entry becomes eligible.
  input  logic [TimerWidth-1:0]            timeout_i,
  /// Every valid entry is eligible (drain the pool).
  input  logic                             drain_i,
  /// A grant is offered.
  output logic                             gnt_valid_o,
  /// The pool takes the granted entry this cycle.
  input  logic                             gnt_ready_i,
  /// One-hot grant over all entries.
  output logic [Dests*Depth-1:0]           gnt_o,
  /// Destination of the granted entry.
  output logic [DestIdxW-1:0]              gnt_dest_o,
  /// Index of the granted entry within its partition.
  output logic [EntryIdxW-1:0]             gnt_entry_o
);

  /// Width of a destination index (do not override).
  localparam int unsigned DestIdxW = (Dests > 1) ? $clog2(Dests) : 1;
  /// Width of an entry index (do not override).
  localparam int unsigned EntryIdxW = (Depth > 1) ? $clog2(Depth) : 1;
  /// Entries in all (do not override).
  localparam int unsigned Total = Dests * Depth;

  // ---- entry age (timer bypass) -------------------------------------------
  // (arrays of counters: one element per entry)
  logic [TimerWidth-1:0]       age_d [Total];
  logic [TimerWidth-1:0]       age_q [Total];
  logic [Total-1:0]            eligible, expired;
  logic [Dests-1:0]            part_full;

  // ---- per partition: eligibility and the tournament over its entries -----
  // (moehub_rpm_part, one instance per destination)
  logic [Dests-1:0]           part_ok;
  logic [Dests*EntryIdxW-1:0] part_idx;

  for (genvar d = 0; d < Dests; d++) begin : gen_part
    logic [Depth*TimerWidth-1:0] ages;   // the partition's age counters
    for (genvar l = 0; l < Depth; l++) begin : gen_age_in
      assign ages[l*TimerWidth +: TimerWidth] = age_q[d*Depth + l];
    end
    moehub_rpm_part #(
      .Depth     (Depth),
      .RowIdWidth(RowIdWidth),
      .TimerWidth(TimerWidth)
    ) u_part (
      .valid_i    (entry_valid_i[d*Depth +: Depth]),
      .full_i     (entry_full_i[d*Depth +: Depth]),
      .prio_i     (entry_prio_i[d*Depth +: Depth]),
      .row_i      (entry_row_i[d*Depth*RowIdWidth +: Depth*RowIdWidth]),
      .age_i      (ages),
      .timeout_i  (timeout_i),
      .drain_i    (drain_i),
      .eligible_o (eligible[d*Depth +: Depth]),
      .expired_o  (expired[d*Depth +: Depth]),
      .part_full_o(part_full[d]),
      .ok_o       (part_ok[d]),
      .idx_o      (part_idx[d*EntryIdxW +: EntryIdxW])
    );
  end

  // (the per-entry flags are read by the assertions and cover points only)
  logic unused_flags;
  assign unused_flags = ^{eligible, expired, part_full};

  // ---- round robin over destinations ---------------------------------------
  logic [DestIdxW-1:0] rr_d, rr_q;
  logic                held_d, held_q;               // an offer not taken is held
  logic [DestIdxW-1:0] held_dest_d, held_dest_q;
  logic [EntryIdxW-1:0] held_entry_d, held_entry_q;
  logic [Dests-1:0]    cand;
  logic                found_hi;
  logic [DestIdxW-1:0] sel, sel_hi, sel_lo;

  always_comb begin
    cand     = part_ok & ~congested_i;
    // lowest candidate at or after the pointer, else the lowest overall
    found_hi = 1'b0;
    sel_hi   = '0;
    sel_lo   = '0;
    for (int d = Dests - 1; d >= 0; d--) begin
      if (cand[d]) begin
        sel_lo = DestIdxW'(d);
        if (DestIdxW'(d) >= rr_q) begin
          sel_hi   = DestIdxW'(d);
          found_hi = 1'b1;
        end
      end
    end
    sel         = found_hi ? sel_hi : sel_lo;
    // a held offer stands; otherwise the decision of this cycle
    gnt_valid_o = held_q || (|cand);
    gnt_dest_o  = held_q ? held_dest_q : sel;
    gnt_entry_o = held_q ? held_entry_q : part_idx[sel*EntryIdxW +: EntryIdxW];
    gnt_o       = '0;
    if (gnt_valid_o) gnt_o[32'(gnt_dest_o)*Depth + 32'(gnt_entry_o)] = 1'b1;
  end

  // ---- next state ----------------------------------------------------------
  always_comb begin
    rr_d         = rr_q;
    held_d       = gnt_valid_o && !gnt_ready_i;
    held_dest_d  = gnt_dest_o;
    held_entry_d = gnt_entry_o;
    if (gnt_valid_o && gnt_ready_i) begin
      rr_d = (gnt_dest_o == DestIdxW'(Dests - 1)) ? '0 : gnt_dest_o + DestIdxW'(1);
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rr_q         <= '0;
      held_q       <= 1'b0;
      held_dest_q  <= '0;
      held_entry_q <= '0;
    end else begin
      rr_q         <= rr_d;
      held_q       <= held_d;
      held_dest_q  <= held_dest_d;
      held_entry_q <= held_entry_d;
    end
  end

  // an entry's age: 0 while its slot is empty and after its grant is taken,
  // else one more per cycle, saturating
  for (genvar i = 0; i < Total; i++) begin : gen_age
    assign age_d[i] = (!entry_valid_i[i] || (gnt_o[i] && gnt_ready_i)) ? '0
                    : (age_q[i] == {TimerWidth{1'b1}}) ? age_q[i] : age_q[i] + TimerWidth'(1);
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) age_q[i] <= '0;
      else         age_q[i] <= age_d[i];
    end
  end

`ifdef MOEHUB_ASSERT_ON
  // The grant is one-hot, on an eligible entry; a new offer (not a held one)
  // goes to an uncongested destination.
  `MOEHUB_ASSERT(RpmGntOneHot, $onehot0(gnt_o) && (gnt_valid_o == (gnt_o != '0)))
  `MOEHUB_ASSERT(RpmGntEligible, held_q || (gnt_o & ~eligible) == '0)
  `MOEHUB_ASSERT(RpmGntUncongested, held_q || !gnt_valid_o || !congested_i[gnt_dest_o])
  // The grant is held until taken, the same entry (this module).
  `MOEHUB_ASSERT_HANDSHAKE(RpmGntHeld, gnt_valid_o, gnt_ready_i, {gnt_o, gnt_dest_o, gnt_entry_o})
  // The pool keeps an offered entry as it is until it takes it: valid, with
  // the same priority, mask and RowID (the environment: checked here).
  logic                  g_valid, g_full, g_prio;
  logic [RowIdWidth-1:0] g_row;
  always_comb begin
    g_valid = 1'b0;
    g_full  = 1'b0;
    g_prio  = 1'b0;
    g_row   = '0;
    for (int unsigned i = 0; i < Total; i++) begin
      if (gnt_o[i]) begin
        g_valid = entry_valid_i[i];
        g_full  = entry_full_i[i];
        g_prio  = entry_prio_i[i];
        g_row   = entry_row_i[i*RowIdWidth +: RowIdWidth];
      end
    end
  end
  `MOEHUB_ASSERT(RpmGntEntryValid, !gnt_valid_o || g_valid)
  `MOEHUB_ASSERT_HANDSHAKE(RpmGntEntryKept, gnt_valid_o, gnt_ready_i, {g_full, g_prio, g_row})
`endif

`ifdef MOEHUB_COVER
  // Functional coverage (Verilator --coverage-user; Yosys does not read these).
  logic take, c_full, c_exp, c_pfull;
  always_comb begin
    take    = gnt_valid_o && gnt_ready_i && !held_q;   // taken in the cycle it was decided
    c_full  = 1'b0;
    c_exp   = 1'b0;
    c_pfull = 1'b0;
    for (int unsigned i = 0; i < Total; i++) begin
      if (gnt_o[i]) begin
        c_full  = entry_full_i[i];
        c_exp   = expired[i];
        c_pfull = part_full[i / Depth];
      end
    end
  end
  cov_grant_full:     cover property (@(posedge clk_i) take && c_full);
  cov_timer_expiry:   cover property (@(posedge clk_i) take && !c_full && c_exp && !c_pfull && !drain_i);
  cov_pressure:       cover property (@(posedge clk_i) take && !c_full && !c_exp && c_pfull && !drain_i);
  cov_drain:          cover property (@(posedge clk_i) take && !c_full && !c_exp && drain_i);
  cov_all_congested:  cover property (@(posedge clk_i) part_ok != '0 && (part_ok & ~congested_i) == '0);
  cov_congested_skip: cover property (@(posedge clk_i) take && (part_ok & congested_i) != '0);
  cov_rr_wrap:        cover property (@(posedge clk_i) take && !found_hi);
  cov_grant_held:     cover property (@(posedge clk_i) gnt_valid_o && !gnt_ready_i);
  cov_held_taken:     cover property (@(posedge clk_i) held_q && gnt_ready_i);
  cov_held_partial:   cover property (@(posedge clk_i) (entry_valid_i & ~eligible) != '0);
`endif

endmodule

// moehub_rpm_part: one partition of moehub_rpm_sched (policy points 1 and 2
// of its header): which of the partition's Depth entries are eligible, and
// the tournament that picks the best of them.
//
// Each entry's rank is one key, compared as an unsigned number (the larger
// wins, a tie goes to the lower index); from the top bit down:
//   eligible | expired | expired ? {age, 0...} : {priority, full, ~RowID, age}
// and all zeros for an entry that is not eligible. This is the order of the
// policy: eligible first, expired before not, two expired ones by age alone,
// others by priority, full mask, smallest RowID, then age.
/* verilator lint_off DECLFILENAME */
module moehub_rpm_part #(
  /// Entries in the partition.
  parameter int unsigned Depth = 8,
  /// Width of a RowID.
  parameter int unsigned RowIdWidth = 16,
  /// Width of an entry's age counter.
  parameter int unsigned TimerWidth = 8
) (
  /// Per entry: holds a packet.
  input  logic [Depth-1:0]            valid_i,
  /// Per entry: its byte mask is complete.
  input  logic [Depth-1:0]            full_i,
  /// Per entry: 1 for a priority store, 0 for .nop.
  input  logic [Depth-1:0]            prio_i,
  /// Per entry: RowID (entry l at [l*RowIdWidth +: RowIdWidth]).
  input  logic [Depth*RowIdWidth-1:0] row_i,
  /// Per entry: its age counter (entry l at [l*TimerWidth +: TimerWidth]).
  input  logic [Depth*TimerWidth-1:0] age_i,
  /// Age in cycles after which a partial entry becomes eligible.
  input  logic [TimerWidth-1:0]       timeout_i,
  /// Every valid entry is eligible.
  input  logic                        drain_i,
  /// Per entry: eligible.
  output logic [Depth-1:0]            eligible_o,
  /// Per entry: at least timeout_i cycles old.
  output logic [Depth-1:0]            expired_o,
  /// Every entry is valid.
  output logic                        part_full_o,
  /// Some entry is eligible.
  output logic                        ok_o,
  /// Index of the best eligible entry (valid with ok_o).
  output logic [EntryIdxW-1:0]        idx_o
);

  /// Width of an entry index (do not override).
  localparam int unsigned EntryIdxW = (Depth > 1) ? $clog2(Depth) : 1;
  /// Leaves of the tournament tree: Depth rounded up to a power of two (do not override).
  localparam int unsigned Leaves = 1 << $clog2(Depth);
  /// Width of an entry's rank key (do not override).
  localparam int unsigned KeyW = 4 + RowIdWidth + TimerWidth;
  /// Bits of the key below its eligible and expired bits (do not override).
  localparam int unsigned RankW = KeyW - 2;

  for (genvar l = 0; l < Depth; l++) begin : gen_expired
    assign expired_o[l] = age_i[l*TimerWidth +: TimerWidth] >= timeout_i;
  end
  assign part_full_o = &valid_i;
  assign eligible_o  = valid_i & (full_i | expired_o | {Depth{part_full_o}} | {Depth{drain_i}});

  // node k (1 .. 2*Leaves-1) at position k-1; leaves at Leaves .. 2*Leaves-1
  // (split_var: the nodes of one vector feed each other without a loop;
  // with Depth = 1 there is nothing to split)
  // (not traced: a traced split vector is joined again on every evaluation)
  /* verilator lint_off SPLITVAR */
  /* verilator tracing_off */
  logic [(2*Leaves-1)*KeyW-1:0]      n_key /* verilator split_var */;
  logic [(2*Leaves-1)*EntryIdxW-1:0] n_idx /* verilator split_var */;
  /* verilator tracing_on */
  /* verilator lint_on SPLITVAR */

  for (genvar l = 0; l < Leaves; l++) begin : gen_leaf
    localparam int unsigned K = Leaves + l - 1;
    if (l < Depth) begin : gen_used
      logic [TimerWidth-1:0] age;
      logic [RankW-1:0]      rank;
      assign age  = age_i[l*TimerWidth +: TimerWidth];
      assign rank = expired_o[l] ? {age, {(RankW-TimerWidth){1'b0}}}
                                 : {prio_i[l], full_i[l], ~row_i[l*RowIdWidth +: RowIdWidth], age};
      assign n_key[K*KeyW +: KeyW] = eligible_o[l] ? {1'b1, expired_o[l], rank} : '0;
    end else begin : gen_pad
      assign n_key[K*KeyW +: KeyW] = '0;
    end
    assign n_idx[K*EntryIdxW +: EntryIdxW] = EntryIdxW'(l);
  end

  for (genvar k = 1; k < Leaves; k++) begin : gen_node
    localparam int unsigned A = 2*k - 1;   // left child position
    localparam int unsigned B = 2*k;       // right child position
    logic take_b;
    assign take_b = n_key[B*KeyW +: KeyW] > n_key[A*KeyW +: KeyW];
    assign n_key[(k-1)*KeyW +: KeyW]           = take_b ? n_key[B*KeyW +: KeyW] : n_key[A*KeyW +: KeyW];
    assign n_idx[(k-1)*EntryIdxW +: EntryIdxW] = take_b ? n_idx[B*EntryIdxW +: EntryIdxW]
                                                        : n_idx[A*EntryIdxW +: EntryIdxW];
  end

  assign ok_o  = n_key[KeyW-1];
  assign idx_o = n_idx[0 +: EntryIdxW];
  // the winner's rank is only needed inside the tree
  logic unused_root;
  assign unused_root = ^n_key[KeyW-2:0];

endmodule
/* verilator lint_on DECLFILENAME */
