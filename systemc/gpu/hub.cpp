#include "gpu/hub.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/sc_time_util.hpp"
#include "fabric/nvlink_port.hpp"

namespace moehub {

Hub::Hub(const sc_core::sc_module_name& name, int gpu, const SystemConfig& sys, TrafficSink* sink)
    : TlmBlock(name),
      hub2nvl("hub2nvl", static_cast<std::size_t>(sys.nvswitch.num_switches)),
      nvl2hub("nvl2hub", static_cast<std::size_t>(sys.nvswitch.num_switches)),
      hub2xbar("hub2xbar"),
      gpu_(gpu),
      planes_(sys.nvswitch.num_switches),
      sm_to_hub_(ns_to_ticks(sys.gpu.xbar_latency_ns + sys.gpu.hub_latency_ns)),
      hub_latency_(ns_to_ticks(sys.gpu.hub_latency_ns)),
      quantum_(ns_to_ticks(sys.sim.sync_quantum_ns)),
      ack_flits_(static_cast<std::uint32_t>(sys.nvlink.ack_flits)),
      sink_(sink),
      responses_q_(static_cast<std::size_t>(sys.nvswitch.num_switches)) {
  for (auto& s : hub2nvl) s.bind(*this);
  for (auto& s : nvl2hub) s.bind(*this);
  hub2xbar.bind(*this);
  ext_ = new MoePacketExt;
  gp_.set_extension(ext_);
  gp_.set_streaming_width(0);
  SC_THREAD(egress_thread);
}

void Hub::wake(Tick t) {
  if (t < wake_at_) {
    wake_at_ = t;
    work_ev_.notify(sc_core::SC_ZERO_TIME);
  }
}

void Hub::start_stream(int phase, StoreStream* stream) {
  streams_.push_back({phase, stream});
  wake(now_ticks());
}

void Hub::enable_peer(int phase, std::int32_t dst, Tick t) {
  for (auto& s : streams_) {
    if (s.phase == phase) s.stream->enable(dst, t);
  }
  wake(t);
}

Hub::Candidate Hub::pick() {
  // data: the stream whose next store reaches the hub first
  Tick data_ready = kTickMax;
  std::size_t data_stream = 0;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    StoreStream* s = streams_[i].stream;
    if (!s->has_head()) continue;
    const Tick ready = s->head().issue + sm_to_hub_;
    if (ready < data_ready) {
      data_ready = ready;
      data_stream = i;
    }
  }
  const std::uint32_t data_flits = data_ready == kTickMax ? 0 : streams_[data_stream].stream->head().flits;
  // every port's next action: a response that is ready by the time new data
  // could start goes first; the earliest action over all ports wins
  Candidate best;
  const auto P = static_cast<std::size_t>(planes_);
  for (std::size_t k = 0; k < P; ++k) {
    const std::size_t p = (static_cast<std::size_t>(data_seq_) + k) % P;  // rotate ties
    NvlinkPort& port = *ports_[p];
    Candidate c;
    if (data_ready != kTickMax) {
      c.valid = true;
      c.stream = data_stream;
      c.plane = static_cast<std::int32_t>(p);
      c.ready = data_ready;
      c.start = port.earliest_start(data_ready, data_flits);
    }
    if (!responses_q_[p].empty()) {
      const Response& r = responses_q_[p].front();
      if (!c.valid || r.ready <= c.start) {
        c.valid = true;
        c.response = true;
        c.plane = static_cast<std::int32_t>(p);
        c.ready = r.ready;
        c.start = port.earliest_start(r.ready, ack_flits_ * r.packets);
      }
    }
    if (c.valid && (!best.valid || c.start < best.start)) best = c;
  }
  return best;
}

void Hub::egress_thread() {
  if (ports_.size() != static_cast<std::size_t>(planes_)) {
    throw std::logic_error(std::string(name()) + ": egress ports not set");
  }
  for (;;) {
    const Candidate c = pick();
    const Tick now = now_ticks();
    if (!c.valid) {
      wake_at_ = kTickMax;
      sc_core::wait(work_ev_);
      continue;
    }
    if (c.start > now + quantum_) {
      wake_at_ = c.start;
      sc_core::wait(to_sc(c.start - now), work_ev_);
      continue;
    }
    wake_at_ = now;
    transmit(c);
  }
}

void Hub::transmit(const Candidate& c) {
  const Tick now = now_ticks();
  ext_->plane = c.plane;
  ext_->ready = c.ready;
  ext_->link_start = 0;
  ext_->buffer_exit = 0;
  ext_->delivered_at = 0;
  if (c.response) {
    auto& q = responses_q_[static_cast<std::size_t>(c.plane)];
    const Response r = q.front();
    q.pop_front();
    ext_->kind = PacketKind::kResponse;
    ext_->src_gpu = gpu_;
    ext_->dst_gpu = r.producer;
    ext_->phase = r.phase;
    ext_->row_id = r.row_id;
    ext_->row_offset = 0;
    ext_->payload_bytes = 0;
    ext_->packets = r.packets;
    ext_->flits = ack_flits_ * r.packets;
    gp_.set_command(tlm::TLM_READ_COMMAND);  // a response carries no data
    gp_.set_data_length(0);
    ++responses_;
  } else {
    auto& as = streams_[c.stream];
    const StorePacket p = as.stream->head();
    as.stream->pop();
    ext_->kind = PacketKind::kWrite;
    ext_->src_gpu = gpu_;
    ext_->dst_gpu = p.dst;
    ext_->phase = as.phase;
    ext_->row_id = p.row_id;
    ext_->row_offset = p.row_offset;
    ext_->payload_bytes = p.bytes;
    ext_->packets = p.packets;
    ext_->flits = p.flits;
    gp_.set_command(tlm::TLM_WRITE_COMMAND);
    gp_.set_data_length(p.bytes);
    ++data_seq_;
    data_packets_ += p.packets;
    if (as.stream->finished()) streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(c.stream));
  }
  gp_.set_address(0);
  gp_.set_data_ptr(nullptr);
  gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  ++transactions_;
  sc_core::sc_time delay = to_sc(std::max(c.ready, now) - now);
  hub2nvl[static_cast<std::size_t>(c.plane)]->b_transport(gp_, delay);
}

void Hub::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  auto* ext = gp.get_extension<MoePacketExt>();
  const Tick now = now_ticks();
  const Tick exit = now + to_ticks(delay) + hub_latency_;
  ext->buffer_exit = exit;
  if (ext->kind == PacketKind::kWrite) {
    if (ext->dst_gpu != gpu_) throw std::logic_error(std::string(name()) + ": misrouted write");
    sc_core::sc_time d = to_sc(exit - now);
    hub2xbar->b_transport(gp, d);
    const Tick delivered = now + to_ticks(d);
    ext->delivered_at = delivered;
    sink_->on_delivered(*ext, delivered);
    responses_q_[static_cast<std::size_t>(ext->plane)].push_back(Response{exit, ext->src_gpu, ext->plane, ext->phase,
                               ext->row_id, ext->packets});
    wake(exit);
    delay = d;
  } else {
    sink_->on_acknowledged(*ext, exit);
    delay = to_sc(exit - now);
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace moehub
