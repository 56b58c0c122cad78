// Formal harness of moehub_aau (formal/run_formal.sh aau): a row's packets
// always map to one LocalRowID.
//
// The unit's inputs are free (requests, configuration, back-pressure on
// every channel) except for the device memory's answers about one watched
// row (f_malloc, f_row; any constant): the harness keeps that row's spill
// area entry (written by the unit's spill of it, cleared when software
// reconfigures the region) and the memory answers a restore of the watched
// row from it. Answers about other rows are free, which over-approximates
// any memory. A configuration request is held until taken (valid/ready).
// A region's capacity is within 0 .. 2**LocalRowIdWidth (the
// APT's properties, which hold inside, need it). A RowOffset stays within
// its row (the row size is at least 2**OffsetWidth bytes). Property: once a response for the watched row
// carried LocalRowID L (rsp_ok_o), every later response for it carries L,
// until the region is configured again. Responses come in request order
// (one response register), so the harness tracks whether the request in
// flight is the watched row.
module fv_aau #(
  parameter int unsigned Regions         = 2,
  parameter int unsigned RatEntries      = 1,
  parameter int unsigned RatBanks        = 1,
  parameter int unsigned RatWays         = 1,
  parameter int unsigned RowIdWidth      = 2,
  parameter int unsigned LocalRowIdWidth = 2,
  parameter int unsigned OffsetWidth     = 1,
  parameter int unsigned AddrWidth       = 8
) (
  input logic                        clk_i,
  input logic                        rst_ni,
  input logic                        cfg_valid_i,
  input logic                        cfg_flush_i,
  input logic [MallocIdWidth-1:0]    cfg_region_i,
  input logic [LocalRowIdWidth:0]    cfg_rows_i,
  input logic [AddrWidth-1:0]        cfg_base_i,
  input logic [5:0]                  cfg_row_size_log2_i,
  input logic                        req_valid_i,
  input logic [MallocIdWidth-1:0]    req_malloc_i,
  input logic [RowIdWidth-1:0]       req_row_i,
  input logic [OffsetWidth-1:0]      req_offset_i,
  input logic                        rsp_ready_i,
  input logic                        spill_ready_i,
  input logic                        restore_req_ready_i,
  input logic                        restore_rsp_valid_i,
  input logic                        restore_rsp_found_i,
  input logic [LocalRowIdWidth-1:0]  restore_rsp_local_i
);
  localparam int unsigned MallocIdWidth = (Regions > 1) ? $clog2(Regions) : 1;

  (* anyconst *) logic [MallocIdWidth-1:0] f_malloc;
  (* anyconst *) logic [RowIdWidth-1:0]    f_row;

  logic cfg_ready, req_ready, rsp_valid, rsp_ok, rsp_hit, rsp_restored;
  logic [LocalRowIdWidth-1:0] rsp_local, spill_local;
  logic [AddrWidth-1:0]       rsp_addr;
  logic spill_valid, restore_req_valid, restore_rsp_ready;
  logic [MallocIdWidth-1:0]   spill_malloc, restore_req_malloc;
  logic [RowIdWidth-1:0]      spill_row, restore_req_row;
  logic                       mem_found;
  logic [LocalRowIdWidth-1:0] mem_local;

  moehub_aau #(
    .Regions(Regions), .RatEntries(RatEntries), .RatBanks(RatBanks), .RatWays(RatWays),
    .RowIdWidth(RowIdWidth), .LocalRowIdWidth(LocalRowIdWidth), .OffsetWidth(OffsetWidth),
    .AddrWidth(AddrWidth)
  ) u_dut (
    .clk_i, .rst_ni,
    .cfg_valid_i, .cfg_ready_o(cfg_ready), .cfg_flush_i, .cfg_region_i, .cfg_rows_i, .cfg_base_i,
    .cfg_row_size_log2_i,
    .req_valid_i, .req_ready_o(req_ready), .req_malloc_i, .req_row_i, .req_offset_i,
    .rsp_valid_o(rsp_valid), .rsp_ready_i, .rsp_ok_o(rsp_ok), .rsp_hit_o(rsp_hit),
    .rsp_restored_o(rsp_restored), .rsp_local_o(rsp_local), .rsp_addr_o(rsp_addr),
    .spill_valid_o(spill_valid), .spill_ready_i, .spill_malloc_o(spill_malloc), .spill_row_o(spill_row),
    .spill_local_o(spill_local),
    .restore_req_valid_o(restore_req_valid), .restore_req_ready_i, .restore_req_malloc_o(restore_req_malloc),
    .restore_req_row_o(restore_req_row),
    .restore_rsp_valid_i, .restore_rsp_ready_o(restore_rsp_ready),
    .restore_rsp_found_i(mem_found), .restore_rsp_local_i(mem_local)
  );

  // ---- environment -----------------------------------------------------------
  logic init_q = 1'b1;
  always_ff @(posedge clk_i) init_q <= 1'b0;

  logic                       w_spilled_q;   // the watched row is in the spill area
  logic [LocalRowIdWidth-1:0] w_spill_q;     // with this LocalRowID
  logic                       w_known_q;     // a response gave the watched row a LocalRowID
  logic [LocalRowIdWidth-1:0] w_local_q;     // that LocalRowID
  logic                       w_inflight_q;  // the request awaiting its response is the watched row
  logic                       spill_w, cfg_w, req_w, rsp_fire, asked_w;

  assign spill_w  = spill_valid && spill_ready_i && spill_malloc == f_malloc && spill_row == f_row;
  assign cfg_w    = cfg_valid_i && cfg_ready && cfg_region_i == f_malloc;
  assign req_w    = req_valid_i && req_ready && req_malloc_i == f_malloc && req_row_i == f_row;
  assign rsp_fire = rsp_valid && rsp_ready_i;
  assign asked_w  = restore_req_malloc == f_malloc && restore_req_row == f_row;
  // the memory answers the watched row from its spill area; other rows freely
  assign mem_found = asked_w ? w_spilled_q : restore_rsp_found_i;
  assign mem_local = asked_w ? w_spill_q : restore_rsp_local_i;

  // valid/ready: a configuration request is held, unchanged, until it is taken
  logic                       cfg_hold_q, cfg_flush_q;
  logic [MallocIdWidth-1:0]   cfg_region_q;
  logic [LocalRowIdWidth:0]   cfg_rows_q;
  logic [AddrWidth-1:0]       cfg_base_q;
  logic [5:0]                 cfg_log2_q;
  always_ff @(posedge clk_i) begin
    cfg_hold_q   <= rst_ni && cfg_valid_i && !cfg_ready;
    cfg_flush_q  <= cfg_flush_i;
    cfg_region_q <= cfg_region_i;
    cfg_rows_q   <= cfg_rows_i;
    cfg_base_q   <= cfg_base_i;
    cfg_log2_q   <= cfg_row_size_log2_i;
  end

  always_comb begin
    assume (rst_ni == !init_q);
    if (!init_q && cfg_hold_q) begin
      assume (cfg_valid_i && cfg_flush_i == cfg_flush_q && cfg_region_i == cfg_region_q &&
              cfg_rows_i == cfg_rows_q && cfg_base_i == cfg_base_q && cfg_row_size_log2_i == cfg_log2_q);
    end
    assume (cfg_row_size_log2_i >= 6'(OffsetWidth));
    assume (cfg_rows_i <= (LocalRowIdWidth+1)'(1 << LocalRowIdWidth));  // the documented range
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      w_spilled_q  <= 1'b0;
      w_spill_q    <= '0;
      w_known_q    <= 1'b0;
      w_local_q    <= '0;
      w_inflight_q <= 1'b0;
    end else begin
      if (spill_w) begin
        w_spilled_q <= 1'b1;
        w_spill_q   <= spill_local;
      end
      if (rsp_fire && w_inflight_q && rsp_ok && !w_known_q) begin
        w_known_q <= 1'b1;
        w_local_q <= rsp_local;
      end
      if (req_valid_i && req_ready) w_inflight_q <= req_w;
      if (cfg_w) begin  // software clears the region's spill area with it
        w_spilled_q <= 1'b0;
        w_known_q   <= 1'b0;
      end
    end
  end

  // ---- property --------------------------------------------------------------
  always_comb begin
    if (rst_ni && rsp_fire && w_inflight_q && rsp_ok && w_known_q) assert (rsp_local == w_local_q);
  end
endmodule
