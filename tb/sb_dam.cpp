// Scoreboard of moehub_dam (4 entries of up to 8 groups, KernelIdWidth 4,
// AddrWidth 32, RowBytesWidth 10, RowsPerGroupWidth 4, LenWidth 12) against
// the behavioural DataAvailabilityManager (systemc/golden/dam.hpp).
//
// Transactions (add kernel, set expected bytes, remove kernel, completed
// write) go to both models. The bench offers one to the RTL, keeps the Ready
// stream under random back-pressure, and compares every Ready signal in the
// cycle it is taken with the next one the golden model returned for that
// transaction; once the RTL is idle again it compares the table: every
// golden kernel in the slot the RTL gave it, its global counter and
// AllReady, and every group's byte counter and state (released, retired =
// waiting in an AllReady kernel, waiting). Refusals and conservation errors:
// the golden exception against the RTL's err report. By design the RTL
// processes entries in slot order (a kernel takes the lowest free slot) and
// the golden model in registration order, so the signals the golden model
// returns for one write are put in slot order (stable: a kernel's own stay
// in group order, AllReady last) before the comparison; without a removal
// the two orders are the same.
//
// Writes follow the RTL's restriction (a write lies within one group of every
// kernel whose range it touches): kernels sit on regions (base, row size,
// rows), several kernels may share a region (with their own rows per group
// and groups: every matching entry counts), and every write lies within one
// row: a whole local row without a mask, a row store of one 128-byte chunk
// or part of it with a byte mask (parts with holes: merged packets), or a
// plain store of part of a chunk without a mask. An add beyond the RTL's
// limits (more than MaxGroups groups, a full table) must be refused by the
// RTL and is not given to the golden model, which has no such limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>


#include "Vsb_dam.h"
#include "Vsb_dam___024root.h"
#include "golden/dam.hpp"
#include "tb_dut.hpp"
#include "tb_scoreboard.hpp"

namespace {

using moehub::golden::ByteMask;
using moehub::golden::DataAvailabilityManager;
using moehub::golden::GroupState;
using moehub::golden::kAllReadyGroup;
using moehub::golden::KernelDependency;
using moehub::golden::kLineBytes;
using moehub::golden::Opcode;
using moehub::golden::ReadySignal;
using moehub::golden::StoreRequest;
using moehub::tb::Outcome;

constexpr unsigned kKernels = 4;
constexpr unsigned kMaxGroups = 8;
constexpr unsigned kSpanW = 14;                    // RowBytesWidth + RowsPerGroupWidth
constexpr unsigned kTotalW = kSpanW + 3;           // + log2(MaxGroups)
constexpr std::uint64_t kMaxCycles = 20000;        // per transaction: the RTL is stuck beyond

/// Bits [lsb, lsb + width) of a Verilated wide vector (width <= 32).
std::uint32_t get_bits(const std::uint32_t* w, unsigned lsb, unsigned width) {
  std::uint32_t v = 0;
  for (unsigned b = 0; b < width; ++b) v |= ((w[(lsb + b) / 32] >> ((lsb + b) % 32)) & 1u) << b;
  return v;
}

enum class Kind { kAdd, kSet, kRemove, kWrite };

struct Txn {
  Kind kind = Kind::kWrite;
  KernelDependency dep;      // add (dep.kernel also names the kernel of set and remove)
  std::uint64_t total = 0;   // set
  StoreRequest w;            // write
};

/// What the golden model answered: its Ready signals, or the class of its exception.
struct Expect {
  std::vector<ReadySignal> ready;
  unsigned err = 0;  // 0 none, 1 refused (invalid_argument, out_of_range, set twice), 2/3 conservation
};

class DamBoard {
 public:
  explicit DamBoard(const std::string& fst, std::uint32_t seed = 1, unsigned ready_percent = 70)
      : d_(fst), rng_(seed), ready_percent_(ready_percent) {
    idle_inputs();
    d_.eval();
  }

  /// Fault injection (to test the bench): from this cycle on the RTL sees masked writes one byte short.
  std::uint64_t fault_cycle = ~0ULL;
  /// Assertions of the model (off: conservation errors run through to the err report).
  void assertions(bool on) { d_->contextp()->assertOn(on); }
  const DataAvailabilityManager& golden() const { return g_; }
  /// RTL slot of each registered kernel (the bench's mirror of the lowest-free-slot rule).
  const std::map<std::int32_t, unsigned>& slots() const { return slot_; }

  /// Runs one transaction on both models and compares; returns the golden answer.
  Expect run(const Txn& t, Outcome& o) {
    Expect e = golden_step(t);
    // golden registration order -> RTL slot order, stable
    std::stable_sort(e.ready.begin(), e.ready.end(), [&](const ReadySignal& a, const ReadySignal& b) {
      return slot_of(a.kernel) < slot_of(b.kernel);
    });
    drive(t, e, o);
    ++o.transactions;
    if (e.err == 0 || e.err == 1) mirror(t, e);
    if (e.err == 0) compare_state(o);
    o.cycles = d_.cycles();
    return e;
  }

  std::uint64_t cycles() const { return d_.cycles(); }

 private:
  unsigned slot_of(std::int32_t k) const {
    auto it = slot_.find(k);
    return it == slot_.end() ? kKernels : it->second;
  }

  Expect golden_step(const Txn& t) {
    Expect e;
    // the RTL's own limits (the golden table has none): refused there, not given to the golden model
    if (t.kind == Kind::kAdd && (t.dep.groups > kMaxGroups || slot_.size() >= kKernels)) {
      e.err = 1;
      return e;
    }
    try {
      switch (t.kind) {
        case Kind::kAdd: g_.add_kernel(t.dep, e.ready); break;
        case Kind::kSet: g_.set_expected_bytes(t.dep.kernel, t.total, e.ready); break;
        case Kind::kRemove: g_.remove_kernel(t.dep.kernel); break;
        case Kind::kWrite: g_.on_write_complete(t.w, 0, e.ready); break;
      }
    } catch (const std::invalid_argument&) {
      e.err = 1;
    } catch (const std::out_of_range&) {
      e.err = 1;
    } catch (const std::logic_error& x) {
      const std::string m = x.what();
      e.err = m.find("set twice") != std::string::npos ? 1 : (m.find(" group ") != std::string::npos ? 2 : 3);
    }
    return e;
  }

  /// The bench's slot mirror after a transaction both models took.
  void mirror(const Txn& t, const Expect& e) {
    if (e.err != 0) return;
    if (t.kind == Kind::kAdd) {
      for (unsigned s = 0; s < kKernels; ++s) {
        bool used = false;
        for (const auto& [k, v] : slot_) used = used || v == s;
        if (!used) {
          slot_[t.dep.kernel] = s;
          groups_[t.dep.kernel] = t.dep.groups;
          break;
        }
      }
    } else if (t.kind == Kind::kRemove) {
      slot_.erase(t.dep.kernel);
      groups_.erase(t.dep.kernel);
    }
  }

  void idle_inputs() {
    d_->cfg_valid_i = 0;
    d_->wr_valid_i = 0;
    d_->rdy_ready_i = 0;
  }

  void set_inputs(const Txn& t) {
    if (t.kind == Kind::kWrite) {
      StoreRequest w = t.w;
      if (d_.cycles() >= fault_cycle && !w.mask.empty() && w.mask.count() > 1) {
        for (int i = static_cast<int>(kLineBytes) - 1; i >= 0; --i) {
          if ((w.mask.bits[i / 64] >> (i % 64)) & 1u) {
            w.mask.bits[i / 64] &= ~(1ULL << (i % 64));
            break;
          }
        }
      }
      d_->wr_valid_i = 1;
      d_->wr_addr_i = static_cast<IData>(w.address);
      d_->wr_bytes_i = static_cast<SData>(w.bytes);
      for (unsigned i = 0; i < 4; ++i) d_->wr_mask_i[i] = static_cast<IData>(w.mask.bits[i / 2] >> (32 * (i % 2)));
      const bool row = w.op == Opcode::kRowStore || w.op == Opcode::kRowStoreNop;
      d_->wr_row_store_i = row;
      d_->wr_row_offset_i = static_cast<CData>(w.row_offset % kLineBytes);
      return;
    }
    d_->cfg_valid_i = 1;
    d_->cfg_op_i = t.kind == Kind::kAdd ? 0 : t.kind == Kind::kSet ? 1 : 2;
    d_->cfg_kernel_i = static_cast<CData>(t.dep.kernel);
    d_->cfg_base_i = static_cast<IData>(t.dep.base_address);
    d_->cfg_row_bytes_i = static_cast<SData>(t.dep.row_bytes);
    d_->cfg_rows_per_group_i = static_cast<CData>(t.dep.rows_per_group);
    d_->cfg_groups_i = static_cast<CData>(t.dep.groups);
    d_->cfg_total_valid_i = t.kind == Kind::kAdd && t.dep.expected_bytes.has_value();
    d_->cfg_total_i = static_cast<IData>(t.kind == Kind::kSet ? t.total : t.dep.expected_bytes.value_or(0));
  }

  /// Offers `t`, takes the Ready stream until the RTL is idle, compares each signal as it is taken.
  void drive(const Txn& t, const Expect& e, Outcome& o) {
    set_inputs(t);
    bool taken = false;
    std::size_t next = 0;
    unsigned err = 0;
    std::int32_t err_kernel = -1;
    const std::uint64_t start = d_.cycles();
    for (;;) {
      const std::uint64_t c = d_.cycles();
      d_->rdy_ready_i = (rng_() % 100) < ready_percent_;
      d_.eval();
      if (d_->err_valid_o && c > start) {  // (in the first cycle: the previous transaction's report)
        err = d_->err_code_o;
        err_kernel = d_->err_kernel_o;
      }
      if (taken && d_->cfg_ready_o && !d_->rdy_valid_o) break;  // idle again
      if (!taken) {
        const bool fire = t.kind == Kind::kWrite ? d_->wr_ready_o != 0 : d_->cfg_ready_o != 0;
        if (fire) taken = true;
      }
      if (d_->rdy_valid_o && d_->rdy_ready_i) {
        const std::int32_t k = d_->rdy_kernel_o;
        const std::int32_t g = d_->rdy_all_o ? kAllReadyGroup : static_cast<std::int32_t>(d_->rdy_group_o);
        if (o.expect(next < e.ready.size(), c, [&] {
              return "unexpected Ready (kernel " + std::to_string(k) + ", group " + std::to_string(g) + ")";
            })) {
          const ReadySignal& want = e.ready[next];
          o.expect(want.kernel == k && want.group == g, c, [&] {
            return "Ready (kernel " + std::to_string(k) + ", group " + std::to_string(g) + "), golden (kernel " +
                   std::to_string(want.kernel) + ", group " + std::to_string(want.group) + ")";
          });
        }
        ++next;
      }
      d_.step();
      if (taken) idle_inputs();
      if (!o.expect(d_.cycles() - start < kMaxCycles, c, [] { return "the RTL did not finish the transaction"; })) {
        break;
      }
    }
    d_.eval();
    if (d_->err_valid_o && d_.cycles() > start) {
      err = d_->err_code_o;
      err_kernel = d_->err_kernel_o;
    }
    const std::uint64_t c = d_.cycles();
    o.expect(next >= e.ready.size(), c, [&] {
      return std::to_string(e.ready.size() - next) + " golden Ready signals missing (first: kernel " +
             std::to_string(e.ready[next].kernel) + ", group " + std::to_string(e.ready[next].group) + ")";
    });
    o.expect(err == e.err, c, [&] {
      return "err code " + std::to_string(err) + " (kernel " + std::to_string(err_kernel) + "), golden " +
             std::to_string(e.err);
    });
  }

  /// Every golden kernel against its RTL slot.
  void compare_state(Outcome& o) {
    const auto* r = d_->rootp;
    const std::uint64_t c = d_.cycles();
    unsigned valid_mask = 0;
    for (const auto& [k, s] : slot_) {
      valid_mask |= 1u << s;
      const std::string name = "kernel " + std::to_string(k) + " (slot " + std::to_string(s) + ")";
      o.expect(((r->moehub_dam__DOT__valid_q >> s) & 1u) != 0, c, [&] { return name + " not valid"; });
      const unsigned id = (r->moehub_dam__DOT__id_q >> (4 * s)) & 0xFu;
      o.expect(id == static_cast<unsigned>(k), c, [&] { return name + " holds id " + std::to_string(id); });
      const std::uint32_t recv = get_bits(r->moehub_dam__DOT__recv_q.data(), kTotalW * s, kTotalW);
      o.expect(recv == g_.received_bytes(k), c, [&] {
        return name + " received " + std::to_string(recv) + ", golden " + std::to_string(g_.received_bytes(k));
      });
      const bool all = ((r->moehub_dam__DOT__allrdy_q >> s) & 1u) != 0;
      o.expect(all == g_.all_ready(k), c, [&] { return name + " AllReady " + std::to_string(all); });
      const unsigned groups = (r->moehub_dam__DOT__groups_q >> (4 * s)) & 0xFu;
      const std::uint32_t ng = groups_.at(k);
      o.expect(groups == ng, c, [&] { return name + " has " + std::to_string(groups) + " groups"; });
      for (std::uint32_t grp = 0; grp < ng; ++grp) {
        const std::uint32_t word = r->moehub_dam__DOT__grp_q[s * kMaxGroups + grp];
        const std::uint32_t bytes = word & ((1u << kSpanW) - 1);
        const bool rel = ((word >> kSpanW) & 1u) != 0;
        const GroupState st = rel ? GroupState::kReleased : (all ? GroupState::kRetired : GroupState::kWaiting);
        o.expect(bytes == g_.group_bytes(k, grp), c, [&] {
          return name + " group " + std::to_string(grp) + " counts " + std::to_string(bytes) + ", golden " +
                 std::to_string(g_.group_bytes(k, grp));
        });
        o.expect(st == g_.group_state(k, grp), c, [&] {
          return name + " group " + std::to_string(grp) + " state " + std::to_string(static_cast<int>(st)) +
                 ", golden " + std::to_string(static_cast<int>(g_.group_state(k, grp)));
        });
      }
    }
    o.expect((r->moehub_dam__DOT__valid_q & 0xFu) == valid_mask, c, [&] {
      return "valid slots " + std::to_string(r->moehub_dam__DOT__valid_q) + ", bench " + std::to_string(valid_mask);
    });
  }

  moehub::tb::Dut<Vsb_dam> d_;
  DataAvailabilityManager g_;
  std::map<std::int32_t, unsigned> slot_;
  std::map<std::int32_t, std::uint32_t> groups_;  // groups of each registered kernel
  std::mt19937_64 rng_;
  unsigned ready_percent_;
};

// ---- transactions -----------------------------------------------------------

Txn add(std::int32_t k, std::uint64_t base, std::uint32_t row_bytes, std::uint32_t rpg, std::uint32_t groups,
        std::optional<std::uint64_t> total = std::nullopt) {
  Txn t;
  t.kind = Kind::kAdd;
  t.dep.kernel = k;
  t.dep.base_address = base;
  t.dep.row_bytes = row_bytes;
  t.dep.rows_per_group = rpg;
  t.dep.groups = groups;
  t.dep.expected_bytes = total;
  return t;
}
Txn set_total(std::int32_t k, std::uint64_t bytes) {
  Txn t;
  t.kind = Kind::kSet;
  t.dep.kernel = k;
  t.total = bytes;
  return t;
}
Txn remove(std::int32_t k) {
  Txn t;
  t.kind = Kind::kRemove;
  t.dep.kernel = k;
  return t;
}
/// A local write of the whole row (no mask).
Txn whole_row(std::uint64_t base, std::uint32_t row_bytes, std::uint64_t row) {
  Txn t;
  t.w.op = Opcode::kRowStore;
  t.w.address = base + row * row_bytes;
  t.w.bytes = row_bytes;
  return t;
}
/// A row store of bytes [from, to) of the row's chunk at `chunk` (a multiple of 128), with a mask;
/// `hole` > 0 leaves bytes [from + hole, from + 2 * hole) out (a merged packet).
Txn row_store(std::uint64_t base, std::uint32_t row_bytes, std::uint64_t row, std::uint32_t chunk, std::uint32_t from,
              std::uint32_t to, std::uint32_t hole = 0) {
  Txn t;
  t.w.op = Opcode::kRowStore;
  t.w.row_offset = chunk + from;
  t.w.address = base + row * row_bytes + chunk + from;
  t.w.bytes = to - from;
  t.w.mask = ByteMask::range(from, to - from);
  if (hole > 0 && from + 2 * hole < to) {
    ByteMask h = ByteMask::range(from + hole, hole);
    t.w.mask.bits[0] &= ~h.bits[0];
    t.w.mask.bits[1] &= ~h.bits[1];
  }
  return t;
}
/// A plain store of bytes [from, to) of the row (no mask).
Txn plain(std::uint64_t address, std::uint32_t bytes) {
  Txn t;
  t.w.op = Opcode::kStore;
  t.w.address = address;
  t.w.bytes = bytes;
  return t;
}
/// The writes that fill row `row` once, cut in random pieces of the kinds above.
std::vector<Txn> row_pieces(std::mt19937_64& rng, std::uint64_t base, std::uint32_t row_bytes, std::uint64_t row) {
  std::vector<Txn> out;
  if (rng() % 4 == 0) {
    out.push_back(whole_row(base, row_bytes, row));
    return out;
  }
  for (std::uint32_t chunk = 0; chunk < row_bytes; chunk += kLineBytes) {
    const std::uint32_t n = std::min<std::uint32_t>(kLineBytes, row_bytes - chunk);
    std::uint32_t from = 0;
    while (from < n) {
      const std::uint32_t to = (rng() % 3 == 0) ? n : std::min<std::uint32_t>(n, from + 1 + static_cast<std::uint32_t>(rng() % n));
      const auto kind = static_cast<unsigned>(rng() % 4);
      if (kind == 0) {
        out.push_back(plain(base + row * row_bytes + chunk + from, to - from));
      } else if (kind == 1 && to - from >= 6) {
        const std::uint32_t hole = 1 + static_cast<std::uint32_t>(rng() % ((to - from) / 3));
        out.push_back(row_store(base, row_bytes, row, chunk, from, to, hole));
        // the hole, in a packet of its own
        out.push_back(row_store(base, row_bytes, row, chunk, from + hole, from + 2 * hole));
      } else {
        out.push_back(row_store(base, row_bytes, row, chunk, from, to));
      }
      from = to;
    }
  }
  return out;
}

// ---- directed corners ---------------------------------------------------------

constexpr std::uint64_t kBaseA = 0x0001'0010;  // not 128-aligned
constexpr std::uint64_t kBaseB = 0x0004'0000;
constexpr std::uint32_t kRowA = 200;           // not a power of two, rows not 128-aligned
constexpr std::uint32_t kRowB = 128;

void fill_row(DamBoard& b, Outcome& o, std::mt19937_64& rng, std::uint64_t base, std::uint32_t row_bytes,
              std::uint64_t row) {
  for (const Txn& t : row_pieces(rng, base, row_bytes, row)) b.run(t, o);
}

/// Every corner: partial last group, total known late, AllReady retiring
/// groups, overlapping kernels, back-pressure (the board's), remove and
/// re-add, a kernel without rows, unmatched writes, refusals.
void directed(DamBoard& b, Outcome& o) {
  std::mt19937_64 rng(5);
  // kernel 1: 3 rows per group, 4 groups, total unknown; kernel 2 on the same rows,
  // 2 rows per group, 5 groups (overlap: every matching entry counts), total known: 7 rows
  b.run(add(1, kBaseA, kRowA, 3, 4), o);
  b.run(add(2, kBaseA, kRowA, 2, 5, 7 * kRowA), o);
  b.run(plain(0x0100'0000, 64), o);  // matches nothing
  for (std::uint64_t r : {1, 0, 2, 6, 5, 3}) fill_row(b, o, rng, kBaseA, kRowA, r);
  // kernel 1's group 1 (rows 3..5) is full; group 2 holds row 6 of 3; kernel 2: groups 0-2 released,
  // group 3 (row 6 of its one row) released, group 4 retired once row 4 arrives
  fill_row(b, o, rng, kBaseA, kRowA, 4);
  // kernel 1's total only now: its partial group 2 is released by the scan, then AllReady, group 3 retired
  b.run(set_total(1, 7 * kRowA), o);
  // refusals: set twice, unknown kernel, duplicate id, bad sizes, beyond the capacity
  b.run(set_total(1, 7 * kRowA), o);
  b.run(set_total(9, kRowA), o);
  b.run(remove(9), o);
  b.run(add(2, kBaseB, kRowB, 1, 1), o);
  b.run(add(3, kBaseB, 0, 1, 1), o);
  b.run(add(3, kBaseB, kRowB, 1, 9), o);
  b.run(add(3, kBaseB, kRowB, 2, 2, 5 * kRowB), o);
  // a kernel without rows: AllReady at once, every group retired
  b.run(add(3, kBaseB, kRowB, 2, 3, 0), o);
  // the table full
  b.run(add(4, kBaseB + 0x1000, kRowB, 4, 2), o);
  b.run(add(5, kBaseB + 0x2000, kRowB, 4, 2), o);
  // remove and re-add: kernel 6 takes kernel 2's slot (1), before kernel 4 (slot 3) in slot order
  b.run(remove(2), o);
  b.run(remove(3), o);
  b.run(add(6, kBaseB + 0x1000, kRowB, 8, 1), o);
  b.run(add(2, kBaseA, kRowA, 7, 1, 7 * kRowA), o);
  for (std::uint64_t r = 0; r < 8; ++r) fill_row(b, o, rng, kBaseB + 0x1000, kRowB, r);  // kernels 4 and 6
  b.run(set_total(4, 8 * kRowB), o);
  b.run(remove(1), o);  // (its rows are written again next: it would count them too)
  for (std::uint64_t r = 0; r < 7; ++r) fill_row(b, o, rng, kBaseA, kRowA, r);  // kernel 2 again
  b.run(remove(2), o);
  b.run(remove(4), o);
  b.run(remove(6), o);
  // total known early, the data after: the partial last group by the write, AllReady with it
  b.run(add(7, kBaseB, kRowB, 4, 3, 6 * kRowB), o);
  for (std::uint64_t r : {5, 4, 0, 1, 2, 3}) fill_row(b, o, rng, kBaseB, kRowB, r);
  b.run(remove(7), o);
}

// ---- constrained-random runs ----------------------------------------------------

struct Region {
  std::uint64_t base = 0;
  std::uint32_t row_bytes = 0;
  std::uint64_t rows = 0;
  std::vector<std::int32_t> kernels;
  std::vector<std::int32_t> unknown;  // kernels whose total is still to be set
  std::vector<Txn> writes;            // what is left to write, in order
};

/// Random kernels on random regions, their writes interleaved, totals at
/// registration or at a random time, kernels removed when their region is
/// written (ids reused). Runs until `transactions` transactions were compared.
Outcome random_run(std::uint32_t seed, std::uint64_t transactions, const std::string& fst, std::uint64_t stop,
                   std::uint64_t fault_cycle = ~0ULL) {
  std::mt19937_64 rng(seed);
  DamBoard b(fst, seed, 40 + static_cast<unsigned>(rng() % 60));
  b.fault_cycle = fault_cycle;
  Outcome o;
  std::vector<Region> regions;
  std::vector<std::int32_t> free_ids;
  for (std::int32_t k = 0; k < 16; ++k) free_ids.push_back(k);
  unsigned used = 0;  // kernels in the table
  std::uint64_t next_base = 0x1000;
  const std::uint32_t row_sizes[] = {16, 48, 100, 128, 200, 256, 272, 520, 1000};
  while (o.transactions < transactions && b.cycles() <= stop) {
    // a new region with one or two kernels when there is room
    if (used + 2 <= kKernels && (regions.empty() || rng() % 8 == 0)) {
      Region rg;
      rg.row_bytes = row_sizes[rng() % 9];
      rg.base = next_base + (rng() % 8) * 16;
      const unsigned nk = 1 + static_cast<unsigned>(rng() % 2);
      std::uint64_t max_rows = ~0ULL;
      std::vector<std::pair<std::uint32_t, std::uint32_t>> shapes;
      for (unsigned i = 0; i < nk; ++i) {
        const std::uint32_t rpg = 1 + static_cast<std::uint32_t>(rng() % 15);
        const std::uint32_t groups = 1 + static_cast<std::uint32_t>(rng() % kMaxGroups);
        shapes.emplace_back(rpg, groups);
        max_rows = std::min<std::uint64_t>(max_rows, std::uint64_t{rpg} * groups);
      }
      rg.rows = rng() % 6 == 0 ? 0 : rng() % (max_rows + 1);
      std::uint64_t span = 0;
      for (unsigned i = 0; i < nk; ++i) {
        const std::int32_t k = free_ids[rng() % free_ids.size()];
        free_ids.erase(std::find(free_ids.begin(), free_ids.end(), k));
        const bool known = rng() % 2 == 0;
        b.run(add(k, rg.base, rg.row_bytes, shapes[i].first, shapes[i].second,
                  known ? std::optional<std::uint64_t>(rg.rows * rg.row_bytes) : std::nullopt),
              o);
        ++used;
        rg.kernels.push_back(k);
        if (!known) rg.unknown.push_back(k);
        span = std::max<std::uint64_t>(span, std::uint64_t{shapes[i].first} * shapes[i].second * rg.row_bytes);
      }
      next_base = (rg.base + span + 0x400) & ~0xFFULL;
      if (next_base > 0xF000'0000) next_base = 0x1000;
      // rows in random order, or nearly in order (the AAU hands them out densely in arrival order)
      std::vector<std::uint64_t> order(rg.rows);
      for (std::uint64_t r = 0; r < rg.rows; ++r) order[r] = r;
      if (rng() % 2 == 0) std::shuffle(order.begin(), order.end(), rng);
      for (std::uint64_t r : order) {
        auto p = row_pieces(rng, rg.base, rg.row_bytes, r);
        if (rng() % 2 == 0) std::shuffle(p.begin(), p.end(), rng);
        rg.writes.insert(rg.writes.end(), p.begin(), p.end());
      }
      regions.push_back(std::move(rg));
      continue;
    }
    if (regions.empty()) continue;
    Region& rg = regions[rng() % regions.size()];
    const unsigned dice = static_cast<unsigned>(rng() % 100);
    if (!rg.unknown.empty() && (dice < 3 || rg.writes.empty())) {
      const std::int32_t k = rg.unknown.back();
      rg.unknown.pop_back();
      b.run(set_total(k, rg.rows * rg.row_bytes), o);
    } else if (dice < 5) {
      b.run(plain(0xF800'0000 + rng() % 4096, 1 + static_cast<std::uint32_t>(rng() % 128)), o);  // no kernel's
    } else if (!rg.writes.empty()) {
      // mostly the next write of the region, now and then a later one
      const std::size_t i = rng() % 4 == 0 ? rng() % rg.writes.size() : 0;
      b.run(rg.writes[i], o);
      rg.writes.erase(rg.writes.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      for (std::int32_t k : rg.kernels) {
        b.run(remove(k), o);
        free_ids.push_back(k);
        --used;
      }
      regions.erase(regions.begin() + (&rg - regions.data()));
    }
  }
  const auto& s = b.golden().stats();
  std::printf("  seed %u: %llu writes (%llu unmatched), %llu groups released, %llu retired, %llu AllReady\n", seed,
              static_cast<unsigned long long>(s.completions), static_cast<unsigned long long>(s.unmatched_completions),
              static_cast<unsigned long long>(s.groups_released), static_cast<unsigned long long>(s.groups_retired),
              static_cast<unsigned long long>(s.all_ready));
  // a run that released nothing checked nothing
  o.expect(s.groups_released > 0 && s.all_ready > 0 && s.groups_retired > 0, b.cycles(),
           [] { return "the run released, retired or completed nothing"; });
  return o;
}

TEST(SbDam, DirectedCorners) {
  DamBoard b("", 3, 50);
  Outcome o;
  directed(b, o);
  EXPECT_EQ(o.mismatches, 0u) << o.first << " (cycle " << o.first_cycle << ")";
  const auto& s = b.golden().stats();
  EXPECT_GT(s.groups_released, 10u);
  EXPECT_GE(s.groups_retired, 4u);
  EXPECT_EQ(s.all_ready, 6u);
  EXPECT_GE(s.unmatched_completions, 1u);
}

TEST(SbDam, RandomSeeds) {
  for (std::uint32_t seed = 100; seed < 120; ++seed) {
    const std::string name = "sb_dam_seed" + std::to_string(seed);
    const std::string msg = moehub::tb::check(name, [seed](const std::string& fst, std::uint64_t stop) {
      return random_run(seed, 20000, fst, stop);
    });
    EXPECT_TRUE(msg.empty()) << msg;
  }
}

TEST(SbDam, RandomMillionTransactions) {
  const std::string msg = moehub::tb::check("sb_dam_random", [](const std::string& fst, std::uint64_t stop) {
    return random_run(11, 1000000, fst, stop);
  });
  EXPECT_TRUE(msg.empty()) << msg;
}

/// Conservation errors: the err report (assertions off) and the assertion (on).
TEST(SbDam, ConservationErrorIsReportedAndAsserted) {
  auto over = [](DamBoard& b, Outcome& o) {
    std::mt19937_64 rng(1);
    b.run(add(1, kBaseB, kRowB, 2, 2), o);
    fill_row(b, o, rng, kBaseB, kRowB, 0);
    fill_row(b, o, rng, kBaseB, kRowB, 1);  // group 0 released
    const Expect e = b.run(whole_row(kBaseB, kRowB, 1), o);  // once more: past its threshold
    return e.err;
  };
  {
    DamBoard b("");
    b.assertions(false);
    Outcome o;
    EXPECT_EQ(over(b, o), 2u);
    EXPECT_EQ(o.mismatches, 0u) << o.first;  // the RTL reported err code 2 as the golden model threw
    // a total below what arrived
    b.run(add(2, kBaseA, kRowA, 2, 2), o);
    std::mt19937_64 rng(2);
    fill_row(b, o, rng, kBaseA, kRowA, 0);
    fill_row(b, o, rng, kBaseA, kRowA, 1);
    EXPECT_EQ(b.run(set_total(2, kRowA), o).err, 3u);
    EXPECT_EQ(o.mismatches, 0u) << o.first;
  }
  // assertions on: the named conservation assertion fails the run
  try {
    DamBoard b("");
    Outcome o;
    over(b, o);
    ADD_FAILURE() << "no RTL assertion failed";
  } catch (const moehub::tb::AssertionFailure& f) {
    EXPECT_NE(std::string(f.what()).find("DamConservation"), std::string::npos) << f.what();
  }
}

TEST(SbDam, InjectedFaultFailsAndWritesWaveform) {
  EXPECT_EQ(moehub::tb::injected_fault_report("sb_dam_injected_fault",
                                              [](const std::string& fst, std::uint64_t stop) {
                                                return random_run(12, 20000, fst, stop, 2000);
                                              }),
            "");
}

TEST(SbDam, Coverage) {
  moehub::tb::coverage_tally().clear();
  {
    DamBoard b("", 3, 50);
    Outcome o;
    directed(b, o);
    EXPECT_EQ(o.mismatches, 0u) << o.first;
  }
  const Outcome o = random_run(13, 20000, "", ~0ULL);
  EXPECT_EQ(o.mismatches, 0u) << o.first;
  const auto missing = moehub::tb::coverage_report(
      "moehub_dam",
      {"cov_write", "cov_write_masked", "cov_unmatched", "cov_overlap", "cov_release",
       "cov_release_partial", "cov_release_on_total", "cov_all_ready", "cov_all_ready_retires",
       "cov_all_ready_on_total", "cov_release_and_all", "cov_rdy_stall", "cov_add", "cov_add_with_total",
       "cov_readd", "cov_set_total", "cov_remove", "cov_table_full", "cov_cfg_refused"});
  EXPECT_TRUE(missing.empty()) << missing.size() << " corners uncovered (listed above)";
}

}  // namespace
