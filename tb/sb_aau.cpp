// Scoreboard of moehub_aau (4 regions, a RAT of 8 entries in 2 banks of one
// set of 4 ways, RowIdWidth 8, LocalRowIdWidth 8, AddrWidth 32) against the
// behavioural AddressAllocationUnit (systemc/golden/aau.hpp) with the same
// RAT (8 entries, 2 banks) and the stall policy.
//
// The bench plays the device memory (spill area, restores answered after a
// random delay, random back-pressure on every channel). When the RTL takes a
// request, the golden AAU translates the same store; when the RTL's response
// first shows, it is compared with that translation: rsp_ok_o with
// `accepted` (a refused store: region full, or unregistered, where the
// golden model throws), rsp_local_o with the LocalRowID, rsp_addr_o with the
// address, rsp_hit_o and rsp_restored_o with the golden RAT's hit and restore
// counts, and the spills the RTL has sent so far (or holds in its spill
// register, which sends a spill the cycle after its fill) with the golden
// spill count.
// Not compared: cycles (the golden RAT books dual-ported banks, the RTL takes
// one request per cycle and waits for memory), restore queries (the RTL asks
// memory on every miss of a region that has spilled). After a region is
// reinitialised (flush and register) the RAT organisations part (see
// sb_rat.cpp); from then on hits, restores and spills are not compared.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "Vsb_aau.h"
#include "golden/aau.hpp"
#include "tb_dut.hpp"
#include "tb_scoreboard.hpp"

namespace {

using moehub::golden::AauParams;
using moehub::golden::AddressAllocationUnit;
using moehub::golden::Opcode;
using moehub::golden::StoreRequest;
using moehub::tb::Outcome;

constexpr unsigned kRegions = 4;
using Key = std::pair<unsigned, unsigned>;  // (MallocID, RowID)

struct RegionCfg {
  bool registered = false;
  std::uint32_t base = 0;
  unsigned size_log2 = 7, rows = 256;
};

struct Stim {
  bool req = false;
  unsigned m = 0, row = 0, offset = 0;
  bool rsp_ready = true, spill_ready = true, restore_req_ready = true;
};

AauParams aau_params() {
  AauParams p;
  p.apt_regions = kRegions;
  p.rat.entries = 8;
  p.rat.banks = 2;
  return p;
}

class AauBoard {
 public:
  AauBoard(const std::string& fst, std::uint32_t seed) : d_(fst), rng_(seed) { restart({}); }

  /// Both models empty; registers the regions marked registered (0, 1, 2, ... in order).
  void restart(const std::array<RegionCfg, kRegions>& regions) {
    d_->cfg_valid_i = 0;
    d_->req_valid_i = 0;
    d_->restore_rsp_valid_i = 0;
    d_.reset();
    g_ = std::make_unique<AddressAllocationUnit>(aau_params());
    expected_.clear();
    spill_area_.clear();
    pending_ = false;
    diverged_ = false;
    checked_ = false;
    rtl_spills_ = 0;
    regions_ = regions;
    Outcome scratch;
    for (unsigned r = 0; r < kRegions; ++r) {
      if (regions_[r].registered) configure(r, false, scratch);
    }
  }

  /// Registers (flush = false) or flushes region `m` in the RTL, and the same in the golden model.
  void configure(unsigned m, bool flush, Outcome& o) {
    const RegionCfg& g = regions_[m];
    for (int i = 0;; ++i) {
      Stim s;
      d_->cfg_valid_i = 1;
      d_->cfg_flush_i = flush;
      d_->cfg_region_i = static_cast<CData>(m);
      d_->cfg_rows_i = static_cast<SData>(g.rows);
      d_->cfg_base_i = g.base;
      d_->cfg_row_size_log2_i = static_cast<CData>(g.size_log2);
      if (cycle(s, o).cfg) break;
      if (!o.expect(i < 64, d_.cycles(), [] { return "configuration never completes"; })) break;
    }
    d_->cfg_valid_i = 0;
    // software clears the region's spill area with a flush or a registration
    for (auto it = spill_area_.begin(); it != spill_area_.end();) {
      it = it->first.first == m ? spill_area_.erase(it) : std::next(it);
    }
    if (flush) {
      diverged_ = true;
      if (g_->apt().active(m)) g_->free_region(m);
    } else if (g_->apt().active(m)) {
      // the registration of an active region: the RTL flushes it first, the
      // golden AAU re-initialises it (same capacity and base)
      diverged_ = true;
      g_->reinit_region(m);
    } else {
      const std::uint32_t id = g_->rowsp_malloc(g.base, 1U << g.size_log2, g.rows);
      o.expect(id == m, d_.cycles(), [] { return "bench registered a slot rowspMalloc does not take"; });
    }
  }

  struct Fired {
    bool cfg = false, req = false, rsp = false;
  };

  /// One cycle with stimulus `s` (the caller holds a request until it is taken).
  Fired cycle(const Stim& s, Outcome& o) {
    const std::uint64_t c = d_.cycles();
    if (d_->rsp_valid_o && !checked_) compare(o, c);
    d_->req_valid_i = s.req;
    d_->req_malloc_i = static_cast<CData>(s.m);
    d_->req_row_i = static_cast<CData>(s.row);
    // the fault: the RTL translates another offset in the row than the golden
    // AAU (decided when a request is first offered: it is held unchanged)
    if (!req_waiting_) flip_ = c >= fault_cycle;
    d_->req_offset_i = static_cast<CData>(flip_ ? s.offset ^ 1u : s.offset);
    d_->rsp_ready_i = s.rsp_ready;
    d_->spill_ready_i = s.spill_ready;
    d_->restore_req_ready_i = s.restore_req_ready && !pending_;
    const bool answer = pending_ && delay_ == 0;
    d_->restore_rsp_valid_i = answer;
    const auto found = spill_area_.find(asked_);
    d_->restore_rsp_found_i = answer && found != spill_area_.end();
    d_->restore_rsp_local_i = static_cast<CData>(answer && found != spill_area_.end() ? found->second : 0);
    d_.eval();

    Fired f;
    f.cfg = d_->cfg_valid_i && d_->cfg_ready_o;
    f.req = s.req && d_->req_ready_o;
    f.rsp = d_->rsp_valid_o && s.rsp_ready;
    if (f.req) translate(s, c);
    if (d_->spill_valid_o && s.spill_ready) {
      spill_area_[Key{d_->spill_malloc_o, d_->spill_row_o}] = d_->spill_local_o;
      ++rtl_spills_;
    }
    const bool rreq = d_->restore_req_valid_o && d_->restore_req_ready_i;
    const Key asked{d_->restore_req_malloc_o, d_->restore_req_row_o};
    if (answer && d_->restore_rsp_ready_o) pending_ = false;
    else if (pending_ && delay_ > 0) --delay_;
    if (rreq) {
      pending_ = true;
      asked_ = asked;
      delay_ = static_cast<unsigned>(rng_() % 4);
    }
    if (f.rsp) {
      o.expect(checked_, c, [] { return "response taken unchecked"; });
      if (!expected_.empty()) expected_.pop_front();
      checked_ = false;
      ++o.transactions;
    }
    req_waiting_ = s.req && !f.req;
    d_.step();
    o.cycles = d_.cycles();
    return f;
  }

  /// Offers one store until taken, then runs until its response is taken.
  void send(unsigned m, unsigned row, unsigned offset, Outcome& o, bool spill_ready = true) {
    Stim s;
    s.req = true;
    s.m = m;
    s.row = row;
    s.offset = offset;
    s.spill_ready = spill_ready;
    for (int i = 0; i < 64 && !cycle(s, o).req; ++i) s.spill_ready = true;
    s.req = false;
    for (int i = 0; i < 64 && !expected_.empty(); ++i) cycle(s, o);
    o.expect(expected_.empty(), d_.cycles(), [] { return "no response"; });
  }

  const RegionCfg& region(unsigned m) const { return regions_[m]; }
  bool idle() const { return expected_.empty(); }
  std::uint64_t spills() const { return rtl_spills_; }
  /// Fault injection (to test the bench): from this cycle on the RTL sees each store's offset with its low bit flipped.
  std::uint64_t fault_cycle = ~0ULL;

 private:
  struct Expect {
    bool ok = false, hit = false, restored = false;
    std::int64_t local = -1;
    std::uint64_t address = 0, spills = 0;
  };

  void translate(const Stim& s, std::uint64_t c) {
    StoreRequest w;
    w.op = Opcode::kRowStore;
    w.malloc_id = s.m;
    w.row_id = s.row;
    w.row_offset = s.offset;
    w.bytes = 1;
    const auto before = g_->rat().stats();
    Expect e;
    try {
      const auto r = g_->on_write(w, g_->clock().tick_of(c));
      e.ok = r.accepted;
      e.local = r.local_row_id;
      e.address = r.address;
    } catch (const std::out_of_range&) {
      e.ok = false;  // not a registered region
    }
    const auto& after = g_->rat().stats();
    e.hit = after.hits > before.hits;
    e.restored = after.restores > before.restores;
    e.spills = after.spills;
    expected_.push_back(e);
  }

  void compare(Outcome& o, std::uint64_t c) {
    checked_ = true;
    if (!o.expect(!expected_.empty(), c, [] { return "response without a request"; })) return;
    const Expect& e = expected_.front();
    const auto row = [&] { return " (golden ok " + std::to_string(e.ok) + " local " + std::to_string(e.local) + ")"; };
    o.expect((d_->rsp_ok_o != 0) == e.ok, c, [&] { return "rsp_ok_o " + std::to_string(d_->rsp_ok_o) + row(); });
    if (!e.ok) return;
    o.expect(d_->rsp_local_o == e.local, c, [&] { return "rsp_local_o " + std::to_string(d_->rsp_local_o) + row(); });
    o.expect(d_->rsp_addr_o == e.address, c, [&] {
      return "rsp_addr_o " + std::to_string(d_->rsp_addr_o) + ", golden " + std::to_string(e.address);
    });
    if (diverged_) return;
    o.expect((d_->rsp_hit_o != 0) == e.hit, c, [&] { return "rsp_hit_o " + std::to_string(d_->rsp_hit_o) + row(); });
    o.expect((d_->rsp_restored_o != 0) == e.restored, c,
             [&] { return "rsp_restored_o " + std::to_string(d_->rsp_restored_o) + row(); });
    // the spills sent, and the one the spill register may still hold (it
    // leaves the cycle after its fill, when the memory takes it)
    const std::uint64_t sent = rtl_spills_ + (d_->spill_valid_o != 0 ? 1 : 0);
    o.expect(sent == e.spills, c, [&] {
      return "spills " + std::to_string(sent) + " (sent or in the spill register), golden " + std::to_string(e.spills);
    });
  }

  moehub::tb::Dut<Vsb_aau> d_;
  std::mt19937_64 rng_;
  std::unique_ptr<AddressAllocationUnit> g_;
  std::array<RegionCfg, kRegions> regions_{};
  std::deque<Expect> expected_;
  bool checked_ = false;  // the response now shown was compared
  std::map<Key, unsigned> spill_area_;
  bool pending_ = false;  // a restore query is being answered
  Key asked_{};
  unsigned delay_ = 0;
  std::uint64_t rtl_spills_ = 0;
  bool req_waiting_ = false;  // the last cycle offered a request it did not take
  bool flip_ = false;         // the fault applies to the request offered
  bool diverged_ = false;
};

std::array<RegionCfg, kRegions> random_regions(std::mt19937_64& rng) {
  std::array<RegionCfg, kRegions> r{};
  for (unsigned m = 0; m < kRegions; ++m) {
    r[m].registered = m < 3 || rng() % 4 != 0;  // region 3 unregistered in one segment of four
    r[m].base = static_cast<std::uint32_t>(rng() % (1U << 20)) * 16;
    r[m].size_log2 = 4 + static_cast<unsigned>(rng() % 4);
    r[m].rows = m < 3 ? 256 : 5 + static_cast<unsigned>(rng() % 20);  // region 3 fills
  }
  return r;
}

/// Constrained-random stores: rows from a window of 10 that slides, regions
/// 0/1 more often than 2/3, random back-pressure on rsp, spill and restore.
/// Runs until `stores` responses were compared.
/// `reinits`: now and then a region is reinitialised (flush and register);
/// else both models restart every 4096 stores.
Outcome random_run(std::uint32_t seed, std::uint64_t stores, bool reinits, const std::string& fst,
                   std::uint64_t stop, std::uint64_t fault_cycle = ~0ULL) {
  std::mt19937_64 rng(seed);
  AauBoard b(fst, seed + 1);
  b.fault_cycle = fault_cycle;
  Outcome o;
  std::uint64_t sent = 0;
  Stim s;
  if (reinits) b.restart(random_regions(rng));
  while (o.transactions < stores && o.cycles <= stop) {
    if (!s.req) {
      if (!reinits && sent % 4096 == 0 && b.idle()) b.restart(random_regions(rng));
      if (reinits && rng() % 512 == 0) {
        // a flush and a registration, or a registration of the active region alone
        const unsigned m = static_cast<unsigned>(rng() % 3);
        if (rng() % 2 == 0) b.configure(m, true, o);
        b.configure(m, false, o);
      }
      if (rng() % 8 != 0) {
        s.req = true;
        s.m = static_cast<unsigned>(rng() % 8) < 5 ? static_cast<unsigned>(rng() % 2)
                                                   : 2 + static_cast<unsigned>(rng() % 2);
        const unsigned base = static_cast<unsigned>((sent / 64) % 256);
        s.row = (base + static_cast<unsigned>(rng() % 10)) % 256;
        s.offset = static_cast<unsigned>(rng() % (1U << b.region(s.m).size_log2));
      }
    }
    s.rsp_ready = rng() % 4 != 0;
    s.spill_ready = rng() % 4 != 0;
    s.restore_req_ready = rng() % 4 != 0;
    if (b.cycle(s, o).req) {
      s.req = false;
      ++sent;
    }
  }
  return o;
}

void directed(AauBoard& b, Outcome& o) {
  std::array<RegionCfg, kRegions> r{};
  r[0] = {true, 0x1000, 7, 256};
  r[1] = {true, 0x80000, 4, 3};
  b.restart(r);
  b.send(3, 1, 0, o);                                           // unregistered region
  b.send(0, 0, 5, o);                                           // new row
  b.send(0, 0, 9, o);                                           // hit
  for (unsigned row : {2u, 4u, 6u}) b.send(0, row, 0, o);      // bank 0 full (same bank, back to back)
  b.send(0, 8, 0, o, false);                                    // evicts row 0: spill, first held
  b.send(0, 0, 100, o);                                         // restore of the evicted row
  b.send(0, 10, 1, o);                                          // a new row in a spilled region: not found
  for (unsigned row : {1u, 3u, 5u}) b.send(1, row, 0, o);      // region 1 holds 3 rows
  b.send(1, 7, 0, o);                                           // region full
  b.send(1, 3, 15, o);                                          // a known row of a full region
  b.configure(1, true, o);                                      // flush (free)
  b.send(1, 3, 0, o);                                           // refused: not registered
  b.configure(1, false, o);                                     // registered again
  b.send(1, 3, 0, o);                                           // a new row 0
}

TEST(SbAau, DirectedCorners) {
  AauBoard b("", 1);
  Outcome o;
  directed(b, o);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  EXPECT_EQ(o.transactions, 16u);
  EXPECT_GE(b.spills(), 1u);
}

TEST(SbAau, RandomMillionStores) {
  const std::string msg = moehub::tb::check("sb_aau_random", [](const std::string& fst, std::uint64_t stop) {
    return random_run(31, 1000000, false, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbAau, RandomWithReinits) {
  const std::string msg = moehub::tb::check("sb_aau_random_reinit", [](const std::string& fst, std::uint64_t stop) {
    return random_run(32, 200000, true, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

TEST(SbAau, InjectedFaultFailsAndWritesWaveform) {
  EXPECT_EQ(moehub::tb::injected_fault_report("sb_aau_injected_fault",
                                              [](const std::string& fst, std::uint64_t stop) {
                                                return random_run(33, 20000, false, fst, stop, 2000);
                                              }),
            "");
}

TEST(SbAau, Coverage) {
  moehub::tb::coverage_tally().clear();
  {
    AauBoard b("", 2);
    Outcome o;
    directed(b, o);
    EXPECT_EQ(o.mismatches, 0u) << o.first;
  }
  const Outcome o = random_run(33, 20000, true, "", ~0ULL);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  auto missing = moehub::tb::coverage_report(
      "moehub_aau", {"cov_hit", "cov_new_row", "cov_restored", "cov_region_full", "cov_unregistered", "cov_spill",
                     "cov_spill_stall", "cov_restore_found", "cov_restore_not_found", "cov_rsp_stall",
                     "cov_back_to_back", "cov_cfg_waits", "cov_flush", "cov_reregister"});
  const auto rat = moehub::tb::coverage_report("moehub_rat", {"cov_same_bank", "cov_evict_dirty", "cov_evict_clean"});
  missing.insert(missing.end(), rat.begin(), rat.end());
  EXPECT_TRUE(missing.empty()) << missing.size() << " corners uncovered (listed above)";
}

}  // namespace
