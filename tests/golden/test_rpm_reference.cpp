// Runtime Packet Manager against a reference scheduler: a plain linear scan
// of each partition that restates the documented rule (docs/moehub-units.md,
// RPM) entry by entry. The RPM keeps sorted indexes per partition instead of
// scanning; under random load (merging, flags, .nop, congestion, accept times
// that go backwards, pools from one entry up, the timer at 0, with and without
// hold_partial) every can_accept, pick, its tags, next_event and the
// statistics must equal the reference's.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "golden/rpm.hpp"

namespace moehub::golden {
namespace {

bool row_op(Opcode op) { return op == Opcode::kRowStore || op == Opcode::kRowStoreNop; }

class ReferenceRpm {
 public:
  explicit ReferenceRpm(const RpmParams& p) : p_(p), clock_(p.clock_ghz), parts_(static_cast<std::size_t>(p.num_gpus)) {}

  bool can_accept(const StoreRequest& s) const {
    const auto& part = parts_[static_cast<std::size_t>(s.dst_gpu)];
    return part.size() < p_.entries_per_peer || merge_index(part, s) < part.size();
  }
  void accept(const StoreRequest& s, Tick now) {
    auto& part = parts_[static_cast<std::size_t>(s.dst_gpu)];
    const std::uint32_t off = row_op(s.op) ? s.row_offset % kLineBytes : static_cast<std::uint32_t>(s.address % kLineBytes);
    const ByteMask mask = s.mask.empty() ? ByteMask::range(off, s.bytes) : s.mask;
    if (const std::size_t i = merge_index(part, s); i < part.size()) {
      part[i].mask |= mask;
      part[i].tags.push_back(s.tag);
      return;
    }
    part.push_back({s, mask, line(s), clock_.cycle_at(now), seq_++, {s.tag}});
  }
  /// The slot picked: (peer, tags), or peer -1.
  std::int32_t pick(Tick now, const std::vector<std::uint8_t>& congested, std::vector<std::uint64_t>& tags) {
    const std::uint64_t cycle = clock_.cycle_at(now);
    const auto n = static_cast<std::size_t>(p_.num_gpus);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t g = (next_ + k) % n;
      if (static_cast<std::int32_t>(g) == p_.gpu || congested[g]) continue;
      auto& part = parts_[g];
      std::size_t best = part.size();
      for (std::size_t i = 0; i < part.size(); ++i) {
        if (!eligible(part[i], part.size(), cycle)) continue;
        if (best == part.size() || before(part[i], part[best], cycle)) best = i;
      }
      if (best == part.size()) continue;
      tags = part[best].tags;
      part.erase(part.begin() + static_cast<std::ptrdiff_t>(best));
      next_ = (g + 1) % n;
      return static_cast<std::int32_t>(g);
    }
    return -1;
  }
  Tick next_event(Tick now) const {
    if (!p_.hold_partial) return kNever;
    const std::uint64_t cycle = clock_.cycle_at(now);
    std::uint64_t soonest = ~0ULL;
    for (const auto& part : parts_) {
      for (const auto& e : part) {
        if (!eligible(e, part.size(), cycle)) soonest = std::min(soonest, e.created + p_.timer_cycles);
      }
    }
    return soonest == ~0ULL ? kNever : clock_.tick_of(soonest);
  }
  std::size_t occupancy(std::int32_t g) const { return parts_[static_cast<std::size_t>(g)].size(); }

 private:
  struct E {
    StoreRequest s;
    ByteMask mask;
    std::uint64_t line;
    std::uint64_t created;
    std::uint64_t seq;
    std::vector<std::uint64_t> tags;
  };
  static std::uint64_t line(const StoreRequest& s) { return (row_op(s.op) ? s.row_offset : s.address) / kLineBytes; }
  static std::size_t merge_index(const std::vector<E>& part, const StoreRequest& s) {
    if (s.op == Opcode::kFlagWrite) return part.size();
    for (std::size_t i = 0; i < part.size(); ++i) {
      const StoreRequest& q = part[i].s;
      if (q.op == s.op && q.priority == s.priority && part[i].line == line(s) &&
          (!row_op(s.op) || (q.malloc_id == s.malloc_id && q.row_id == s.row_id))) {
        return i;
      }
    }
    return part.size();
  }
  bool expired(const E& e, std::uint64_t cycle) const { return cycle >= e.created + p_.timer_cycles; }
  bool eligible(const E& e, std::size_t size, std::uint64_t cycle) const {
    if (!p_.hold_partial || e.s.op == Opcode::kFlagWrite || e.mask.full()) return true;
    return expired(e, cycle) || size >= p_.entries_per_peer;
  }
  bool before(const E& a, const E& b, std::uint64_t cycle) const {
    if (expired(a, cycle) != expired(b, cycle)) return expired(a, cycle);
    if (expired(a, cycle)) return a.seq < b.seq;
    if (a.s.priority != b.s.priority) return a.s.priority;
    if (a.mask.full() != b.mask.full()) return a.mask.full();
    if (a.s.row_id != b.s.row_id) return a.s.row_id < b.s.row_id;
    return a.seq < b.seq;
  }

  RpmParams p_;
  HubClock clock_;
  std::vector<std::vector<E>> parts_;  ///< by GPU (this GPU's stays empty)
  std::size_t next_ = 0;               ///< GPU after the one served last
  std::uint64_t seq_ = 0;
};

void compare_under_random_load(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  RpmParams p;
  p.num_gpus = 2 + static_cast<std::int32_t>(rng() % 4);
  p.gpu = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(p.num_gpus));
  p.entries_per_peer = 1 + static_cast<std::uint32_t>(rng() % 12);
  const std::uint32_t timers[] = {0, 3, 40};
  p.timer_cycles = timers[rng() % 3];
  p.hold_partial = rng() % 4 != 0;
  SCOPED_TRACE("seed " + std::to_string(seed) + ": " + std::to_string(p.num_gpus) + " GPUs, " +
               std::to_string(p.entries_per_peer) + " entries, timer " + std::to_string(p.timer_cycles) +
               (p.hold_partial ? ", hold" : ", no hold"));
  RuntimePacketManager rpm(p);
  ReferenceRpm ref(p);
  const HubClock clk(p.clock_ghz);
  std::vector<std::uint8_t> congested(static_cast<std::size_t>(p.num_gpus), 0);
  std::uint64_t tag = 0, picks = 0, merges_seen = 0;
  for (std::uint64_t c = 100; c < 3100; ++c) {
    const Tick now = clk.tick_of(c);
    for (std::uint64_t n = rng() % 4; n > 0; --n) {
      StoreRequest s;
      do {
        s.dst_gpu = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(p.num_gpus));
      } while (s.dst_gpu == p.gpu);
      const std::uint64_t kind = rng() % 10;
      const std::uint32_t bytes = 16u << (rng() % 4);  // 16 .. 128
      const std::uint32_t in_line = static_cast<std::uint32_t>(rng() % (kLineBytes / bytes)) * bytes;
      if (kind == 0) {
        s.op = Opcode::kFlagWrite;
        s.address = 0x1000 + (rng() % 4) * kLineBytes;
        s.bytes = 8;
      } else if (kind < 3) {
        s.address = (rng() % 6) * kLineBytes + in_line;
        s.row_id = static_cast<std::int64_t>(rng() % 5) - 1;
        s.bytes = bytes;
        s.priority = rng() % 3 != 0;
      } else {
        s.priority = kind < 8;
        s.op = s.priority ? Opcode::kRowStore : Opcode::kRowStoreNop;
        s.malloc_id = static_cast<std::uint32_t>(rng() % 2);
        s.row_id = static_cast<std::int64_t>(rng() % 6);
        s.row_offset = static_cast<std::uint32_t>(rng() % 2) * kLineBytes + in_line;
        s.bytes = bytes;
      }
      s.tag = tag++;
      const Tick at = rng() % 8 == 0 && now > 30000 ? now - rng() % 30000 : now;  // up to about 45 cycles back
      const bool ok = rpm.can_accept(s, at);
      ASSERT_EQ(ok, ref.can_accept(s)) << "store " << s.tag;
      if (ok) {
        rpm.accept(s, at);
        ref.accept(s, at);
      }
    }
    for (auto& x : congested) x = rng() % 5 == 0;
    const Tick pick_at = now + static_cast<Tick>(rng() % 600);
    EgressPick out;
    std::vector<std::uint64_t> ref_tags;
    const bool got = rpm.pick(pick_at, congested, out);
    const std::int32_t ref_peer = ref.pick(pick_at, congested, ref_tags);
    ASSERT_EQ(got, ref_peer >= 0) << "cycle " << c;
    if (got) {
      ++picks;
      merges_seen += out.merged > 1;
      ASSERT_EQ(out.store.dst_gpu, ref_peer) << "cycle " << c;
      ASSERT_EQ(rpm.last_pick_tags(), ref_tags) << "cycle " << c;
      ASSERT_EQ(out.merged, ref_tags.size());
    }
    ASSERT_EQ(rpm.next_event(now), ref.next_event(now)) << "cycle " << c;
    for (std::int32_t g = 0; g < p.num_gpus; ++g) {
      if (g != p.gpu) {
        ASSERT_EQ(rpm.occupancy(g), ref.occupancy(g));
      }
    }
  }
  EXPECT_GT(picks, 1000u);     // the load kept the scheduler busy
  EXPECT_GT(merges_seen, 0u);  // and merging happened
}

TEST(RpmReference, IndexedSchedulerPicksExactlyAsTheLinearScan) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) compare_under_random_load(seed);
}

}  // namespace
}  // namespace moehub::golden
