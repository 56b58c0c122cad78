// equiv_top: the hub RTL (moehub_top) and the generic netlist Yosys made of
// it (moehub_top_generic, from the flow's generic.v) side by side on the
// same inputs. stim_i supplies every input of the hub (padded to whole words); the configuration
// valid is the AND of three stimulus bits (registrations and flushes are
// rarer than requests). out_rtl_o and out_gen_o are all outputs of either
// side, concatenated; mismatch_o is their difference; activity_o flags a
// translated store and a taken grant of the RTL side. Parameters: those of
// the netlist (tests/synth/test_equiv.py passes the configuration's).
// flip_i corrupts the netlist side on purpose, to show the check can fail.
module equiv_top #(
  parameter int unsigned Regions = 4,
  parameter int unsigned RatEntries = 64,
  parameter int unsigned RatBanks = 4,
  parameter int unsigned RatWays = 4,
  parameter int unsigned RowIdWidth = 16,
  parameter int unsigned LocalRowIdWidth = 16,
  parameter int unsigned OffsetWidth = 16,
  parameter int unsigned AddrWidth = 48,
  parameter int unsigned RpmDests = 8,
  parameter int unsigned RpmDepth = 8,
  parameter int unsigned RpmTimerWidth = 8
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [StimPortW-1:0] stim_i,
  /// Test of the checker: inverts the netlist side's first output bit.
  input  logic              flip_i,
  output logic              mismatch_o,
  output logic [1:0]        activity_o,
  output logic [OutW-1:0]   out_rtl_o,
  output logic [OutW-1:0]   out_gen_o
);
  localparam int unsigned MiW = (Regions > 1) ? $clog2(Regions) : 1;
  localparam int unsigned DiW = (RpmDests > 1) ? $clog2(RpmDests) : 1;
  localparam int unsigned EiW = (RpmDepth > 1) ? $clog2(RpmDepth) : 1;
  localparam int unsigned Tot = RpmDests * RpmDepth;
  localparam int unsigned StimW = 3 + 1 + MiW + LocalRowIdWidth + 1 + AddrWidth + 6 + 1 + MiW + RowIdWidth
                                  + OffsetWidth + 5 + LocalRowIdWidth + 3 * Tot + Tot * RowIdWidth + RpmDests
                                  + RpmTimerWidth + 2;
  localparam int unsigned StimPortW = (StimW + 31) / 32 * 32;   // whole words: the driver fills them
  localparam int unsigned OutW = 6 + LocalRowIdWidth + AddrWidth + 1 + MiW + RowIdWidth + LocalRowIdWidth
                                 + 1 + MiW + RowIdWidth + 1 + 1 + Tot + DiW + EiW;

  logic [2:0]                 cfg_valid_bits;
  logic                       cfg_flush, req_valid, rsp_ready, spill_ready, rreq_ready, rrsp_valid, rrsp_found;
  logic [MiW-1:0]             cfg_region, req_malloc;
  logic [LocalRowIdWidth:0]   cfg_rows;
  logic [AddrWidth-1:0]       cfg_base;
  logic [5:0]                 cfg_rsl2;
  logic [RowIdWidth-1:0]      req_row;
  logic [OffsetWidth-1:0]     req_offset;
  logic [LocalRowIdWidth-1:0] rrsp_local;
  logic [Tot-1:0]             e_valid, e_full, e_prio;
  logic [Tot*RowIdWidth-1:0]  e_row;
  logic [RpmDests-1:0]        congested;
  logic [RpmTimerWidth-1:0]   timeout;
  logic                       drain, gnt_ready;

  assign {cfg_valid_bits, cfg_flush, cfg_region, cfg_rows, req_valid, cfg_base, cfg_rsl2, req_malloc, req_row,
          req_offset, rsp_ready, spill_ready, rreq_ready, rrsp_valid, rrsp_found, rrsp_local, e_valid, e_full,
          e_prio, e_row, congested, timeout, drain, gnt_ready} = stim_i[StimW-1:0];

  // the outputs of one side, in the order of out_*_o
`define EQUIV_SIDE(MOD, P, OUT) \
  logic P``cfg_ready, P``req_ready, P``rsp_valid, P``rsp_ok, P``rsp_hit, P``rsp_restored; \
  logic [LocalRowIdWidth-1:0] P``rsp_local, P``spill_local; \
  logic [AddrWidth-1:0] P``rsp_addr; \
  logic P``spill_valid, P``rreq_valid, P``rrsp_ready, P``gnt_valid; \
  logic [MiW-1:0] P``spill_malloc, P``rreq_malloc; \
  logic [RowIdWidth-1:0] P``spill_row, P``rreq_row; \
  logic [Tot-1:0] P``gnt; \
  logic [DiW-1:0] P``gnt_dest; \
  logic [EiW-1:0] P``gnt_entry; \
  MOD u_``P ( \
    .clk_i, .rst_ni, \
    .aau_cfg_valid_i(&cfg_valid_bits), .aau_cfg_ready_o(P``cfg_ready), .aau_cfg_flush_i(cfg_flush), \
    .aau_cfg_region_i(cfg_region), .aau_cfg_rows_i(cfg_rows), .aau_cfg_base_i(cfg_base), \
    .aau_cfg_row_size_log2_i(cfg_rsl2), .aau_req_valid_i(req_valid), .aau_req_ready_o(P``req_ready), \
    .aau_req_malloc_i(req_malloc), .aau_req_row_i(req_row), .aau_req_offset_i(req_offset), \
    .aau_rsp_valid_o(P``rsp_valid), .aau_rsp_ready_i(rsp_ready), .aau_rsp_ok_o(P``rsp_ok), \
    .aau_rsp_hit_o(P``rsp_hit), .aau_rsp_restored_o(P``rsp_restored), .aau_rsp_local_o(P``rsp_local), \
    .aau_rsp_addr_o(P``rsp_addr), .aau_spill_valid_o(P``spill_valid), .aau_spill_ready_i(spill_ready), \
    .aau_spill_malloc_o(P``spill_malloc), .aau_spill_row_o(P``spill_row), .aau_spill_local_o(P``spill_local), \
    .aau_restore_req_valid_o(P``rreq_valid), .aau_restore_req_ready_i(rreq_ready), \
    .aau_restore_req_malloc_o(P``rreq_malloc), .aau_restore_req_row_o(P``rreq_row), \
    .aau_restore_rsp_valid_i(rrsp_valid), .aau_restore_rsp_ready_o(P``rrsp_ready), \
    .aau_restore_rsp_found_i(rrsp_found), .aau_restore_rsp_local_i(rrsp_local), \
    .rpm_entry_valid_i(e_valid), .rpm_entry_full_i(e_full), .rpm_entry_prio_i(e_prio), .rpm_entry_row_i(e_row), \
    .rpm_congested_i(congested), .rpm_timeout_i(timeout), .rpm_drain_i(drain), .rpm_gnt_valid_o(P``gnt_valid), \
    .rpm_gnt_ready_i(gnt_ready), .rpm_gnt_o(P``gnt), .rpm_gnt_dest_o(P``gnt_dest), .rpm_gnt_entry_o(P``gnt_entry)); \
  assign OUT = {P``cfg_ready, P``req_ready, P``rsp_valid, P``rsp_ok, P``rsp_hit, P``rsp_restored, P``rsp_local, \
                P``rsp_addr, P``spill_valid, P``spill_malloc, P``spill_row, P``spill_local, P``rreq_valid, \
                P``rreq_malloc, P``rreq_row, P``rrsp_ready, P``gnt_valid, P``gnt, P``gnt_dest, P``gnt_entry};

  `EQUIV_SIDE(moehub_top #(.Regions(Regions), .RatEntries(RatEntries), .RatBanks(RatBanks), .RatWays(RatWays),
              .RowIdWidth(RowIdWidth), .LocalRowIdWidth(LocalRowIdWidth), .OffsetWidth(OffsetWidth),
              .AddrWidth(AddrWidth), .RpmDests(RpmDests), .RpmDepth(RpmDepth), .RpmTimerWidth(RpmTimerWidth)),
              rtl_, out_rtl_o)
  logic [OutW-1:0] out_gen;
  `EQUIV_SIDE(moehub_top_generic, gen_, out_gen)
  assign out_gen_o = out_gen ^ OutW'(flip_i);
`undef EQUIV_SIDE

  assign mismatch_o = out_rtl_o != out_gen_o;
  assign activity_o = {rtl_rsp_valid & rtl_rsp_ok & rsp_ready, rtl_gnt_valid & gnt_ready};
endmodule
