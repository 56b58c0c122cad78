// moehub_rat: Row Allocation Table of the MoE-Hub Address Allocation Unit.
//
// A tag RAM that caches (MallocID, RowID) -> LocalRowID. The table has
// Entries entries in Banks banks; each bank holds Sets sets of Ways ways
// (Sets = Entries / (Banks * Ways)). A row maps to bank RowID mod Banks and,
// within it, to set (RowID / Banks) mod Sets, so consecutive rows fall in
// different banks. Each bank's storage is one array of Sets words, a word
// holding the Ways entries of a set (MallocID, RowID, LocalRowID), written
// one word at a time and never reset: the shape of one SRAM macro per bank.
// A bank of one set is that one word, registers kept as its Ways entries, of
// which a fill writes only the victim's (the same function; in Verilator the
// compare then reads entries instead of bit fields of a wide word, and the
// hit way and first free way come from vector operations, no loop over ways).
// Valid bits and the per-set FIFO pointers are flip-flops (they are cleared
// on reset and by a flush).
//
// One request per cycle: a lookup of (MallocID, RowID) answers hit_o and
// hit_local_o combinationally. With req_fill_i set, a miss also inserts
// (MallocID, RowID) -> req_fill_local_i into its set: into the first invalid
// way, else over the way at the set's FIFO pointer (the oldest insert). An
// evicted entry that was allocated here (dirty) goes into the one-entry spill
// register, which drives the spill channel from the next cycle on and holds
// it until spill_ready_i; a fill that evicts a dirty entry is taken only
// while that register is empty or being taken (req_ready_o, which does not
// depend on req_valid_i); an entry that was itself restored from the spill
// area (clean) is dropped. Restoring a spilled mapping is a
// fill with the LocalRowID read back from memory and req_fill_dirty_i low. A flush of one MallocID scans the sets, one per cycle in all
// banks at once, and clears the matching valid bits; requests wait meanwhile.
//
// Timing: lookup and fill are single-cycle (combinational read of the set
// word, write at the next edge); an evicted dirty entry is on the spill
// channel from the cycle after its fill; a flush takes Sets cycles.
// Not implemented: a synchronous-read SRAM (it needs a pipeline stage
// between the set read and the tag compare), dual ports (the paper's RAT is
// a 16-bank dual-ported SRAM; here one request per cycle over all banks),
// strict global FIFO order (FIFO is per set, and a hole left by a flush is
// refilled before the oldest entry is evicted).
`ifdef MOEHUB_ASSERT_ON
`include "moehub_assert.svh"
`endif
module moehub_rat #(
  /// Total number of entries; a multiple of Banks * Ways.
  parameter int unsigned Entries = 64,
  /// Number of banks (power of two).
  parameter int unsigned Banks = 4,
  /// Ways per set; Entries / (Banks * Ways) sets per bank must be a power of two.
  parameter int unsigned Ways = 4,
  /// Width of a MallocID.
  parameter int unsigned MallocIdWidth = 2,
  /// Width of a (logical) RowID.
  parameter int unsigned RowIdWidth = 16,
  /// Width of a LocalRowID.
  parameter int unsigned LocalRowIdWidth = 16
) (
  /// Clock.
  input  logic                       clk_i,
  /// Asynchronous reset, active low: every entry invalid.
  input  logic                       rst_ni,
  /// Lookup request.
  input  logic                       req_valid_i,
  /// The request is taken this cycle (with its fill and spill, if any); independent of req_valid_i.
  output logic                       req_ready_o,
  /// MallocID of the row looked up.
  input  logic [MallocIdWidth-1:0]   req_malloc_i,
  /// RowID of the row looked up.
  input  logic [RowIdWidth-1:0]      req_row_i,
  /// On a miss, insert the mapping to req_fill_local_i.
  input  logic                       req_fill_i,
  /// LocalRowID to insert on a miss (req_fill_i).
  input  logic [LocalRowIdWidth-1:0] req_fill_local_i,
  /// The filled mapping is new (spill it when evicted); 0: restored, already in the spill area.
  input  logic                       req_fill_dirty_i,
  /// The row is in the table (combinational, valid with req_valid_i).
  output logic                       hit_o,
  /// Its LocalRowID (valid with hit_o).
  output logic [LocalRowIdWidth-1:0] hit_local_o,
  /// An evicted entry to be written to the spill area in device memory (registered, held until taken).
  output logic                       spill_valid_o,
  /// The spill area takes the evicted entry.
  input  logic                       spill_ready_i,
  /// MallocID of the evicted entry.
  output logic [MallocIdWidth-1:0]   spill_malloc_o,
  /// RowID of the evicted entry.
  output logic [RowIdWidth-1:0]      spill_row_o,
  /// LocalRowID of the evicted entry.
  output logic [LocalRowIdWidth-1:0] spill_local_o,
  /// Flush request: invalidate every entry of flush_malloc_i (hold until ready).
  input  logic                       flush_valid_i,
  /// The flush completes this cycle.
  output logic                       flush_ready_o,
  /// MallocID to flush.
  input  logic [MallocIdWidth-1:0]   flush_malloc_i
);

  /// Sets per bank (do not override).
  localparam int unsigned Sets = Entries / (Banks * Ways);
  /// Address bits that select a bank; 0 for one bank (do not override).
  localparam int unsigned BankBits = (Banks > 1) ? $clog2(Banks) : 0;
  /// Width of a bank index signal (do not override).
  localparam int unsigned BankIdxW = (Banks > 1) ? $clog2(Banks) : 1;
  /// Width of a set index signal (do not override).
  localparam int unsigned SetIdxW = (Sets > 1) ? $clog2(Sets) : 1;
  /// Width of a way index signal (do not override).
  localparam int unsigned WayIdxW = (Ways > 1) ? $clog2(Ways) : 1;
  /// Entry layout {MallocID, RowID, LocalRowID} (do not override).
  localparam int unsigned EntryW = MallocIdWidth + RowIdWidth + LocalRowIdWidth;
  /// One SRAM word: the Ways entries of a set (do not override).
  localparam int unsigned WordW = Ways * EntryW;
  /// Number of (bank, set) pairs (do not override).
  localparam int unsigned Lines = Banks * Sets;

  // ---- state ---------------------------------------------------------------
  logic [Lines*Ways-1:0]    valid_d, valid_q;    // index (bank*Sets + set)*Ways + way
  logic [Lines*Ways-1:0]    dirty_d, dirty_q;    // allocated here, not yet in the spill area
  logic [Lines*WayIdxW-1:0] fifo_d, fifo_q;      // oldest way per (bank, set)
  logic                     flushing_d, flushing_q;
  logic [SetIdxW-1:0]       scan_d, scan_q;      // set being flushed
  logic                     spill_d, spill_q;    // the spill register holds an evicted dirty entry
  logic [EntryW-1:0]        spill_ent_d, spill_ent_q;

  // ---- request path: index decode (both storage shapes) -------------------
  logic [BankIdxW-1:0]        req_bank;
  logic [SetIdxW-1:0]         req_set;
  logic [$clog2(Lines+1)-1:0] line;
  logic [WayIdxW-1:0]         victim;
  logic [Ways-1:0]            hit_ways;
  logic                       have_free, victim_valid, victim_dirty, evict, fire;
  logic [EntryW-1:0]          victim_ent;    // the victim way's entry
  logic                       spill_free;    // the spill register can take an entry this cycle
  assign spill_free = !spill_q || spill_ready_i;
  // (its own statement: req_ready_o does not depend on req_valid_i, and a
  // requester may form its valid from it)
  assign fire = req_valid_i && req_ready_o;

  // (its own block: the set read depends on it)
  always_comb begin
    req_bank = '0;
    req_set  = '0;
    if (Banks > 1) req_bank = req_row_i[BankIdxW-1:0];
    if (Sets > 1)  req_set  = req_row_i[BankBits +: SetIdxW];
  end

  // ---- storage, request path and next state --------------------------------
  // Two shapes of one function. Banks of several sets (the synthesized
  // configurations): one array of Sets words per bank, a word read and
  // written whole, the shape of an SRAM macro. Banks of one set (the
  // co-simulated hub geometries, fully associative within a bank): registers
  // kept entry by entry, a fill writing only the victim's entry; the same
  // function (the one-set RTL is what the scoreboards, the formal harness and
  // the co-simulation run; the several-set RTL what tb_rat and synthesis
  // run), and in Verilator the compare reads entries instead of bit fields of
  // a wide word.
  if (Sets > 1) begin : gen_sets
    logic [SetIdxW-1:0] rd_set;              // set read in every bank
    logic [WordW-1:0]   bank_word [Banks];   // each bank's word of set rd_set
    logic [Banks-1:0]   wr_en;
    logic [BankIdxW-1:0] wr_bank;            // the bank of wr_en (one-hot)
    logic [SetIdxW-1:0] wr_set;
    logic [WordW-1:0]   wr_word;
    logic [WordW-1:0]   word;

    for (genvar b = 0; b < Banks; b++) begin : gen_bank
      logic [WordW-1:0] mem_q [Sets];
      always_ff @(posedge clk_i) begin
        if (wr_en[b]) mem_q[wr_set] <= wr_word;
      end
      assign bank_word[b] = mem_q[rd_set];
    end
    logic unused_bank;   // (the banks' own write enables)
    assign unused_bank = ^wr_bank;

    assign rd_set = flushing_q ? scan_q : req_set;

    always_comb begin
      line   = $clog2(Lines+1)'(req_bank) * $clog2(Lines+1)'(Sets) + $clog2(Lines+1)'(req_set);
      word   = bank_word[req_bank];

      // tag compare
      hit_o       = 1'b0;
      hit_local_o = '0;
      hit_ways    = '0;
      for (int unsigned w = 0; w < Ways; w++) begin
        if (valid_q[line*Ways + w] &&
            word[w*EntryW + LocalRowIdWidth +: MallocIdWidth + RowIdWidth] == {req_malloc_i, req_row_i}) begin
          hit_ways[w] = 1'b1;
          hit_local_o = word[w*EntryW +: LocalRowIdWidth];
        end
      end

      // victim: the first invalid way, else the oldest
      hit_o     = |hit_ways;
      have_free = 1'b0;
      victim    = fifo_q[line*WayIdxW +: WayIdxW];
      for (int w = Ways - 1; w >= 0; w--) begin
        if (!valid_q[line*Ways + w]) begin
          have_free = 1'b1;
          victim    = WayIdxW'(w);
        end
      end
      victim_valid = !have_free;
      victim_dirty = victim_valid && dirty_q[line*Ways + 32'(victim)];
      evict        = !flushing_q && req_fill_i && !hit_o && victim_dirty;
      victim_ent   = word[victim*EntryW +: EntryW];

      req_ready_o = !flushing_q && (!evict || spill_free);
    end

    // next state
    always_comb begin
      valid_d       = valid_q;
      dirty_d       = dirty_q;
      fifo_d        = fifo_q;
      flushing_d    = flushing_q;
      scan_d        = scan_q;
      flush_ready_o = 1'b0;
      wr_en         = '0;
      wr_bank       = req_bank;
      wr_set        = req_set;
      wr_word       = word;

      if (fire && req_fill_i && !hit_o) begin
        wr_en[req_bank]                   = 1'b1;
        wr_word[victim*EntryW +: EntryW]  = {req_malloc_i, req_row_i, req_fill_local_i};
        valid_d[line*Ways + 32'(victim)] = 1'b1;
        dirty_d[line*Ways + 32'(victim)] = req_fill_dirty_i;
        if (victim_valid) begin
          fifo_d[line*WayIdxW +: WayIdxW] = (victim == WayIdxW'(Ways - 1)) ? '0 : victim + WayIdxW'(1);
        end
      end

      if (flushing_q) begin
        for (int unsigned b = 0; b < Banks; b++) begin
          for (int unsigned w = 0; w < Ways; w++) begin
            if (bank_word[b][w*EntryW + LocalRowIdWidth + RowIdWidth +: MallocIdWidth] == flush_malloc_i) begin
              valid_d[(b*Sets + 32'(scan_q))*Ways + w] = 1'b0;
            end
          end
        end
        if (scan_q == SetIdxW'(Sets - 1)) begin
          flush_ready_o = 1'b1;
          flushing_d    = 1'b0;
          scan_d        = '0;
        end else begin
          scan_d = scan_q + SetIdxW'(1);
        end
      end else if (flush_valid_i && !req_valid_i) begin
        flushing_d = 1'b1;   // requests in flight go first; the flush holds them off once started
        scan_d     = '0;
      end
    end

  end else begin : gen_one_set
    // A bank of one set is one word of registers, kept as its Ways entries
    // (index bank*Ways + way): a fill writes only the victim's entry, the
    // compare reads each way's entry without extracting it from the word, and
    // a flush clears its matches in one cycle (the scan of one set).
    logic [EntryW-1:0]     ent_q [Lines*Ways];
    logic [Ways-1:0]       line_valid;     // the valid bits of the request's bank
    logic [EntryW-1:0]     victim_entry;   // the victim way's entry
    logic [Lines*Ways-1:0] flush_match;    // entries holding flush_malloc_i
    logic                  fill_we;
    logic                  unused_set;
    assign unused_set = ^{req_set, scan_q};   // (one set: nothing to index or scan)

    always_comb begin
      line       = $clog2(Lines+1)'(req_bank);
      line_valid = valid_q[line*Ways +: Ways];
    end

    always_ff @(posedge clk_i) begin
      if (fill_we) ent_q[32'(line)*Ways + 32'(victim)] <= {req_malloc_i, req_row_i, req_fill_local_i};
    end

    // Way indices as bit masks: bit w of mask j (way_bit[j*Ways + w]) is bit
    // j of w, so bit j of the index of a one-hot way vector v is
    // |(v & mask j).
    logic [WayIdxW*Ways-1:0] way_bit;
    for (genvar j = 0; j < WayIdxW; j++) begin : gen_way_bit
      for (genvar w = 0; w < Ways; w++) begin : gen_w
        assign way_bit[j*Ways + w] = ((w >> j) & 1) != 0;
      end
    end

    // tag compare: every way of the request's bank at once
    logic [Ways-1:0] way_match;
    for (genvar w = 0; w < Ways; w++) begin : gen_way
      assign way_match[w] = ent_q[32'(line)*Ways + w][LocalRowIdWidth +: MallocIdWidth + RowIdWidth] ==
                            {req_malloc_i, req_row_i};
    end

    // victim: the first invalid way (the lowest bit of the free ways, isolated
    // as free & -free), else the oldest
    logic [Ways-1:0]    free_ways, first_free;
    logic [WayIdxW-1:0] hit_way, free_way;
    always_comb begin
      free_ways  = ~line_valid;
      first_free = free_ways & (~free_ways + Ways'(1));
      have_free  = |free_ways;
      hit_ways   = line_valid & way_match;
      for (int unsigned j = 0; j < WayIdxW; j++) begin
        hit_way[j]  = |(hit_ways & way_bit[j*Ways +: Ways]);
        free_way[j] = |(first_free & way_bit[j*Ways +: Ways]);
      end
      victim       = have_free ? free_way : fifo_q[line*WayIdxW +: WayIdxW];
      victim_valid = !have_free;
    end

    // hit, victim entry, flush matches (a lookup matches at most one way: the
    // assertion below; the hit way's index reads its LocalRowID)
    always_comb begin
      hit_local_o  = (hit_ways != '0) ? ent_q[32'(line)*Ways + 32'(hit_way)][LocalRowIdWidth-1:0] : '0;
      victim_entry = ent_q[32'(line)*Ways + 32'(victim)];
      flush_match  = '0;
      if (flushing_q) begin
        for (int unsigned i = 0; i < Lines*Ways; i++) begin
          flush_match[i] = ent_q[i][LocalRowIdWidth + RowIdWidth +: MallocIdWidth] == flush_malloc_i;
        end
      end
    end

    always_comb begin
      hit_o        = |hit_ways;
      victim_dirty = victim_valid && dirty_q[line*Ways + 32'(victim)];
      evict        = !flushing_q && req_fill_i && !hit_o && victim_dirty;
      victim_ent   = victim_entry;

      req_ready_o = !flushing_q && (!evict || spill_free);
    end
    assign fill_we = fire && req_fill_i && !hit_o;

    // next state
    always_comb begin
      valid_d       = valid_q;
      dirty_d       = dirty_q;
      fifo_d        = fifo_q;
      flushing_d    = flushing_q;
      scan_d        = '0;
      flush_ready_o = 1'b0;

      if (fill_we) begin
        valid_d[line*Ways + 32'(victim)] = 1'b1;
        dirty_d[line*Ways + 32'(victim)] = req_fill_dirty_i;
        if (victim_valid) begin
          fifo_d[line*WayIdxW +: WayIdxW] = (victim == WayIdxW'(Ways - 1)) ? '0 : victim + WayIdxW'(1);
        end
      end

      if (flushing_q) begin
        valid_d       = valid_q & ~flush_match;
        flush_ready_o = 1'b1;
        flushing_d    = 1'b0;
      end else if (flush_valid_i && !req_valid_i) begin
        flushing_d = 1'b1;   // requests in flight go first; the flush holds them off once started
      end
    end
  end

  // ---- spill register ----------------------------------------------------
  // An evicted dirty entry waits here until the spill area takes it; a fill
  // that evicts one is taken only while the register is empty or being taken
  // (req_ready_o), so the channel is held until ready with a stable payload.
  always_comb begin
    spill_d     = spill_q && !spill_ready_i;
    spill_ent_d = spill_ent_q;
    if (fire && evict) begin
      spill_d     = 1'b1;
      spill_ent_d = victim_ent;
    end
  end
  assign spill_valid_o  = spill_q;
  assign spill_malloc_o = spill_ent_q[LocalRowIdWidth + RowIdWidth +: MallocIdWidth];
  assign spill_row_o    = spill_ent_q[LocalRowIdWidth +: RowIdWidth];
  assign spill_local_o  = spill_ent_q[LocalRowIdWidth-1:0];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q     <= '0;
      dirty_q     <= '0;
      fifo_q      <= '0;
      flushing_q  <= 1'b0;
      scan_q      <= '0;
      spill_q     <= 1'b0;
      spill_ent_q <= '0;
    end else begin
      valid_q     <= valid_d;
      dirty_q     <= dirty_d;
      fifo_q      <= fifo_d;
      flushing_q  <= flushing_d;
      scan_q      <= scan_d;
      spill_q     <= spill_d;
      spill_ent_q <= spill_ent_d;
    end
  end

`ifdef MOEHUB_ASSERT_ON
  // The geometry is one the index arithmetic supports.
  initial begin
    assert (Sets * Banks * Ways == Entries);
    assert ((1 << BankBits) == Banks);
    assert (Sets == 1 || (1 << SetIdxW) == Sets);
    assert (RowIdWidth >= BankBits + SetIdxW);
  end
  // A lookup never matches two ways.
  `MOEHUB_ASSERT(RatHitOneWay, !(req_valid_i && !flushing_q) || $onehot0(hit_ways))
  // Channels: the spill is held until taken with its entry unchanged (this
  // module); a request and a flush are held until taken, unchanged (the
  // environment: checked here).
  `MOEHUB_ASSERT_HANDSHAKE(RatSpillHeld, spill_valid_o, spill_ready_i,
                           {spill_malloc_o, spill_row_o, spill_local_o})
  `MOEHUB_ASSERT_HANDSHAKE(RatReqHeld, req_valid_i, req_ready_o,
                           {req_malloc_i, req_row_i, req_fill_i, req_fill_local_i, req_fill_dirty_i})
  `MOEHUB_ASSERT_HANDSHAKE(RatFlushHeld, flush_valid_i, flush_ready_o, flush_malloc_i)
  // A fill that evicts a dirty entry finds the spill register free.
  `MOEHUB_ASSERT(RatSpillNotOverwritten, !(fire && evict) || spill_free)
`endif

`ifdef MOEHUB_COVER
  // Functional coverage (Verilator --coverage-user; Yosys does not read these).
  logic                prev_fire_q;
  logic [BankIdxW-1:0] prev_bank_q;
  always_ff @(posedge clk_i) begin
    prev_fire_q <= fire;
    prev_bank_q <= req_bank;
  end
  cov_hit:             cover property (@(posedge clk_i) fire && hit_o);
  cov_miss_free_way:   cover property (@(posedge clk_i) fire && req_fill_i && !hit_o && !victim_valid);
  cov_evict_dirty:     cover property (@(posedge clk_i) fire && req_fill_i && !hit_o && victim_valid && victim_dirty);
  cov_evict_clean:     cover property (@(posedge clk_i) fire && req_fill_i && !hit_o && victim_valid && !victim_dirty);
  cov_spill_stall:     cover property (@(posedge clk_i) req_valid_i && evict && !spill_free);
  cov_restore_fill:    cover property (@(posedge clk_i) fire && req_fill_i && !hit_o && !req_fill_dirty_i);
  cov_miss_no_fill:    cover property (@(posedge clk_i) fire && !req_fill_i && !hit_o);
  cov_same_bank:       cover property (@(posedge clk_i) fire && prev_fire_q && req_bank == prev_bank_q);
  cov_flush_done:      cover property (@(posedge clk_i) flush_ready_o);
  cov_req_in_flush:    cover property (@(posedge clk_i) req_valid_i && flushing_q);
`endif

endmodule
