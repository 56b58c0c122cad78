// Directed and randomized test of moehub_aau (Regions = 4, a RAT of 4
// entries in 1 bank x 2 sets x 2 ways, so that spills and restores are
// frequent; and Regions = 3, MallocIDs beyond the table). The bench plays
// the device memory: it keeps the spill area (answering restores after a
// random delay) and back-pressures spills and responses at random. Checked:
// every packet of a row gets the same LocalRowID, rows get LocalRowIDs
// densely in order of first arrival, no two rows of a registration share a
// LocalRowID (also when an active region is registered again), the address
// is BaseAddr + LocalRowID * RowSize + RowOffset, unregistered, full and
// nonexistent regions are refused, a flush restarts a region, hits stream
// one per cycle, and every channel the unit drives holds its valid until
// ready with a stable payload (the bench's own monitor, besides the RTL's
// assertions).
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "Vmoehub_aau.h"
#include "Vmoehub_aau_r3.h"
#include "tb_dut.hpp"

namespace {

struct Req {
  unsigned malloc_id, row, offset;
};
struct Rsp {
  bool ok, hit, restored;
  unsigned local;
  std::uint32_t addr;
};

/// One output channel as the bench saw it in the last cycle, to check that
/// a valid not taken is held with the same payload.
struct Held {
  bool valid = false, ready = false;
  std::vector<std::uint64_t> payload;
  /// Records this cycle; returns false if it broke the rule.
  bool step(bool v, bool r, const std::vector<std::uint64_t>& p) {
    const bool ok = !(valid && !ready) || (v && p == payload);
    valid = v;
    ready = r;
    payload = p;
    return ok;
  }
};

template <class Model>
class BenchT {
 public:
  explicit BenchT(std::uint32_t seed) : rng_(seed) { idle(); }

  void configure(unsigned region, bool flush, unsigned rows, std::uint32_t base, unsigned size_log2) {
    d_->cfg_valid_i = 1;
    d_->cfg_flush_i = flush ? 1 : 0;
    d_->cfg_region_i = static_cast<CData>(region);
    d_->cfg_rows_i = static_cast<SData>(rows);
    d_->cfg_base_i = base;
    d_->cfg_row_size_log2_i = static_cast<CData>(size_log2);
    for (int i = 0;; ++i) {
      ASSERT_LT(i, 100) << "configuration never completes";
      const bool done = tick().cfg;
      if (done) break;
    }
    d_->cfg_valid_i = 0;
    // software reinitializes the region's spill area with a flush or a
    // registration (the unit has sent every spill before it completes either)
    for (auto it = spill_area_.begin(); it != spill_area_.end();) {
      it = (it->first.first == region) ? spill_area_.erase(it) : std::next(it);
    }
    ++configurations;
    cfg_cycles = last_cfg_cycles_;
  }

  /// A flush of `region` offered for one cycle only; then the configuration
  /// inputs show another request (not valid) while the flush runs.
  void flush_withdrawn(unsigned region, unsigned other_region, int cycles) {
    d_->cfg_valid_i = 1;
    d_->cfg_flush_i = 1;
    d_->cfg_region_i = static_cast<CData>(region);
    tick();
    d_->cfg_valid_i = 0;
    d_->cfg_flush_i = 0;
    d_->cfg_region_i = static_cast<CData>(other_region);
    d_->cfg_rows_i = 1;
    for (int i = 0; i < cycles; ++i) tick();
    for (auto it = spill_area_.begin(); it != spill_area_.end();) {
      it = (it->first.first == region) ? spill_area_.erase(it) : std::next(it);
    }
  }

  /// A registration raised in cycle `at` of the next run() and held until taken.
  struct CfgDuring {
    int at = -1;
    unsigned region = 0, rows = 0, size_log2 = 0;
    std::uint32_t base = 0;
  };

  /// Streams `reqs` (one offered per cycle); returns the responses in order.
  std::vector<Rsp> run(const std::vector<Req>& reqs, const CfgDuring& cfg = CfgDuring{}) {
    std::deque<Req> todo(reqs.begin(), reqs.end());
    std::vector<Rsp> out;
    bool cfg_pending = false;
    for (int i = 0; out.size() < reqs.size() || cfg_pending; ++i) {
      EXPECT_LT(i, 100000) << "requests never complete";
      if (i >= 100000) break;
      if (i == cfg.at) {
        cfg_pending = true;
        d_->cfg_valid_i = 1;
        d_->cfg_flush_i = 0;
        d_->cfg_region_i = static_cast<CData>(cfg.region);
        d_->cfg_rows_i = static_cast<SData>(cfg.rows);
        d_->cfg_base_i = cfg.base;
        d_->cfg_row_size_log2_i = static_cast<CData>(cfg.size_log2);
      }
      d_->req_valid_i = todo.empty() ? 0 : 1;
      if (!todo.empty()) {
        d_->req_malloc_i = static_cast<CData>(todo.front().malloc_id);
        d_->req_row_i = static_cast<CData>(todo.front().row);
        d_->req_offset_i = static_cast<CData>(todo.front().offset);
      }
      const Fired f = tick();
      if (f.req) todo.pop_front();
      if (f.rsp) out.push_back(f.rsp_data);
      if (f.cfg) {
        cfg_pending = false;
        d_->cfg_valid_i = 0;
        ++configurations;
      }
    }
    d_->req_valid_i = 0;
    return out;
  }
  Rsp translate(unsigned m, unsigned row, unsigned offset) { return run({{m, row, offset}}).at(0); }

  std::uint64_t cycles() const { return d_.cycles(); }
  unsigned spills = 0;
  unsigned restore_queries = 0;
  unsigned configurations = 0;
  unsigned cfg_cycles = 0;        ///< cycles the last configuration took
  unsigned held_violations = 0;   ///< cycles in which an output channel broke valid/ready
  unsigned spill_held_cycles = 0; ///< cycles with a spill offered and not taken
  bool random_backpressure = true;
  /// Forces the spill channel's ready (-1: as random_backpressure says).
  int spill_ready = -1;
  /// The spill channel is not ready for this many more cycles (then as above).
  int spill_stall_cycles = 0;

 private:
  struct Fired {
    bool cfg = false, req = false, rsp = false;
    Rsp rsp_data{};
  };

  void idle() {
    d_->cfg_valid_i = 0;
    d_->req_valid_i = 0;
    d_->rsp_ready_i = 1;
    d_->spill_ready_i = 1;
    d_->restore_req_ready_i = 1;
    d_->restore_rsp_valid_i = 0;
  }

  Fired tick() {
    // the memory's side of the channels, from its state
    d_->spill_ready_i = (spill_stall_cycles <= 0 && (spill_ready >= 0 ? spill_ready != 0
                                                                      : !random_backpressure || rng_() % 4 != 0))
                            ? 1
                            : 0;
    if (spill_stall_cycles > 0) --spill_stall_cycles;
    d_->rsp_ready_i = (!random_backpressure || rng_() % 4 != 0) ? 1 : 0;
    d_->restore_req_ready_i = pending_ ? 0 : 1;
    d_->restore_rsp_valid_i = (pending_ && delay_ == 0) ? 1 : 0;
    d_->restore_rsp_found_i = 0;
    d_->restore_rsp_local_i = 0;
    if (pending_ && delay_ == 0) {
      const auto it = spill_area_.find(key_);
      if (it != spill_area_.end()) {
        d_->restore_rsp_found_i = 1;
        d_->restore_rsp_local_i = static_cast<CData>(it->second);
      }
    }
    d_.eval();
    // the output channels: a valid not taken stays, with the same payload
    const bool held_ok =
        spill_ch_.step(d_->spill_valid_o, d_->spill_ready_i,
                       {d_->spill_malloc_o, d_->spill_row_o, d_->spill_local_o}) &
        rsp_ch_.step(d_->rsp_valid_o, d_->rsp_ready_i,
                     {d_->rsp_ok_o, d_->rsp_hit_o, d_->rsp_restored_o, d_->rsp_local_o, d_->rsp_addr_o}) &
        rreq_ch_.step(d_->restore_req_valid_o, d_->restore_req_ready_i,
                      {d_->restore_req_malloc_o, d_->restore_req_row_o});
    EXPECT_TRUE(held_ok) << "an output channel withdrew or changed a valid that was not taken, cycle " << d_.cycles();
    held_violations += held_ok ? 0 : 1;
    spill_held_cycles += (d_->spill_valid_o && !d_->spill_ready_i) ? 1 : 0;
    Fired f;
    f.cfg = d_->cfg_valid_i && d_->cfg_ready_o;
    f.req = d_->req_valid_i && d_->req_ready_o;
    f.rsp = d_->rsp_valid_o && d_->rsp_ready_i;
    if (f.rsp) {
      f.rsp_data = Rsp{d_->rsp_ok_o != 0, d_->rsp_hit_o != 0, d_->rsp_restored_o != 0, d_->rsp_local_o,
                       d_->rsp_addr_o};
    }
    const bool spill = d_->spill_valid_o && d_->spill_ready_i;
    const std::pair<unsigned, unsigned> spilled{d_->spill_malloc_o, d_->spill_row_o};
    const unsigned spilled_local = d_->spill_local_o;
    const bool rreq = d_->restore_req_valid_o && d_->restore_req_ready_i;
    const std::pair<unsigned, unsigned> asked{d_->restore_req_malloc_o, d_->restore_req_row_o};
    const bool rrsp = d_->restore_rsp_valid_i && d_->restore_rsp_ready_o;
    last_cfg_cycles_ = f.cfg ? cfg_wait_ + 1 : 0;
    cfg_wait_ = (d_->cfg_valid_i && !f.cfg) ? cfg_wait_ + 1 : 0;
    d_.step();
    if (spill) {
      spill_area_[spilled] = spilled_local;
      ++spills;
    }
    if (rrsp) {
      pending_ = false;
    } else if (pending_ && delay_ > 0) {
      --delay_;
    }
    if (rreq) {
      pending_ = true;
      key_ = asked;
      delay_ = rng_() % 4;
      ++restore_queries;
    }
    return f;
  }

  moehub::tb::Dut<Model> d_;
  std::mt19937 rng_;
  Held spill_ch_, rsp_ch_, rreq_ch_;
  unsigned cfg_wait_ = 0, last_cfg_cycles_ = 0;
  std::map<std::pair<unsigned, unsigned>, unsigned> spill_area_;
  bool pending_ = false;
  unsigned delay_ = 0;
  std::pair<unsigned, unsigned> key_{};
};
using Bench = BenchT<Vmoehub_aau>;

/// The LocalRowIDs of `rsp` that two distinct rows of `reqs` (one region) share.
std::vector<unsigned> shared_local_rows(const std::vector<Req>& reqs, const std::vector<Rsp>& rsp) {
  std::map<unsigned, unsigned> owner;  // LocalRowID -> row
  std::vector<unsigned> shared;
  for (std::size_t i = 0; i < reqs.size() && i < rsp.size(); ++i) {
    if (!rsp[i].ok) continue;
    const auto it = owner.find(rsp[i].local);
    if (it == owner.end()) {
      owner[rsp[i].local] = reqs[i].row;
    } else if (it->second != reqs[i].row) {
      shared.push_back(rsp[i].local);
    }
  }
  return shared;
}

TEST(RtlAau, FirstArrivalsAllocateInOrder) {
  Bench b(1);
  b.configure(0, false, 64, 0x1000, 7);
  const auto r = b.run({{0, 9, 0}, {0, 3, 4}, {0, 9, 100}, {0, 200, 127}});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(r[0].ok && !r[0].hit);
  EXPECT_EQ(r[0].local, 0u);
  EXPECT_EQ(r[1].local, 1u);
  EXPECT_TRUE(r[2].hit);
  EXPECT_EQ(r[2].local, 0u);
  EXPECT_EQ(r[2].addr, 0x1000u + 0 * 128 + 100);
  EXPECT_EQ(r[3].local, 2u);
  EXPECT_EQ(r[3].addr, 0x1000u + 2 * 128 + 127);
}

TEST(RtlAau, RefusesUnregisteredAndFullRegions) {
  Bench b(2);
  EXPECT_FALSE(b.translate(3, 1, 0).ok);
  b.configure(1, false, 2, 0x0, 6);
  EXPECT_TRUE(b.translate(1, 5, 0).ok);
  EXPECT_TRUE(b.translate(1, 6, 0).ok);
  EXPECT_FALSE(b.translate(1, 7, 0).ok);  // a third row does not fit
  const Rsp again = b.translate(1, 5, 1);  // a known row still translates
  EXPECT_TRUE(again.ok);
  EXPECT_EQ(again.local, 0u);
}

TEST(RtlAau, FlushRestartsTheRegion) {
  Bench b(3);
  b.configure(2, false, 16, 0x4000, 8);
  b.translate(2, 1, 0);
  b.translate(2, 2, 0);
  b.configure(2, true, 0, 0, 0);
  EXPECT_FALSE(b.translate(2, 1, 0).ok);
  b.configure(2, false, 16, 0x8000, 8);
  const Rsp r = b.translate(2, 2, 5);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.local, 0u);
  EXPECT_EQ(r.addr, 0x8000u + 5);
}

// A requester that withdraws a configuration before it is taken breaks the
// channel's rule (the unit latches a flush's region when it starts, but the
// inputs must stay): the bench fails with the assertion's name.
TEST(RtlAau, WithdrawnConfigurationFailsNamedAssertion) {
  Bench b(4);
  b.random_backpressure = false;
  b.configure(2, false, 16, 0x4000, 8);
  ASSERT_TRUE(b.translate(2, 1, 0).ok);
  try {
    b.flush_withdrawn(2, 3, 20);
    FAIL() << "the withdrawn flush went unnoticed";
  } catch (const moehub::tb::AssertionFailure& e) {
    ASSERT_FALSE(e.names().empty());
    EXPECT_NE(e.names()[0].find("AauCfgHeld"), std::string::npos) << e.what();
  }
}

// Registering a region that is active, without a flush, flushes it first:
// the rows of the old registration leave the RAT, the pointer restarts, and
// no two rows of the new registration share a LocalRowID.
TEST(RtlAau, ReregisteringAnActiveRegionFlushesIt) {
  Bench b(6);
  b.random_backpressure = false;
  b.configure(0, false, 16, 0x1000, 7);
  b.configure(1, false, 16, 0x9000, 7);
  const std::vector<Req> first{{0, 1, 0}, {0, 2, 0}, {0, 3, 0}, {1, 4, 0}};
  const auto r1 = b.run(first);
  ASSERT_EQ(r1.size(), 4u);
  EXPECT_EQ(r1[1].local, 1u);
  EXPECT_EQ(b.cfg_cycles, 1u);  // a registration of an inactive region: one cycle
  b.configure(0, false, 16, 0x2000, 7);
  EXPECT_GE(b.cfg_cycles, 2u) << "the registration of an active region scans the RAT";
  // row 2 is a first arrival of the new registration, rows 5 and 6 follow
  const std::vector<Req> second{{0, 2, 3}, {0, 5, 0}, {0, 6, 0}, {0, 2, 4}, {0, 1, 0}};
  const auto r2 = b.run(second);
  ASSERT_EQ(r2.size(), second.size());
  EXPECT_FALSE(r2[0].hit) << "a row of the old registration hit in the RAT";
  EXPECT_EQ(r2[0].local, 0u);
  EXPECT_EQ(r2[0].addr, 0x2000u + 3);
  EXPECT_EQ(r2[1].local, 1u);
  EXPECT_EQ(r2[2].local, 2u);
  EXPECT_EQ(r2[3].local, 0u);
  EXPECT_EQ(r2[4].local, 3u);
  const auto shared = shared_local_rows(second, r2);
  EXPECT_TRUE(shared.empty()) << shared.size() << " LocalRowIDs shared by two rows, the first " << shared.at(0);
  // the other region keeps its row (evicted meanwhile, restored)
  const Rsp other = b.translate(1, 4, 1);
  EXPECT_TRUE(other.ok);
  EXPECT_EQ(other.local, r1[3].local);
}

// A spill not taken stays offered, the same entry, while the response
// channel and the requests move around it; the requests that need no spill
// go on.
TEST(RtlAau, SpillIsHeldUntilTaken) {
  Bench b(7);
  b.configure(0, false, 64, 0, 7);
  b.configure(1, false, 64, 0x8000, 7);
  b.spill_ready = 0;
  // rows 0, 2, 4 map to set 0 (2 ways): row 4 evicts row 0 into the spill
  // register; a hit, and a first arrival of a region that has not spilled
  // into a free way, go on (a miss of region 0 would ask memory, after the spill)
  const auto r = b.run({{0, 0, 0}, {0, 2, 0}, {0, 4, 0}, {0, 2, 1}, {1, 1, 0}});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(r[3].hit);
  EXPECT_GT(b.spill_held_cycles, 0u);
  EXPECT_EQ(b.spills, 0u);
  b.spill_ready = 1;
  EXPECT_EQ(b.translate(0, 0, 0).local, 0u);  // row 0 restored from the spill area once it is there
  EXPECT_EQ(b.spills, 2u);                    // row 0, then row 2 (evicted by the restore)
  EXPECT_EQ(b.held_violations, 0u);
}

// A configuration that arrives while a spill waits does not withdraw it:
// the spill stays offered, the same entry, and the configuration completes
// once the spill has reached memory.
TEST(RtlAau, SpillStaysWhenAConfigurationArrives) {
  Bench b(9);
  b.random_backpressure = false;
  b.configure(0, false, 64, 0, 7);
  b.spill_stall_cycles = 8;
  Bench::CfgDuring cfg;
  cfg.at = 3;  // row 4 evicts row 0 into the spill register in cycle 2
  cfg.region = 2;
  cfg.rows = 16;
  cfg.base = 0x7000;
  cfg.size_log2 = 7;
  const auto r = b.run({{0, 0, 0}, {0, 2, 0}, {0, 4, 0}}, cfg);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2].local, 2u);
  EXPECT_GT(b.spill_held_cycles, 0u);
  EXPECT_EQ(b.held_violations, 0u);
  EXPECT_EQ(b.spills, 1u);
  EXPECT_EQ(b.translate(2, 9, 1).addr, 0x7000u + 1);  // the configuration took effect
  EXPECT_EQ(b.translate(0, 0, 0).local, 0u);          // and row 0 comes back from the spill area
}

// Regions = 3: MallocID 3 names no region; its requests are refused and its
// configuration changes nothing.
TEST(RtlAau, MallocIdBeyondThreeRegionsIsRefused) {
  BenchT<Vmoehub_aau_r3> b(8);
  b.configure(3, false, 16, 0x5000, 7);
  EXPECT_FALSE(b.translate(3, 1, 0).ok);
  b.configure(2, false, 16, 0x3000, 7);
  const Rsp r = b.translate(2, 1, 5);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.addr, 0x3000u + 5);
  EXPECT_FALSE(b.translate(3, 1, 0).ok);
  b.configure(3, true, 0, 0, 0);
  EXPECT_TRUE(b.translate(2, 1, 6).hit);
}

TEST(RtlAau, HitsStreamOnePerCycle) {
  Bench b(4);
  b.random_backpressure = false;
  b.configure(0, false, 64, 0, 7);
  b.run({{0, 0, 0}, {0, 1, 0}});  // two rows in different sets
  std::vector<Req> hits;
  for (unsigned i = 0; i < 32; ++i) hits.push_back({0, i % 2, i});
  const std::uint64_t start = b.cycles();
  const auto r = b.run(hits);
  for (const Rsp& x : r) EXPECT_TRUE(x.hit);
  EXPECT_EQ(b.cycles() - start, 33u);  // one per cycle plus the response register
}

TEST(RtlAau, RandomTrafficKeepsEveryRowOnOneLocalRow) {
  Bench b(5);
  struct Region {
    unsigned id, size_log2;
    std::uint32_t base;
  };
  const Region regions[2] = {{0, 7, 0x10000}, {2, 8, 0x80000}};
  for (const Region& g : regions) b.configure(g.id, false, 200, g.base, g.size_log2);
  std::mt19937 rng(42);
  std::vector<Req> reqs;
  for (int i = 0; i < 600; ++i) {
    // rows drawn from a window that slides, as rows of tokens arrive over time
    const unsigned row = static_cast<unsigned>(i / 6 + static_cast<int>(rng() % 12));
    reqs.push_back({regions[rng() % 2].id, row % 256, static_cast<unsigned>(rng() % 128)});
  }
  const auto rsp = b.run(reqs);
  ASSERT_EQ(rsp.size(), reqs.size());
  std::map<std::pair<unsigned, unsigned>, unsigned> seen;
  std::map<unsigned, unsigned> next;  // per region: rows allocated so far
  unsigned hits = 0, restored = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const Req& q = reqs[i];
    const Rsp& r = rsp[i];
    ASSERT_TRUE(r.ok) << "request " << i;
    const auto key = std::make_pair(q.malloc_id, q.row);
    const auto it = seen.find(key);
    if (it == seen.end()) {
      EXPECT_EQ(r.local, next[q.malloc_id]) << "first arrival " << i << " not dense";
      seen[key] = r.local;
      ++next[q.malloc_id];
      EXPECT_FALSE(r.hit || r.restored) << "first arrival " << i;
    } else {
      EXPECT_EQ(r.local, it->second) << "row " << q.row << " moved, request " << i;
    }
    const Region& g = (q.malloc_id == 0) ? regions[0] : regions[1];
    EXPECT_EQ(r.addr, g.base + (r.local << g.size_log2) + q.offset) << "request " << i;
    hits += r.hit;
    restored += r.restored;
  }
  EXPECT_EQ(b.held_violations, 0u);
  // every path was taken
  EXPECT_GT(hits, 0u);
  EXPECT_GT(restored, 0u);
  EXPECT_GT(b.spills, 0u);
  EXPECT_GT(b.restore_queries, restored);  // some queries found nothing (first arrivals)
}

}  // namespace
