// Formal harness of moehub_apt (formal/run_formal.sh apt): the table with
// free inputs, reset in the first cycle only, and one assumption: a region's
// capacity is within the documented range 0 .. 2**RowIdWidth (a larger
// cfg_rows_i would let LocalRowIDs wrap). The assertions are the FORMAL
// block of rtl/moehub_apt.sv: no LocalRowID handed out twice within a
// region, pointers only grow and never pass the capacity.
module fv_apt #(
  /// Regions of the table under proof.
  parameter int unsigned Regions = 2,
  /// Width of a LocalRowID.
  parameter int unsigned RowIdWidth = 3
) (
  /// Clock.
  input logic                      clk_i,
  /// Reset (asserted in the first cycle only).
  input logic                      rst_ni,
  /// The table's inputs, free.
  input logic                      cfg_valid_i,
  input logic                      cfg_flush_i,
  input logic [RegionIdxWidth-1:0] cfg_region_i,
  input logic [RowIdWidth:0]       cfg_rows_i,
  input logic                      alloc_i,
  input logic [RegionIdxWidth-1:0] alloc_region_i
);
  localparam int unsigned RegionIdxWidth = (Regions > 1) ? $clog2(Regions) : 1;

  logic init_q = 1'b1;
  always_ff @(posedge clk_i) init_q <= 1'b0;
  always_comb begin
    assume (rst_ni == !init_q);
    assume (cfg_rows_i <= (RowIdWidth+1)'(1 << RowIdWidth));
  end

  logic                  alloc_ok;
  logic [RowIdWidth-1:0] alloc_row;
  logic [Regions-1:0]    region_valid, region_full;
  moehub_apt #(
    .Regions   (Regions),
    .RowIdWidth(RowIdWidth)
  ) u_dut (
    .clk_i,
    .rst_ni,
    .cfg_valid_i,
    .cfg_flush_i,
    .cfg_region_i,
    .cfg_rows_i,
    .alloc_i,
    .alloc_region_i,
    .alloc_ok_o    (alloc_ok),
    .alloc_row_o   (alloc_row),
    .region_valid_o(region_valid),
    .region_full_o (region_full)
  );
endmodule
