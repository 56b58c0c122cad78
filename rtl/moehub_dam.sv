// moehub_dam: Data Availability Manager of the MoE-Hub consumer side.
//
// Dependency table of Kernels entries (a consumer kernel each: kernel id,
// base address, row size, rows per thread-block group, number of groups,
// the total expected bytes once known). Thread-block group g of an entry
// depends on the bytes [base + g * span, + span), span = rows_per_group *
// row_bytes; the entry's range is [base, base + groups * span). Per group a
// byte counter and a released bit, per entry a global counter and an
// AllReady bit. Same function as golden::DataAvailabilityManager
// (systemc/golden/dam.hpp):
// - a completed write (wr channel: its address, byte count and byte mask as
//   golden::StoreRequest carries them) adds its bytes to the counter of the
//   group it falls in, in every matching entry (overlapping kernels all
//   count), and to the entry's global counter;
// - threshold of group g: while the total is unknown a full group (span);
//   once known (at registration or later by set expected bytes), the
//   group's share of the total: span for g < total / span, total mod span
//   for g = total / span, 0 past it;
// - a group is released (a Ready signal on the rdy stream) when its counter
//   reaches a non-zero threshold, at most once; when the global counter
//   reaches the known total the entry is AllReady: the groups still waiting
//   (threshold 0) are retired, never released, and an AllReady marker
//   follows the entry's group signals; setting the total scans the groups
//   in order (it may release the partial last group) and may signal
//   AllReady;
// - a counter passing its threshold, or the global counter passing the
//   total, is a conservation error: reported on err (codes below), and an
//   assertion fails.
// Signals of one write come in table-slot order (entries are processed
// lowest slot first; an added kernel takes the lowest free slot), within an
// entry in group order, AllReady last. The behavioural model orders
// entries by registration: the two agree unless a kernel was removed and
// another added into its slot.
//
// Storage: the group words {released, bytes} of all entries are one array
// of Kernels * MaxGroups words, word slot * MaxGroups + group, read
// combinationally and written one word per cycle, never reset (the shape of
// one SRAM macro; an added kernel clears its words). The entry fields are
// flip-flops. Sizes the studies need (configs/systems/dgx-h800.yaml, the
// moehub schedules, systemc/workload/moehub.cpp and
// systemc/platform/row_transfers.cpp): one kernel per local expert, at most
// apt_regions = 64 per hub (Kernels = 64); rows_per_group = gemm_tile_m =
// 128 (RowsPerGroupWidth 8); rows of hidden_size * 2 + 16 bytes, 14,352 for
// DeepSeek-V3 (RowBytesWidth 16); groups = ceil(capacity / 128) with a
// capacity of the job's tokens, 256 at 32,768 tokens (MaxGroups = 256);
// a whole local row in one write (LenWidth 16); 48-bit addresses; kernel
// ids are region indices (KernelIdWidth 16 holds every layer's experts).
// There the array is 16,384 words of 25 bits: an SRAM.
//
// Channels (valid/ready): cfg (add kernel, set expected bytes, remove
// kernel; taken when idle, before a write offered in the same cycle), wr
// (completed writes), rdy (Ready signals to the thread-block scheduler:
// kernel and group, or kernel and the AllReady marker); err (a one-cycle
// report, no handshake).
// Timing: a write is taken when the unit is idle (registered as it came);
// two cycles to decode its mask (first and last byte, the bytes of each
// quarter; then its first byte's address and its extent), one to match the
// table (and sum the byte count), then per matching entry one cycle to pick
// it, 1 + log2(MaxGroups) + 1 cycles of a restoring division (the group
// index), one cycle to update the counter word; each Ready signal waits for
// the stream (at least one cycle). A write to one entry of 16 groups: 13
// cycles from taken to idle again, without signals. Add: 1 +
// RowsPerGroupWidth (span, shift and add) + groups (clearing the words)
// cycles; set expected bytes: 1 + (1 + log2(MaxGroups) + 1) (division) + 1
// (check) + groups (scan) + 1 cycles plus its signals; an add with its
// total: both; remove: 1 cycle. Not on the write's path in the hub (the
// hub takes writes on; the unit sees their completions).
//
// Restrictions (asserted under MOEHUB_ASSERT_ON): the bytes of a write lie
// within one group of every entry whose range they touch (the moehub
// schedules' writes lie within a row); an expected total is a multiple of
// the row size. Refused with err code 1 (the behavioural model throws
// std::invalid_argument, std::out_of_range or std::logic_error): a zero row
// size, rows per group or group count, more than MaxGroups groups, a kernel
// id already in the table, a full table, an unknown kernel id, a total set
// twice or beyond the groups' capacity.
// Not implemented: one write per cycle (at 200 GB/s and 1.5 GHz the link
// delivers up to one 128-byte write per cycle; a unit at that rate needs the
// decode and the division pipelined, or a reciprocal of the span per entry),
// writes across group boundaries, reading the table back over MMIO, the
// behavioural model's check that every group with a threshold was released
// at AllReady (it cannot fail while no counter passes its threshold).
`ifdef MOEHUB_ASSERT_ON
`include "moehub_assert.svh"
`endif
module moehub_dam #(
  /// Entries of the dependency table (kernels tracked at once).
  parameter int unsigned Kernels = 4,
  /// Most thread-block groups per kernel (a power of two, at least 2).
  parameter int unsigned MaxGroups = 16,
  /// Width of a kernel id.
  parameter int unsigned KernelIdWidth = 8,
  /// Width of a local address.
  parameter int unsigned AddrWidth = 48,
  /// Width of a row size in bytes.
  parameter int unsigned RowBytesWidth = 16,
  /// Width of a rows-per-group count.
  parameter int unsigned RowsPerGroupWidth = 8,
  /// Width of a write's byte count (at least 8: a 128-byte line).
  parameter int unsigned LenWidth = 16
) (
  /// Clock.
  input  logic                         clk_i,
  /// Asynchronous reset, active low: the table empty.
  input  logic                         rst_ni,
  /// Configuration request.
  input  logic                         cfg_valid_i,
  /// The request is taken (the unit is idle).
  output logic                         cfg_ready_o,
  /// 0: add kernel, 1: set its expected bytes, 2: remove it (3: refused).
  input  logic [1:0]                   cfg_op_i,
  /// Kernel id the request is about.
  input  logic [KernelIdWidth-1:0]     cfg_kernel_i,
  /// Add: base address of the kernel's input rows (LocalRowID 0).
  input  logic [AddrWidth-1:0]         cfg_base_i,
  /// Add: row size in bytes (>= 1).
  input  logic [RowBytesWidth-1:0]     cfg_row_bytes_i,
  /// Add: rows per thread-block group (>= 1).
  input  logic [RowsPerGroupWidth-1:0] cfg_rows_per_group_i,
  /// Add: number of groups, 1 .. MaxGroups.
  input  logic [GroupCntW-1:0]         cfg_groups_i,
  /// Add: the total is known at registration (cfg_total_i); set: ignored.
  input  logic                         cfg_total_valid_i,
  /// Total expected bytes (add with cfg_total_valid_i, or set).
  input  logic [TotalW-1:0]            cfg_total_i,
  /// Completed write.
  input  logic                         wr_valid_i,
  /// The write is taken.
  output logic                         wr_ready_o,
  /// Address of the write (a row store: its local address).
  input  logic [AddrWidth-1:0]         wr_addr_i,
  /// Bytes of the write (counted when wr_mask_i is empty).
  input  logic [LenWidth-1:0]          wr_bytes_i,
  /// Valid bytes of its 128-byte window (bit i = byte i); all zero: no mask.
  input  logic [127:0]                 wr_mask_i,
  /// The write is a row store: its window starts wr_row_offset_i bytes below
  /// wr_addr_i (else at wr_addr_i rounded down to 128).
  input  logic                         wr_row_store_i,
  /// Row store: its RowOffset mod 128.
  input  logic [6:0]                   wr_row_offset_i,
  /// Ready signal.
  output logic                         rdy_valid_o,
  /// The thread-block scheduler takes it.
  input  logic                         rdy_ready_i,
  /// Kernel of the signal.
  output logic [KernelIdWidth-1:0]     rdy_kernel_o,
  /// 1: AllReady of the kernel; 0: group rdy_group_o is released.
  output logic                         rdy_all_o,
  /// Group released (rdy_all_o = 0).
  output logic [GroupIdxW-1:0]         rdy_group_o,
  /// Error report (one cycle).
  output logic                         err_valid_o,
  /// 1: configuration refused; 2: a group counter passed its threshold;
  /// 3: a global counter passed the total (also at set expected bytes).
  output logic [1:0]                   err_code_o,
  /// Kernel of the error.
  output logic [KernelIdWidth-1:0]     err_kernel_o
);

  /// Index bits of a group within its kernel (do not override).
  localparam int unsigned GroupBits = $clog2(MaxGroups);
  /// Width of a group index signal (do not override).
  localparam int unsigned GroupIdxW = (GroupBits > 0) ? GroupBits : 1;
  /// Width of a group count, 0 .. MaxGroups (do not override).
  localparam int unsigned GroupCntW = GroupBits + 1;
  /// Width of a group's span in bytes, rows_per_group * row_bytes (do not override).
  localparam int unsigned SpanW = RowBytesWidth + RowsPerGroupWidth;
  /// Width of a kernel's total or global counter: up to MaxGroups spans (do not override).
  localparam int unsigned TotalW = SpanW + GroupBits;
  /// Width of the divider (an offset within the range, or a total) (do not override).
  localparam int unsigned DivW = SpanW + GroupBits + 1;
  /// Width of a slot index (do not override).
  localparam int unsigned SlotW = (Kernels > 1) ? $clog2(Kernels) : 1;
  /// Words of the group array (do not override).
  localparam int unsigned Words = Kernels * MaxGroups;
  /// Width of a group-array address (do not override).
  localparam int unsigned WAddrW = (Words > 1) ? $clog2(Words) : 1;
  /// A group word: {released, bytes} (do not override).
  localparam int unsigned WordW = 1 + SpanW;
  /// Width of an end address, base + groups * span (do not override).
  localparam int unsigned EndW = AddrWidth + 1;
  /// Width of the iteration counter (division steps, multiply steps) (do not override).
  localparam int unsigned IterW = $clog2(((GroupBits + 1) > RowsPerGroupWidth ? (GroupBits + 1) : RowsPerGroupWidth) + 1);

  localparam logic [1:0] OpAdd = 2'd0;
  localparam logic [1:0] OpSet = 2'd1;
  localparam logic [1:0] OpRemove = 2'd2;
  localparam logic [1:0] ErrCfg = 2'd1;
  localparam logic [1:0] ErrGroup = 2'd2;
  localparam logic [1:0] ErrTotal = 2'd3;

  typedef enum logic [3:0] {
    StIdle   = 4'd0,
    StMatch  = 4'd1,   // write: match the table
    StPick   = 4'd2,   // write: next matching entry, start the division
    StDiv    = 4'd3,   // write: group index = offset / span
    StUpd    = 4'd4,   // write: counter word read-modify-write
    StMul    = 4'd5,   // add: span = rows_per_group * row_bytes
    StClear  = 4'd6,   // add: clear the group words, end = base + groups * span
    StSetDiv = 4'd7,   // set: total / span, total mod span
    StSetChk = 4'd8,   // set: capacity check, store
    StScan   = 4'd9,   // set: resolve every group in order
    StFin    = 4'd10,  // set: AllReady?
    StEmit   = 4'd11,  // a Ready signal waits for the stream
    StDecode = 4'd12,  // write: first and last byte of the mask, partial byte counts
    StSpan   = 4'd13   // write: first byte address, extent
  } state_e;

  // ---- state ---------------------------------------------------------------
  state_e                       state_d, state_q, ret_d, ret_q;
  // table (flip-flops)
  logic [Kernels-1:0]           valid_d, valid_q;
  logic [Kernels*KernelIdWidth-1:0] id_d, id_q;
  logic [Kernels*AddrWidth-1:0] base_d, base_q;
  logic [Kernels*RowBytesWidth-1:0] rowb_d, rowb_q;
  logic [Kernels*SpanW-1:0]     span_d, span_q;
  logic [Kernels*GroupCntW-1:0] groups_d, groups_q;
  logic [Kernels*EndW-1:0]      end_d, end_q;
  logic [Kernels-1:0]           known_d, known_q;     // total known
  logic [Kernels*GroupCntW-1:0] fullg_d, fullg_q;     // total / span (groups with a full share)
  logic [Kernels*SpanW-1:0]     remb_d, remb_q;       // total mod span (the partial group's share)
  logic [Kernels*TotalW-1:0]    total_d, total_q;
  logic [Kernels*TotalW-1:0]    recv_d, recv_q;       // global counter
  logic [Kernels-1:0]           allrdy_d, allrdy_q;
  // the write being counted
  logic [AddrWidth-1:0]         lo_d, lo_q;            // first byte
  logic [LenWidth:0]            len_d, len_q;          // last byte + 1 - first byte
  logic [LenWidth:0]            cnt_d, cnt_q;          // bytes counted
  logic                         nz_d, nz_q;            // it writes a byte
  logic                         any_d, any_q;          // it has a mask
  logic [4*6-1:0]               part_d, part_q;        // bytes of each 32-byte quarter of the mask
  logic [AddrWidth-1:0]         raw_addr_d, raw_addr_q;   // the write as taken
  logic [LenWidth-1:0]          raw_bytes_d, raw_bytes_q;
  logic [127:0]                 raw_mask_d, raw_mask_q;
  logic [6:0]                   raw_off_d, raw_off_q;     // its window starts this far below its address
  logic [6:0]                   first_d, first_q, last_d, last_q;   // first and last set bit of the mask
  logic [Kernels-1:0]           pend_d, pend_q;        // matching entries not yet counted
  // the entry worked on and the group
  logic [SlotW-1:0]             cur_d, cur_q;
  logic [GroupIdxW-1:0]         g_d, g_q;
  logic                         adding_d, adding_q;    // add with a total: refusal unregisters
  logic                         tot_valid_d, tot_valid_q;
  logic [TotalW-1:0]            tot_d, tot_q;          // the total of a set (or add)
  logic [RowsPerGroupWidth-1:0] mplier_d, mplier_q;    // add: rows per group, shifted right
  logic [EndW-1:0]              acc_d, acc_q;          // add: span, then the end address
  logic [EndW-1:0]              mcand_d, mcand_q;      // add: row bytes, shifted left
  // divider
  logic [DivW-1:0]              rem_d, rem_q;
  logic [DivW-1:0]              dvs_d, dvs_q;
  logic [GroupCntW-1:0]         quo_d, quo_q;
  logic [IterW-1:0]             it_d, it_q;
  // Ready output register, the AllReady still to send after it
  logic                         rv_d, rv_q, rall_d, rall_q, apend_d, apend_q;
  logic [KernelIdWidth-1:0]     rk_d, rk_q;
  logic [GroupIdxW-1:0]         rg_d, rg_q;
  // error report
  logic                         ev_d, ev_q;
  logic [1:0]                   ec_d, ec_q;
  logic [KernelIdWidth-1:0]     ek_d, ek_q;

  // ---- group array (one word read and written per cycle) --------------------
  logic [WordW-1:0] grp_q [Words];
  logic             grp_we;
  logic [WAddrW-1:0] grp_addr;
  logic [WordW-1:0] grp_rdata, grp_wdata;

  assign grp_addr  = WAddrW'(cur_q) * WAddrW'(MaxGroups) + WAddrW'(g_q);
  assign grp_rdata = grp_q[grp_addr];
  always_ff @(posedge clk_i) begin
    if (grp_we) grp_q[grp_addr] <= grp_wdata;
  end

  // ---- outputs ---------------------------------------------------------------
  assign cfg_ready_o  = state_q == StIdle;
  assign wr_ready_o   = state_q == StIdle && !cfg_valid_i;
  assign rdy_valid_o  = rv_q;
  assign rdy_kernel_o = rk_q;
  assign rdy_all_o    = rall_q;
  assign rdy_group_o  = rg_q;
  assign err_valid_o  = ev_q;
  assign err_code_o   = ec_q;
  assign err_kernel_o = ek_q;

  // ---- the write's bytes (of the registered write): first and last byte of
  // the mask (binary trees, 7 levels), the bytes of each quarter (nibble
  // counts, then 3 adder levels); functions, so that synthesis keeps no
  // names of the trees' nodes
  /// Index of the lowest (last: highest) set bit of m (0 if none).
  function automatic logic [6:0] mask_index(input logic [127:0] m, input logic last);
    logic [127:0]     a;
    logic [128*7-1:0] x;
    a = m;
    x = '0;
    for (int l = 0; l < 7; l++) begin
      for (int i = 0; i < (64 >> l); i++) begin
        if (last ? a[2*i+1] : !a[2*i]) x[i*7 +: 7] = x[(2*i+1)*7 +: 7] | 7'(1 << l);
        else                           x[i*7 +: 7] = x[2*i*7 +: 7];
        a[i] = a[2*i] | a[2*i+1];
      end
    end
    mask_index = x[6:0];
  endfunction
  /// Set bits of each 32-bit quarter of m, 6 bits each.
  function automatic logic [4*6-1:0] mask_quarters(input logic [127:0] m);
    logic [32*6-1:0] c;
    for (int i = 0; i < 32; i++) begin
      c[i*6 +: 6] = 6'(m[4*i]) + 6'(m[4*i+1]) + 6'(m[4*i+2]) + 6'(m[4*i+3]);
    end
    for (int l = 0; l < 3; l++) begin
      for (int i = 0; i < (16 >> l); i++) begin
        c[i*6 +: 6] = c[2*i*6 +: 6] + c[(2*i+1)*6 +: 6];
      end
    end
    mask_quarters = c[4*6-1:0];
  endfunction

  logic [6:0] m_first, m_last;
  assign m_first = mask_index(raw_mask_q, 1'b0);
  assign m_last  = mask_index(raw_mask_q, 1'b1);
  assign part_d  = mask_quarters(raw_mask_q);

  // ---- fields of the current entry ------------------------------------------
  logic [KernelIdWidth-1:0] c_id;
  logic [AddrWidth-1:0]     c_base;
  logic [RowBytesWidth-1:0] c_rowb;
  logic [SpanW-1:0]         c_span, c_remb;
  logic [GroupCntW-1:0]     c_groups, c_fullg;
  logic [TotalW-1:0]        c_total, c_recv;
  logic [EndW-1:0]          c_end;
  logic                     c_known, c_allrdy;
  always_comb begin
    c_end = '0;
    c_id = '0; c_base = '0; c_rowb = '0; c_span = '0; c_remb = '0; c_groups = '0; c_fullg = '0;
    c_total = '0; c_recv = '0; c_known = 1'b0; c_allrdy = 1'b0;
    for (int unsigned k = 0; k < Kernels; k++) begin
      if (SlotW'(k) == cur_q) begin
        c_id     = id_q[k*KernelIdWidth +: KernelIdWidth];
        c_base   = base_q[k*AddrWidth +: AddrWidth];
        c_end    = end_q[k*EndW +: EndW];
        c_rowb   = rowb_q[k*RowBytesWidth +: RowBytesWidth];
        c_span   = span_q[k*SpanW +: SpanW];
        c_remb   = remb_q[k*SpanW +: SpanW];
        c_groups = groups_q[k*GroupCntW +: GroupCntW];
        c_fullg  = fullg_q[k*GroupCntW +: GroupCntW];
        c_total  = total_q[k*TotalW +: TotalW];
        c_recv   = recv_q[k*TotalW +: TotalW];
        c_known  = known_q[k];
        c_allrdy = allrdy_q[k];
      end
    end
  end

  // threshold of group g_q of the current entry
  logic [SpanW-1:0] thr;
  always_comb begin
    if (!c_known || GroupCntW'(g_q) < c_fullg) begin
      thr = c_span;
    end else if (GroupCntW'(g_q) == c_fullg) begin
      thr = c_remb;
    end else begin
      thr = '0;
    end
  end

  // ---- table lookups -------------------------------------------------------
  logic [Kernels-1:0] id_hit, match;
  logic [SlotW-1:0]   hit_slot, free_slot, pend_slot;
  logic               any_hit, any_free;
  logic [EndW-1:0]    wr_hi;
  assign wr_hi = EndW'(lo_q) + EndW'(len_q);
  always_comb begin
    id_hit    = '0;
    match     = '0;
    hit_slot  = '0;
    free_slot = '0;
    pend_slot = '0;
    any_free  = 1'b0;
    for (int k = Kernels - 1; k >= 0; k--) begin
      id_hit[k] = valid_q[k] && id_q[k*KernelIdWidth +: KernelIdWidth] == cfg_kernel_i;
      match[k]  = valid_q[k] && nz_q && EndW'(lo_q) < end_q[k*EndW +: EndW] &&
                  wr_hi > EndW'(base_q[k*AddrWidth +: AddrWidth]);
      if (id_hit[k]) hit_slot = SlotW'(k);
      if (!valid_q[k]) begin
        free_slot = SlotW'(k);
        any_free  = 1'b1;
      end
      if (pend_q[k]) pend_slot = SlotW'(k);
    end
    any_hit = |id_hit;
  end

  // ---- next state ----------------------------------------------------------
  logic [TotalW:0]   recv_new;
  logic [SpanW+LenWidth:0] bytes_new;
  logic              rel_now, all_now;
  logic [DivW-1:0]   off;

  always_comb begin
    state_d = state_q;  ret_d = ret_q;
    valid_d = valid_q;  id_d = id_q;  base_d = base_q;  rowb_d = rowb_q;  span_d = span_q;
    groups_d = groups_q;  end_d = end_q;  known_d = known_q;  fullg_d = fullg_q;  remb_d = remb_q;
    total_d = total_q;  recv_d = recv_q;  allrdy_d = allrdy_q;
    lo_d = lo_q;  len_d = len_q;  cnt_d = cnt_q;  pend_d = pend_q;  nz_d = nz_q;  any_d = any_q;
    raw_addr_d = raw_addr_q;  raw_bytes_d = raw_bytes_q;  raw_mask_d = raw_mask_q;  raw_off_d = raw_off_q;
    first_d = first_q;  last_d = last_q;
    cur_d = cur_q;  g_d = g_q;  adding_d = adding_q;  tot_valid_d = tot_valid_q;  tot_d = tot_q;
    mplier_d = mplier_q;  acc_d = acc_q;  mcand_d = mcand_q;
    rem_d = rem_q;  dvs_d = dvs_q;  quo_d = quo_q;  it_d = it_q;
    rv_d = rv_q;  rall_d = rall_q;  apend_d = apend_q;  rk_d = rk_q;  rg_d = rg_q;
    ev_d = 1'b0;  ec_d = ec_q;  ek_d = ek_q;
    grp_we    = 1'b0;
    grp_wdata = grp_rdata;
    bytes_new = (SpanW+LenWidth+1)'(grp_rdata[SpanW-1:0]) + (SpanW+LenWidth+1)'(cnt_q);
    recv_new  = (TotalW+1)'(c_recv) + (TotalW+1)'(cnt_q);
    rel_now   = 1'b0;
    all_now   = 1'b0;
    off       = DivW'(lo_q - c_base);

    unique case (state_q)
      StIdle: begin
        if (cfg_valid_i) begin
          ek_d = cfg_kernel_i;
          ec_d = ErrCfg;
          tot_d = cfg_total_i;
          tot_valid_d = cfg_total_valid_i;
          adding_d = 1'b0;
          if (cfg_op_i == OpAdd) begin
            if (any_hit || !any_free || cfg_row_bytes_i == '0 || cfg_rows_per_group_i == '0 ||
                cfg_groups_i == '0 || cfg_groups_i > GroupCntW'(MaxGroups)) begin
              ev_d = 1'b1;
            end else begin
              cur_d = free_slot;
              adding_d = cfg_total_valid_i;
              for (int unsigned k = 0; k < Kernels; k++) begin
                if (SlotW'(k) == free_slot) begin
                  valid_d[k] = 1'b1;
                  id_d[k*KernelIdWidth +: KernelIdWidth]   = cfg_kernel_i;
                  base_d[k*AddrWidth +: AddrWidth]         = cfg_base_i;
                  rowb_d[k*RowBytesWidth +: RowBytesWidth] = cfg_row_bytes_i;
                  groups_d[k*GroupCntW +: GroupCntW]       = cfg_groups_i;
                  known_d[k]  = 1'b0;
                  allrdy_d[k] = 1'b0;
                  recv_d[k*TotalW +: TotalW] = '0;
                end
              end
              mplier_d = cfg_rows_per_group_i;
              mcand_d  = EndW'(cfg_row_bytes_i);
              acc_d    = '0;
              it_d     = IterW'(RowsPerGroupWidth);
              state_d  = StMul;
            end
          end else if (cfg_op_i == OpSet) begin
            if (!any_hit) begin
              ev_d = 1'b1;
            end else begin
              cur_d = hit_slot;
              state_d = StSetDiv;
              it_d = '0;   // StSetDiv loads the divider first
            end
          end else if (cfg_op_i == OpRemove && any_hit) begin
            for (int unsigned k = 0; k < Kernels; k++) begin
              if (SlotW'(k) == hit_slot) valid_d[k] = 1'b0;
            end
          end else begin
            ev_d = 1'b1;
          end
        end else if (wr_valid_i) begin
          raw_addr_d  = wr_addr_i;
          raw_bytes_d = wr_bytes_i;
          raw_mask_d  = wr_mask_i;
          raw_off_d   = wr_row_store_i ? wr_row_offset_i : wr_addr_i[6:0];
          state_d     = StDecode;
        end
      end

      StDecode: begin
        any_d   = raw_mask_q != '0;
        first_d = m_first;
        last_d  = m_last;
        state_d = StSpan;
      end

      // with a mask: its bytes from the window's start (address - offset) plus
      // the first set bit; without: [address, + bytes)
      StSpan: begin
        if (any_q) begin
          lo_d  = raw_addr_q + AddrWidth'({1'b0, first_q}) - AddrWidth'(raw_off_q);
          len_d = (LenWidth+1)'(last_q) - (LenWidth+1)'(first_q) + (LenWidth+1)'(1);
        end else begin
          lo_d  = raw_addr_q;
          len_d = (LenWidth+1)'(raw_bytes_q);
        end
        nz_d    = any_q || raw_bytes_q != '0;
        state_d = StMatch;
      end

      StMatch: begin
        cnt_d = any_q ? (LenWidth+1)'(part_q[0 +: 6]) + (LenWidth+1)'(part_q[6 +: 6]) +
                        (LenWidth+1)'(part_q[12 +: 6]) + (LenWidth+1)'(part_q[18 +: 6])
                      : (LenWidth+1)'(raw_bytes_q);
        pend_d  = match;
        state_d = StPick;
      end

      StPick: begin
        if (pend_q == '0) begin
          state_d = StIdle;
        end else begin
          cur_d = pend_slot;
          for (int unsigned k = 0; k < Kernels; k++) begin
            if (SlotW'(k) == pend_slot) pend_d[k] = 1'b0;
          end
          state_d = StDiv;
          it_d    = '0;
        end
      end

      // Restoring division of the offset (StDiv) or of the total (StSetDiv)
      // by the span: the first cycle loads, then GroupBits + 1 steps.
      StDiv, StSetDiv: begin
        if (it_q == '0) begin
          rem_d = (state_q == StDiv) ? off : DivW'(tot_q);
          dvs_d = DivW'(c_span) << GroupBits;
          quo_d = '0;
          it_d  = IterW'(1);
        end else begin
          if (rem_q >= dvs_q) begin
            rem_d = rem_q - dvs_q;
            quo_d = GroupCntW'({quo_q, 1'b1});
          end else begin
            quo_d = GroupCntW'({quo_q, 1'b0});
          end
          dvs_d = dvs_q >> 1;
          it_d  = it_q + IterW'(1);
          if (it_q == IterW'(GroupBits + 1)) begin
            state_d = (state_q == StDiv) ? StUpd : StSetChk;
          end
          if (it_q == IterW'(GroupBits + 1)) g_d = GroupIdxW'(quo_d);
        end
      end

      StUpd: begin
        grp_we       = 1'b1;
        grp_wdata[SpanW-1:0] = bytes_new[SpanW-1:0];
        rel_now      = !grp_rdata[SpanW] && thr != '0 && bytes_new == (SpanW+LenWidth+1)'(thr);
        grp_wdata[SpanW] = grp_rdata[SpanW] || rel_now;
        all_now      = c_known && !c_allrdy && recv_new == (TotalW+1)'(c_total);
        for (int unsigned k = 0; k < Kernels; k++) begin
          if (SlotW'(k) == cur_q) begin
            recv_d[k*TotalW +: TotalW] = recv_new[TotalW-1:0];
            if (all_now) allrdy_d[k] = 1'b1;
          end
        end
        ek_d = c_id;
        if (bytes_new > (SpanW+LenWidth+1)'(thr)) begin
          ev_d = 1'b1;
          ec_d = ErrGroup;
        end else if (c_known && recv_new > (TotalW+1)'(c_total)) begin
          ev_d = 1'b1;
          ec_d = ErrTotal;
        end
        rk_d  = c_id;
        rg_d  = g_q;
        ret_d = StPick;
        if (rel_now) begin
          rv_d = 1'b1;  rall_d = 1'b0;  apend_d = all_now;
          state_d = StEmit;
        end else if (all_now) begin
          rv_d = 1'b1;  rall_d = 1'b1;  apend_d = 1'b0;
          state_d = StEmit;
        end else begin
          state_d = StPick;
        end
      end

      // span = rows_per_group * row_bytes, one bit of rows_per_group a cycle
      StMul: begin
        if (mplier_q[0]) acc_d = acc_q + mcand_q;
        mplier_d = mplier_q >> 1;
        mcand_d  = mcand_q << 1;
        it_d     = it_q - IterW'(1);
        if (it_q == IterW'(1)) begin
          for (int unsigned k = 0; k < Kernels; k++) begin
            if (SlotW'(k) == cur_q) span_d[k*SpanW +: SpanW] = SpanW'(acc_d);
          end
          acc_d   = EndW'(c_base);
          g_d     = '0;
          state_d = StClear;
        end
      end

      // one group word cleared per cycle; the end address accumulates
      StClear: begin
        grp_we    = 1'b1;
        grp_wdata = '0;
        acc_d     = acc_q + EndW'(c_span);
        g_d       = g_q + GroupIdxW'(1);
        if (GroupCntW'(g_q) + GroupCntW'(1) == c_groups) begin
          for (int unsigned k = 0; k < Kernels; k++) begin
            if (SlotW'(k) == cur_q) end_d[k*EndW +: EndW] = acc_d;
          end
          if (tot_valid_q) begin
            state_d = StSetDiv;
            it_d    = '0;
          end else begin
            state_d = StIdle;
          end
        end
      end

      // total known: refuse or store, then scan the groups
      StSetChk: begin
        ek_d = c_id;
        ec_d = ErrCfg;
        g_d  = '0;
        // (the capacity first: the quotient is exact only for totals within it)
        if (c_known || EndW'(tot_q) > c_end - EndW'(c_base)) begin
          ev_d = 1'b1;
          state_d = StIdle;
        end else if (c_recv > tot_q) begin
          ev_d = 1'b1;
          ec_d = ErrTotal;
          state_d = StIdle;
        end else begin
          for (int unsigned k = 0; k < Kernels; k++) begin
            if (SlotW'(k) == cur_q) begin
              known_d[k] = 1'b1;
              fullg_d[k*GroupCntW +: GroupCntW] = quo_q;
              remb_d[k*SpanW +: SpanW]          = SpanW'(rem_q);
              total_d[k*TotalW +: TotalW]       = tot_q;
            end
          end
          state_d = StScan;
        end
        if (ev_d && adding_q) begin   // an add whose total is refused is not registered
          for (int unsigned k = 0; k < Kernels; k++) begin
            if (SlotW'(k) == cur_q) valid_d[k] = 1'b0;
          end
        end
      end

      // group g_q against its threshold (the thresholds of the total now)
      StScan: begin
        rel_now = !grp_rdata[SpanW] && thr != '0 && grp_rdata[SpanW-1:0] == thr;
        grp_we  = rel_now;
        grp_wdata[SpanW] = 1'b1;
        ek_d = c_id;
        if (grp_rdata[SpanW-1:0] > thr) begin
          ev_d = 1'b1;
          ec_d = ErrGroup;
        end
        g_d   = g_q + GroupIdxW'(1);
        ret_d = (GroupCntW'(g_q) + GroupCntW'(1) == c_groups) ? StFin : StScan;
        rk_d  = c_id;
        rg_d  = g_q;
        if (rel_now) begin
          rv_d = 1'b1;  rall_d = 1'b0;  apend_d = 1'b0;
          state_d = StEmit;
        end else begin
          state_d = ret_d;
        end
      end

      StFin: begin
        state_d = StIdle;
        if (c_known && !c_allrdy && c_recv == c_total) begin
          for (int unsigned k = 0; k < Kernels; k++) begin
            if (SlotW'(k) == cur_q) allrdy_d[k] = 1'b1;
          end
          rk_d = c_id;
          rv_d = 1'b1;  rall_d = 1'b1;  apend_d = 1'b0;
          ret_d = StIdle;
          state_d = StEmit;
        end
      end

      StEmit: begin
        if (rdy_ready_i) begin
          if (apend_q) begin
            rall_d  = 1'b1;
            apend_d = 1'b0;
          end else begin
            rv_d    = 1'b0;
            state_d = ret_q;
          end
        end
      end

      default: state_d = StIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= StIdle;  ret_q <= StIdle;
      valid_q <= '0;  id_q <= '0;  base_q <= '0;  rowb_q <= '0;  span_q <= '0;  groups_q <= '0;
      end_q <= '0;  known_q <= '0;  fullg_q <= '0;  remb_q <= '0;  total_q <= '0;  recv_q <= '0;
      allrdy_q <= '0;
      lo_q <= '0;  len_q <= '0;  cnt_q <= '0;  pend_q <= '0;  nz_q <= 1'b0;  any_q <= 1'b0;  part_q <= '0;
      raw_addr_q <= '0;  raw_bytes_q <= '0;  raw_mask_q <= '0;  raw_off_q <= '0;  first_q <= '0;  last_q <= '0;
      cur_q <= '0;  g_q <= '0;  adding_q <= 1'b0;  tot_valid_q <= 1'b0;  tot_q <= '0;
      mplier_q <= '0;  acc_q <= '0;  mcand_q <= '0;
      rem_q <= '0;  dvs_q <= '0;  quo_q <= '0;  it_q <= '0;
      rv_q <= 1'b0;  rall_q <= 1'b0;  apend_q <= 1'b0;  rk_q <= '0;  rg_q <= '0;
      ev_q <= 1'b0;  ec_q <= '0;  ek_q <= '0;
    end else begin
      state_q <= state_d;  ret_q <= ret_d;
      valid_q <= valid_d;  id_q <= id_d;  base_q <= base_d;  rowb_q <= rowb_d;  span_q <= span_d;
      groups_q <= groups_d;  end_q <= end_d;  known_q <= known_d;  fullg_q <= fullg_d;  remb_q <= remb_d;
      total_q <= total_d;  recv_q <= recv_d;  allrdy_q <= allrdy_d;
      lo_q <= lo_d;  len_q <= len_d;  cnt_q <= cnt_d;  pend_q <= pend_d;  nz_q <= nz_d;  any_q <= any_d;
      part_q <= part_d;
      raw_addr_q <= raw_addr_d;  raw_bytes_q <= raw_bytes_d;  raw_mask_q <= raw_mask_d;  raw_off_q <= raw_off_d;
      first_q <= first_d;  last_q <= last_d;
      cur_q <= cur_d;  g_q <= g_d;  adding_q <= adding_d;  tot_valid_q <= tot_valid_d;  tot_q <= tot_d;
      mplier_q <= mplier_d;  acc_q <= acc_d;  mcand_q <= mcand_d;
      rem_q <= rem_d;  dvs_q <= dvs_d;  quo_q <= quo_d;  it_q <= it_d;
      rv_q <= rv_d;  rall_q <= rall_d;  apend_q <= apend_d;  rk_q <= rk_d;  rg_q <= rg_d;
      ev_q <= ev_d;  ec_q <= ec_d;  ek_q <= ek_d;
    end
  end

`ifdef MOEHUB_ASSERT_ON
  // The geometry is one the index arithmetic supports.
  initial begin
    assert ((1 << GroupBits) == MaxGroups && MaxGroups >= 2);
    assert (LenWidth >= 8);
    assert (AddrWidth >= DivW);
  end
  // a write's bytes lie within the range of every entry they touch (checked in StMatch)
  logic a_in_range;
  always_comb begin
    a_in_range = 1'b1;
    for (int unsigned k = 0; k < Kernels; k++) begin
      if (match[k] && !(lo_q >= base_q[k*AddrWidth +: AddrWidth] && wr_hi <= end_q[k*EndW +: EndW])) begin
        a_in_range = 1'b0;
      end
    end
  end
  // conservation: no counter passes its threshold, no global counter its total
  `MOEHUB_ASSERT(DamConservation, !(ev_q && ec_q != ErrCfg))
  `MOEHUB_ASSERT(DamWriteInRange, state_q != StMatch || a_in_range)
  // ... and within one of its groups
  `MOEHUB_ASSERT(DamWriteInGroup, state_q != StUpd ||
                 (SpanW+LenWidth+1)'(rem_q) + (SpanW+LenWidth+1)'(len_q) <= (SpanW+LenWidth+1)'(c_span))
  // a total is a multiple of the row size
  `MOEHUB_ASSERT(DamTotalWholeRows, !(state_q == StSetChk && c_rowb != '0) || tot_q % TotalW'(c_rowb) == '0)
  // The channels: held until ready, payload stable (rdy: the unit; cfg, wr: the environment).
  `MOEHUB_ASSERT_HANDSHAKE(DamRdyHeld, rdy_valid_o, rdy_ready_i, {rdy_kernel_o, rdy_all_o, rdy_group_o})
  `MOEHUB_ASSERT_HANDSHAKE(DamCfgHeld, cfg_valid_i, cfg_ready_o,
                           {cfg_op_i, cfg_kernel_i, cfg_base_i, cfg_row_bytes_i, cfg_rows_per_group_i,
                            cfg_groups_i, cfg_total_valid_i, cfg_total_i})
  `MOEHUB_ASSERT_HANDSHAKE(DamWrHeld, wr_valid_i, wr_ready_o,
                           {wr_addr_i, wr_bytes_i, wr_mask_i, wr_row_store_i, wr_row_offset_i})
`else
  logic unused_rowb;
  assign unused_rowb = ^{rowb_q, c_rowb, rowb_d};
`endif

`ifdef MOEHUB_COVER
  // Functional coverage (Verilator --coverage-user; Yosys does not read these).
  logic [Kernels-1:0] used_q;   // slots that held a kernel since reset
  logic [Kernels-1:0] used_d;
  always_comb begin
    used_d = used_q | valid_q;
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) used_q <= '0;
    else         used_q <= used_d;
  end
  logic add_fire, reuse;
  assign add_fire = cfg_valid_i && cfg_ready_o && cfg_op_i == OpAdd && !any_hit && any_free;
  assign reuse    = used_q[free_slot];
  cov_write:            cover property (@(posedge clk_i) wr_valid_i && wr_ready_o);
  cov_write_masked:     cover property (@(posedge clk_i) wr_valid_i && wr_ready_o && wr_mask_i != '0 && wr_mask_i != '1);
  cov_unmatched:        cover property (@(posedge clk_i) state_q == StMatch && match == '0);
  cov_overlap:          cover property (@(posedge clk_i) state_q == StMatch && !$onehot0(match));
  cov_release:          cover property (@(posedge clk_i) state_q == StUpd && rel_now);
  cov_release_partial:  cover property (@(posedge clk_i) state_q == StUpd && rel_now && thr != c_span);
  cov_release_on_total: cover property (@(posedge clk_i) state_q == StScan && rel_now);
  cov_all_ready:        cover property (@(posedge clk_i) state_q == StUpd && all_now);
  cov_all_ready_retires: cover property (@(posedge clk_i) state_q == StUpd && all_now &&
                                         c_fullg + GroupCntW'(c_remb != '0) < c_groups);
  cov_all_ready_on_total: cover property (@(posedge clk_i) state_q == StFin && rv_d);
  cov_release_and_all:  cover property (@(posedge clk_i) state_q == StUpd && rel_now && all_now);
  cov_rdy_stall:        cover property (@(posedge clk_i) rv_q && !rdy_ready_i);
  cov_add:              cover property (@(posedge clk_i) add_fire);
  cov_add_with_total:   cover property (@(posedge clk_i) add_fire && cfg_total_valid_i);
  cov_readd:            cover property (@(posedge clk_i) add_fire && reuse);
  cov_set_total:        cover property (@(posedge clk_i) cfg_valid_i && cfg_ready_o && cfg_op_i == OpSet && any_hit);
  cov_remove:           cover property (@(posedge clk_i) cfg_valid_i && cfg_ready_o && cfg_op_i == OpRemove && any_hit);
  cov_table_full:       cover property (@(posedge clk_i) cfg_valid_i && cfg_ready_o && cfg_op_i == OpAdd && !any_free);
  cov_cfg_refused:      cover property (@(posedge clk_i) ev_q && ec_q == ErrCfg);
  cov_conservation:     cover property (@(posedge clk_i) ev_q && ec_q != ErrCfg);
`endif

endmodule
