// moehub-gpu run: time the layer under one schedule (or the adaptive ring) and write a trace.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "cuda_check.hpp"
#include "expert_ops.hpp"
#include "host_data.hpp"
#include "layer.hpp"
#include "model_shapes.hpp"
#include "moe_plan/moe_plan.hpp"
#include "ring_hop.hpp"
#include "schedule.hpp"
#include "trace/trace.hpp"

#include "measure_common.hpp"

namespace moehub::gpu {

int cmd_run(const Args& a) {
  LayerConfig c = layer_args(a, 4096, 2048, 768, 128, 8);
  c.ring_accum = from_user_input("", [&] { return parse_ring_accum(a.str("ring-accum", "bf16")); });
  c.hop_chunk_rows = a.integer("hop-chunk-rows", -1, -1, 1LL << 30);
  const std::string tname = a.str("transport", "folded");
  if (tname != "folded" && tname != "nccl") throw UsageError("--transport must be folded or nccl (got '" + tname + "')");
  // every argument is checked before the device is touched
  std::string sname = a.str("schedule", "ring");
  if (sname != "ring") {
    try {
      (void)make_schedule(sname);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--schedule: ") + e.what() + " or ring (adaptive)");
    }
  }
  const int iters = static_cast<int>(a.integer("iters", 3, 1, 1000));
  const GemmImpl impl = from_user_input("--gemm", [&] { return parse_gemm_impl(a.str("gemm", "auto")); });
  const std::string trace_dir = a.str("trace-dir", "");
  const int launch_threads = static_cast<int>(a.integer("launch-threads", 0, 0, 1024));
  if (tname == "folded") {
    LayerConfig probe = c;
    probe.ep = static_cast<int>(a.integer("ep", 8, 1, 256));
    try {
      validate(probe);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("run: ") + e.what());
    }
  }
  std::unique_ptr<Transport> tr;
  if (tname == "nccl") {
    tr = make_nccl_transport(a.str("rendezvous", ""));
    c.ep = tr->size();
  } else {
    c.ep = static_cast<int>(a.integer("ep", 8, 1, 256));
    tr = make_folded_transport(c.ep, 0);
  }
  try {
    validate(c);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("run: ") + e.what());
  }
  const plan::ModeChoice choice = plan::choose_ring_mode(plan_problem(c));
  if (sname == "ring") sname = choice.mode == plan::RingMode::kExpert ? "ring-expert" : "ring-token";
  const std::unique_ptr<LayerSchedule> sched = make_schedule(sname);
  MoeLayer layer(c, *tr, impl);
  layer.set_launch_threads(launch_threads);
  const int me = layer.ranks()[0]->rank;
  if (me == 0) {
    std::printf("run: %s, transport %s, EP=%d, T=%lld H=%d F=%d E=%d k=%d, gemm %s, %d launch thread%s for %zu local rank%s\n",
                sname.c_str(), tname.c_str(), c.ep, static_cast<long long>(c.tokens), c.hidden, c.ffn, c.experts, c.top_k,
                to_string(impl), layer.launch_threads(), layer.launch_threads() == 1 ? "" : "s", layer.ranks().size(),
                layer.ranks().size() == 1 ? "" : "s");
    std::printf("adaptive ring mode: %s (%s)\n", plan::to_string(choice.mode), choice.reason.c_str());
  }
  layer.allocate_inputs();
  fill_inputs(layer, 99);
  std::vector<double> totals, issued;
  for (int it = 0; it < iters + 1; ++it) {
    for (auto& r : layer.ranks()) r->mem->reset_peak();
    layer.allocate_outputs();
    // allocate_outputs poisons the outputs (memsets on the compute stream, the fp32 expert
    // weight gradients included: 1.2 GB per rank at Qwen3's shape and EP 2); they are not
    // part of the layer, so they finish before its clock starts
    layer.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    layer.run(*sched);
    // the host's part: everything launched (its one wait, the counts exchange, included)
    const double issue_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    layer.synchronize();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (it > 0) {
      totals.push_back(us);
      issued.push_back(issue_us);
    }
    if (it < iters) layer.free_outputs();
  }
  // per-rank peak of the tracked allocator over the last iteration (inputs included), beside
  // the schedule's memory plan for the rank (layer_memory.hpp: the same allocations)
  for (auto& r : layer.ranks()) {
    const long long plan = static_cast<long long>(sched->memory_plan(layer.config(), r->count_matrix, r->rank).peak_bytes);
    const long long diff = static_cast<long long>(r->mem->peak()) - plan;
    const std::string vs = diff == 0 ? std::string("equal to the memory plan")
                                     : std::to_string(std::llabs(diff)) + (diff > 0 ? " bytes above" : " bytes below") +
                                           " the memory plan";
    std::printf("rank %d: peak device memory of the layer %.3f GiB (tracked, inputs included; %s)\n", r->rank,
                static_cast<double>(r->mem->peak()) / (1024.0 * 1024.0 * 1024.0), vs.c_str());
  }
  const auto hops = layer.hop_times();
  const auto phases = layer.phase_times();
  if (me == 0) {
    std::printf("layer forward+backward (host wall, all local ranks): median %.1f us over %d iterations\n", median(totals), iters);
    // near the layer time: the host, not the GPU, sets the pace
    std::printf("  host done launching after median %.1f us\n", median(issued));
    std::map<std::string, std::vector<double>> by;
    for (auto& p : phases) by[p.name].push_back(p.dur_us);
    for (auto& kv : by) std::printf("  phase %-26s median over ranks %10.1f us\n", kv.first.c_str(), median(kv.second));
    std::map<std::pair<std::string, int>, std::vector<HopTime>> hb;
    for (auto& h : hops) hb[{h.pass, h.hop}].push_back(h);
    for (auto& kv : hb) {
      std::vector<double> cc, xx, hh;
      for (auto& h : kv.second) {
        cc.push_back(h.compute_us);
        xx.push_back(h.comm_us);
        hh.push_back(h.hop_us);
      }
      std::printf("  %s hop %2d: compute %9.1f us, transfer %9.1f us, hop %9.1f us (median over ranks)\n", kv.first.first.c_str(),
                  kv.first.second, median(cc), median(xx), median(hh));
    }
  }
  if (!trace_dir.empty()) {
    trace::Trace t;
    t.manifest.producer = "moehub-gpu run";
    t.manifest.device = device_name(tr->device_of(me));
    t.manifest.date = now_utc();
    t.manifest.ranks = c.ep;
    t.manifest.hidden = c.hidden;
    t.manifest.ffn = c.ffn;
    t.manifest.experts = c.experts;
    t.manifest.top_k = c.top_k;
    t.manifest.extra["schedule"] = sname;
    t.manifest.extra["transport"] = tname;
    t.manifest.extra["ep"] = std::to_string(c.ep);
    t.manifest.extra["tokens_per_rank"] = std::to_string(c.tokens);
    t.manifest.extra["gemm_impl"] = to_string(impl);
    t.manifest.extra["adaptive_mode"] = plan::to_string(choice.mode);
    t.manifest.extra["adaptive_reason"] = choice.reason;
    // the ring's settings under the names of moehub-sim's schedule keys, so that the
    // simulator replays the same ring (--set schedule.ring_accum_bytes=... and so on)
    for (const auto& kv : ring_sim_settings(c)) t.manifest.extra[kv.first] = kv.second;
    std::ostringstream tl;
    tl << "{\"traceEvents\":[";
    bool first = true;
    auto ev = [&](int pid, const std::string& tid, const std::string& name, double ts, double dur) {
      if (dur <= 0) return;
      tl << (first ? "" : ",") << "{\"name\":\"" << name << "\",\"ph\":\"X\",\"pid\":" << pid << ",\"tid\":\"" << tid
         << "\",\"ts\":" << ts << ",\"dur\":" << dur << "}";
      first = false;
    };
    for (auto& p : phases) ev(p.rank, p.unit == "compute" ? "phase" : p.unit, p.name, p.start_us, p.dur_us);
    for (auto& h : hops) {
      const std::string tag = h.pass + " hop " + std::to_string(h.hop);
      ev(h.rank, "compute", tag, h.compute_start_us, h.compute_us);
      if (h.comm_start_us >= 0) ev(h.rank, "copy", tag + " transfer", h.comm_start_us, h.comm_us);
    }
    tl << "]}";
    for (auto& rp : layer.ranks()) {
      Rank& r = *rp;
      trace::RankRouting rr;
      rr.rank = r.rank;
      rr.tokens = c.tokens;
      rr.top_k = c.top_k;
      rr.topk_ids = download(r.out.topk_ids, static_cast<std::size_t>(c.tokens * c.top_k), r.comp);
      rr.topk_weights = download(r.out.topk_weights, static_cast<std::size_t>(c.tokens * c.top_k), r.comp);
      t.routing.push_back(std::move(rr));
      for (auto& m : r.mem->timeline()) t.memory.push_back({r.rank, m.t_us, m.bytes_in_use, m.peak_bytes});
    }
    // The ring's last transfer (accumulators back to their owners, index ep) is counted in
    // hop ep-1's communication and duration: the trace format numbers hops 0..ranks-1.
    for (auto& h : hops) {
      if (h.hop >= c.ep && !t.hops.empty() && t.hops.back().rank == h.rank && t.hops.back().pass == h.pass) {
        t.hops.back().comm_us += h.comm_us;
        t.hops.back().hop_us += h.hop_us;
        continue;
      }
      t.hops.push_back({h.rank, h.pass, h.mode, h.hop, h.compute_us, h.comm_us, h.hop_us});
    }
    // schedules without ring hops give rows of their own (a2a: one per pass)
    for (auto& rp : layer.ranks())
      for (const HopTime& h : sched->pass_rows(phases, rp->rank))
        t.hops.push_back({h.rank, h.pass, h.mode, h.hop, h.compute_us, h.comm_us, h.hop_us});
    // GEMM table: the forward expert GEMMs at rank 0's received rows, each implementation
    {
      Rank& r = *layer.ranks()[0];
      std::vector<std::int64_t> rows;
      for (int i = 0; i < c.local_experts(); ++i) {
        rows.push_back(r.count_matrix.received_by_expert(r.rank, i));
      }
      bench_shapes("rank0", c.hidden, c.ffn, rows, t.gemm, false);
    }
    layer.free_outputs();
    if (tname == "nccl") {
      std::string d = trace_dir + "/rank" + std::to_string(me);
      trace::write_trace(d, t, tl.str());
      std::printf("rank %d: trace written to %s\n", me, d.c_str());
    } else {
      trace::write_trace(trace_dir, t, tl.str());
      const trace::Trace back = trace::read_trace(trace_dir);
      std::printf("trace written to %s and read back: %zu routing files, %zu gemm rows, %zu hop rows, %zu memory samples\n",
                  trace_dir.c_str(), back.routing.size(), back.gemm.size(), back.hops.size(), back.memory.size());
    }
  }
  return 0;
}


}  // namespace moehub::gpu
