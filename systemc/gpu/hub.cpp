#include "gpu/hub.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/sc_time_util.hpp"
#include "golden/aau.hpp"
#include "golden/apt.hpp"

namespace moehub {

golden::HubParams hub_params_from(const SystemConfig& sys, int gpu) {
  golden::HubParams p;
  const HubConfig& h = sys.hub;
  p.gpu = gpu;
  p.num_gpus = sys.num_gpus;
  p.clock_ghz = h.clock_ghz;
  p.write_buffer_entries = static_cast<std::uint32_t>(h.write_buffer_entries);
  p.fifo_passes_congested = h.fifo_passes_congested;
  p.rat_entries = static_cast<std::uint32_t>(h.rat_entries);
  p.rat_banks = static_cast<std::uint32_t>(h.rat_banks);
  p.rat_ports_per_bank = static_cast<std::uint32_t>(h.rat_ports_per_bank);
  p.rat_lookup_cycles = static_cast<std::uint32_t>(h.rat_lookup_cycles);
  p.rat_restore_cycles = static_cast<std::uint32_t>(h.rat_restore_cycles);
  p.rat_spill_entry_bytes = static_cast<std::uint32_t>(h.rat_spill_entry_bytes);
  p.rat_spill_record = h.rat_spill_record;
  p.apt_regions = static_cast<std::uint32_t>(h.apt_regions);
  p.apt_alloc_cycles = static_cast<std::uint32_t>(h.apt_alloc_cycles);
  p.region_full = h.region_full;
  p.region_full_retry_cycles = static_cast<std::uint32_t>(h.region_full_retry_cycles);
  p.rpm_entries_per_peer = static_cast<std::uint32_t>(h.rpm_entries_per_peer);
  p.rpm_timer_cycles = static_cast<std::uint32_t>(h.rpm_timer_cycles);
  p.rpm_hold_partial = h.rpm_hold_partial;
  p.rpm_pick_cycles = static_cast<std::uint32_t>(h.rpm_pick_cycles);
  return p;
}


namespace {

/// One stop request per simulation (SystemC warns on a second sc_stop).
bool stop_requested = false;

golden::HubFunctions functions_from(const SystemConfig& sys, int gpu) {
  return golden::make_hub_functions(sys.hub.implementation, hub_params_from(sys, gpu));
}

/// Packets in flight towards one peer (sent, not yet answered) beyond which
/// the peer counts as congested: hub.congestion_packets, or when that is 0
/// twice the bandwidth-delay product of the GPU's egress over an unloaded
/// write round trip (links both ways, switch, hubs, crossbar, HBM).
/// Assumption: the packet manager learns congestion from its outstanding
/// writes; the paper names congestion-aware scheduling but not the signal it
/// uses.
std::uint64_t congestion_packets(const SystemConfig& sys) {
  if (sys.hub.congestion_packets > 0) return static_cast<std::uint64_t>(sys.hub.congestion_packets);
  const double rtt_ns = 4 * sys.nvlink.gpu_switch_latency_ns + 2 * sys.nvswitch.crossing_latency_ns +
                        2 * sys.gpu.hub_latency_ns + sys.gpu.xbar_latency_ns + sys.gpu.hbm_latency_ns;
  const double bdp_bytes = sys.nvlink.bw_gbps_per_direction_per_gpu * rtt_ns;  // GB/s x ns = bytes
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(2 * bdp_bytes / sys.nvlink.max_payload_bytes));
}

}  // namespace

Hub::Hub(const sc_core::sc_module_name& name, int gpu, const SystemConfig& sys, TrafficSink* sink,
         golden::HubFunctions functions)
    : TlmBlock(name),
      hub2nvl("hub2nvl", static_cast<std::size_t>(sys.nvswitch.num_switches)),
      nvl2hub("nvl2hub", static_cast<std::size_t>(sys.nvswitch.num_switches)),
      hub2xbar("hub2xbar"),
      gpu_(gpu),
      planes_(sys.nvswitch.num_switches),
      sm_to_hub_(ns_to_ticks(sys.gpu.xbar_latency_ns + sys.gpu.hub_latency_ns)),
      hub_latency_(ns_to_ticks(sys.gpu.hub_latency_ns)),
      quantum_(std::max<Tick>(1, ns_to_ticks(sys.sim.sync_quantum_ns))),
      response_window_(ns_to_ticks(sys.sim.response_window_ns)),
      responses_own_(sys.nvlink.response_channel == "own"),
      hub_clock_ghz_(sys.hub.clock_ghz),
      hub_clock_(sys.hub.clock_ghz),
      ack_flits_(static_cast<std::uint32_t>(sys.nvlink.ack_flits)),
      max_packet_flits_(static_cast<std::uint32_t>(sys.nvlink.max_payload_bytes / sys.nvlink.flit_bytes +
                                                   sys.nvlink.header_flits)),
      fmt_(PacketFormat::from(sys.nvlink)),
      sink_(sink),
      fn_(functions.ingress ? std::move(functions) : functions_from(sys, gpu)),
      congested_(static_cast<std::size_t>(sys.num_gpus), 0),
      inflight_(static_cast<std::size_t>(sys.num_gpus), 0),
      congestion_packets_(congestion_packets(sys)),
      responses_q_(static_cast<std::size_t>(sys.nvswitch.num_switches)) {
  if (planes_ > 64) throw std::invalid_argument(std::string(this->name()) + ": at most 64 NVSwitch planes");
  data_start_.assign(static_cast<std::size_t>(planes_), 0);
  response_start_.assign(static_cast<std::size_t>(planes_), 0);
  if (!fn_.ingress || !fn_.egress || !fn_.completion) {
    throw std::invalid_argument(std::string(this->name()) + ": hub functions incomplete");
  }
  pick_lead_ = cycles(fn_.egress->pick_cycles());
  for (auto& s : hub2nvl) s.bind(*this);
  for (auto& s : nvl2hub) s.bind(*this);
  hub2xbar.bind(*this);
  // a packet handed to a switch-to-GPU port at time P arrives no earlier than
  // P + link latency (+ serialisation): the lookahead of our input
  const Tick link = ns_to_ticks(sys.nvlink.gpu_switch_latency_ns);
  ingress_q_ = std::make_unique<ArrivalQueue>(
      "ingress", link, link,
      [this](tlm::tlm_generic_payload& gp, Tick at, Tick& retry) { return on_arrival(gp, at, retry); });
  SC_METHOD(egress);
  sensitive << work_ev_;
}

void Hub::set_egress_ports(std::vector<EgressPort*> ports) {
  if (ports.size() != static_cast<std::size_t>(planes_)) {
    throw std::logic_error(std::string(name()) + ": one egress port per plane expected");
  }
  ports_ = std::move(ports);
  ports_hold_max_packet_ = true;
  for (const EgressPort* p : ports_) {
    if (p->credit_flits(~std::uint32_t{0}) != max_packet_flits_) ports_hold_max_packet_ = false;
  }
  for (EgressPort* p : ports_) {
    p->set_credit_listener([this](Tick t) { wake(t); });
    p->set_release_reports(false);  // nb_transport_bw ignores END_REQ: the egress asks the port itself
  }
}

Tick Hub::cycles(std::uint32_t n) const {
  return n == 0 ? 0 : ceil_ps_to_ticks(static_cast<double>(n) * 1e3 / hub_clock_ghz_);
}

void Hub::wake(Tick t) {
  const Tick now = now_ticks();
  t = std::max(t, now);
  if (t < wake_at_) {
    wake_at_ = t;
    work_ev_.notify(to_sc(t - now));
  }
}

void Hub::add_source(StoreSource* source) {
  sources_.push_back(source);
  wake(now_ticks());
}

// ---------------------------------------------------------------------------
// egress

StoreSource* Hub::next_store(Tick& at) {
  if (next_src_known_) {
    at = next_src_at_;
    return next_src_;
  }
  StoreSource* best = nullptr;
  Tick best_ready = kTickMax;
  for (StoreSource* s : sources_) {
    if (!s->has_head()) continue;
    const Tick r = s->head().issue + sm_to_hub_;
    if (r < best_ready) {
      best_ready = r;
      best = s;
    }
  }
  at = best ? std::max(best_ready, room_at_) : kTickMax;
  next_src_ = best;
  next_src_at_ = at;
  next_src_known_ = true;
  return best;
}

bool Hub::fill(Tick until, bool one, Tick& clock) {
  bool took = false;
  for (;;) {
    Tick at = 0;
    StoreSource* best = next_store(at);
    if (!best || at > until) return took;
    const golden::StoreRequest& head = best->head().store;  // copied only once it is taken
    if (!fn_.egress->can_accept(head, at)) {
      if (!room_blocked_) {
        room_blocked_ = true;
        blocked_since_ = at;
        ++buffer_full_;
      }
      return took;
    }
    golden::StoreRequest st = head;
    st.ready = at;
    fn_.egress->accept(st, at);
    best->pop(at);
    next_src_known_ = false;
    clock = std::max(clock, hub_clock_.tick_of(hub_clock_.cycle_at(at)));
    took = true;
    if (best->finished()) sources_.erase(std::find(sources_.begin(), sources_.end(), best));
    if (one) return took;
  }
}

std::size_t Hub::earliest_port(Tick from, std::uint32_t flits, Tick& start) {
  if (from != data_known_from_ || flits != data_known_flits_) {
    data_known_ = 0;
    data_known_from_ = from;
    data_known_flits_ = flits;
  }
  const auto P = static_cast<std::size_t>(planes_);
  std::size_t best = data_rot_;
  start = kTickMax;
  for (std::size_t k = 0, p = data_rot_; k < P; ++k) {
    const std::uint64_t bit = std::uint64_t{1} << p;
    if (!(data_known_ & bit)) {
      data_start_[p] = ports_[p]->earliest_start(from, flits);
      data_known_ |= bit;
    }
    if (data_start_[p] < start) {
      start = data_start_[p];
      best = p;
    }
    if (++p == P) p = 0;
  }
  return best;
}

Hub::Action Hub::next_action(Tick now, Tick clock, bool data_held) {
  Action best;
  if (staged_.valid) {
    // the staged packet goes to the port that can start it first: the one
    // its pick found, if that answer stands
    if (staged_port_stands() && staged_.ready >= now) {
      best = {Step::kSend, staged_.plane, staged_.start, staged_.start};
    } else {
      Tick s = kTickMax;
      const std::size_t p = earliest_port(std::max(staged_.ready, now), staged_.flits, s);
      if (s != kTickMax) best = {Step::kSend, static_cast<std::int32_t>(p), s, s};
    }
  } else if (!data_held && fn_.egress->occupancy() > 0) {
    // the next packet is decided pick_lead_ before a port can start one (any
    // packet: credits for one maximal packet suffice for every transaction),
    // and no earlier than the previous decision is done or the last store
    // taken in (the decision sees the buffer as it is then)
    const Tick f = std::max(clock, egress_free_);
    Tick s = kTickMax;
    const std::size_t p = earliest_port(f + pick_lead_, max_packet_flits_, s);
    if (s != kTickMax) best = {Step::kPick, static_cast<std::int32_t>(p), s, s - pick_lead_};
    // for the ports' credit-stall statistic: the pick waits for credits
    // beyond what the ports' bandwidth imposes
    if (credit_wait_from_ == kTickMax && (s == kTickMax || s > ports_[p]->server().earliest_start(f + pick_lead_))) {
      for (const EgressPort* port : ports_) {
        credit_wait_from_ = std::min(credit_wait_from_, port->server().earliest_start(f + pick_lead_));
      }
    }
  }
  // responses: on its plane, a response ready by the time the staged packet
  // could start there goes first
  const auto P = static_cast<std::size_t>(planes_);
  Tick first_response = kTickMax;
  for (std::size_t p = 0; p < P; ++p) {
    const Ring<Response>& q = responses_q_[p];
    if (q.empty()) continue;
    const std::uint64_t bit = std::uint64_t{1} << p;
    if (!(response_known_ & bit)) {
      const Response& r = q.front();
      const Tick at = std::max(r.ready, now);
      response_start_[p] = responses_own_ ? ports_[p]->server().earliest_start(at) : ports_[p]->earliest_start(at, r.flits);
      response_known_ |= bit;
    }
    const Tick s = response_start_[p];
    if (s == kTickMax) continue;
    first_response = std::min(first_response, s);
    if (s < best.decide || (s == best.decide && best.step != Step::kResponse)) {
      best = {Step::kResponse, static_cast<std::int32_t>(p), s, s};
    }
  }
  best.first_response = first_response;
  return best;
}

void Hub::send_response(std::int32_t plane, Tick start, Tick now) {
  auto& q = responses_q_[static_cast<std::size_t>(plane)];
  const Response r = q.front();
  q.pop_front();
  // the responses of a plane leave in turn, each after a wait behind the
  // others: fetch the next ones' payloads while this one goes
  if (!q.empty()) prefetch_payload(q[std::min<std::size_t>(2, q.size() - 1)].gp);
  auto* ext = &moe_ext(*r.gp);
  ext->plane = plane;
  ext->ready = r.ready;
  const Tick at = std::max(r.ready, now);
  ext->sent = start;  // next_action's answer of the port for (at, r.flits)
  if (ext->sent < ext->written) ++early_responses_;
  ++responses_;
  ++transactions_;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(at - now);
  hub2nvl[static_cast<std::size_t>(plane)]->nb_transport_fw(*r.gp, phase, d);
  forget_plane(static_cast<std::size_t>(plane));
}

bool Hub::pick(const Action& a) {
  golden::EgressPick pk;
  if (!fn_.egress->pick(a.decide, congested_, pk)) return false;
  egress_free_ = a.decide + cycles(pk.cycles);
  staged_.valid = true;
  staged_.store = pk.store;
  staged_.ready = std::max(pk.store.ready, egress_free_);
  staged_.credit_ready = std::min(staged_.ready, credit_wait_from_);
  staged_.plane = a.plane;
  staged_.start = a.start;
  staged_.port_known = true;
  credit_wait_from_ = kTickMax;
  const std::uint32_t bytes = pk.store.bytes;
  if (bytes != shape_bytes_) {  // the packets of a transfer are mostly of one size
    shape_bytes_ = bytes;
    shape_packets_ = fmt_.packets_per_row(bytes);
    shape_flits_ = static_cast<std::uint32_t>(fmt_.row_flits(bytes));
  }
  staged_.packets = shape_packets_;
  staged_.flits = shape_flits_;
  if (room_blocked_) {
    // the stores that found the buffer full enter once this one has left it
    room_blocked_ = false;
    room_at_ = egress_free_;
    next_src_known_ = false;
    buffer_full_wait_ += egress_free_ > blocked_since_ ? egress_free_ - blocked_since_ : 0;
  }
  return true;
}

void Hub::send_staged(Tick now, const Action& a) {
  const auto plane = static_cast<std::size_t>(a.plane);
  const golden::StoreRequest& st = staged_.store;
  const Tick ready = std::max(staged_.ready, now);
  tlm::tlm_generic_payload* gp = pool_.allocate();
  auto* ext = &moe_ext(*gp);
  ext->kind = PacketKind::kWrite;
  ext->src_gpu = gpu_;
  ext->dst_gpu = st.dst_gpu;
  ext->plane = a.plane;
  ext->transfer = static_cast<std::int32_t>(st.tag);
  ext->store = st;
  ext->packets = staged_.packets;
  ext->flits = staged_.flits;
  ext->ready = staged_.credit_ready;  // the port counts a credit stall from here
  ext->sent = a.start;  // next_action's answer of the port for (ready, flits)
  gp->set_command(tlm::TLM_WRITE_COMMAND);
  gp->set_address(st.address);
  gp->set_data_length(st.bytes);
  if (++data_rot_ == static_cast<std::size_t>(planes_)) data_rot_ = 0;
  data_packets_ += staged_.packets;
  {
    const auto d = static_cast<std::size_t>(st.dst_gpu);
    inflight_[d] += staged_.packets;
    if (!congested_[d] && inflight_[d] >= congestion_packets_) {
      congested_[d] = 1;
      ++congestion_events_;
    }
  }
  staged_.valid = false;
  ++transactions_;
  tlm::tlm_phase phase = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(ready - now);
  hub2nvl[plane]->nb_transport_fw(*gp, phase, d);
  forget_plane(plane);
}

void Hub::egress() {
  ++egress_wakes_;
  // the ports' answers remembered in the last call are stale: credit reports
  // and HBM completions (new responses) came in since
  data_known_ = 0;
  response_known_ = 0;
  staged_.port_known = false;
  next_src_known_ = false;
  const Tick now = now_ticks();
  wake_at_ = kTickMax;
  if (ports_.size() != static_cast<std::size_t>(planes_)) {
    throw std::logic_error(std::string(name()) + ": egress ports not set");
  }
  // the egress function may hold its data back (e.g. partial entries waiting
  // for merges or a timer): then only responses, new stores or its timer can
  // change anything now
  bool data_held = false;
  // Stores and actions in time order, up to the horizon: a store that
  // reaches the hub by the end of a pick's hub cycle is in the buffer for
  // it, and no later one is. `clock`: the start of the hub cycle in which
  // the last store taken in arrived (no pick is decided before it).
  const Tick horizon = now + quantum_;
  Tick clock = now;
  for (;;) {
    const Action a = next_action(now, clock, data_held);
    if (!room_blocked_) {
      // before a pick, or while a packet is staged (no pick comes before its
      // send), every store up to the action; otherwise one, since the pick
      // it makes possible may come before the next store. A pick sees every
      // store of its hub cycle (also past the horizon: the sources' next
      // stores are known, and a store of that cycle taken after the pick
      // would be older than the packet manager's clock).
      const bool pick_now = a.step == Step::kPick && a.decide <= horizon;
      const Tick until = pick_now ? hub_clock_.tick_of(hub_clock_.cycle_at(a.decide) + 1) - 1
                                  : std::min(horizon, a.decide);
      Tick at = 0;
      if (next_store(at) && at <= until) {
        const bool one = !pick_now && !staged_.valid;
        if (fill(until, one, clock)) {
          data_held = false;
          // the stores can make a pick possible that was not; they do not
          // move a pick (they reach the hub by the end of its cycle, so
          // `clock` stays at or before it), a send or a response
          if (one || !a.valid() || a.decide > horizon) continue;
        }
      }
    }
    if (a.valid() && a.decide <= horizon) {
      switch (a.step) {
        case Step::kResponse:
          send_response(a.plane, a.start, now);
          break;
        case Step::kSend:
          send_staged(now, a);
          break;
        case Step::kPick:
          if (!pick(a)) {
            data_held = true;
          } else if (staged_port_stands() && staged_.start <= horizon && staged_.start < a.first_response) {
            // the send is the next action (the port its pick found stands, no
            // response goes before it, and stores taken before it do not
            // change it): take it now
            send_staged(now, Action{Step::kSend, staged_.plane, staged_.start, staged_.start});
          }
          break;
        case Step::kNone:
          break;
      }
      continue;
    }
    // sleep until the next thing we know of: an action, a store reaching the
    // hub (if there is room for it), a timer of the egress function
    Tick next = a.valid() ? a.decide : kTickMax;
    if (!room_blocked_) {
      Tick at = 0;
      if (next_store(at)) next = std::min(next, at);
    }
    const Tick timer = fn_.egress->next_event(now);
    if (timer != golden::kNever) next = std::min(next, timer);
    if (next != kTickMax) {
      next = std::max(next, now + 1);
      wake_at_ = next;
      next_trigger(to_sc(next - now), work_ev_);
    } else {
      next_trigger(work_ev_);  // credits, a new source or a response will wake us
    }
    return;
  }
}

// ---------------------------------------------------------------------------
// ingress

tlm::tlm_sync_enum Hub::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                        sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase");
  ingress_q_->push(&gp, now_ticks() + to_ticks(delay), static_cast<std::size_t>(moe_ext(gp).plane));  // a lane per plane
  return tlm::TLM_ACCEPTED;
}

bool Hub::on_arrival(tlm::tlm_generic_payload& gp, Tick at, Tick& retry) {
  auto* ext = &moe_ext(gp);
  const Tick now = now_ticks();
  const auto plane = static_cast<std::size_t>(ext->plane);
  if (ext->kind == PacketKind::kResponse) {
    if (ext->dst_gpu != gpu_) throw std::logic_error(std::string(name()) + ": misrouted response");
    const Tick exit = at + hub_latency_;
    const auto peer = static_cast<std::size_t>(ext->src_gpu);
    inflight_[peer] -= std::min<std::uint64_t>(inflight_[peer], ext->packets);
    if (congested_[peer] && inflight_[peer] < congestion_packets_) {
      congested_[peer] = 0;
      wake(exit);
    }
    if (!responses_own_) {  // on a channel of its own it held no credits
      tlm::tlm_phase end_req = tlm::END_REQ;
      sc_core::sc_time d = to_sc(exit - now);
      nvl2hub[plane]->nb_transport_bw(gp, end_req, d);
    }
    sink_->on_acknowledged(*ext, exit);
    gp.release();
    return true;
  }
  if (ext->dst_gpu != gpu_) throw std::logic_error(std::string(name()) + ": misrouted write");
  const Tick t = std::max(at, ingress_free_);
  const bool local = ext->src_gpu == gpu_;
  golden::IngressResult r;
  try {
    r = local ? local_ingress(ext->store, t) : fn_.ingress->on_write(ext->store, t);
  } catch (const golden::RegionFullError& e) {
    // the configured region_full policy "error": the run ends here
    if (fatal_.empty()) fatal_ = std::string(name()) + ": " + e.what() + " (hub.region_full: error)";
    if (!stop_requested) {
      stop_requested = true;
      sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
      sc_core::sc_stop();
    }
    gp.release();
    return true;
  }
  if (!r.accepted) {
    if (r.retry_at <= t) throw std::logic_error(std::string(name()) + ": ingress stalled without a later retry time");
    ++ingress_stalls_;
    ingress_free_ = r.retry_at;
    retry = r.retry_at;
    return false;
  }
  ++writes_in_;
  ingress_free_ = t + cycles(r.cycles);
  ext->store.address = r.address;
  ext->store.local_row_id = r.local_row_id;
  gp.set_address(r.address);
  if (memory_ && (r.metadata_read_bytes + r.metadata_write_bytes) > 0) {
    memory_->start_flow(static_cast<double>(r.metadata_read_bytes + r.metadata_write_bytes), 0, t, [](Tick) {});
  }
  // the write leaves the input buffer (credits go back) and goes to memory
  const Tick exit = t + hub_latency_;
  if (!local) {
    tlm::tlm_phase end_req = tlm::END_REQ;
    sc_core::sc_time d = to_sc(exit - now);
    nvl2hub[plane]->nb_transport_bw(gp, end_req, d);
  }
  tlm::tlm_phase begin = tlm::BEGIN_REQ;
  sc_core::sc_time dx = to_sc(exit - now);
  hub2xbar->nb_transport_fw(gp, begin, dx);
  return true;
}

tlm::tlm_sync_enum Hub::nb_transport_bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                        sc_core::sc_time& delay) {
  if (phase == tlm::END_REQ) return tlm::TLM_ACCEPTED;  // an egress port started our packet
  if (phase != tlm::BEGIN_RESP) throw std::logic_error(std::string(name()) + ": unexpected phase on the way back");
  // memory completed a write: deliver, signal, answer
  const Tick now = now_ticks();
  const Tick done = now + to_ticks(delay);
  auto* w = &moe_ext(gp);
  sink_->on_delivered(*w, done);
  ready_buf_.clear();
  fn_.completion->on_write_complete(w->store, done, ready_buf_);
  if (ready_) {
    for (const auto& rs : ready_buf_) ready_(rs, done);
  }
  if (w->src_gpu == gpu_) {  // a local store: nobody waits for a response
    gp.release();
    return tlm::TLM_ACCEPTED;
  }
  // the write's payload becomes its response: nobody else holds it (no block of
  // the fabric takes a reference of its own; checked), it is in the cache now,
  // and it goes back to the producer's pool that made it once the producer has
  // counted it. The fields a response's trip reads (ready, sent) are both
  // written on the way before they are read, as in a fresh payload; plane,
  // transfer, packets and the store stay the write's.
  if (gp.get_ref_count() != 1) throw std::logic_error(std::string(name()) + ": a completed write is still held elsewhere");
  w->kind = PacketKind::kResponse;
  w->dst_gpu = w->src_gpu;
  w->src_gpu = gpu_;
  w->store.bytes = 0;
  w->flits = ack_flits_ * w->packets;
  w->written = done;
  w->answered_bytes = static_cast<std::uint32_t>(w->store.mask.count());
  gp.set_command(tlm::TLM_READ_COMMAND);  // a response carries no data
  gp.set_address(0);
  gp.set_data_length(0);
  gp.set_streaming_width(0);
  gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  Ring<Response>& q = responses_q_[static_cast<std::size_t>(w->plane)];
  if (response_window_ > 0 && join_open_response(q, *w, done)) {
    gp.release();  // its count travels in the open response
    return tlm::TLM_ACCEPTED;
  }
  // the response leaves at the end of its window (at once without one)
  q.push_back(Response{done + response_window_, w->flits, &gp});
  wake(done + response_window_);
  return tlm::TLM_ACCEPTED;
}

bool Hub::join_open_response(Ring<Response>& q, const MoePacketExt& w, Tick done) {
  // The responses still queued whose window is open at `done` are at the back
  // (windows open in completion order, all of one length); one of them for the
  // same producer and transfer takes this one's count and flits.
  for (std::size_t i = q.size(); i-- > 0;) {
    Response& r = q[i];
    if (r.ready < done) return false;  // this window and every earlier one closed before `done`
    auto* open = &moe_ext(*r.gp);
    if (open->dst_gpu != w.dst_gpu || open->transfer != w.transfer) continue;
    open->packets += w.packets;
    open->flits += w.flits;
    open->answered_bytes += w.answered_bytes;
    open->written = std::max(open->written, done);
    r.flits = open->flits;
    ++responses_joined_;
    return true;
  }
  return false;
}

golden::IngressResult Hub::local_ingress(const golden::StoreRequest& st, Tick t) {
  auto* aau = dynamic_cast<golden::AddressAllocationUnit*>(fn_.ingress.get());
  if (!aau) throw std::logic_error(std::string(name()) + ": local row stores need the moehub hub (an AAU)");
  return aau->on_local_store(st, t);
}

void Hub::local_store(const golden::StoreRequest& st, Tick arrival) {
  const Tick now = now_ticks();
  // an ArrivalQueue push must lie at least its lookahead ahead
  const Tick earliest = now + ingress_q_->lookahead() + 1;
  if (arrival < earliest) {
    ++local_store_delays_;
    arrival = earliest;
  }
  tlm::tlm_generic_payload* gp = pool_.allocate();
  auto* ext = &moe_ext(*gp);
  ext->kind = PacketKind::kWrite;
  ext->src_gpu = gpu_;
  ext->dst_gpu = gpu_;
  ext->plane = 0;
  ext->transfer = static_cast<std::int32_t>(st.tag);
  ext->store = st;
  ext->store.src_gpu = gpu_;
  ext->store.dst_gpu = gpu_;
  ext->packets = 1;
  ext->flits = 0;
  ext->ready = arrival;
  ext->sent = arrival;
  gp->set_command(tlm::TLM_WRITE_COMMAND);
  gp->set_address(0);
  gp->set_data_length(st.bytes);
  ++local_stores_;
  ingress_q_->push(gp, arrival);
}

void Hub::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": the hub is non-blocking (nb_transport_fw)");
}

}  // namespace moehub
