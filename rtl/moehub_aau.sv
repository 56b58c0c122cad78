// moehub_aau: Address Allocation Unit of the MoE-Hub consumer side.
//
// Translates a destination-agnostic row store (MallocID, RowID, RowOffset)
// into a local address, BaseAddr + (LocalRowID << RowSizeLog2) + RowOffset,
// using a Row Allocation Table (moehub_rat) of recent (MallocID, RowID) ->
// LocalRowID mappings and an Allocation Pointer Table (moehub_apt) that hands
// out the next LocalRowID of a region. The MallocID is the region index.
//
// Per request: a RAT hit reuses the cached LocalRowID. A miss in a region
// that has never spilled an entry since it was registered is a first arrival:
// the APT allocates a row and the RAT is filled in the same cycle. A miss in
// a region that has spilled may be a late packet of an evicted row: the unit
// asks the spill area in device memory (restore channel); a found mapping is
// filled back into the RAT (clean: evicting it later needs no spill),
// otherwise a new row is allocated. A fill that evicts an entry allocated
// here puts it into the RAT's one-entry spill register, which drives the
// spill channel from the next cycle until the memory takes it; the fill
// waits while the register is full and not being taken. A restore query
// waits until the spill register is empty, so the memory sees every spill
// before a restore issued after it (the memory must keep that order), and
// software clears a region's spill area when it flushes or re-registers the
// region.
//
// Configuration: a flush invalidates the region's RAT entries (a scan) and
// the region. Registering a region that is already active flushes it first
// in the same way (the behavioural AAU's re-initialisation): its RAT entries
// would otherwise keep handing out LocalRowIDs that the reset RowPointer
// hands out again. A configuration waits until no response is pending and
// the spill register is empty (every spill has reached memory before
// software clears the spill area). A MallocID at or above Regions names no
// region: its requests are answered rsp_ok_o = 0, its configuration is taken
// and changes nothing.
//
// Channels (valid/ready; every valid is held until ready with a stable
// payload, the requesters' too: assertions below): cfg (register or flush a
// region), req -> rsp (one outstanding response register, so one request
// per cycle while rsp drains), spill (to memory), restore_req (to memory) ->
// restore_rsp.
// Timing: hit: the response is registered one cycle after the request is
// taken; a response that asks the APT for a row (a first arrival, a region
// found full, or a restore query that found nothing) comes AllocCycles
// cycles later still (the allocation's latency; the unit takes no request
// meanwhile); a restore adds the memory round trip. The response
// register holds the region's BaseAddr and LocalRowID * RowSize + RowOffset;
// their sum follows it, so rsp_addr_o is one adder after registers and its
// user registers it. Register: one cycle (after a pending response and a
// pending spill); flush, and registration of an active region: one cycle to
// start, then one per RAT set.
//
// Implemented: the above. Not implemented: row sizes that are not a power of
// two (a RowOffset must be below the row size), MallocIDs that name another GPU (routing is the producer's job),
// an error code beyond rsp_ok_o = 0 (region not registered or full), a
// per-row record of eviction (a spilled region queries memory on every miss).
`ifdef MOEHUB_ASSERT_ON
`include "moehub_assert.svh"
`endif
module moehub_aau #(
  /// Number of regions (MallocIDs).
  parameter int unsigned Regions = 4,
  /// RAT entries.
  parameter int unsigned RatEntries = 64,
  /// RAT banks.
  parameter int unsigned RatBanks = 4,
  /// RAT ways per set.
  parameter int unsigned RatWays = 4,
  /// Width of a logical RowID.
  parameter int unsigned RowIdWidth = 16,
  /// Width of a LocalRowID.
  parameter int unsigned LocalRowIdWidth = 16,
  /// Width of a RowOffset in bytes.
  parameter int unsigned OffsetWidth = 16,
  /// Width of a local address.
  parameter int unsigned AddrWidth = 48,
  /// Extra cycles of a response that needed the APT (the allocation's
  /// latency beyond the lookup cycle); 0: in the lookup cycle.
  parameter int unsigned AllocCycles = 0
) (
  /// Clock.
  input  logic                        clk_i,
  /// Asynchronous reset, active low.
  input  logic                        rst_ni,
  /// Configuration request.
  input  logic                        cfg_valid_i,
  /// Configuration done (register of an inactive region: same cycle; flush or register of an active region: after the RAT scan).
  output logic                        cfg_ready_o,
  /// 1: flush the region; 0: register it.
  input  logic                        cfg_flush_i,
  /// Region (MallocID) to configure.
  input  logic [MallocIdWidth-1:0]    cfg_region_i,
  /// Capacity of the region in rows.
  input  logic [LocalRowIdWidth:0]    cfg_rows_i,
  /// Base address of the region.
  input  logic [AddrWidth-1:0]        cfg_base_i,
  /// log2 of the row size in bytes.
  input  logic [5:0]                  cfg_row_size_log2_i,
  /// Row store to translate.
  input  logic                        req_valid_i,
  /// The request is taken.
  output logic                        req_ready_o,
  /// MallocID of the store.
  input  logic [MallocIdWidth-1:0]    req_malloc_i,
  /// RowID of the store.
  input  logic [RowIdWidth-1:0]       req_row_i,
  /// Byte offset of the store within its row.
  input  logic [OffsetWidth-1:0]      req_offset_i,
  /// Translation result.
  output logic                        rsp_valid_o,
  /// The result is taken.
  input  logic                        rsp_ready_i,
  /// 1: translated; 0: region not registered or full (no address).
  output logic                        rsp_ok_o,
  /// The mapping was in the RAT.
  output logic                        rsp_hit_o,
  /// The mapping came back from the spill area.
  output logic                        rsp_restored_o,
  /// LocalRowID of the row.
  output logic [LocalRowIdWidth-1:0]  rsp_local_o,
  /// Local address of the store.
  output logic [AddrWidth-1:0]        rsp_addr_o,
  /// Evicted mapping to write to the spill area (registered, held until taken).
  output logic                        spill_valid_o,
  /// The spill area takes it.
  input  logic                        spill_ready_i,
  /// MallocID of the evicted mapping.
  output logic [MallocIdWidth-1:0]    spill_malloc_o,
  /// RowID of the evicted mapping.
  output logic [RowIdWidth-1:0]       spill_row_o,
  /// LocalRowID of the evicted mapping.
  output logic [LocalRowIdWidth-1:0]  spill_local_o,
  /// Read of the spill area for (MallocID, RowID).
  output logic                        restore_req_valid_o,
  /// The memory takes the read.
  input  logic                        restore_req_ready_i,
  /// MallocID to look up in the spill area.
  output logic [MallocIdWidth-1:0]    restore_req_malloc_o,
  /// RowID to look up in the spill area.
  output logic [RowIdWidth-1:0]       restore_req_row_o,
  /// Answer of the spill area.
  input  logic                        restore_rsp_valid_i,
  /// The unit takes the answer.
  output logic                        restore_rsp_ready_o,
  /// The row had been spilled.
  input  logic                        restore_rsp_found_i,
  /// Its LocalRowID (with restore_rsp_found_i).
  input  logic [LocalRowIdWidth-1:0]  restore_rsp_local_i
);

  /// Width of a MallocID, the region index (do not override).
  localparam int unsigned MallocIdWidth = (Regions > 1) ? $clog2(Regions) : 1;
  /// MallocIDs the index width can name: Regions rounded up to a power of two (do not override).
  localparam int unsigned RegionSlots = 1 << MallocIdWidth;
  /// Width of the allocation wait counter (do not override).
  localparam int unsigned AllocWaitW = (AllocCycles > 1) ? $clog2(AllocCycles) : 1;

  typedef enum logic [2:0] {
    StIdle        = 3'd0,
    StRestoreReq  = 3'd1,
    StRestoreWait = 3'd2,
    StFlush       = 3'd3,
    StAllocWait   = 3'd4   // a response that needed the APT waits AllocCycles
  } state_e;

  state_e                        state_d, state_q;
  logic [AllocWaitW-1:0]         alloc_wait_d, alloc_wait_q;   // cycles left in StAllocWait, minus one
  logic [MallocIdWidth-1:0]      hold_malloc_d, hold_malloc_q;
  logic [RowIdWidth-1:0]         hold_row_d, hold_row_q;
  logic [OffsetWidth-1:0]        hold_offset_d, hold_offset_q;
  logic [Regions*AddrWidth-1:0]  base_d, base_q;
  logic [Regions*6-1:0]          shift_d, shift_q;
  logic [Regions-1:0]            spilled_d, spilled_q;
  logic                          reg_after_d, reg_after_q;   // StFlush: register the region when the scan is done
  logic [LocalRowIdWidth:0]      rows_d, rows_q;             // ... with this capacity
  logic                          rsp_valid_d, rsp_valid_q;
  logic                          rsp_ok_d, rsp_ok_q;
  logic                          rsp_hit_d, rsp_hit_q;
  logic                          rsp_restored_d, rsp_restored_q;
  logic [LocalRowIdWidth-1:0]    rsp_local_d, rsp_local_q;
  logic [AddrWidth-1:0]          rsp_base_d, rsp_base_q;   // the region's BaseAddr
  logic [AddrWidth-1:0]          rsp_row_d, rsp_row_q;     // LocalRowID * RowSize + RowOffset

  // ---- submodules ------------------------------------------------------------
  logic                          apt_cfg_valid, apt_alloc, apt_ok;
  logic [LocalRowIdWidth-1:0]    apt_row;
  logic [MallocIdWidth-1:0]      apt_region;
  logic [Regions-1:0]            region_valid, region_full;
  // a flush completes on the region latched when it started (hold_malloc_q),
  // whatever the cfg inputs show by then
  logic                          apt_cfg_flush;
  logic [MallocIdWidth-1:0]      apt_cfg_region;
  logic [LocalRowIdWidth:0]      apt_cfg_rows;

  moehub_apt #(
    .Regions   (Regions),
    .RowIdWidth(LocalRowIdWidth)
  ) u_apt (
    .clk_i,
    .rst_ni,
    .cfg_valid_i   (apt_cfg_valid),
    .cfg_flush_i   (apt_cfg_flush),
    .cfg_region_i  (apt_cfg_region),
    .cfg_rows_i    (apt_cfg_rows),
    .alloc_i       (apt_alloc),
    .alloc_region_i(apt_region),
    .alloc_ok_o    (apt_ok),
    .alloc_row_o   (apt_row),
    .region_valid_o(region_valid),
    .region_full_o (region_full)
  );

  logic                          rat_valid, rat_ready, rat_fill, rat_hit;
  logic [MallocIdWidth-1:0]      rat_malloc;
  logic [RowIdWidth-1:0]         rat_row;
  logic [LocalRowIdWidth-1:0]    rat_fill_local, rat_hit_local;
  logic                          rat_fill_dirty;
  logic                          rat_flush_valid, rat_flush_ready;

  moehub_rat #(
    .Entries        (RatEntries),
    .Banks          (RatBanks),
    .Ways           (RatWays),
    .MallocIdWidth  (MallocIdWidth),
    .RowIdWidth     (RowIdWidth),
    .LocalRowIdWidth(LocalRowIdWidth)
  ) u_rat (
    .clk_i,
    .rst_ni,
    .req_valid_i     (rat_valid),
    .req_ready_o     (rat_ready),
    .req_malloc_i    (rat_malloc),
    .req_row_i       (rat_row),
    .req_fill_i      (rat_fill),
    .req_fill_local_i(rat_fill_local),
    .req_fill_dirty_i(rat_fill_dirty),
    .hit_o           (rat_hit),
    .hit_local_o     (rat_hit_local),
    .spill_valid_o   (spill_valid_o),
    .spill_ready_i   (spill_ready_i),
    .spill_malloc_o  (spill_malloc_o),
    .spill_row_o     (spill_row_o),
    .spill_local_o   (spill_local_o),
    .flush_valid_i   (rat_flush_valid),
    .flush_ready_o   (rat_flush_ready),
    .flush_malloc_i  (hold_malloc_q)
  );

  // ---- control -------------------------------------------------------------
  logic                          out_free, region_ok, spilled, restore_fire, rat_try, rat_need;
  logic [OffsetWidth-1:0]        offset;
  // region indices clamped into the table: a MallocID at or above Regions
  // (possible when Regions is not a power of two) names no region
  logic                          apt_in, cfg_in;
  logic [MallocIdWidth-1:0]      apt_slot, cfg_slot;
  logic [RegionSlots-1:0]        region_valid_all;

  assign out_free = !rsp_valid_q || rsp_ready_i;

  // What the submodules see: the input request when idle, the held one
  // otherwise (its own block: the control below reads the answers).
  assign apt_region     = (state_q == StIdle) ? req_malloc_i : hold_malloc_q;
  assign apt_cfg_flush  = (state_q == StFlush) ? !reg_after_q : cfg_flush_i;
  assign apt_cfg_region = (state_q == StFlush) ? hold_malloc_q : cfg_region_i;
  assign apt_cfg_rows   = (state_q == StFlush) ? rows_q : cfg_rows_i;
  assign rat_malloc = apt_region;
  assign rat_row    = (state_q == StIdle) ? req_row_i : hold_row_q;
  assign offset     = (state_q == StIdle) ? req_offset_i : hold_offset_q;
  assign apt_in     = 32'(apt_region) < Regions;
  assign cfg_in     = 32'(cfg_region_i) < Regions;
  assign apt_slot   = apt_in ? apt_region : '0;
  assign cfg_slot   = cfg_in ? cfg_region_i : '0;
  assign region_valid_all = RegionSlots'(region_valid);
  assign region_ok  = region_valid_all[apt_region];
  // a region has spilled once an entry of it has entered the spill register
  // (a miss right after must ask memory, which it does once the spill is out)
  assign spilled    = spilled_q[apt_slot] || (spill_valid_o && spill_malloc_o == apt_region);

  // The table is asked only when it takes the request (rat_ready does not
  // depend on rat_valid): a request is never left waiting there.
  always_comb begin
    rat_try        = 1'b0;
    rat_need       = 1'b0;
    rat_fill       = 1'b0;
    rat_fill_local = apt_row;
    rat_fill_dirty = 1'b1;
    if (state_q == StIdle) begin
      rat_try  = !cfg_valid_i && req_valid_i && out_free && region_ok;
      rat_need = 1'b1;
      rat_fill = !spilled && apt_ok;
    end else if (state_q == StRestoreWait) begin
      rat_try        = restore_rsp_valid_i && out_free;
      rat_need       = restore_rsp_found_i || apt_ok;
      rat_fill       = 1'b1;
      rat_fill_local = restore_rsp_found_i ? restore_rsp_local_i : apt_row;
      rat_fill_dirty = !restore_rsp_found_i;   // a restored mapping is already in the spill area
    end
    rat_valid = rat_try && rat_need && rat_ready;
  end

  always_comb begin
    state_d        = state_q;
    alloc_wait_d   = alloc_wait_q;
    hold_malloc_d  = hold_malloc_q;
    hold_row_d     = hold_row_q;
    hold_offset_d  = hold_offset_q;
    base_d         = base_q;
    shift_d        = shift_q;
    spilled_d      = spilled_q;
    reg_after_d    = reg_after_q;
    rows_d         = rows_q;
    rsp_valid_d    = rsp_valid_q && !rsp_ready_i;
    rsp_ok_d       = rsp_ok_q;
    rsp_hit_d      = rsp_hit_q;
    rsp_restored_d = rsp_restored_q;
    rsp_local_d    = rsp_local_q;
    rsp_base_d     = rsp_base_q;
    rsp_row_d      = rsp_row_q;

    cfg_ready_o         = 1'b0;
    req_ready_o         = 1'b0;
    restore_req_valid_o = 1'b0;
    restore_rsp_ready_o = 1'b0;
    apt_cfg_valid       = 1'b0;
    apt_alloc           = 1'b0;
    rat_flush_valid     = 1'b0;
    restore_fire        = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (cfg_valid_i) begin
          // after the pending response (its address reads the region's
          // registers) and the pending spill (software clears the spill area)
          if (!rsp_valid_q && !spill_valid_o) begin
            if (!cfg_in) begin
              cfg_ready_o = 1'b1;   // no such region: nothing to configure
            end else if (cfg_flush_i || region_valid_all[cfg_region_i]) begin
              // a flush, or the registration of an active region: scan the
              // RAT first (the latter registers when the scan is done)
              state_d       = StFlush;
              hold_malloc_d = cfg_region_i;
              reg_after_d   = !cfg_flush_i;
              rows_d        = cfg_rows_i;
              if (!cfg_flush_i) begin
                base_d[cfg_slot*AddrWidth +: AddrWidth] = cfg_base_i;
                shift_d[cfg_slot*6 +: 6]                = cfg_row_size_log2_i;
              end
            end else begin
              apt_cfg_valid = 1'b1;
              cfg_ready_o   = 1'b1;
              base_d[cfg_slot*AddrWidth +: AddrWidth] = cfg_base_i;
              shift_d[cfg_slot*6 +: 6]                = cfg_row_size_log2_i;
              spilled_d[cfg_slot]                     = 1'b0;
            end
          end
        end else if (req_valid_i && out_free) begin
          req_ready_o = !region_ok || rat_valid;
          if (req_ready_o) begin
            if (!region_ok || rat_hit || !spilled) begin
              rsp_valid_d = 1'b1;
              rsp_ok_d    = region_ok && (rat_hit || apt_ok);
              rsp_hit_d   = region_ok && rat_hit;
              rsp_local_d = rat_hit ? rat_hit_local : apt_row;
              apt_alloc   = region_ok && !rat_hit && !spilled && apt_ok;
              if (AllocCycles > 0 && region_ok && !rat_hit) begin
                // the APT's answer: the response waits (the mapping is in place)
                rsp_valid_d  = 1'b0;
                state_d      = StAllocWait;
                alloc_wait_d = AllocWaitW'(AllocCycles - 1);
              end
            end else begin
              state_d = StRestoreReq;
            end
            rsp_restored_d = 1'b0;
            hold_malloc_d  = req_malloc_i;
            hold_row_d     = req_row_i;
            hold_offset_d  = req_offset_i;
          end
        end
      end
      StRestoreReq: begin
        // once the spill register is empty: the memory has every spill
        // before it answers (the register cannot fill in this state)
        restore_req_valid_o = !spill_valid_o;
        if (restore_req_valid_o && restore_req_ready_i) state_d = StRestoreWait;
      end
      StRestoreWait: begin
        if (restore_rsp_valid_i && out_free) begin
          restore_fire   = !rat_need || rat_valid;
          restore_rsp_ready_o = restore_fire;
          if (restore_fire) begin
            state_d        = StIdle;
            rsp_valid_d    = 1'b1;
            rsp_ok_d       = rat_valid;
            rsp_hit_d      = 1'b0;
            rsp_restored_d = restore_rsp_found_i;
            rsp_local_d    = rat_fill_local;
            apt_alloc      = !restore_rsp_found_i && apt_ok;
            if (AllocCycles > 0 && !restore_rsp_found_i) begin
              rsp_valid_d  = 1'b0;
              state_d      = StAllocWait;
              alloc_wait_d = AllocWaitW'(AllocCycles - 1);
            end
          end
        end
      end
      StAllocWait: begin
        // the response registers hold the answer; hold_* the request
        if (alloc_wait_q == '0) begin
          state_d     = StIdle;
          rsp_valid_d = 1'b1;
        end else begin
          alloc_wait_d = alloc_wait_q - AllocWaitW'(1);
        end
      end
      StFlush: begin
        rat_flush_valid = 1'b1;
        if (rat_flush_ready) begin
          apt_cfg_valid            = 1'b1;
          cfg_ready_o              = 1'b1;
          spilled_d[apt_slot]      = 1'b0;   // (apt_region is hold_malloc_q here)
          state_d                  = StIdle;
        end
      end
      default: state_d = StIdle;
    endcase

    // a spill marks its region: later misses there must ask memory
    if (spill_valid_o) spilled_d[spill_malloc_o] = 1'b1;

    // A RowOffset lies within its row (below 2**RowSizeLog2), so
    // LocalRowID * RowSize + RowOffset is a shift and a bitwise OR.
    if (rsp_valid_d && !(rsp_valid_q && !rsp_ready_i)) begin
      rsp_base_d = base_q[apt_slot*AddrWidth +: AddrWidth];
      rsp_row_d  = (AddrWidth'(rsp_local_d) << shift_q[apt_slot*6 +: 6]) | AddrWidth'(offset);
    end
  end

  assign restore_req_malloc_o = hold_malloc_q;
  assign restore_req_row_o    = hold_row_q;
  assign rsp_valid_o          = rsp_valid_q;
  assign rsp_ok_o             = rsp_ok_q;
  assign rsp_hit_o            = rsp_hit_q;
  assign rsp_restored_o       = rsp_restored_q;
  assign rsp_local_o          = rsp_local_q;
  // the address: one adder after the response register
  assign rsp_addr_o = rsp_base_q + rsp_row_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q        <= StIdle;
      alloc_wait_q   <= '0;
      hold_malloc_q  <= '0;
      hold_row_q     <= '0;
      hold_offset_q  <= '0;
      base_q         <= '0;
      shift_q        <= '0;
      spilled_q      <= '0;
      reg_after_q    <= 1'b0;
      rows_q         <= '0;
      rsp_valid_q    <= 1'b0;
      rsp_ok_q       <= 1'b0;
      rsp_hit_q      <= 1'b0;
      rsp_restored_q <= 1'b0;
      rsp_local_q    <= '0;
      rsp_base_q     <= '0;
      rsp_row_q      <= '0;
    end else begin
      state_q        <= state_d;
      alloc_wait_q   <= alloc_wait_d;
      hold_malloc_q  <= hold_malloc_d;
      hold_row_q     <= hold_row_d;
      hold_offset_q  <= hold_offset_d;
      base_q         <= base_d;
      shift_q        <= shift_d;
      spilled_q      <= spilled_d;
      reg_after_q    <= reg_after_d;
      rows_q         <= rows_d;
      rsp_valid_q    <= rsp_valid_d;
      rsp_ok_q       <= rsp_ok_d;
      rsp_hit_q      <= rsp_hit_d;
      rsp_restored_q <= rsp_restored_d;
      rsp_local_q    <= rsp_local_d;
      rsp_base_q     <= rsp_base_d;
      rsp_row_q      <= rsp_row_d;
    end
  end

`ifdef MOEHUB_ASSERT_ON
  // An allocation only happens where the APT allows it.
  `MOEHUB_ASSERT(AauAllocOk, !apt_alloc || apt_ok)
  // A RowOffset lies within its row.
  `MOEHUB_ASSERT(AauOffsetInRow, !(req_valid_i && req_ready_o && region_ok) ||
                                 (AddrWidth'(req_offset_i) >> shift_q[apt_slot*6 +: 6]) == '0)
  // The table is asked only when it takes the request.
  `MOEHUB_ASSERT(AauRatNeverWaits, !rat_valid || rat_ready)
  // A restore query goes out with no spill in flight.
  `MOEHUB_ASSERT(AauRestoreAfterSpills, !restore_req_valid_o || !spill_valid_o)
  // Channels the unit drives: held until ready, payload stable.
  `MOEHUB_ASSERT_HANDSHAKE(AauRspHeld, rsp_valid_o, rsp_ready_i,
                           {rsp_ok_o, rsp_hit_o, rsp_restored_o, rsp_local_o, rsp_addr_o})
  `MOEHUB_ASSERT_HANDSHAKE(AauSpillHeld, spill_valid_o, spill_ready_i,
                           {spill_malloc_o, spill_row_o, spill_local_o})
  `MOEHUB_ASSERT_HANDSHAKE(AauRestoreReqHeld, restore_req_valid_o, restore_req_ready_i,
                           {restore_req_malloc_o, restore_req_row_o})
  // Channels the environment drives (checked here; the formal harness assumes them).
  `MOEHUB_ASSERT_HANDSHAKE(AauCfgHeld, cfg_valid_i, cfg_ready_o,
                           {cfg_flush_i, cfg_region_i, cfg_rows_i, cfg_base_i, cfg_row_size_log2_i})
  `MOEHUB_ASSERT_HANDSHAKE(AauReqHeld, req_valid_i, req_ready_o, {req_malloc_i, req_row_i, req_offset_i})
  `MOEHUB_ASSERT_HANDSHAKE(AauRestoreRspHeld, restore_rsp_valid_i, restore_rsp_ready_o,
                           {restore_rsp_found_i, restore_rsp_local_i})
`endif

`ifdef MOEHUB_COVER
  // Functional coverage (Verilator --coverage-user; Yosys does not read these).
  logic rsp_fire, held_region_ok;
  assign rsp_fire       = rsp_valid_o && rsp_ready_i;
  assign held_region_ok = region_valid_all[hold_malloc_q];
  cov_hit:               cover property (@(posedge clk_i) rsp_fire && rsp_ok_o && rsp_hit_o);
  cov_new_row:           cover property (@(posedge clk_i) rsp_fire && rsp_ok_o && !rsp_hit_o && !rsp_restored_o);
  cov_restored:          cover property (@(posedge clk_i) rsp_fire && rsp_ok_o && rsp_restored_o);
  cov_region_full:       cover property (@(posedge clk_i) rsp_fire && !rsp_ok_o && held_region_ok);
  cov_unregistered:      cover property (@(posedge clk_i) rsp_fire && !rsp_ok_o && !held_region_ok);
  cov_spill:             cover property (@(posedge clk_i) spill_valid_o && spill_ready_i);
  cov_spill_stall:       cover property (@(posedge clk_i) spill_valid_o && !spill_ready_i);
  cov_reregister:        cover property (@(posedge clk_i) state_q == StFlush && rat_flush_ready && reg_after_q);
  cov_restore_found:     cover property (@(posedge clk_i) restore_rsp_valid_i && restore_rsp_ready_o &&
                                                           restore_rsp_found_i);
  cov_restore_not_found: cover property (@(posedge clk_i) restore_rsp_valid_i && restore_rsp_ready_o &&
                                                           !restore_rsp_found_i);
  cov_rsp_stall:         cover property (@(posedge clk_i) rsp_valid_o && !rsp_ready_i);
  cov_back_to_back:      cover property (@(posedge clk_i) rsp_fire && req_valid_i && req_ready_o);
  cov_cfg_waits:         cover property (@(posedge clk_i) cfg_valid_i && rsp_valid_q);
  cov_flush:             cover property (@(posedge clk_i) state_q == StFlush && rat_flush_ready);
`endif

  // region_full is informative only (apt_ok already folds it in)
  logic unused_full;
  assign unused_full = ^region_full;

endmodule
