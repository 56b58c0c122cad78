#include "golden/address_centric.hpp"

#include <stdexcept>

namespace moehub::golden {

IngressResult AddressCentricIngress::on_write(const StoreRequest& w, Tick) {
  if (w.op == Opcode::kRowStore || w.op == Opcode::kRowStoreNop) {
    throw std::logic_error("address-centric hub: row stores need the MoE-Hub implementation");
  }
  IngressResult r;
  r.address = w.address;
  return r;
}

bool AddressCentricEgress::can_accept(const StoreRequest&, Tick) const { return count_ < entries_; }

void AddressCentricEgress::accept(const StoreRequest& s, Tick) {
  if (count_ >= entries_) throw std::logic_error("address-centric hub: write buffer overflow");
  fifo_.push_back(s);
  ++count_;
}

bool AddressCentricEgress::pick(Tick, const std::vector<std::uint8_t>& congested, EgressPick& out) {
  for (auto it = fifo_.begin(); it != fifo_.end(); ++it) {
    const auto d = static_cast<std::size_t>(it->dst_gpu);
    if (passes_congested_ && d < congested.size() && congested[d]) continue;
    out.store = *it;
    out.merged = 1;
    out.cycles = 0;
    --count_;
    if (it == fifo_.begin()) {
      fifo_.pop_front();  // the usual case, without deque's general erase
    } else {
      fifo_.erase(it);
    }
    return true;
  }
  return false;
}

}  // namespace moehub::golden
