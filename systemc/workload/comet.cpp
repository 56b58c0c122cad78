// Comet (Zhang et al., MLSys 2025): tile-level overlap of the expert GEMMs with
// the all-to-all inside fused kernels. Layer 0 fuses the dispatch with GEMM1:
// dedicated communication thread blocks (on SMs set aside for them) move the
// rows, source by source with the local rows first (Comet's rescheduling), and
// raise a flag per chunk; GEMM1's tile groups poll their chunk's flag before
// they start. Layer 1 fuses GEMM2 with the combine: each chunk's results go
// back as soon as its tiles finish.
//
// Overheads as explicit phases: the host's address resolution (count exchange
// and synchronisation; the MoE-Hub paper, Table I, lists Comet's address
// resolution on the CPU), the tile layout the kernels index by (a GPU-side
// table, BaselineOptions::layout_bytes_per_row), the polling loops
// (ScheduleOptions::poll) and the SMs the communication blocks take from the
// GEMMs (BaselineOptions::comet_comm_sms). Comet's adaptive choice of that SM
// count is replaced by the configured figure.
#include "workload/baseline_common.hpp"

namespace moehub {

Schedule build_comet(const ModelConfig& m, const Routing& r, const ExpertPlacement& p, const ScheduleOptions& opt) {
  baseline_detail::FusedStyle style;
  style.name = "comet";
  style.comm_sms = opt.baseline.comet_comm_sms;
  style.release = ReleaseKind::kPoll;
  style.layout_name = "tile_layout";
  style.layout_phase = "tile_layout";
  return baseline_detail::build_fused(m, r, p, opt, style);
}

}  // namespace moehub
