// Blackbox standing in for one storage array of the RTL (the RAT's per-bank
// word arrays) when the flow estimates storage as SRAM macros: Yosys maps
// every inferred memory with one combinational read port and one write port
// to it (synth/sram_techmap.v); flow.py then names each instance after its
// size (moehub_sram_<words>x<width>) and gives OpenSTA a liberty of those
// cells from synth/sram_model.py (area, read and setup times).
(* blackbox *)
module moehub_sram_macro #(
  parameter WORDS = 1,
  parameter WIDTH = 1,
  parameter ABITS = 1
) (
  input              clk,
  input  [ABITS-1:0] rd_addr,
  output [WIDTH-1:0] rd_data,
  input  [WIDTH-1:0] wr_mask,
  input  [ABITS-1:0] wr_addr,
  input  [WIDTH-1:0] wr_data
);
endmodule
