// CCFuser (reference [61] of the MoE-Hub paper: fuses the expert GEMMs with the
// all-to-all through inter-GPU shared memory access): the GEMM thread blocks
// load their rows from peer memory and store their results into the peers'
// output buffers themselves, so no SMs are set aside and a tile waits only for
// its own remote loads (released by its chunk's arrival, no polling loop).
//
// Overheads as explicit phases: the host's address resolution (count exchange
// and synchronisation; the MoE-Hub paper's Table I lists CCFuser's address
// resolution on the CPU) and the remote address table the kernels read
// (BaselineOptions::layout_bytes_per_row per row). The remote loads are
// modelled as the dispatch chunks' transfers, issued at the rate of
// ScheduleOptions::comm_sms SMs; CCFuser's dynamic expert reassignment is not
// modelled.
#include "workload/baseline_common.hpp"

namespace moehub {

Schedule build_ccfuser(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt) {
  baseline_detail::FusedStyle style;
  style.name = "ccfuser";
  style.comm_sms = 0;
  style.release = ReleaseKind::kSignal;
  style.layout_name = "remote_address_table";
  style.layout_phase = "address_resolution";
  return baseline_detail::build_fused(m, r, p, opt, style);
}

}  // namespace moehub
