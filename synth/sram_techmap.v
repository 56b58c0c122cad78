// Yosys techmap: an inferred memory ($mem_v2) with one combinational read
// port and one clocked write port becomes a moehub_sram_macro blackbox
// (synth/sram_stub.v); any other memory is left to Yosys (_TECHMAP_FAIL_),
// which maps it to flip-flops.
(* techmap_celltype = "$mem_v2" *)
module moehub_mem_to_sram_macro (RD_CLK, RD_EN, RD_ARST, RD_SRST, RD_ADDR, RD_DATA,
                                 WR_CLK, WR_EN, WR_ADDR, WR_DATA);
  parameter MEMID = "";
  parameter signed SIZE = 1;
  parameter signed OFFSET = 0;
  parameter signed ABITS = 1;
  parameter signed WIDTH = 1;
  parameter signed INIT = 1'bx;
  parameter signed RD_PORTS = 1;
  parameter RD_CLK_ENABLE = 1'b1;
  parameter RD_CLK_POLARITY = 1'b1;
  parameter RD_TRANSPARENCY_MASK = 1'b0;
  parameter RD_COLLISION_X_MASK = 1'b0;
  parameter RD_WIDE_CONTINUATION = 1'b0;
  parameter RD_CE_OVER_SRST = 1'b0;
  parameter RD_ARST_VALUE = 1'b0;
  parameter RD_SRST_VALUE = 1'b0;
  parameter RD_INIT_VALUE = 1'b0;
  parameter signed WR_PORTS = 1;
  parameter WR_CLK_ENABLE = 1'b1;
  parameter WR_CLK_POLARITY = 1'b1;
  parameter WR_PRIORITY_MASK = 1'b0;
  parameter WR_WIDE_CONTINUATION = 1'b0;

  input  [RD_PORTS-1:0]       RD_CLK, RD_EN, RD_ARST, RD_SRST;
  input  [RD_PORTS*ABITS-1:0] RD_ADDR;
  output [RD_PORTS*WIDTH-1:0] RD_DATA;
  input  [WR_PORTS-1:0]       WR_CLK;
  input  [WR_PORTS*WIDTH-1:0] WR_EN;
  input  [WR_PORTS*ABITS-1:0] WR_ADDR;
  input  [WR_PORTS*WIDTH-1:0] WR_DATA;

  wire _TECHMAP_FAIL_ = RD_PORTS != 1 || WR_PORTS != 1 || RD_CLK_ENABLE != 1'b0 ||
                        WR_CLK_ENABLE != 1'b1 || WR_CLK_POLARITY != 1'b1 || OFFSET != 0;

  moehub_sram_macro #(
    .WORDS(SIZE),
    .WIDTH(WIDTH),
    .ABITS(ABITS)
  ) _TECHMAP_REPLACE_ (
    .clk    (WR_CLK),
    .rd_addr(RD_ADDR),
    .rd_data(RD_DATA),
    .wr_mask(WR_EN),
    .wr_addr(WR_ADDR),
    .wr_data(WR_DATA)
  );
endmodule
