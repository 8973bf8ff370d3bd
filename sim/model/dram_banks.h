// The bank-level timing of device memory (memory.model: banks; docs/memory.md): channels,
// pseudo-channels, bank groups and banks with row buffers, from a technology's timing.
//
// Fast by construction: a transaction (one contiguous run) is cut into row visits, one per
// pseudo-channel ("unit": its own data bus and banks) and row it touches, and each visit is
// timed analytically from per-bank and per-unit state, never burst by burst with events:
//   row hit (open page, the bank's open row)   data from max(request, bus) + tCL
//   row miss                                   precharge when a row is open (after tRAS and
//                                              its last data), activate (after tRP, tRRD since
//                                              the unit's last activate, tFAW since its 4th
//                                              last, a refresh's end), data tRCD + tCL later
//   the unit's data bus                        first come, first served; bursts back to back;
//                                              tWTR + tCL after writes before a read, tRTW
//                                              after reads before a write
//   refresh                                    every tREFI each unit precharges (tRP) and
//                                              refreshes (tRFC) after its current visit; rows
//                                              close
// The address mapping (most significant field first, e.g. RoBaBgCoPcCh) cuts the address into
// row, bank, bank group, column, pseudo-channel and channel. When its three lowest fields are
// Co, Pc and Ch (in any order) the address space is a sequence of sweeps, each one row of one
// bank in every unit: a run is cut into sweeps and each unit's share of a sweep is one visit,
// found by arithmetic, with no walk over bursts. In a long run of whole sweeps a unit streams
// rows back to back once every bank has had its turn: those rows are counted in one step up to
// the next refresh (their activations placed just in time), not visited one by one. A run
// that holds a whole sweep is timed unit by unit (units are independent): each unit's first
// partial row, its rows of the whole sweeps and its last partial row in one go. Units in the
// same state (bit for bit: the decode step's weight streams keep most units in step) share one
// copy of it; those of them that get the same columns are timed once and go on sharing the
// result. Other mappings walk the run burst by burst (exact, slower).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "config/arch_config.h"

namespace lpu::sim {

class DramBanks {
 public:
  // fast_forward false visits every row; by_unit false times a run sweep by sweep over all
  // units (tests compare each with the default).
  explicit DramBanks(const ArchConfig::Memory& m, bool fast_forward = true, bool by_unit = true);

  // Times one contiguous run of `len` bytes at `addr` asked for at `start_ps`; returns when its
  // last byte moved on the data bus (ps). busy() then holds each unit's window of this run, in
  // unit order; with each_unit false, only enough of them for their union (units in step have
  // the same window: by_unit_run() gives only the unit it timed), which spares a pass over the
  // units that took another's results.
  double access(uint64_t addr, uint64_t len, bool is_write, double start_ps, bool each_unit = true);
  struct Busy {
    int unit;
    double start_ps, end_ps;
  };
  const std::vector<Busy>& busy() const { return busy_; }

  struct Counters {
    uint64_t bursts = 0, row_hits = 0, row_misses = 0, refreshes = 0;
    uint64_t fast_rows = 0;  // rows the fast path counted (of row_misses)
    uint64_t copied = 0;     // units that took another's results untimed (by_unit_run)
  };
  const Counters& counters() const { return counters_; }
  int units() const { return static_cast<int>(sid_.size()); }
  uint64_t burst_bytes() const { return burst_bytes_; }
  // A row miss's DRAM time before its first data: tRCD + tCL.
  double miss_latency_ps() const { return t_.rcd + t_.cl; }

 private:
  struct Bank {
    int64_t row = -1;  // open row, -1 closed
    double act = -1e300, data_end = 0, next_act = 0;
  };
  struct Unit {
    double bus_free = 0, last_act = -1e300, refresh_end = 0, next_refresh = 0;
    double faw[4] = {-1e300, -1e300, -1e300, -1e300};
    int faw_i = 0;
    bool wrote = false, used = false;
  };
  struct Pending {  // the visit being gathered for a unit by the burst walk
    int64_t row = -1;
    int bank = -1;
    uint64_t bursts = 0;
  };
  enum Field { Ro, Ba, Bg, Co, Pc, Ch };

  struct BankRow {
    int bank;
    int64_t row;
  };
  // Times one row visit of `bursts` bursts; returns when its data starts.
  double visit(int unit, int bank, int64_t row, uint64_t bursts, bool is_write, double t0);
  void walk(uint64_t b, uint64_t hi, bool is_write, double t0);
  // A unit's columns [a, e) of one sweep's row (a partial sweep): the row, and the burst
  // indices within the sweep (e == a: none).
  struct Part {
    BankRow at{-1, -1};
    uint64_t a = 0, e = 0;
  };
  BankRow sweep_target(uint64_t sweep) const;
  uint64_t columns(int unit, const Part& p) const {
    const auto cols = static_cast<int64_t>(row_bursts_), w = static_cast<int64_t>(w_co_);
    const int64_t off = unit_offset_[static_cast<size_t>(unit)];
    auto below = [&](uint64_t bound) {  // columns c with c * w + off < bound
      const auto b = static_cast<int64_t>(bound);
      return b <= off ? 0 : std::min(cols, (b - off + w - 1) / w);
    };
    return static_cast<uint64_t>(below(p.e) - below(p.a));
  }
  // by_unit_run()'s columns for every unit without a division per unit. With a part's bounds
  // as q * w_co_ + r and every unit's offset below w_co_ (Co above Pc and Ch), a unit at offset
  // off has min(cols, q + (off < r)) columns below a bound: its columns of the head and the
  // tail follow from four comparisons, a key of four bits (1, 2: off below the head's a, e;
  // 4, 8: the tail's), and columns_[key] holds them (head, tail).
  struct Cut {
    uint64_t ra, re, ta, te;  // the remainders r of the head's a, e and the tail's a, e
  };
  Cut cut_columns(const Part& head, const Part& tail);
  size_t column_key(int unit, const Cut& c) const {
    const auto off = static_cast<uint64_t>(unit_offset_[static_cast<size_t>(unit)]);
    return size_t{off < c.ra} | size_t{off < c.re} << 1 | size_t{off < c.ta} << 2 | size_t{off < c.te} << 3;
  }
  uint64_t columns_[16][2] = {};
  void sweep_targets(uint64_t first, uint64_t end);
  void by_unit_run(uint64_t b, uint64_t hi, bool is_write, double t0);
  // What by_unit_run() did to the units that started a run in slot `from` and got the same
  // columns: they end in slot `to`, all but one (the unit timed, `unit`) without being timed
  // (`joined`: each took the unit's window and what its visits added to the counters). A move
  // not `timed` sends its units to another move's slot: their state was the same bit for bit.
  struct Move {
    uint32_t from, to;
    uint64_t head_n, tail_n;
    int unit;
    bool timed;
    uint64_t joined;
    Counters added;
    size_t next;  // the next move from the same slot in this run, or npos
  };
  static constexpr size_t npos = ~size_t{0};
  size_t find_move(uint32_t from, uint64_t head_n, uint64_t tail_n);
  size_t timed_move(int unit, const Part& head, uint64_t head_n, const Part& tail, uint64_t tail_n, bool is_write,
                    double t0);
  size_t add_move(const Move& m);
  void settle_moves();
  void unit_run(int unit, const Part& head, uint64_t head_n, const Part& tail, uint64_t tail_n, bool is_write,
                double t0);
  bool same_state(uint32_t a, uint32_t b) const;
  std::vector<Move> moves_;
  std::vector<uint64_t> move_run_;  // per slot: the run (run_) whose moves first_move_ holds
  std::vector<size_t> first_move_;
  uint64_t run_ = 0;

  // Each unit's state (its Unit and banks) lives in a slot of a pool that the units in the
  // same state share (all at the start; a weight stream keeps them in step): sid_ is a unit's
  // slot, refs_ the units in a slot. Whatever changes a unit's state first gives it a slot of
  // its own (own(): a copy when shared); by_unit_run() moves a slot's units that stay in step
  // to one new slot together, so only one of them is timed and none is copied.
  std::vector<uint32_t> sid_, refs_, free_;
  std::vector<Unit> pool_units_;
  std::vector<Bank> pool_banks_;
  Unit& state(int unit) { return pool_units_[sid_[static_cast<size_t>(unit)]]; }
  const Unit& state(int unit) const { return pool_units_[sid_[static_cast<size_t>(unit)]]; }
  Bank* banks_of(int unit) { return &pool_banks_[sid_[static_cast<size_t>(unit)] * bank_count()]; }
  const Bank* banks_of(int unit) const { return &pool_banks_[sid_[static_cast<size_t>(unit)] * bank_count()]; }
  size_t bank_count() const { return static_cast<size_t>(banks_per_unit_); }
  uint32_t new_slot(uint32_t copy_of);  // a slot (refs 1) holding a copy of another's state
  void own(int unit) {
    if (refs_[sid_[static_cast<size_t>(unit)]] > 1) own_copy(unit);
  }
  void own_copy(int unit);
  void place_rows(int unit, size_t s, size_t from, size_t k, size_t after_refresh);
  void partial_sweep(uint64_t sweep, uint64_t a, uint64_t e, bool is_write, double t0);
  void sweep_run(uint64_t first, uint64_t count, bool is_write, double t0);
  void run_unit(int unit, bool is_write, double t0);
  bool streams_from(int unit, size_t s, size_t n, bool is_write, double t0) const;
  void fast_forward(int unit, size_t s, size_t k, bool is_write);
  void refresh(Unit& u, Bank* banks, double t);
  // Whether refresh(u, t) has anything to do (most visits: no; spares the call).
  static bool refresh_due(const Unit& u, double t) { return std::max(t, u.bus_free) >= u.next_refresh; }
  void flush(int unit, bool is_write, double t0);
  void set_digits(uint64_t burst_index);
  void step_digits(size_t from);
  int unit_of() const { return digit_[field_pos_[Ch]] * pcs_ + digit_[field_pos_[Pc]]; }
  int bank_of() const { return digit_[field_pos_[Bg]] * banks_per_group_ + digit_[field_pos_[Ba]]; }
  int64_t row_of() const { return static_cast<int64_t>(digit_[field_pos_[Ro]]); }

  struct Timing {  // ps
    double rcd, rp, cl, ras, rrd, faw, wtr, rtw, refi, rfc, burst;
  } t_;
  bool open_page_;
  uint64_t burst_bytes_;
  int pcs_, banks_per_group_, banks_per_unit_;
  uint64_t row_bursts_;
  // The mapping, least significant field first: its field and count (the row's is unbounded).
  std::vector<Field> order_;
  std::vector<uint64_t> radix_;
  size_t field_pos_[6] = {};
  std::vector<uint64_t> digit_;
  bool row_sweeps_ = false;  // the three lowest fields are Co, Pc, Ch
  uint64_t sweep_bursts_ = 0;
  uint64_t w_co_ = 1;
  std::vector<int64_t> unit_offset_;
  bool offsets_below_w_ = false;
  double row_time_ = 0;
  bool fast_forward_ok_ = false, by_unit_ = true, each_unit_ = true;
  std::vector<BankRow> seq_;  // the rows of a run of sweeps
  std::vector<std::pair<size_t, double>> chunks_;

  std::vector<Pending> pending_;
  std::vector<int> touched_;  // units with a pending visit
  std::vector<double> first_, last_;
  std::vector<uint64_t> visited_;  // a bit per unit with a visit in this access
  void note_first(size_t unit, double start) {
    first_[unit] = start;
    visited_[unit / 64] |= uint64_t{1} << (unit % 64);
  }
  std::vector<Busy> busy_;
  Counters counters_;
};

}  // namespace lpu::sim
