// Formal harness of moehub_aau (formal/run_formal.sh aau): a row's packets
// always map to one LocalRowID, no two rows of a registration share one, and
// every channel follows valid/ready.
//
// The unit's inputs are free (requests, configuration, back-pressure on
// every channel) except for the device memory's answers about two watched
// rows of one region (f_malloc with f_row_a and f_row_b, distinct; any
// constants): the harness keeps each one's spill area entry (written by the
// unit's spill of it, cleared when software reconfigures the region) and
// the memory answers a restore of a watched row from it. Answers about other
// rows are free, which over-approximates any memory. The requesters follow
// valid/ready: a configuration, a request and a restore answer are held,
// unchanged, until taken (assumptions; the unit's own assertions on those
// inputs check the same). A region's capacity is within
// 0 .. 2**LocalRowIdWidth (the APT's properties, which hold inside, need it).
// A RowOffset stays within its row (the row size is at least 2**OffsetWidth
// bytes). Properties, until the region is configured again (registered or
// flushed): once a response for a watched row carried LocalRowID L
// (rsp_ok_o), every later response for it carries L (consistency); the two
// watched rows never carry the same LocalRowID (injectivity: with free
// constants, any two distinct rows of a region). Besides: every channel the
// unit drives holds valid until ready with a stable payload (also asserted
// inside the unit; here so that a copy of the unit without its assertions is
// checked too). Responses come in request order (one response register), so
// the harness tracks which watched row the request in flight is.
`include "moehub_assert.svh"
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
  (* anyconst *) logic [RowIdWidth-1:0]    f_row_a, f_row_b;

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

  // per watched row k (0: f_row_a, 1: f_row_b)
  logic [1:0]                   w_spilled_q;   // in the spill area
  logic [2*LocalRowIdWidth-1:0] w_spill_q;     // with this LocalRowID
  logic [1:0]                   w_known_q;     // a response gave it a LocalRowID
  logic [2*LocalRowIdWidth-1:0] w_local_q;     // that LocalRowID
  logic [1:0]                   w_inflight_q;  // the request awaiting its response is this row
  logic [1:0]                   spill_w, req_w, asked_w;
  logic                         cfg_w, rsp_fire;
  logic [RowIdWidth-1:0]        f_row [2];
  assign f_row[0] = f_row_a;
  assign f_row[1] = f_row_b;

  for (genvar k = 0; k < 2; k++) begin : gen_w
    assign spill_w[k] = spill_valid && spill_ready_i && spill_malloc == f_malloc && spill_row == f_row[k];
    assign req_w[k]   = req_valid_i && req_ready && req_malloc_i == f_malloc && req_row_i == f_row[k];
    assign asked_w[k] = restore_req_malloc == f_malloc && restore_req_row == f_row[k];
  end
  assign cfg_w    = cfg_valid_i && cfg_ready && cfg_region_i == f_malloc;
  assign rsp_fire = rsp_valid && rsp_ready_i;
  // the memory answers a watched row from its spill area; other rows freely
  always_comb begin
    mem_found = restore_rsp_found_i;
    mem_local = restore_rsp_local_i;
    for (int k = 0; k < 2; k++) begin
      if (asked_w[k]) begin
        mem_found = w_spilled_q[k];
        mem_local = w_spill_q[k*LocalRowIdWidth +: LocalRowIdWidth];
      end
    end
  end

  // the requesters follow valid/ready
  `MOEHUB_ASSUME_HANDSHAKE(FvCfgHeld, cfg_valid_i, cfg_ready,
                           {cfg_flush_i, cfg_region_i, cfg_rows_i, cfg_base_i, cfg_row_size_log2_i})
  `MOEHUB_ASSUME_HANDSHAKE(FvReqHeld, req_valid_i, req_ready, {req_malloc_i, req_row_i, req_offset_i})
  `MOEHUB_ASSUME_HANDSHAKE(FvRestoreRspHeld, restore_rsp_valid_i, restore_rsp_ready, {mem_found, mem_local})

  always_comb begin
    assume (rst_ni == !init_q);
    assume (f_row_a != f_row_b);
    assume (cfg_row_size_log2_i >= 6'(OffsetWidth));
    assume (cfg_rows_i <= (LocalRowIdWidth+1)'(1 << LocalRowIdWidth));  // the documented range
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      w_spilled_q  <= '0;
      w_spill_q    <= '0;
      w_known_q    <= '0;
      w_local_q    <= '0;
      w_inflight_q <= '0;
    end else begin
      for (int k = 0; k < 2; k++) begin
        if (spill_w[k]) begin
          w_spilled_q[k]                                   <= 1'b1;
          w_spill_q[k*LocalRowIdWidth +: LocalRowIdWidth] <= spill_local;
        end
        if (rsp_fire && w_inflight_q[k] && rsp_ok && !w_known_q[k]) begin
          w_known_q[k]                                     <= 1'b1;
          w_local_q[k*LocalRowIdWidth +: LocalRowIdWidth] <= rsp_local;
        end
        if (req_valid_i && req_ready) w_inflight_q[k] <= req_w[k];
        if (cfg_w) begin  // software clears the region's spill area with it
          w_spilled_q[k] <= 1'b0;
          w_known_q[k]   <= 1'b0;
        end
      end
    end
  end

  // ---- properties --------------------------------------------------------------
  always_comb begin
    if (rst_ni) begin
      // consistency: a row keeps its LocalRowID
      if (rsp_fire && w_inflight_q[0] && rsp_ok && w_known_q[0]) begin
        FvRowAKeepsLocal: assert (rsp_local == w_local_q[0 +: LocalRowIdWidth]);
      end
      if (rsp_fire && w_inflight_q[1] && rsp_ok && w_known_q[1]) begin
        FvRowBKeepsLocal: assert (rsp_local == w_local_q[LocalRowIdWidth +: LocalRowIdWidth]);
      end
      // injectivity: two rows of a registration never share a LocalRowID
      // (checked when the second one's LocalRowID shows, and from then on)
      if (rsp_fire && w_inflight_q[0] && rsp_ok && w_known_q[1]) begin
        FvRowANotB: assert (rsp_local != w_local_q[LocalRowIdWidth +: LocalRowIdWidth]);
      end
      if (rsp_fire && w_inflight_q[1] && rsp_ok && w_known_q[0]) begin
        FvRowBNotA: assert (rsp_local != w_local_q[0 +: LocalRowIdWidth]);
      end
      if (w_known_q == 2'b11) begin
        FvRowsDistinct: assert (w_local_q[0 +: LocalRowIdWidth] != w_local_q[LocalRowIdWidth +: LocalRowIdWidth]);
      end
    end
  end
  // the channels the unit drives
  `MOEHUB_ASSERT_HANDSHAKE(FvRspHeld, rsp_valid, rsp_ready_i, {rsp_ok, rsp_hit, rsp_restored, rsp_local, rsp_addr})
  `MOEHUB_ASSERT_HANDSHAKE(FvSpillHeld, spill_valid, spill_ready_i, {spill_malloc, spill_row, spill_local})
  `MOEHUB_ASSERT_HANDSHAKE(FvRestoreReqHeld, restore_req_valid, restore_req_ready_i,
                           {restore_req_malloc, restore_req_row})
endmodule
