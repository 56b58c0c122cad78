#include "gpu/hbm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/payload_pool.hpp"
#include "common/sc_time_util.hpp"

namespace moehub {

Hbm::Hbm(const sc_core::sc_module_name& name, double bw_gbps, double latency_ns, std::uint32_t slice_bytes,
         Tick quantum)
    : TlmBlock(name),
      server_(std::string(this->name()), bw_gbps, ns_to_ticks(latency_ns)),
      latency_(ns_to_ticks(latency_ns)),
      slice_bytes_(static_cast<double>(std::max<std::uint32_t>(1, slice_bytes))),
      // a request is served at most one period after its ready time; its
      // completion (served + latency) is then still in the future
      quantum_(std::max<Tick>(1, std::min(quantum, latency_))) {
  in.bind(*this);
  SC_METHOD(drain);
  sensitive << wake_ev_;
  dont_initialize();
}

void Hbm::push(Request r) {
  r.seq = seq_++;
  if (r.gp && !fifo_.empty() && fifo_.back().t <= r.t) {
    // the usual case, behind the FIFO's last: the earliest request stays, and
    // so does the wake-up set for it (schedule() would find it no later)
    fifo_.push_back(r);
    return;
  }
  if (r.gp && fifo_.empty()) {
    fifo_.push_back(r);
  } else {
    heap_.push(r);
  }
  if (!draining_) schedule();
}

void Hbm::schedule() {
  if (heap_.empty() && fifo_.empty()) return;
  bool fifo = false;
  const Tick t = head(fifo).t;
  if (t >= wake_at_) return;  // the rounded time would be no earlier (saves a division)
  const Tick now = now_ticks();
  Tick due = ceil_div(t, quantum_) * quantum_;
  due = std::max(due, now);
  if (due < wake_at_) {
    wake_at_ = due;
    wake_ev_.notify(to_sc(due - now));
  }
}

void Hbm::start_flow(double bytes, double max_gbps, Tick start, std::function<void(Tick)> done) {
  if (start < now_ticks()) throw std::logic_error(std::string(name()) + ": a flow cannot start in the past");
  if (!(bytes > 0)) {
    done(start);
    return;
  }
  Flow f;
  f.remaining = bytes;
  f.bytes_per_tick = max_gbps > 0 ? max_gbps * 1e-3 : 0;  // GB/s = 1e9 B / 1e12 ps
  f.start = start;
  f.done = std::move(done);
  flows_.push_back(std::move(f));
  next_slice(flows_.size() - 1, start);
}

void Hbm::next_slice(std::size_t f, Tick ready) {
  Flow& fl = flows_[f];
  const double n = std::min(slice_bytes_, fl.remaining);
  if (fl.bytes_per_tick > 0) {
    // paced: the slice is ready once the rate allows its last byte
    const Tick paced = saturating_add(fl.start, ceil_ps_to_ticks((fl.issued + n) / fl.bytes_per_tick));
    ready = std::max(ready, paced);
  }
  fl.issued += n;
  fl.remaining -= n;
  push(Request{ready, 0, nullptr, f, n});
}

tlm::tlm_sync_enum Hbm::nb_transport_fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& phase,
                                        sc_core::sc_time& delay) {
  if (phase != tlm::BEGIN_REQ) throw std::logic_error(std::string(name()) + ": unexpected phase");
  push(Request{now_ticks() + to_ticks(delay), 0, &gp, 0, static_cast<double>(gp.get_data_length())});
  return tlm::TLM_ACCEPTED;
}

void Hbm::b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) {
  throw std::logic_error(std::string(name()) + ": HBM is non-blocking (nb_transport_fw; kernels use start_flow)");
}

void Hbm::drain() {
  ++wakes_;
  const Tick now = now_ticks();
  wake_at_ = kTickMax;
  draining_ = true;
  while (!heap_.empty() || !fifo_.empty()) {
    bool fifo = false;
    const Request r = head(fifo);
    if (r.t > now) break;
    if (fifo) {
      fifo_.pop_front();
      if (!fifo_.empty()) prefetch_payload(fifo_[std::min<std::size_t>(4, fifo_.size() - 1)].gp);
    } else {
      heap_.pop();
    }
    if (r.t < last_) ++reorderings_;
    last_ = std::max(last_, r.t);
    const auto slot = server_.serve(r.t, r.bytes);
    if (r.gp) {
      ++singles_;
      single_wait_ += slot.start - r.t;
      if (r.gp->is_write()) {
        bytes_written_ += r.bytes;
      } else {
        bytes_read_ += r.bytes;
      }
      r.gp->set_response_status(tlm::TLM_OK_RESPONSE);
      tlm::tlm_phase phase = tlm::BEGIN_RESP;
      sc_core::sc_time d = to_sc(slot.done - now);
      in->nb_transport_bw(*r.gp, phase, d);
    } else {
      ++slices_;
      flow_bytes_ += r.bytes;
      Flow& fl = flows_[r.flow];
      if (fl.remaining > 0) {
        next_slice(r.flow, slot.finish);
      } else {
        auto done = std::move(fl.done);
        fl.done = nullptr;
        done(slot.done);
      }
    }
  }
  draining_ = false;
  schedule();
}

}  // namespace moehub
