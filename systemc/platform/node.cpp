#include "platform/node.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/sc_time_util.hpp"
#include "golden/aau.hpp"
#include "golden/address_centric.hpp"

namespace moehub {

namespace {

/// A GPU's rowsp regions stay registered for the whole layer (there is no
/// rowspFree), so its APT needs an entry for each; refuses a schedule that
/// registers more on some GPU than `hub.apt_regions` before anything runs
/// (the APT would otherwise fail inside the simulation).
void check_apt_entries(const SystemConfig& sys, const ModelConfig& model, const Schedule& schedule) {
  std::size_t worst = 0, worst_gpu = 0;
  for (std::size_t g = 0; g < schedule.ops.size(); ++g) {
    std::size_t regions = 0;
    for (const Op& op : schedule.ops[g]) {
      if (op.kind == OpKind::kRowspMalloc) regions += op.regions.size();
    }
    if (regions > worst) {
      worst = regions;
      worst_gpu = g;
    }
  }
  if (worst <= static_cast<std::size_t>(sys.hub.apt_regions)) return;
  throw std::invalid_argument(
      sys.source_file + ": key 'hub.apt_regions': schedule '" + schedule.name + "' registers " + std::to_string(worst) +
      " rowsp regions on GPU " + std::to_string(worst_gpu) + " for the whole layer (one per expert it holds: " +
      std::to_string(model.num_experts) + " experts of model '" + model.name + "' over " + std::to_string(sys.num_gpus) +
      " GPUs), more than its " + std::to_string(sys.hub.apt_regions) + " APT entries: must be at least " +
      std::to_string(worst) + " (allowed range [1, 65536]; e.g. --set system.hub.apt_regions=" + std::to_string(worst) +
      ")");
}

}  // namespace

struct Node::GpuRun {
  std::vector<Tick> launch_at;          ///< kTickMax until the host has launched the op
  std::vector<std::string> gap_phase;   ///< what a wait for the launch is charged to
  std::vector<char> done;
  sc_core::sc_event launched, completed;
  int streams = 1;
  int running = 0;  ///< stream threads still running
};


Node::Node(const sc_core::sc_module_name& name, const SystemConfig& sys, const ModelConfig& model,
           Schedule schedule)
    : sc_core::sc_module(name), sys_(sys), model_(model), schedule_(std::move(schedule)) {
  const int G = sys.num_gpus;
  const int P = sys.nvswitch.num_switches;
  const double port_bw = sys.nvlink.bw_gbps_per_direction_per_gpu / P;
  const Tick bin = us_to_ticks(sys.sim.timeline_bin_us);
  const Tick quantum = std::max<Tick>(1, ns_to_ticks(sys.sim.sync_quantum_ns));
  const Tick link = ns_to_ticks(sys.nvlink.gpu_switch_latency_ns);
  address_map_ = std::make_unique<AddressMap>(G);
  scoreboard_ = std::make_unique<Scoreboard>(schedule_, G, PacketFormat::from(sys.nvlink), *address_map_);
  collectives_ = std::make_unique<Collectives>(schedule_, sys, *scoreboard_);
  row_transfers_ = std::make_unique<RowTransfers>(schedule_, sys, *address_map_);
  scoreboard_->set_row_sink(row_transfers_.get());
  // "rtl": the MoE-Hub units co-simulated from their RTL (tb/cosim)
  const bool moehub_units = sys.hub.implementation == "moehub" || sys.hub.implementation == "rtl";
  if (schedule_.hub.aau && !moehub_units) {
    throw std::invalid_argument(sys.source_file + ": key 'hub.implementation': schedule '" + schedule_.name +
                                "' needs the MoE-Hub units: must be 'moehub' or 'rtl' (got '" + sys.hub.implementation +
                                "'; moehub-sim --hub-impl moehub overrides it)");
  }
  if (schedule_.hub.aau) check_apt_entries(sys, model, schedule_);
  if (!schedule_.hub.aau && sys.hub.implementation != "address-centric" && !schedule_.collectives.empty()) {
    // The MoE-Hub packet manager takes stores of at most one 128-byte line and
    // merges plain stores by line: rows that are not whole lines share a line
    // (one packet then carries several rows), and bulk or row-granularity
    // stores are longer than a line. The collectives' scoreboard accounts each
    // packet to one row, so their completion would never be reached. Refuse the
    // combination instead of deadlocking (docs/moehub-units.md).
    throw std::invalid_argument(sys.source_file + ": key 'hub.implementation': schedule '" + schedule_.name +
                                "' moves its data in software all-to-alls ('" + schedule_.collectives.front().name +
                                "', ...), which run only on 'address-centric' hubs (got '" + sys.hub.implementation +
                                "'; the MoE-Hub schedules are moehub, moehub-base, moehub-pkt and moehub-dep)");
  }

  for (int p = 0; p < P; ++p) {
    switches_.push_back(
        std::make_unique<NvSwitch>(("sw" + std::to_string(p)).c_str(), G, sys.nvswitch, link, link));
  }
  std::vector<Hub*> hub_ptrs;
  std::vector<SmArray*> sm_ptrs;
  std::vector<MemoryFlows*> hbm_ptrs;
  for (int g = 0; g < G; ++g) {
    const std::string gs = "gpu" + std::to_string(g);
    golden::HubFunctions fn;
    if (schedule_.hub.aau) {
      // the units the schedule uses; the others are a plain FIFO write buffer
      // and no completion signals
      fn = golden::make_hub_functions(sys.hub.implementation, hub_params_from(sys, g));
      if (!schedule_.hub.rpm) {
        fn.egress = std::make_unique<golden::AddressCentricEgress>(
            static_cast<std::uint32_t>(sys.hub.write_buffer_entries), sys.hub.fifo_passes_congested);
      }
      if (!schedule_.hub.dam) fn.completion = std::make_unique<golden::NoCompletion>();
    }
    hubs_.push_back(std::make_unique<Hub>((gs + "_hub").c_str(), g, sys, scoreboard_.get(), std::move(fn)));
    hubs_.back()->set_ready_listener(
        [this, g](const golden::ReadySignal& rs, Tick t) { row_transfers_->on_ready(g, rs, t); });
    xbar_.push_back(std::make_unique<Crossbar>((gs + "_xbar").c_str(), sys.gpu.xbar_bw_gbps, sys.gpu.xbar_latency_ns));
    hbm_.push_back(std::make_unique<Hbm>((gs + "_hbm").c_str(), sys.gpu.hbm_bw_gbps * sys.gpu.memory_kernel_efficiency,
                                         sys.gpu.hbm_latency_ns, static_cast<std::uint32_t>(sys.sim.hbm_slice_bytes),
                                         quantum));
    sms_.push_back(std::make_unique<SmArray>((gs + "_sm").c_str(), sys.gpu, model.dtype_bytes, hubs_.back().get(),
                                             hbm_.back().get()));
    hubs_.back()->hub2xbar.bind(xbar_.back()->in);
    xbar_.back()->out.bind(hbm_.back()->in);
    hubs_.back()->set_memory(hbm_.back().get());
    hub_ptrs.push_back(hubs_.back().get());
    sm_ptrs.push_back(sms_.back().get());
    hbm_ptrs.push_back(hbm_.back().get());
  }
  for (int g = 0; g < G; ++g) {
    std::vector<EgressPort*> egress;
    for (int p = 0; p < P; ++p) {
      const std::string u = "gpu" + std::to_string(g) + "_to_sw" + std::to_string(p);
      const std::string d = "sw" + std::to_string(p) + "_to_gpu" + std::to_string(g);
      up_.push_back(std::make_unique<NvlinkPort>(u.c_str(), sys.nvlink, port_bw));
      down_.push_back(std::make_unique<NvlinkPort>(d.c_str(), sys.nvlink, port_bw));
      NvlinkPort& up = *up_.back();
      NvlinkPort& down = *down_.back();
      up.server().set_bin(bin);
      down.server().set_bin(bin);
      hubs_[static_cast<std::size_t>(g)]->hub2nvl[static_cast<std::size_t>(p)].bind(up.in);
      up.out.bind(switches_[static_cast<std::size_t>(p)]->in[static_cast<std::size_t>(g)]);
      switches_[static_cast<std::size_t>(p)]->out[static_cast<std::size_t>(g)].bind(down.in);
      switches_[static_cast<std::size_t>(p)]->attach_output(g, &down);
      down.out.bind(hubs_[static_cast<std::size_t>(g)]->nvl2hub[static_cast<std::size_t>(p)]);
      egress.push_back(&up);
    }
    hubs_[static_cast<std::size_t>(g)]->set_egress_ports(std::move(egress));
  }
  collectives_->attach(hub_ptrs, sm_ptrs, hbm_ptrs);
  row_transfers_->attach(hub_ptrs, sm_ptrs, hbm_ptrs);

  records_.resize(static_cast<std::size_t>(G));
  for (int g = 0; g < G; ++g) {
    const auto& ops = schedule_.ops[static_cast<std::size_t>(g)];
    auto run = std::make_unique<GpuRun>();
    run->launch_at.assign(ops.size(), kTickMax);
    run->gap_phase.assign(ops.size(), "launch_overhead");
    run->done.assign(ops.size(), 0);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].stream < 0 || ops[i].stream > 7) throw std::invalid_argument("op stream out of range 0..7");
      for (const int d : ops[i].after) {
        if (d < 0 || static_cast<std::size_t>(d) >= i) {
          throw std::invalid_argument("op " + ops[i].name + " waits for an op that does not precede it");
        }
      }
      run->streams = std::max(run->streams, ops[i].stream + 1);
    }
    run->running = run->streams;
    runs_.push_back(std::move(run));
    const std::string gs = "gpu" + std::to_string(g);
    sc_core::sc_spawn(std::bind(&Node::host_thread, this, g), (gs + "_host").c_str());
    for (int st = 0; st < runs_.back()->streams; ++st) {
      sc_core::sc_spawn(std::bind(&Node::stream_thread, this, g, st), (gs + "_stream" + std::to_string(st)).c_str());
    }
  }
}

Node::~Node() = default;

std::uint64_t Node::fabric_transactions() const {
  std::uint64_t n = 0;
  for (const auto& h : hubs_) n += h->transactions_sent();
  return n;
}

Node::Progress Node::progress() const {
  Progress p;
  for (const auto& run : runs_) {
    p.total += run->done.size();
    p.done += static_cast<std::size_t>(std::count(run->done.begin(), run->done.end(), 1));
  }
  return p;
}

std::uint64_t Node::reorderings() const {
  std::uint64_t n = 0;
  for (const auto& h : hubs_) n += h->arrivals().reorderings();
  for (const auto& s : switches_) n += s->arrivals().reorderings();
  for (const auto& m : hbm_) n += m->reorderings();
  return n;
}

std::string Node::fatal_error() const {
  for (const auto& h : hubs_) {
    if (!h->fatal_error().empty()) return h->fatal_error();
  }
  return {};
}

std::uint64_t Node::region_full_stalls() const {
  std::uint64_t n = 0;
  for (const auto& h : hubs_) {
    if (const auto* a = dynamic_cast<const golden::AddressAllocationUnit*>(&h->ingress_function())) {
      n += a->stalled_writes();
    }
  }
  return n;
}

std::vector<std::string> Node::verify() const {
  std::vector<std::string> errors = collectives_->verify();
  const auto rows = row_transfers_->verify();
  errors.insert(errors.end(), rows.begin(), rows.end());
  const auto sb = scoreboard_->verify();
  errors.insert(errors.end(), sb.begin(), sb.end());
  for (const auto& h : hubs_) {
    if (h->arrivals().reorderings()) {
      errors.push_back(std::string(h->name()) + ": " + std::to_string(h->arrivals().reorderings()) +
                       " arrivals handled out of time order");
    }
  }
  for (const auto& s : switches_) {
    if (s->arrivals().reorderings()) {
      errors.push_back(std::string(s->name()) + ": " + std::to_string(s->arrivals().reorderings()) +
                       " arrivals handled out of time order");
    }
  }
  for (const auto& m : hbm_) {
    if (m->reorderings()) {
      errors.push_back(std::string(m->name()) + ": " + std::to_string(m->reorderings()) +
                       " requests served out of time order");
    }
  }
  return errors;
}

void Node::host_thread(int g) {
  const auto gi = static_cast<std::size_t>(g);
  const auto& ops = schedule_.ops[gi];
  GpuRun& run = *runs_[gi];
  GpuRecord& rec = records_[gi];
  const Tick launch = us_to_ticks(sys_.host.kernel_launch_us);
  const Tick setup = us_to_ticks(sys_.host.collective_setup_us);
  const Tick sync = us_to_ticks(sys_.host.stream_sync_us);
  Tick host = now_ticks();  // the host's own clock: how far it has issued work
  std::string pending = "launch_overhead";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::kHostSync) {
      run.launched.notify(sc_core::SC_ZERO_TIME);
      for (std::size_t j = 0; j < i; ++j) {
        while (!run.done[j]) sc_core::wait(run.completed);
      }
      const Tick from = std::max(host, now_ticks());
      host = from + sync;
      rec.host.push_back({op.name, op.phase, "host_sync", from, host, 0, 0, -1});
      pending = op.phase;
      run.launch_at[i] = host;
      run.done[i] = 1;
      continue;
    }
    if (op.launch) host += launch;
    if (op.collective_setup) host += setup;
    run.launch_at[i] = host;
    run.gap_phase[i] = pending;
    pending = "launch_overhead";
  }
  run.launched.notify(sc_core::SC_ZERO_TIME);
}

void Node::stream_thread(int g, int stream) {
  const auto gi = static_cast<std::size_t>(g);
  const auto& ops = schedule_.ops[gi];
  GpuRun& run = *runs_[gi];
  GpuRecord& rec = records_[gi];
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::kHostSync || op.stream != stream) continue;
    while (run.launch_at[i] == kTickMax) sc_core::wait(run.launched);
    Tick now = now_ticks();
    if (run.launch_at[i] > now) {
      rec.stream.push_back({"host", run.gap_phase[i], "launch_gap", now, run.launch_at[i], 0, 0, stream});
      sc_core::wait(to_sc(run.launch_at[i] - now));
    }
    // events recorded by other streams: the wait is charged to what it waited for
    for (const int d : op.after) {
      now = now_ticks();
      if (run.done[static_cast<std::size_t>(d)]) continue;
      while (!run.done[static_cast<std::size_t>(d)]) sc_core::wait(run.completed);
      rec.stream.push_back({"wait", ops[static_cast<std::size_t>(d)].phase, "dependency_wait", now, now_ticks(), 0, 0,
                            stream});
    }
    OpRecord r{op.name, op.phase, "", now_ticks(), 0, 0, 0, stream};
    execute(g, op, r);
    r.end = now_ticks();
    rec.stream.push_back(r);
    run.done[i] = 1;
    run.completed.notify(sc_core::SC_ZERO_TIME);
  }
  rec.end = std::max(rec.end, now_ticks());
  if (--run.running == 0) {
    std::stable_sort(rec.stream.begin(), rec.stream.end(),
                     [](const OpRecord& a, const OpRecord& b) { return a.start < b.start; });
    rec.finished = true;
  }
}

void Node::execute(int g, const Op& op, OpRecord& r) {
  const auto gi = static_cast<std::size_t>(g);
  SmArray& sm = *sms_[gi];
  switch (op.kind) {
    case OpKind::kGemm: {
      KernelSpec k = sm.gemm_kernel(op.gemms, op.groups, op.first_sm, op.num_sms);
      k.name = op.name;
      std::vector<int> flags;
      if (!op.regions.empty()) {
        // one group per (shape, row of output tiles), released by its region's data
        if (op.regions.size() != op.gemms.size() || op.release == ReleaseKind::kLaunch) {
          throw std::invalid_argument(op.name + ": one region per GEMM shape and a signal or poll release expected");
        }
        const auto tiles = sm.compute().tiles(op.gemms);
        const auto tm = static_cast<std::int64_t>(sys_.gpu.gemm_tile_m);
        const auto tn = static_cast<std::int64_t>(sys_.gpu.gemm_tile_n);
        const GroupRelease how = op.release == ReleaseKind::kPoll ? GroupRelease::kPoll : GroupRelease::kSignal;
        k.groups.clear();
        std::size_t next = 0;
        for (std::size_t s = 0; s < op.gemms.size(); ++s) {
          const GemmShape& sh = op.gemms[s];
          if (sh.m <= 0 || sh.n <= 0 || sh.k <= 0) continue;
          const std::int64_t mt = (sh.m + tm - 1) / tm, nt = (sh.n + tn - 1) / tn;
          for (std::int64_t t = 0; t < mt; ++t) {
            BlockGroup grp;
            grp.release = how;
            grp.blocks.assign(tiles.begin() + static_cast<std::ptrdiff_t>(next),
                              tiles.begin() + static_cast<std::ptrdiff_t>(next + static_cast<std::size_t>(nt)));
            next += static_cast<std::size_t>(nt);
            k.groups.push_back(std::move(grp));
            flags.push_back(how == GroupRelease::kSignal ? row_transfers_->dam_flag(op.regions[s], static_cast<int>(t))
                                                         : row_transfers_->software_flag(op.regions[s], static_cast<int>(t)));
          }
        }
        if (next != tiles.size()) throw std::logic_error(op.name + ": tiles and row groups disagree");
        k.poll = {ns_to_ticks(op.poll.poll_interval_ns), ns_to_ticks(op.poll.poll_sm_ns), op.poll.poll_bytes};
      } else if (op.release != ReleaseKind::kLaunch) {
        const GroupRelease how = op.release == ReleaseKind::kPoll ? GroupRelease::kPoll : GroupRelease::kSignal;
        for (std::size_t i = 0; i < k.groups.size(); ++i) {
          const int f = i < op.release_flags.size() ? op.release_flags[i] : -1;
          if (f >= 0) k.groups[i].release = how;
          flags.push_back(f);
        }
        k.poll = {ns_to_ticks(op.poll.poll_interval_ns), ns_to_ticks(op.poll.poll_sm_ns), op.poll.poll_bytes};
      }
      r.kind = "gemm";
      r.flops = k.flops;
      r.bytes = k.hbm_bytes;
      const int id = sm.launch(std::move(k), flags);
      std::vector<int>().swap(flags);  // nothing of ours on this thread's heap while it waits
      sm.wait(id);
      r.first_block = sm.last_first_block_start();
      break;
    }
    case OpKind::kRowspMalloc: {
      r.kind = "rowsp_malloc";
      row_transfers_->malloc_regions(g, op);
      break;
    }
    case OpKind::kRowStores: {
      r.kind = "row_stores";
      Tick window = 0;
      if (op.ready_window_bytes > 0) window = sm.compute().memory_bound(op.ready_window_bytes);
      else if (!op.ready_window_gemms.empty()) window = sm.gemm(op.ready_window_gemms).compute_makespan;
      const RowTransfer& t = schedule_.row_transfers.at(static_cast<std::size_t>(op.row_transfer));
      double sent = 0;
      for (const auto& row : t.rows[gi]) {
        if (row.dst != g) sent += t.row_bytes + (row.region >= 0 ? t.source_info_bytes : 0);
      }
      r.bytes = sent;
      row_transfers_->start(g, op, window);
      sc_core::wait(row_transfers_->done_event(op.row_transfer, g));
      break;
    }
    case OpKind::kMemory: {
      r.kind = "memory";
      r.bytes = op.bytes;
      KernelSpec spec = SmArray::memory_kernel(op.bytes);
      spec.hbm_max_gbps = op.max_gbps;
      sm.wait(sm.launch(std::move(spec)));
      break;
    }
    case OpKind::kAllToAll: {
      r.kind = "all_to_all";
      const AllToAll& a = schedule_.collectives[static_cast<std::size_t>(op.collective)];
      double sent = 0;
      for (std::size_t d = 0; d < a.rows[gi].size(); ++d) {
        if (d != gi) sent += static_cast<double>(a.rows[gi][d].size()) * a.row_bytes;
      }
      r.bytes = sent;
      collectives_->join(op.collective, g);
      sc_core::wait(collectives_->done_event(op.collective, g));
      break;
    }
    case OpKind::kHostSync:
      break;
  }
  if (op.sets_flag >= 0) sm.raise_flag(op.sets_flag, now_ticks());
}

}  // namespace moehub
