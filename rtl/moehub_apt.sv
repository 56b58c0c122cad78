// moehub_apt: Allocation Pointer Table of the MoE-Hub Address Allocation Unit.
//
// Holds, for each registered row region (one rowspMalloc region, indexed by
// its MallocID), the RowPointer: the next free LocalRowID of the region, and
// the region's capacity in rows. An allocation returns the pointer and
// increments it in the same clock edge (a single-cycle read-modify-write, so
// two allocations can never return the same row). The region-full flag is
// raised when the pointer reaches the capacity; an allocation then fails.
//
// Timing: allocation is combinational from alloc_i to alloc_row_o/alloc_ok_o;
// the pointer update takes effect at the next clock edge. Registering or
// flushing a region takes effect at the next edge and wins over an
// allocation in the same cycle (alloc_ok_o is low while cfg_valid_i is high).
//
// Implemented: per-region pointer, capacity, valid bit; register (pointer :=
// 0); flush (region invalid); full flags. Not implemented: base address and
// row size (kept by moehub_aau), reading the pointers back over MMIO.
module moehub_apt #(
  /// Number of regions (MallocIDs) the table tracks.
  parameter int unsigned Regions = 4,
  /// Width of a LocalRowID; a region holds at most 2**RowIdWidth rows.
  parameter int unsigned RowIdWidth = 16
) (
  /// Clock.
  input  logic                          clk_i,
  /// Asynchronous reset, active low: every region invalid.
  input  logic                          rst_ni,
  /// Configuration request (register or flush one region); always accepted.
  input  logic                          cfg_valid_i,
  /// 1: flush the region (invalid, pointer 0); 0: register it with cfg_rows_i rows.
  input  logic                          cfg_flush_i,
  /// Region the configuration request is about.
  input  logic [RegionIdxWidth-1:0]     cfg_region_i,
  /// Capacity of the region in rows (register only), 0 .. 2**RowIdWidth.
  input  logic [RowIdWidth:0]           cfg_rows_i,
  /// Allocation request: takes one row of alloc_region_i if alloc_ok_o is high.
  input  logic                          alloc_i,
  /// Region to allocate from.
  input  logic [RegionIdxWidth-1:0]     alloc_region_i,
  /// The region is registered, not full and not being reconfigured: alloc_i succeeds.
  output logic                          alloc_ok_o,
  /// The row an allocation gets (valid when alloc_ok_o is high).
  output logic [RowIdWidth-1:0]         alloc_row_o,
  /// Per region: registered.
  output logic [Regions-1:0]            region_valid_o,
  /// Per region: registered and every row allocated.
  output logic [Regions-1:0]            region_full_o
);

  /// Width of a region index (do not override).
  localparam int unsigned RegionIdxWidth = (Regions > 1) ? $clog2(Regions) : 1;
  /// Width of a pointer or capacity: one more bit than a row id (do not override).
  localparam int unsigned PtrWidth = RowIdWidth + 1;

  logic [Regions-1:0]          valid_d, valid_q;
  logic [Regions*PtrWidth-1:0] ptr_d, ptr_q;
  logic [Regions*PtrWidth-1:0] cap_d, cap_q;

  // Status of each region.
  always_comb begin
    region_valid_o = valid_q;
    region_full_o  = '0;
    for (int unsigned r = 0; r < Regions; r++) begin
      region_full_o[r] = valid_q[r] && (ptr_q[r*PtrWidth +: PtrWidth] >= cap_q[r*PtrWidth +: PtrWidth]);
    end
  end

  // Allocation answer (combinational).
  always_comb begin
    alloc_ok_o  = 1'b0;
    alloc_row_o = '0;
    for (int unsigned r = 0; r < Regions; r++) begin
      if (RegionIdxWidth'(r) == alloc_region_i) begin
        alloc_row_o = ptr_q[r*PtrWidth +: RowIdWidth];
        alloc_ok_o  = !cfg_valid_i && valid_q[r] && !region_full_o[r];
      end
    end
  end

  // Next state: the pointer steps on a successful allocation; configuration
  // resets it.
  always_comb begin
    valid_d = valid_q;
    ptr_d   = ptr_q;
    cap_d   = cap_q;
    for (int unsigned r = 0; r < Regions; r++) begin
      if (alloc_i && alloc_ok_o && RegionIdxWidth'(r) == alloc_region_i) begin
        ptr_d[r*PtrWidth +: PtrWidth] = ptr_q[r*PtrWidth +: PtrWidth] + PtrWidth'(1);
      end
      if (cfg_valid_i && RegionIdxWidth'(r) == cfg_region_i) begin
        valid_d[r]                    = !cfg_flush_i;
        ptr_d[r*PtrWidth +: PtrWidth] = '0;
        cap_d[r*PtrWidth +: PtrWidth] = cfg_flush_i ? '0 : cfg_rows_i;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
      ptr_q   <= '0;
      cap_q   <= '0;
    end else begin
      valid_q <= valid_d;
      ptr_q   <= ptr_d;
      cap_q   <= cap_d;
    end
  end

`ifdef MOEHUB_ASSERT_ON
  // A pointer never passes its region's capacity.
  always_comb begin
    for (int unsigned r = 0; r < Regions; r++) begin
      assert (!valid_q[r] || ptr_q[r*PtrWidth +: PtrWidth] <= cap_q[r*PtrWidth +: PtrWidth]);
    end
  end
`endif

`ifdef MOEHUB_FORMAL
  // Properties on the table's state, proven by formal/fv_apt.sv (the
  // formal script defines MOEHUB_FORMAL). f_region / f_row: one watched
  // (region, LocalRowID) pair, any constant.
  (* anyconst *) logic [RegionIdxWidth-1:0] f_region;
  (* anyconst *) logic [RowIdWidth-1:0]     f_row;
  logic                        f_seen_q;   // f_row of f_region handed out since its last configuration
  logic                        f_past_q;   // a previous cycle exists
  logic [Regions*PtrWidth-1:0] f_ptr_q;    // the pointers one cycle ago
  logic [Regions-1:0]          f_cfg_q;    // the region was configured one cycle ago
  logic                        f_hand_out, f_cfg_watched;
  assign f_hand_out    = alloc_i && alloc_ok_o && alloc_region_i == f_region && alloc_row_o == f_row;
  assign f_cfg_watched = cfg_valid_i && cfg_region_i == f_region;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_seen_q <= 1'b0;
      f_past_q <= 1'b0;
      f_ptr_q  <= '0;
      f_cfg_q  <= '0;
    end else begin
      f_seen_q <= f_cfg_watched ? 1'b0 : (f_seen_q || f_hand_out);
      f_past_q <= 1'b1;
      f_ptr_q  <= ptr_q;
      for (int unsigned r = 0; r < Regions; r++) begin
        f_cfg_q[r] <= cfg_valid_i && RegionIdxWidth'(r) == cfg_region_i;
      end
    end
  end
  always_comb begin
    // a LocalRowID is never handed out twice within a region
    if (f_seen_q) assert (!f_hand_out);
    for (int unsigned r = 0; r < Regions; r++) begin
      // pointers only grow (between configurations) and never pass the capacity
      if (f_past_q && !f_cfg_q[r]) assert (ptr_q[r*PtrWidth +: PtrWidth] >= f_ptr_q[r*PtrWidth +: PtrWidth]);
      if (valid_q[r]) assert (ptr_q[r*PtrWidth +: PtrWidth] <= cap_q[r*PtrWidth +: PtrWidth]);
      // (inductive strengthening) capacities stay in range (an assumption on cfg_rows_i)
      assert (cap_q[r*PtrWidth +: PtrWidth] <= PtrWidth'(1 << RowIdWidth));
      // (inductive strengthening) a handed-out row lies below its region's pointer
      if (f_seen_q && RegionIdxWidth'(r) == f_region) begin
        assert (valid_q[r] && ptr_q[r*PtrWidth +: PtrWidth] > PtrWidth'(f_row));
      end
    end
  end
`endif

`ifdef MOEHUB_COVER
  // Functional coverage (Verilator --coverage-user; Yosys does not read these).
  logic alloc_full, alloc_unknown, alloc_last;
  always_comb begin
    alloc_full    = 1'b0;
    alloc_unknown = 1'b0;
    alloc_last    = 1'b0;
    for (int unsigned r = 0; r < Regions; r++) begin
      if (RegionIdxWidth'(r) == alloc_region_i) begin
        alloc_full    = region_full_o[r];
        alloc_unknown = !valid_q[r];
        alloc_last    = ptr_q[r*PtrWidth +: PtrWidth] + PtrWidth'(1) == cap_q[r*PtrWidth +: PtrWidth];
      end
    end
  end
  cov_alloc:            cover property (@(posedge clk_i) alloc_i && alloc_ok_o);
  cov_alloc_last_row:   cover property (@(posedge clk_i) alloc_i && alloc_ok_o && alloc_last);
  cov_region_full:      cover property (@(posedge clk_i) alloc_i && !cfg_valid_i && alloc_full);
  cov_alloc_unknown:    cover property (@(posedge clk_i) alloc_i && alloc_unknown);
  cov_alloc_during_cfg: cover property (@(posedge clk_i) alloc_i && cfg_valid_i);
  cov_register:         cover property (@(posedge clk_i) cfg_valid_i && !cfg_flush_i);
  cov_flush:            cover property (@(posedge clk_i) cfg_valid_i && cfg_flush_i);
`endif

endmodule
