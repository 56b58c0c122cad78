// The row transfers of the MoE-Hub schedules. See row_transfers.hpp.
#include "platform/row_transfers.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/sc_time_util.hpp"
#include "golden/aau.hpp"
#include "golden/dam.hpp"
#include "golden/rpm.hpp"

namespace moehub {

namespace {

std::uint64_t row_key(int region, std::int64_t row_id) {
  return (static_cast<std::uint64_t>(region) << 40) | static_cast<std::uint64_t>(row_id);
}

std::int64_t groups_of(std::int64_t rows, int tile_m) { return (rows + tile_m - 1) / tile_m; }

}  // namespace

RowTransfers::RowTransfers(const Schedule& schedule, const SystemConfig& sys, AddressMap& map)
    : schedule_(schedule),
      fmt_(PacketFormat::from(sys.nvlink)),
      sm_to_hub_(ns_to_ticks(sys.gpu.xbar_latency_ns + sys.gpu.hub_latency_ns)),
      dam_latency_(ns_to_ticks(sys.hub.dam_ready_latency_ns)),
      // a flag store from the producer's SMs to the consumer's memory:
      // crossbar and hub on both sides, the two link hops and the switch
      flag_latency_(ns_to_ticks(2 * (sys.gpu.xbar_latency_ns + sys.gpu.hub_latency_ns) +
                                2 * sys.nvlink.gpu_switch_latency_ns + sys.nvswitch.crossing_latency_ns)),
      tile_m_(sys.gpu.gemm_tile_m),
      trace_bin_(std::max<Tick>(1, us_to_ticks(sys.sim.timeline_bin_us))) {
  const auto G = static_cast<std::size_t>(sys.num_gpus);
  rat_bin_.assign(G, -1);
  rpm_bin_.assign(G, -1);
  for (const RowRegion& rg : schedule.regions) {
    if (rg.gpu < 0 || static_cast<std::size_t>(rg.gpu) >= G || rg.row_bytes == 0 || rg.capacity_rows < 1) {
      throw std::invalid_argument("rowsp region of expert " + std::to_string(rg.expert) + ": bad GPU, row size or capacity");
    }
    Region r;
    r.spec = &rg;
    const std::int64_t groups = groups_of(std::max(rg.capacity_rows, rg.expected_rows), tile_m_);
    // the region's address range covers whole thread-block groups: the DAM
    // counts every write in [base, base + groups x tile rows x row size) for
    // this region, so no other buffer may start inside the last group's tiles
    r.base = map.allocate(rg.gpu, "rowsp:expert" + std::to_string(rg.expert),
                          static_cast<std::uint64_t>(groups * tile_m_) * rg.row_bytes);
    r.row_of_lrid.assign(static_cast<std::size_t>(rg.capacity_rows), -1);
    if (groups > kMaxGroupsPerRegion) {
      throw std::invalid_argument("rowsp region of expert " + std::to_string(rg.expert) + ": more than " +
                                  std::to_string(kMaxGroupsPerRegion) + " thread-block groups");
    }
    r.released.assign(static_cast<std::size_t>(groups), 0);
    r.rows_in_group.assign(static_cast<std::size_t>(groups), 0);
    r.flagged.assign(static_cast<std::size_t>(groups), 0);
    r.groups_with_rows = groups_of(rg.expected_rows, tile_m_);
    regions_.push_back(std::move(r));
  }
  transfers_.resize(schedule.row_transfers.size());
  for (std::size_t c = 0; c < schedule.row_transfers.size(); ++c) {
    Transfer& t = transfers_[c];
    t.spec = &schedule.row_transfers[c];
    if (t.spec->rows.size() != G) throw std::invalid_argument(t.spec->name + ": rows for every GPU expected");
    if (t.spec->store_bytes < 1 || t.spec->store_bytes > golden::kLineBytes) {
      throw std::invalid_argument(t.spec->name + ": store_bytes must be in [1, 128]");
    }
    t.gpus.resize(G);
    t.row_of_slot.resize(G);
    for (auto& p : t.gpus) p.done_ev = std::make_unique<sc_core::sc_event>();
    std::vector<std::int64_t> slots(G, 0);
    for (std::size_t src = 0; src < G; ++src) {
      for (const RowStore& r : t.spec->rows[src]) {
        if (r.dst < 0 || static_cast<std::size_t>(r.dst) >= G) throw std::invalid_argument(t.spec->name + ": bad destination");
        if (r.region >= 0) {
          t.row_store = true;
          const RowRegion& rg = schedule.regions.at(static_cast<std::size_t>(r.region));
          if (rg.gpu != r.dst) throw std::invalid_argument(t.spec->name + ": row to a region of another GPU");
          if (rg.row_bytes != t.spec->row_bytes + t.spec->source_info_bytes) {
            throw std::invalid_argument(t.spec->name + ": row size differs from its region's");
          }
        } else {
          slots[static_cast<std::size_t>(r.dst)] = std::max(slots[static_cast<std::size_t>(r.dst)], r.slot + 1);
          if (!t.slot_of_row.emplace(r.row_id, r.slot).second) {
            throw std::invalid_argument(t.spec->name + ": row id " + std::to_string(r.row_id) + " twice");
          }
          auto& held = t.row_of_slot[static_cast<std::size_t>(r.dst)];
          if (r.slot < 0) throw std::invalid_argument(t.spec->name + ": negative slot");
          if (held.size() <= static_cast<std::size_t>(r.slot)) held.resize(static_cast<std::size_t>(r.slot) + 1, -1);
          if (held[static_cast<std::size_t>(r.slot)] >= 0) {
            throw std::invalid_argument(t.spec->name + ": slot " + std::to_string(r.slot) + " of GPU " +
                                        std::to_string(r.dst) + " twice");
          }
          held[static_cast<std::size_t>(r.slot)] = r.row_id;
          t.bytes_of_row[r.row_id] = 0;
          if (static_cast<std::size_t>(r.dst) != src) t.gpus[static_cast<std::size_t>(r.dst)].incoming_bytes += t.spec->row_bytes;
        }
        ++t.expected_rows;
      }
    }
    if (!t.row_store) {
      for (std::size_t g = 0; g < G; ++g) {
        t.recv_base.push_back(map.allocate(static_cast<int>(g), "recv:" + t.spec->name,
                                           static_cast<std::uint64_t>(slots[g]) * t.spec->row_bytes));
      }
    }
  }
}

void RowTransfers::attach(std::vector<Hub*> hubs, std::vector<SmArray*> sms, std::vector<MemoryFlows*> hbm) {
  hubs_ = std::move(hubs);
  sms_ = std::move(sms);
  hbm_ = std::move(hbm);
}

sc_core::sc_event& RowTransfers::done_event(int transfer, int g) {
  return *transfers_.at(static_cast<std::size_t>(transfer)).gpus.at(static_cast<std::size_t>(g)).done_ev;
}

RowTransfers::Transfer& RowTransfers::transfer_of(std::int32_t tag) {
  const std::int32_t c = tag - kTagBase;
  if (c < 0 || static_cast<std::size_t>(c) >= transfers_.size()) {
    throw std::logic_error("row transfers: unknown tag " + std::to_string(tag));
  }
  return transfers_[static_cast<std::size_t>(c)];
}

void RowTransfers::malloc_regions(int g, const Op& op) {
  const auto gi = static_cast<std::size_t>(g);
  auto* aau = dynamic_cast<golden::AddressAllocationUnit*>(&hubs_[gi]->ingress_function());
  if (!aau) throw std::logic_error("rowsp_malloc on a hub without an AAU");
  auto* dam = dynamic_cast<golden::DataAvailabilityManager*>(&hubs_[gi]->completion_function());
  std::vector<golden::ReadySignal> ready;
  for (const int ri : op.regions) {
    Region& r = regions_.at(static_cast<std::size_t>(ri));
    if (r.spec->gpu != g) throw std::logic_error("rowsp_malloc of a region of another GPU");
    if (r.registered) throw std::logic_error("rowsp region registered twice");
    r.malloc_id = aau->rowsp_malloc(r.base, r.spec->row_bytes, static_cast<std::uint64_t>(r.spec->capacity_rows));
    r.registered = true;
    region_of_malloc_[r.malloc_id] = ri;
    if (dam && schedule_.hub.dam) {
      golden::KernelDependency k;
      k.kernel = ri;
      k.base_address = r.base;
      k.row_bytes = r.spec->row_bytes;
      k.rows_per_group = static_cast<std::uint32_t>(tile_m_);
      k.groups = static_cast<std::uint32_t>(r.released.size());
      k.expected_bytes = static_cast<std::uint64_t>(r.spec->expected_rows) * r.spec->row_bytes;
      ready.clear();
      dam->add_kernel(k, ready);
      for (const auto& rs : ready) on_ready(g, rs, now_ticks());
    }
  }
}

void RowTransfers::start(int g, const Op& op, Tick window) {
  const auto gi = static_cast<std::size_t>(g);
  const int c = op.row_transfer;
  Transfer& t = transfers_.at(static_cast<std::size_t>(c));
  PerGpu& me = t.gpus[gi];
  if (me.started) throw std::logic_error(t.spec->name + ": started twice on GPU " + std::to_string(g));
  me.started = true;
  const Tick now = now_ticks();
  const auto tag = static_cast<std::uint64_t>(kTagBase) + static_cast<std::uint64_t>(c);
  const RowTransfer& spec = *t.spec;
  std::vector<KernelRow> remote;
  double local_copy = 0;
  for (const RowStore& r : spec.rows[gi]) {
    const Tick ready = now + static_cast<Tick>(std::clamp(r.ready_frac, 0.0, 1.0) * static_cast<double>(window));
    if (r.region >= 0) {
      const Region& rg = regions_[static_cast<std::size_t>(r.region)];
      if (!rg.registered) throw std::logic_error(spec.name + ": a row store to a region not yet registered");
      if (r.dst == g) {
        golden::StoreRequest st;
        st.op = golden::Opcode::kRowStore;
        st.malloc_id = rg.malloc_id;
        st.row_id = r.row_id;
        st.row_offset = 0;
        st.bytes = rg.spec->row_bytes;  // the row and its source column, one local write
        st.tag = tag;
        ++me.local_stores;
        local_bytes_ += st.bytes;
        hubs_[gi]->local_store(st, ready + sm_to_hub_);
        continue;
      }
      KernelRow k;
      k.dst = r.dst;
      k.row_id = r.row_id;
      k.bytes = spec.row_bytes;
      k.ready = ready;
      k.op = golden::Opcode::kRowStore;
      k.malloc_id = rg.malloc_id;
      remote.push_back(k);
      me.remote_bytes += spec.row_bytes;
      if (spec.source_info_bytes > 0) {
        k.op = golden::Opcode::kRowStoreNop;
        k.priority = false;
        k.bytes = spec.source_info_bytes;
        k.offset = spec.row_bytes;
        remote.push_back(k);
        me.remote_bytes += spec.source_info_bytes;
      }
    } else if (r.dst == g) {
      local_copy += spec.row_bytes;
      t.bytes_of_row[r.row_id] += spec.row_bytes;
    } else {
      KernelRow k;
      k.dst = r.dst;
      k.row_id = r.row_id;
      k.bytes = spec.row_bytes;
      k.ready = ready;
      k.op = golden::Opcode::kStore;
      k.address = t.recv_base[static_cast<std::size_t>(r.dst)] + static_cast<std::uint64_t>(r.slot) * spec.row_bytes;
      remote.push_back(k);
      me.remote_bytes += spec.row_bytes;
    }
  }
  fabric_sent_ += me.remote_bytes;
  local_bytes_ += static_cast<std::uint64_t>(local_copy);
  if (!remote.empty()) {
    me.source = std::make_unique<KernelStoreSource>(g, tag, std::move(remote), fmt_, 1u,
                                                    sms_[gi]->store_issue_gbps(spec.sms), now, sm_to_hub_);
    me.source->set_store_bytes(spec.store_bytes);
    hubs_[gi]->add_source(me.source.get());
  }
  if (local_copy > 0) {
    me.local_copy_done = false;
    hbm_[gi]->start_flow(2 * local_copy, 0, now, [this, c, g](Tick at) {
      PerGpu& p = transfers_[static_cast<std::size_t>(c)].gpus[static_cast<std::size_t>(g)];
      p.local_copy_done = true;
      p.last = std::max(p.last, at);
      check_done(c, g);
    });
  }
  check_done(c, g);
}

void RowTransfers::check_done(int c, int g) {
  Transfer& t = transfers_[static_cast<std::size_t>(c)];
  PerGpu& p = t.gpus[static_cast<std::size_t>(g)];
  if (!p.started || p.done || p.acked_bytes < p.remote_bytes || p.local_done < p.local_stores || !p.local_copy_done) {
    return;
  }
  if (!t.row_store && p.received_bytes < p.incoming_bytes) return;
  p.done = true;
  const Tick now = now_ticks();
  const Tick at = std::max(p.last, now);
  p.done_ev->notify(to_sc(at - now));
  t.all_done = std::max(t.all_done, at);
  ++t.gpus_done;
}

void RowTransfers::on_ready(int g, const golden::ReadySignal& rs, Tick t) {
  if (rs.kernel < 0 || static_cast<std::size_t>(rs.kernel) >= regions_.size()) {
    errors_.push_back("DAM of GPU " + std::to_string(g) + ": Ready for unknown kernel " + std::to_string(rs.kernel));
    return;
  }
  Region& r = regions_[static_cast<std::size_t>(rs.kernel)];
  if (rs.group == golden::kAllReadyGroup) {
    ++r.all_ready;
    trace_.releases.push_back({Release::Kind::kAllReady, g, rs.kernel, rs.group, std::max(t, now_ticks())});
    return;
  }
  if (rs.group < 0 || static_cast<std::size_t>(rs.group) >= r.released.size()) {
    errors_.push_back("DAM of GPU " + std::to_string(g) + ": Ready for unknown group " + std::to_string(rs.group));
    return;
  }
  if (r.released[static_cast<std::size_t>(rs.group)] < 255) ++r.released[static_cast<std::size_t>(rs.group)];
  const Tick at = std::max(t, now_ticks()) + dam_latency_;
  sms_[static_cast<std::size_t>(g)]->raise_flag(dam_flag(rs.kernel, rs.group), at);
  trace_.releases.push_back({Release::Kind::kDamGroup, g, rs.kernel, rs.group, at});
}

void RowTransfers::on_delivered(const MoePacketExt& w, Tick t) {
  Transfer& tr = transfer_of(w.transfer);
  const auto dst = static_cast<std::size_t>(w.dst_gpu);
  const golden::StoreRequest& st = w.store;
  if (w.src_gpu != w.dst_gpu) {
    packets_ += w.packets;
    fabric_received_ += st.bytes;
  }
  if (tr.row_store) {
    const auto found = region_of_malloc_.find(st.malloc_id);
    const int ri = found == region_of_malloc_.end() ? -1 : found->second;
    if (ri < 0 || regions_[static_cast<std::size_t>(ri)].spec->gpu != w.dst_gpu) {
      errors_.push_back(tr.spec->name + ": a row store for unknown MallocID " + std::to_string(st.malloc_id));
      return;
    }
    Region& rg = regions_[static_cast<std::size_t>(ri)];
    RowState& row = rows_[row_key(ri, st.row_id)];
    const std::uint64_t base = st.address - st.row_offset;
    if (row.bytes == 0 && row.local_row_id < 0) {
      row.base = base;
      row.local_row_id = st.local_row_id;
    } else if (row.base != base || row.local_row_id != st.local_row_id) {
      row.moved = true;
    }
    row.bytes += st.bytes;
    rg.bytes += st.bytes;
    if (!schedule_.hub.dam && row.bytes == rg.spec->row_bytes && !row.moved && st.local_row_id >= 0 &&
        st.local_row_id < rg.spec->capacity_rows) {
      // software signalling per step: the row's producer learns of its write
      // from the response and adds it to its group's counter on the consumer;
      // the group's flag is up once the counter holds all the group's rows
      const auto grp = static_cast<std::size_t>(st.local_row_id / tile_m_);
      const std::int64_t want =
          std::min<std::int64_t>(tile_m_, rg.spec->expected_rows - static_cast<std::int64_t>(grp) * tile_m_);
      if (grp < rg.rows_in_group.size() && ++rg.rows_in_group[grp] == want) {
        const Tick at = std::max(t, now_ticks()) + 2 * flag_latency_;
        if (rg.flagged[grp] < 255) ++rg.flagged[grp];
        sms_[dst]->raise_flag(software_flag(ri, static_cast<int>(grp)), at);
        trace_.releases.push_back({Release::Kind::kSoftwareFlag, w.dst_gpu, ri, static_cast<int>(grp), at});
      }
    }
    if (st.local_row_id < 0 || st.local_row_id >= rg.spec->capacity_rows ||
        base != rg.base + static_cast<std::uint64_t>(st.local_row_id) * rg.spec->row_bytes) {
      row.moved = true;
    } else {
      std::int64_t& owner = rg.row_of_lrid[static_cast<std::size_t>(st.local_row_id)];
      if (owner < 0) {
        owner = st.row_id;
        trace_.rows.push_back({ri, t, ++rg.rows_used});
      } else if (owner != st.row_id) {
        ++rg.lrid_conflicts;
      }
    }
    const auto bin = static_cast<std::int64_t>(t / trace_bin_);
    if (bin > rat_bin_[dst]) {
      rat_bin_[dst] = bin;
      if (const auto* a = dynamic_cast<const golden::AddressAllocationUnit*>(&hubs_[dst]->ingress_function())) {
        trace_.rat.push_back({w.dst_gpu, t, a->rat_stats()});
      }
    }
    if (w.src_gpu == w.dst_gpu) {
      PerGpu& p = tr.gpus[dst];
      ++p.local_done;
      p.last = std::max(p.last, t);
      check_done(w.transfer - kTagBase, w.dst_gpu);
    }
    return;
  }
  const auto slot = tr.slot_of_row.find(st.row_id);
  if (slot == tr.slot_of_row.end()) {
    errors_.push_back(tr.spec->name + ": a store of unknown row " + std::to_string(st.row_id));
    return;
  }
  // Plain stores are credited by address, to the row whose slot holds each
  // byte: the packet manager merges stores to one 128-byte line into one
  // packet, and with rows under a line those are stores of several rows (the
  // packet then names its oldest store's row and offset). A packet's bytes:
  // its mask in the line of its address when the mask counts them (a store
  // within one line), else the range from its address.
  const std::uint64_t expect =
      tr.recv_base[dst] + static_cast<std::uint64_t>(slot->second) * tr.spec->row_bytes + st.row_offset;
  bool named_byte = false;  // the named row's store is in the packet at its own address
  bool misplaced = false;   // bytes outside the receive buffer or in a slot no row holds
  auto credit = [&](std::uint64_t a, std::uint64_t n) {
    named_byte = named_byte || (expect >= a && expect < a + n);
    const std::uint64_t base = tr.recv_base[dst], row_bytes = tr.spec->row_bytes;
    const std::vector<std::int64_t>& held = tr.row_of_slot[dst];
    if (a < base || a + n > base + held.size() * row_bytes) {
      misplaced = true;
      return;
    }
    while (n > 0) {
      const std::uint64_t s = (a - base) / row_bytes;
      const std::uint64_t in_row = std::min(n, base + (s + 1) * row_bytes - a);
      const std::int64_t row = held[static_cast<std::size_t>(s)];
      if (row < 0) {
        misplaced = true;
      } else {
        tr.bytes_of_row[row] += static_cast<std::uint32_t>(in_row);
      }
      a += in_row;
      n -= in_row;
    }
  };
  if (st.address == expect && st.row_offset + st.bytes <= tr.spec->row_bytes &&
      (st.bytes > golden::kLineBytes || (st.bytes == golden::kLineBytes && st.mask.full()))) {
    // the usual packet: whole lines of one row, at its address
    named_byte = true;
    tr.bytes_of_row[st.row_id] += st.bytes;
  } else if (st.bytes <= golden::kLineBytes && !st.mask.empty() && st.mask.count() == st.bytes) {
    const std::uint64_t line = st.address / golden::kLineBytes * golden::kLineBytes;
    for (std::uint32_t k = 0; k < 2; ++k) {  // the runs of set bits, word by word
      std::uint64_t word = st.mask.bits[k];
      while (word != 0) {
        const auto i = static_cast<std::uint32_t>(__builtin_ctzll(word));
        const std::uint64_t clear = ~(word >> i);
        const std::uint32_t n = clear == 0 ? 64 : static_cast<std::uint32_t>(__builtin_ctzll(clear));
        credit(line + k * 64 + i, n);
        word = i + n >= 64 ? 0 : word & (~std::uint64_t{0} << (i + n));
      }
    }
  } else {
    credit(st.address, st.bytes);
  }
  if (misplaced || !named_byte) ++tr.wrong_address;
  PerGpu& p = tr.gpus[dst];
  p.received_bytes += st.bytes;
  p.last = std::max(p.last, t);
  check_done(w.transfer - kTagBase, w.dst_gpu);
}

void RowTransfers::on_acknowledged(const MoePacketExt& r, Tick t) {
  Transfer& tr = transfer_of(r.transfer);
  const auto g = static_cast<std::size_t>(r.dst_gpu);
  PerGpu& p = tr.gpus[g];
  p.acked_bytes += r.answered_bytes;
  const auto bin = static_cast<std::int64_t>(t / trace_bin_);
  if (bin > rpm_bin_[g]) {
    rpm_bin_[g] = bin;
    if (const golden::RpmStats* m = hubs_[g]->egress_function().rpm_stats()) {
      trace_.rpm.push_back({r.dst_gpu, t, *m});
    }
  }
  p.last = std::max(p.last, t);
  check_done(r.transfer - kTagBase, r.dst_gpu);
}

std::int64_t RowTransfers::rows_delivered() const {
  std::int64_t n = 0;
  for (const auto& [key, row] : rows_) {
    const auto ri = static_cast<std::size_t>(key >> 40);
    if (row.bytes == regions_[ri].spec->row_bytes && !row.moved) ++n;
  }
  for (const Transfer& t : transfers_) {
    if (t.row_store) continue;
    for (const auto& [id, bytes] : t.bytes_of_row) {
      if (bytes == t.spec->row_bytes) ++n;
    }
  }
  return n;
}

std::vector<std::string> RowTransfers::verify() const {
  std::vector<std::string> e = errors_;
  for (const Transfer& t : transfers_) {
    const std::string& n = t.spec->name;
    for (std::size_t g = 0; g < t.gpus.size(); ++g) {
      if (!t.gpus[g].started) e.push_back(n + ": GPU " + std::to_string(g) + " never started its row stores");
      else if (!t.gpus[g].done) e.push_back(n + ": GPU " + std::to_string(g) + " did not complete its row stores");
    }
    if (t.row_store) continue;
    std::int64_t bad = 0;
    for (const auto& [id, bytes] : t.bytes_of_row) bad += bytes != t.spec->row_bytes;
    if (bad) e.push_back(n + ": " + std::to_string(bad) + " rows not delivered exactly once");
    if (t.wrong_address) e.push_back(n + ": " + std::to_string(t.wrong_address) + " stores at an address their row does not own");
  }
  if (fabric_sent_ != fabric_received_) {
    e.push_back("row transfers: bytes sent over the fabric (" + std::to_string(fabric_sent_) +
                ") != bytes received (" + std::to_string(fabric_received_) + ")");
  }
  std::int64_t incomplete = 0, moved = 0;
  std::vector<std::int64_t> rows_in(regions_.size(), 0);
  for (const auto& [key, row] : rows_) {
    const auto ri = static_cast<std::size_t>(key >> 40);
    if (row.bytes != regions_[ri].spec->row_bytes) ++incomplete;
    if (row.moved) ++moved;
    ++rows_in[ri];
  }
  if (incomplete) e.push_back("rowsp: " + std::to_string(incomplete) + " rows not delivered exactly once");
  if (moved) e.push_back("rowsp: " + std::to_string(moved) + " rows whose stores landed at more than one address");
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    const std::string n = "rowsp region of expert " + std::to_string(r.spec->expert) + " (GPU " +
                          std::to_string(r.spec->gpu) + ")";
    if (rows_in[i] != r.spec->expected_rows) {
      e.push_back(n + ": " + std::to_string(rows_in[i]) + " rows arrived, the routing sent " +
                  std::to_string(r.spec->expected_rows));
    }
    if (r.lrid_conflicts) e.push_back(n + ": " + std::to_string(r.lrid_conflicts) + " LocalRowIDs given to two rows");
    // dense: LocalRowIDs 0 .. rows-1 used, none beyond
    std::int64_t used = 0, holes = 0;
    for (std::size_t l = 0; l < r.row_of_lrid.size(); ++l) {
      if (r.row_of_lrid[l] >= 0) {
        ++used;
        if (static_cast<std::int64_t>(l) >= rows_in[i]) ++holes;
      }
    }
    if (used != rows_in[i] || holes) {
      e.push_back(n + ": LocalRowIDs not dense (" + std::to_string(used) + " used for " + std::to_string(rows_in[i]) +
                  " rows)");
    }
    if (!schedule_.hub.dam) {
      // software signalling: every group with rows flagged exactly once
      std::int64_t twice = 0, missing = 0;
      for (std::size_t grp = 0; grp < r.flagged.size(); ++grp) {
        const bool with_rows = static_cast<std::int64_t>(grp) < r.groups_with_rows;
        if (r.flagged[grp] > 1) ++twice;
        if (with_rows && r.flagged[grp] == 0) ++missing;
      }
      if (twice) e.push_back(n + ": software flags raised " + std::to_string(twice) + " groups more than once");
      if (missing) e.push_back(n + ": software flags never raised for " + std::to_string(missing) + " groups with rows");
      continue;
    }
    std::int64_t twice = 0, missing = 0, extra = 0;
    for (std::size_t grp = 0; grp < r.released.size(); ++grp) {
      const bool with_rows = static_cast<std::int64_t>(grp) < r.groups_with_rows;
      if (r.released[grp] > 1) ++twice;
      if (with_rows && r.released[grp] == 0) ++missing;
      if (!with_rows && r.released[grp] > 0) ++extra;
    }
    if (twice) e.push_back(n + ": DAM released " + std::to_string(twice) + " groups more than once");
    if (missing) e.push_back(n + ": DAM never released " + std::to_string(missing) + " groups with rows");
    if (extra) e.push_back(n + ": DAM released " + std::to_string(extra) + " groups without rows");
    if (r.all_ready != 1) e.push_back(n + ": DAM AllReady raised " + std::to_string(r.all_ready) + " times");
  }
  if (schedule_.hub.dam) {
    // the DAM counted exactly the bytes delivered into its regions
    for (std::size_t g = 0; g < hubs_.size(); ++g) {
      const auto* dam = dynamic_cast<const golden::DataAvailabilityManager*>(&hubs_[g]->completion_function());
      if (!dam) continue;
      std::uint64_t bytes = 0;
      for (const Region& r : regions_) {
        if (static_cast<std::size_t>(r.spec->gpu) == g) bytes += r.bytes;
      }
      if (dam->stats().counted_bytes != bytes) {
        e.push_back("DAM of GPU " + std::to_string(g) + " counted " + std::to_string(dam->stats().counted_bytes) +
                    " bytes, its regions received " + std::to_string(bytes));
      }
    }
  }
  return e;
}

nlohmann::ordered_json RowTransfers::stats() const {
  using J = nlohmann::ordered_json;
  J regions = J::array();
  double max_occ = 0, sum_occ = 0;
  std::uint64_t released = 0;
  for (const Region& r : regions_) {
    std::int64_t used = 0;
    for (const auto x : r.row_of_lrid) used += x >= 0;
    const double occ = static_cast<double>(used) / static_cast<double>(r.spec->capacity_rows);
    max_occ = std::max(max_occ, occ);
    sum_occ += occ;
    std::uint64_t rel = 0;
    for (const auto x : r.released) rel += x;
    released += rel;
    regions.push_back({{"gpu", r.spec->gpu}, {"expert", r.spec->expert}, {"malloc_id", r.malloc_id},
                       {"capacity_rows", r.spec->capacity_rows}, {"rows", used}, {"occupancy", occ},
                       {"dam_releases", rel}});
  }
  J j;
  j["regions"] = regions;
  j["region_occupancy_max"] = max_occ;
  j["region_occupancy_mean"] = regions_.empty() ? 0.0 : sum_occ / static_cast<double>(regions_.size());
  j["dam_group_releases"] = released;
  j["rows_delivered"] = rows_delivered();
  return j;
}

}  // namespace moehub
