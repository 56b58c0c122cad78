#include "hub_digest.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/aau.hpp"
#include "golden/hub_functions.hpp"

namespace moehub::sim {

namespace {

using golden::Tick;

/// 64-bit FNV-1a over a sequence of integers.
struct Fnv {
  std::uint64_t h = 1469598103934665603ULL;
  std::uint64_t n = 0;
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffU;
      h *= 1099511628211ULL;
    }
  }
};

/// Order-insensitive digest of a multiset of records: the sum of their FNV-1a digests.
template <std::size_t N>
std::uint64_t record_digest(const std::uint64_t (&fields)[N]) {
  Fnv f;
  for (const std::uint64_t v : fields) f.add(v);
  return f.h;
}

std::string hex(std::uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

struct HubDigest::State {
  struct Link {
    Fnv order, timed;
    std::uint64_t content = 0;
  };
  struct Gpu {
    Fnv in_order, in_timed;
    std::uint64_t in_content = 0;
    std::map<std::int32_t, Link> out;  // by destination GPU
  };
  std::map<std::int32_t, Gpu> gpus;
  std::map<std::tuple<std::int32_t, std::uint32_t, std::int64_t>, std::int64_t> rows;
  std::uint64_t remapped = 0;

  void on_ingress(std::int32_t gpu, const golden::StoreRequest& w, Tick now, const golden::IngressResult& r) {
    Gpu& g = gpus[gpu];
    if (!r.accepted) {
      g.in_timed.add(now);  // a refused offer (stall): only the timed digest sees it
      return;
    }
    const std::uint64_t fields[] = {static_cast<std::uint64_t>(w.op),
                                    static_cast<std::uint64_t>(w.src_gpu),
                                    w.malloc_id,
                                    static_cast<std::uint64_t>(w.row_id),
                                    w.row_offset,
                                    w.bytes,
                                    static_cast<std::uint64_t>(r.local_row_id),
                                    r.address};
    for (const std::uint64_t f : fields) {
      g.in_order.add(f);
      g.in_timed.add(f);
    }
    g.in_timed.add(now);
    const std::uint64_t key[] = {fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]};
    g.in_content += record_digest(key);  // the write without what the AAU computed
    ++g.in_order.n;
    ++g.in_timed.n;
    if (r.local_row_id >= 0) {
      const auto [it, fresh] = rows.emplace(std::make_tuple(gpu, w.malloc_id, w.row_id), r.local_row_id);
      if (!fresh && it->second != r.local_row_id) ++remapped;
    }
  }
  void on_pick(std::int32_t gpu, Tick now, const golden::EgressPick& p) {
    Link& link = gpus[gpu].out[p.store.dst_gpu];
    Fnv& order = link.order;
    Fnv& timed = link.timed;
    const golden::StoreRequest& s = p.store;
    const std::uint64_t fields[] = {static_cast<std::uint64_t>(s.op),
                                    s.malloc_id,
                                    static_cast<std::uint64_t>(s.row_id),
                                    s.row_offset,
                                    s.address,
                                    s.bytes,
                                    s.mask.bits[0],
                                    s.mask.bits[1],
                                    p.merged};
    for (const std::uint64_t f : fields) {
      order.add(f);
      timed.add(f);
    }
    timed.add(now);
    link.content += record_digest(fields);
    ++order.n;
    ++timed.n;
  }
};

namespace {

using StatePtr = std::shared_ptr<HubDigest::State>;

class RecordingIngress : public golden::IngressFunction {
 public:
  RecordingIngress(std::unique_ptr<golden::IngressFunction> inner, std::int32_t gpu, StatePtr s)
      : inner_(std::move(inner)), gpu_(gpu), s_(std::move(s)) {}
  golden::IngressResult on_write(const golden::StoreRequest& w, Tick now) override {
    const golden::IngressResult r = inner_->on_write(w, now);
    s_->on_ingress(gpu_, w, now, r);
    return r;
  }

 private:
  std::unique_ptr<golden::IngressFunction> inner_;
  std::int32_t gpu_;
  StatePtr s_;
};

/// An AAU that records what the wrapped one (behavioural or RTL) answers.
class RecordingAau : public golden::ForwardingAau {
 public:
  RecordingAau(std::unique_ptr<golden::AddressAllocationUnit> inner, const golden::HubParams& p, StatePtr s)
      : golden::ForwardingAau(std::move(inner), golden::aau_params_from(p)), gpu_(p.gpu), s_(std::move(s)) {}
  golden::IngressResult on_write(const golden::StoreRequest& w, Tick now) override {
    const golden::IngressResult r = golden::ForwardingAau::on_write(w, now);
    s_->on_ingress(gpu_, w, now, r);
    return r;
  }
  golden::IngressResult on_local_store(const golden::StoreRequest& w, Tick now) override {
    const golden::IngressResult r = golden::ForwardingAau::on_local_store(w, now);
    s_->on_ingress(gpu_, w, now, r);
    return r;
  }

 private:
  std::int32_t gpu_;
  StatePtr s_;
};

class RecordingEgress : public golden::EgressFunction {
 public:
  RecordingEgress(std::unique_ptr<golden::EgressFunction> inner, std::int32_t gpu, StatePtr s)
      : inner_(std::move(inner)), gpu_(gpu), s_(std::move(s)) {}
  bool can_accept(const golden::StoreRequest& st, Tick now) const override { return inner_->can_accept(st, now); }
  void accept(const golden::StoreRequest& st, Tick now) override { inner_->accept(st, now); }
  bool pick(Tick now, const std::vector<std::uint8_t>& congested, golden::EgressPick& out) override {
    const bool ok = inner_->pick(now, congested, out);
    if (ok) s_->on_pick(gpu_, now, out);
    return ok;
  }
  Tick next_event(Tick now) const override { return inner_->next_event(now); }
  std::size_t occupancy() const override { return inner_->occupancy(); }
  const golden::RpmStats* rpm_stats() const override { return inner_->rpm_stats(); }
  std::uint32_t pick_cycles() const override { return inner_->pick_cycles(); }

 private:
  std::unique_ptr<golden::EgressFunction> inner_;
  std::int32_t gpu_;
  StatePtr s_;
};

}  // namespace

HubDigest::HubDigest() : state_(std::make_shared<State>()) {}
HubDigest::~HubDigest() { golden::set_hub_functions_observer({}); }

void HubDigest::install() {
  StatePtr s = state_;
  golden::set_hub_functions_observer([s](golden::HubFunctions& f, const golden::HubParams& p) {
    if (auto* aau = dynamic_cast<golden::AddressAllocationUnit*>(f.ingress.get())) {
      std::unique_ptr<golden::AddressAllocationUnit> owned(aau);
      (void)f.ingress.release();  // `owned` holds it (also if the wrapper's allocation throws)
      f.ingress = std::make_unique<RecordingAau>(std::move(owned), p, s);
    } else if (f.ingress) {
      f.ingress = std::make_unique<RecordingIngress>(std::move(f.ingress), p.gpu, s);
    }
    if (f.egress) f.egress = std::make_unique<RecordingEgress>(std::move(f.egress), p.gpu, s);
  });
}

std::string HubDigest::to_json() const {
  using J = nlohmann::ordered_json;
  J gpus = J::array();
  for (const auto& [g, d] : state_->gpus) {
    J out = J::array();
    for (const auto& [dst, o] : d.out) {
      out.push_back({{"dst", dst},
                     {"packets", o.order.n},
                     {"content", hex(o.content)},
                     {"order", hex(o.order.h)},
                     {"timed", hex(o.timed.h)}});
    }
    gpus.push_back({{"gpu", g},
                    {"ingress",
                     {{"writes", d.in_order.n},
                      {"content", hex(d.in_content)},
                      {"order", hex(d.in_order.h)},
                      {"timed", hex(d.in_timed.h)}}},
                    {"egress", out}});
  }
  // per region (GPU, MallocID): its rows, and whether their LocalRowIDs are
  // distinct and dense (0 .. rows - 1)
  struct Region {
    std::uint64_t rows = 0;
    std::int64_t max_local = -1;
    std::map<std::int64_t, int> locals;
  };
  std::map<std::pair<std::int32_t, std::uint32_t>, Region> regions;
  for (const auto& [k, local] : state_->rows) {
    Region& r = regions[{std::get<0>(k), std::get<1>(k)}];
    ++r.rows;
    r.max_local = std::max(r.max_local, local);
    ++r.locals[local];
  }
  Fnv region_digest;
  bool dense = true;
  for (const auto& [k, r] : regions) {
    region_digest.add(static_cast<std::uint64_t>(k.first));
    region_digest.add(k.second);
    region_digest.add(r.rows);
    dense = dense && r.locals.size() == r.rows && r.max_local + 1 == static_cast<std::int64_t>(r.rows);
  }
  Fnv rows;
  for (const auto& [k, local] : state_->rows) {
    rows.add(static_cast<std::uint64_t>(std::get<0>(k)));
    rows.add(std::get<1>(k));
    rows.add(static_cast<std::uint64_t>(std::get<2>(k)));
    rows.add(static_cast<std::uint64_t>(local));
  }
  J j = {{"format", "moehub-hub-digest"},
         {"version", 1},
         {"gpus", gpus},
         {"local_rows",
          {{"rows", state_->rows.size()},
           {"remapped_writes", state_->remapped},
           {"regions", regions.size()},
           {"region_rows", hex(region_digest.h)},
           {"dense", dense},
           {"digest", hex(rows.h)}}}};
  return j.dump(2) + "\n";
}

}  // namespace moehub::sim
