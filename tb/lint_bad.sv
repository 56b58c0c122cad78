// A module that Verilator's lint must refuse (an input that is never used):
// proves that the rtl_lint_* tests can fail.
module lint_bad (
  /// Used.
  input  logic a_i,
  /// Never used: -Wall reports UNUSEDSIGNAL.
  input  logic b_i,
  /// Copy of a_i.
  output logic y_o
);
  assign y_o = a_i;
endmodule
