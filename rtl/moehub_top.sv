// moehub_top: the MoE-Hub units of one GPU hub, side by side.
//
// The consumer's Address Allocation Unit (moehub_aau: RAT + APT) and the
// producer's Runtime Packet Manager scheduler (moehub_rpm_sched) share the
// hub clock and reset and nothing else: each keeps its own channels, which
// this module brings out unchanged under the prefixes aau_ and rpm_. It is
// the unit of synthesis for "the hub as a whole" (synth/): one netlist, one
// area, one worst path over both units.
//
// Timing: that of the two units (see their headers); no logic of its own.
// Not included: the Data Availability Manager, the RPM's buffer pool and
// merging, the NVLink and crossbar interfaces of the hub.
module moehub_top #(
  /// AAU: number of regions (MallocIDs).
  parameter int unsigned Regions = 4,
  /// AAU: RAT entries.
  parameter int unsigned RatEntries = 64,
  /// AAU: RAT banks.
  parameter int unsigned RatBanks = 4,
  /// AAU: RAT ways per set.
  parameter int unsigned RatWays = 4,
  /// Width of a logical RowID (AAU requests and RPM entries).
  parameter int unsigned RowIdWidth = 16,
  /// AAU: width of a LocalRowID.
  parameter int unsigned LocalRowIdWidth = 16,
  /// AAU: width of a RowOffset in bytes.
  parameter int unsigned OffsetWidth = 16,
  /// AAU: width of a local address.
  parameter int unsigned AddrWidth = 48,
  /// RPM: number of destination partitions (peer GPUs).
  parameter int unsigned RpmDests = 8,
  /// RPM: entries per partition.
  parameter int unsigned RpmDepth = 8,
  /// RPM: width of an entry's age counter (cycles, saturating).
  parameter int unsigned RpmTimerWidth = 8
) (
  /// Hub clock.
  input  logic                                    clk_i,
  /// Asynchronous reset, active low.
  input  logic                                    rst_ni,

  // ---- AAU (see moehub_aau) -------------------------------------------------
  /// Configuration request.
  input  logic                                    aau_cfg_valid_i,
  /// Configuration done.
  output logic                                    aau_cfg_ready_o,
  /// 1: flush the region; 0: register it.
  input  logic                                    aau_cfg_flush_i,
  /// Region (MallocID) to configure.
  input  logic [MallocIdWidth-1:0]                aau_cfg_region_i,
  /// Capacity of the region in rows.
  input  logic [LocalRowIdWidth:0]                aau_cfg_rows_i,
  /// Base address of the region.
  input  logic [AddrWidth-1:0]                    aau_cfg_base_i,
  /// log2 of the row size in bytes.
  input  logic [5:0]                              aau_cfg_row_size_log2_i,
  /// Row store to translate.
  input  logic                                    aau_req_valid_i,
  /// The request is taken.
  output logic                                    aau_req_ready_o,
  /// MallocID of the store.
  input  logic [MallocIdWidth-1:0]                aau_req_malloc_i,
  /// RowID of the store.
  input  logic [RowIdWidth-1:0]                   aau_req_row_i,
  /// Byte offset of the store within its row.
  input  logic [OffsetWidth-1:0]                  aau_req_offset_i,
  /// Translation result.
  output logic                                    aau_rsp_valid_o,
  /// The result is taken.
  input  logic                                    aau_rsp_ready_i,
  /// 1: translated; 0: region not registered or full.
  output logic                                    aau_rsp_ok_o,
  /// The mapping was in the RAT.
  output logic                                    aau_rsp_hit_o,
  /// The mapping came back from the spill area.
  output logic                                    aau_rsp_restored_o,
  /// LocalRowID of the row.
  output logic [LocalRowIdWidth-1:0]              aau_rsp_local_o,
  /// Local address of the store.
  output logic [AddrWidth-1:0]                    aau_rsp_addr_o,
  /// Evicted mapping to write to the spill area.
  output logic                                    aau_spill_valid_o,
  /// The spill area takes it.
  input  logic                                    aau_spill_ready_i,
  /// MallocID of the evicted mapping.
  output logic [MallocIdWidth-1:0]                aau_spill_malloc_o,
  /// RowID of the evicted mapping.
  output logic [RowIdWidth-1:0]                   aau_spill_row_o,
  /// LocalRowID of the evicted mapping.
  output logic [LocalRowIdWidth-1:0]              aau_spill_local_o,
  /// Read of the spill area for (MallocID, RowID).
  output logic                                    aau_restore_req_valid_o,
  /// The memory takes the read.
  input  logic                                    aau_restore_req_ready_i,
  /// MallocID to look up in the spill area.
  output logic [MallocIdWidth-1:0]                aau_restore_req_malloc_o,
  /// RowID to look up in the spill area.
  output logic [RowIdWidth-1:0]                   aau_restore_req_row_o,
  /// Answer of the spill area.
  input  logic                                    aau_restore_rsp_valid_i,
  /// The unit takes the answer.
  output logic                                    aau_restore_rsp_ready_o,
  /// The row had been spilled.
  input  logic                                    aau_restore_rsp_found_i,
  /// Its LocalRowID (with aau_restore_rsp_found_i).
  input  logic [LocalRowIdWidth-1:0]              aau_restore_rsp_local_i,

  // ---- RPM scheduler (see moehub_rpm_sched) ---------------------------------
  /// Per entry (index dest*RpmDepth + entry): holds a packet.
  input  logic [RpmDests*RpmDepth-1:0]            rpm_entry_valid_i,
  /// Per entry: its byte mask is complete.
  input  logic [RpmDests*RpmDepth-1:0]            rpm_entry_full_i,
  /// Per entry: 1 for a priority store, 0 for .nop.
  input  logic [RpmDests*RpmDepth-1:0]            rpm_entry_prio_i,
  /// Per entry: RowID (entry i at [i*RowIdWidth +: RowIdWidth]).
  input  logic [RpmDests*RpmDepth*RowIdWidth-1:0] rpm_entry_row_i,
  /// Per destination: its ports cannot take a packet now.
  input  logic [RpmDests-1:0]                     rpm_congested_i,
  /// Age in cycles after which a partial entry becomes eligible.
  input  logic [RpmTimerWidth-1:0]                rpm_timeout_i,
  /// Every valid entry is eligible (drain the pool).
  input  logic                                    rpm_drain_i,
  /// A grant is offered.
  output logic                                    rpm_gnt_valid_o,
  /// The pool takes the granted entry this cycle.
  input  logic                                    rpm_gnt_ready_i,
  /// One-hot grant over all entries.
  output logic [RpmDests*RpmDepth-1:0]            rpm_gnt_o,
  /// Destination of the granted entry.
  output logic [RpmDestIdxW-1:0]                  rpm_gnt_dest_o,
  /// Index of the granted entry within its partition.
  output logic [RpmEntryIdxW-1:0]                 rpm_gnt_entry_o
);

  /// Width of a MallocID, the region index, as in moehub_aau (do not override).
  localparam int unsigned MallocIdWidth = (Regions > 1) ? $clog2(Regions) : 1;
  /// Width of an RPM destination index, as in moehub_rpm_sched (do not override).
  localparam int unsigned RpmDestIdxW = (RpmDests > 1) ? $clog2(RpmDests) : 1;
  /// Width of an RPM entry index, as in moehub_rpm_sched (do not override).
  localparam int unsigned RpmEntryIdxW = (RpmDepth > 1) ? $clog2(RpmDepth) : 1;

  moehub_aau #(
    .Regions        (Regions),
    .RatEntries     (RatEntries),
    .RatBanks       (RatBanks),
    .RatWays        (RatWays),
    .RowIdWidth     (RowIdWidth),
    .LocalRowIdWidth(LocalRowIdWidth),
    .OffsetWidth    (OffsetWidth),
    .AddrWidth      (AddrWidth)
  ) u_aau (
    .clk_i,
    .rst_ni,
    .cfg_valid_i        (aau_cfg_valid_i),
    .cfg_ready_o        (aau_cfg_ready_o),
    .cfg_flush_i        (aau_cfg_flush_i),
    .cfg_region_i       (aau_cfg_region_i),
    .cfg_rows_i         (aau_cfg_rows_i),
    .cfg_base_i         (aau_cfg_base_i),
    .cfg_row_size_log2_i(aau_cfg_row_size_log2_i),
    .req_valid_i        (aau_req_valid_i),
    .req_ready_o        (aau_req_ready_o),
    .req_malloc_i       (aau_req_malloc_i),
    .req_row_i          (aau_req_row_i),
    .req_offset_i       (aau_req_offset_i),
    .rsp_valid_o        (aau_rsp_valid_o),
    .rsp_ready_i        (aau_rsp_ready_i),
    .rsp_ok_o           (aau_rsp_ok_o),
    .rsp_hit_o          (aau_rsp_hit_o),
    .rsp_restored_o     (aau_rsp_restored_o),
    .rsp_local_o        (aau_rsp_local_o),
    .rsp_addr_o         (aau_rsp_addr_o),
    .spill_valid_o      (aau_spill_valid_o),
    .spill_ready_i      (aau_spill_ready_i),
    .spill_malloc_o     (aau_spill_malloc_o),
    .spill_row_o        (aau_spill_row_o),
    .spill_local_o      (aau_spill_local_o),
    .restore_req_valid_o (aau_restore_req_valid_o),
    .restore_req_ready_i (aau_restore_req_ready_i),
    .restore_req_malloc_o(aau_restore_req_malloc_o),
    .restore_req_row_o   (aau_restore_req_row_o),
    .restore_rsp_valid_i (aau_restore_rsp_valid_i),
    .restore_rsp_ready_o (aau_restore_rsp_ready_o),
    .restore_rsp_found_i (aau_restore_rsp_found_i),
    .restore_rsp_local_i (aau_restore_rsp_local_i)
  );

  moehub_rpm_sched #(
    .Dests     (RpmDests),
    .Depth     (RpmDepth),
    .RowIdWidth(RowIdWidth),
    .TimerWidth(RpmTimerWidth)
  ) u_rpm_sched (
    .clk_i,
    .rst_ni,
    .entry_valid_i(rpm_entry_valid_i),
    .entry_full_i (rpm_entry_full_i),
    .entry_prio_i (rpm_entry_prio_i),
    .entry_row_i  (rpm_entry_row_i),
    .congested_i  (rpm_congested_i),
    .timeout_i    (rpm_timeout_i),
    .drain_i      (rpm_drain_i),
    .gnt_valid_o  (rpm_gnt_valid_o),
    .gnt_ready_i  (rpm_gnt_ready_i),
    .gnt_o        (rpm_gnt_o),
    .gnt_dest_o   (rpm_gnt_dest_o),
    .gnt_entry_o  (rpm_gnt_entry_o)
  );

endmodule
