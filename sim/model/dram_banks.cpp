#include "model/dram_banks.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

#include "support/error.h"

namespace lpu::sim {

DramBanks::DramBanks(const ArchConfig::Memory& m, bool fast_forward, bool by_unit) : by_unit_(by_unit) {
  const double ns = 1000.0;  // ps
  t_ = {m.tRCD_ns * ns,
        m.tRP_ns * ns,
        m.tCL_ns * ns,
        m.tRAS_ns * ns,
        m.tRRD_ns * ns,
        m.tFAW_ns * ns,
        m.tWTR_ns * ns,
        m.tRTW_ns * ns,
        m.tREFI_ns * ns,
        m.tRFC_ns * ns,
        0};
  t_.burst = m.burst_length * 1e6 / m.data_rate_mtps;  // beats at MT/s, in ps
  open_page_ = m.page_policy == ArchConfig::Memory::PagePolicy::Open;
  burst_bytes_ = static_cast<uint64_t>(m.burst_bytes());
  pcs_ = m.pseudo_channels;
  banks_per_group_ = m.banks_per_group;
  banks_per_unit_ = m.bank_groups * m.banks_per_group;
  row_bursts_ = static_cast<uint64_t>(m.row_bytes) / burst_bytes_;
  const auto count = [&](Field f) -> uint64_t {
    switch (f) {
      case Ba: return static_cast<uint64_t>(m.banks_per_group);
      case Bg: return static_cast<uint64_t>(m.bank_groups);
      case Co: return row_bursts_;
      case Pc: return static_cast<uint64_t>(m.pseudo_channels);
      case Ch: return static_cast<uint64_t>(m.channels);
      case Ro: break;
    }
    return std::numeric_limits<uint64_t>::max();
  };
  const std::string names[6] = {"Ro", "Ba", "Bg", "Co", "Pc", "Ch"};
  for (size_t i = m.address_mapping.size(); i >= 2; i -= 2) {  // least significant first
    const std::string f = m.address_mapping.substr(i - 2, 2);
    const auto field = static_cast<Field>(std::find(names, names + 6, f) - names);
    if (field > Ch) throw InternalError("memory.address_mapping: unknown field " + f);
    field_pos_[field] = order_.size();
    order_.push_back(field);
    radix_.push_back(count(field));
  }
  digit_.assign(order_.size(), 0);
  std::vector<Field> low(order_.begin(), order_.begin() + 3);
  std::sort(low.begin(), low.end());
  row_sweeps_ = low == std::vector<Field>{Co, Pc, Ch};
  sweep_bursts_ = row_bursts_ * static_cast<uint64_t>(m.pseudo_channels) * static_cast<uint64_t>(m.channels);
  // Within a sweep: the burst index of column c of unit u is c * w_co_ + unit_offset_[u].
  uint64_t w[6] = {}, weight = 1;
  for (size_t i = 0; i < 3; ++i) {
    w[order_[i]] = weight;
    weight *= radix_[i];
  }
  w_co_ = w[Co];
  for (int ch = 0; ch < m.channels; ++ch)
    for (int pc = 0; pc < pcs_; ++pc)
      unit_offset_.push_back(
          static_cast<int64_t>(static_cast<uint64_t>(pc) * w[Pc] + static_cast<uint64_t>(ch) * w[Ch]));
  // Rows streamed back to back hide their banks' precharge and activation behind the other
  // banks' rows when a bank's turn comes round late enough (tRP + tRCD + tCL, tRAS + tRP) and
  // rows are long enough for the activation windows (tRRD, tFAW / 4).
  offsets_below_w_ = std::all_of(unit_offset_.begin(), unit_offset_.end(),
                                 [&](int64_t off) { return static_cast<uint64_t>(off) < w_co_; });
  row_time_ = static_cast<double>(row_bursts_) * t_.burst;
  const double p = banks_per_unit_;
  fast_forward_ok_ = fast_forward && (p - 1) * row_time_ >= t_.rp + t_.rcd + t_.cl && p * row_time_ >= t_.ras + t_.rp &&
                     row_time_ >= t_.rrd && 4 * row_time_ >= t_.faw;
  const size_t n = static_cast<size_t>(m.channels) * static_cast<size_t>(pcs_);
  sid_.assign(n, 0);  // all in one state: slot 0
  refs_.assign(1, static_cast<uint32_t>(n));
  pool_units_.assign(1, Unit{});
  pool_units_[0].next_refresh = t_.refi;
  pool_banks_.assign(bank_count(), Bank{});
  move_run_.assign(1, 0);
  first_move_.assign(1, npos);
  pending_.assign(n, Pending{});
  first_.assign(n, -1);
  visited_.assign((n + 63) / 64, 0);
  last_.assign(n, 0);
}

uint32_t DramBanks::new_slot(uint32_t copy_of) {
  uint32_t r;
  if (!free_.empty()) {
    r = free_.back();
    free_.pop_back();
  } else {
    r = static_cast<uint32_t>(pool_units_.size());
    pool_units_.emplace_back();
    pool_banks_.resize(pool_banks_.size() + bank_count());
    refs_.push_back(0);
    move_run_.push_back(0);
    first_move_.push_back(npos);
  }
  pool_units_[r] = pool_units_[copy_of];
  std::copy_n(&pool_banks_[copy_of * bank_count()], bank_count(), &pool_banks_[r * bank_count()]);
  refs_[r] = 1;
  return r;
}

// A unit about to change leaves the slot it shares for a copy of its own.
void DramBanks::own_copy(int unit) {
  uint32_t& sid = sid_[static_cast<size_t>(unit)];
  --refs_[sid];
  sid = new_slot(sid);
}

void DramBanks::set_digits(uint64_t b) {
  for (size_t i = 0; i < order_.size(); ++i) {
    if (radix_[i] == std::numeric_limits<uint64_t>::max()) {
      digit_[i] = b;
      b = 0;
    } else {
      digit_[i] = b % radix_[i];
      b /= radix_[i];
    }
  }
}

void DramBanks::step_digits(size_t from) {
  for (size_t i = from; i < digit_.size(); ++i) {
    if (++digit_[i] < radix_[i]) return;
    digit_[i] = 0;
  }
}

// Refreshes due by the time the unit would next use its bus. Those due while it sat idle for
// longer than an interval fit in the idle time (they close the rows and cost nothing else).
void DramBanks::refresh(Unit& u, Bank* banks, double t) {
  const double now = std::max(t, u.bus_free);
  if (now < u.next_refresh) return;
  const double idle = now - u.next_refresh;
  if (idle > t_.refi) {
    const auto skipped = static_cast<uint64_t>(idle / t_.refi);
    u.next_refresh += static_cast<double>(skipped) * t_.refi;
    counters_.refreshes += skipped;
  }
  while (u.next_refresh <= now) {
    u.refresh_end = std::max(u.next_refresh, u.bus_free) + t_.rp + t_.rfc;  // precharge all, refresh
    u.next_refresh += t_.refi;
    ++counters_.refreshes;
  }
  for (size_t k = 0; k < bank_count(); ++k) banks[k].row = -1;
}

double DramBanks::visit(int unit, int bank, int64_t row, uint64_t bursts, bool is_write, double t0) {
  own(unit);
  Unit& u = state(unit);
  Bank* const banks = banks_of(unit);
  if (refresh_due(u, t0)) refresh(u, banks, t0);
  Bank& k = banks[bank];
  double ready;  // when the bank can put data on the bus
  if (k.row == row) {
    ++counters_.row_hits;
    ready = std::max(t0, k.act + t_.rcd) + t_.cl;
  } else {
    ++counters_.row_misses;
    double act = std::max({t0, k.next_act, u.refresh_end, u.last_act + t_.rrd, u.faw[u.faw_i] + t_.faw});
    // Open page: the row stays open until a miss asks for another one (not before the
    // request: the controller keeps it for hits), tRAS after its activation and after its data.
    if (k.row >= 0) act = std::max(act, std::max({t0, k.act + t_.ras, k.data_end}) + t_.rp);
    u.faw[u.faw_i] = act;
    u.faw_i = (u.faw_i + 1) & 3;
    u.last_act = act;
    k.act = act;
    k.row = row;
    ready = act + t_.rcd + t_.cl;
  }
  double bus = u.bus_free;
  if (u.used && u.wrote != is_write) bus += is_write ? t_.rtw : t_.wtr + t_.cl;
  const double start = std::max(ready, bus);
  const double end = start + static_cast<double>(bursts) * t_.burst;
  u.bus_free = end;
  u.wrote = is_write;
  u.used = true;
  k.data_end = end;
  if (!open_page_) {  // auto-precharge: the row closes after its data
    k.row = -1;
    k.next_act = std::max(k.act + t_.ras, end) + t_.rp;
  }
  counters_.bursts += bursts;
  const auto i = static_cast<size_t>(unit);
  if (first_[i] < 0) note_first(i, start);
  last_[i] = end;
  return start;
}

void DramBanks::flush(int unit, bool is_write, double t0) {
  Pending& p = pending_[static_cast<size_t>(unit)];
  if (p.bursts) visit(unit, p.bank, p.row, p.bursts, is_write, t0);
  p.bursts = 0;
}

void DramBanks::walk(uint64_t b, uint64_t hi, bool is_write, double t0) {
  std::vector<int>& pending_units = touched_;
  set_digits(b);
  for (; b < hi; ++b, step_digits(0)) {
    const int u = unit_of();
    Pending& p = pending_[static_cast<size_t>(u)];
    const int bank = bank_of();
    const int64_t row = row_of();
    if (p.bursts && p.bank == bank && p.row == row) {
      ++p.bursts;
      continue;
    }
    if (p.bursts)
      flush(u, is_write, t0);
    else
      pending_units.push_back(u);
    p = {row, bank, 1};
  }
  for (int u : pending_units) flush(u, is_write, t0);
  pending_units.clear();
}

DramBanks::BankRow DramBanks::sweep_target(uint64_t sweep) const {
  uint64_t d[6] = {};
  for (size_t i = 3; i < order_.size(); ++i) {
    if (radix_[i] == std::numeric_limits<uint64_t>::max()) {
      d[order_[i]] = sweep;
      sweep = 0;
    } else {
      d[order_[i]] = sweep % radix_[i];
      sweep /= radix_[i];
    }
  }
  return {static_cast<int>(d[Bg]) * banks_per_group_ + static_cast<int>(d[Ba]), static_cast<int64_t>(d[Ro])};
}

// seq_: the targets of sweeps [first, end): sweep_target()'s digits, stepped from one sweep to
// the next instead of divided out for each.
void DramBanks::sweep_targets(uint64_t first, uint64_t end) {
  seq_.clear();
  if (first >= end) return;
  uint64_t d[6] = {};  // the digit of the field at each position of order_ (3 and up)
  uint64_t sweep = first;
  for (size_t i = 3; i < order_.size(); ++i) {
    if (radix_[i] == std::numeric_limits<uint64_t>::max()) {
      d[i] = sweep;
      sweep = 0;
    } else {
      d[i] = sweep % radix_[i];
      sweep /= radix_[i];
    }
  }
  const size_t ro = field_pos_[Ro], bg = field_pos_[Bg], ba = field_pos_[Ba];
  for (uint64_t s = first; s < end; ++s) {
    seq_.push_back({static_cast<int>(d[bg]) * banks_per_group_ + static_cast<int>(d[ba]), static_cast<int64_t>(d[ro])});
    for (size_t i = 3; i < order_.size(); ++i) {  // the row's radix is unbounded: it never wraps
      if (++d[i] < radix_[i]) break;
      d[i] = 0;
    }
  }
}

// Bursts [a, e) of one sweep: each unit's lie in one row of one bank, a run of its columns.
void DramBanks::partial_sweep(uint64_t sweep, uint64_t a, uint64_t e, bool is_write, double t0) {
  const Part part{sweep_target(sweep), a, e};
  for (int u = 0; u < units(); ++u) {
    const uint64_t n = columns(u, part);
    if (n > 0) visit(u, part.at.bank, part.at.row, n, is_write, t0);
  }
}

// A run [b, hi) of at least a burst per unit, unit by unit: each unit's columns of the partial
// sweep before the whole ones, its rows of the whole sweeps, its columns of the partial sweep
// after them. access()'s loop times the same visits sweep by sweep over all units; a unit's
// timing depends only on its own visits, in order, so the results are the same, with one pass
// over the units instead of three.
void DramBanks::by_unit_run(uint64_t b, uint64_t hi, bool is_write, double t0) {
  const uint64_t sb = sweep_bursts_;
  const uint64_t first = (b + sb - 1) / sb, end = hi / sb;  // whole sweeps [first, end)
  Part head, tail;
  if (first > end) {  // within one sweep
    head = {sweep_target(end), b % sb, hi % sb};
  } else {
    if (b % sb) head = {sweep_target(first - 1), b % sb, sb};
    if (hi % sb) tail = {sweep_target(end), 0, hi % sb};
  }
  sweep_targets(first, end);
  moves_.clear();
  ++run_;
  const bool has_head = head.e > head.a, has_tail = tail.e > tail.a;
  const Cut cut = cut_columns(head, tail);
  auto fits = [&](size_t m, uint32_t from, uint64_t head_n, uint64_t tail_n) {
    return m != npos && moves_[m].from == from && moves_[m].head_n == head_n && moves_[m].tail_n == tail_n;
  };
  // The move the last unit with the same column key took: most often the next one's too (units
  // with other columns come in between: a head or tail cuts through each channel's pseudo-channels).
  size_t last[16];
  std::fill_n(last, 16, npos);
  const int n = units();
  for (int u = 0; u < n; ++u) {
    size_t key = 0;
    uint64_t head_n, tail_n;
    if (offsets_below_w_) {
      key = column_key(u, cut);
      head_n = columns_[key][0];
      tail_n = columns_[key][1];
    } else {
      head_n = has_head ? columns(u, head) : 0;
      tail_n = has_tail ? columns(u, tail) : 0;
    }
    const uint32_t from = sid_[static_cast<size_t>(u)];
    size_t m = last[key];
    if (!fits(m, from, head_n, tail_n)) {
      m = move_run_[from] == run_ ? first_move_[from] : npos;  // the slot's latest move, else another
      if (!fits(m, from, head_n, tail_n)) m = find_move(from, head_n, tail_n);
    }
    if (m == npos) {
      last[key] = timed_move(u, head, head_n, tail, tail_n, is_write, t0);
      continue;
    }
    // In the state the move's unit was in, with the same columns: its results, without a copy;
    // its window too (the same as the timed unit's) when each unit's is asked for.
    Move& x = moves_[m];
    const auto i = static_cast<size_t>(u), t = static_cast<size_t>(x.unit);
    sid_[i] = x.to;
    ++x.joined;
    last[key] = m;
    if (!each_unit_) continue;
    if (first_[t] >= 0) note_first(i, first_[t]);
    last_[i] = last_[t];
  }
  settle_moves();
}

// The remainders of the head's and tail's bounds, and columns_ for each key (those of keys no
// unit has are never asked for). An empty part (a = e = 0) gives no columns.
DramBanks::Cut DramBanks::cut_columns(const Part& head, const Part& tail) {
  const uint64_t w = w_co_, cols = row_bursts_;
  for (size_t key = 0; key < 16; ++key) {
    auto below = [&](uint64_t bound, size_t bit) { return std::min(cols, bound / w + ((key >> bit) & 1)); };
    columns_[key][0] = below(head.e, 1) - below(head.a, 0);
    columns_[key][1] = below(tail.e, 3) - below(tail.a, 2);
  }
  return {head.a % w, head.e % w, tail.a % w, tail.e % w};
}

// A move of this run for units that start in slot `from` and get these columns, or npos. One
// from the same slot, else one from a slot whose state is the same bit for bit (units that
// went their own ways often come back into step: a stream rewrites a unit's state from its
// bus); only the last few moves are compared (a few states per run in a decode step).
size_t DramBanks::find_move(uint32_t from, uint64_t head_n, uint64_t tail_n) {
  if (move_run_[from] == run_)
    for (size_t m = first_move_[from]; m != npos; m = moves_[m].next)
      if (moves_[m].head_n == head_n && moves_[m].tail_n == tail_n) return m;
  const size_t n = moves_.size(), look = 8, oldest = n > look ? n - look : 0;
  for (size_t m = n; m > oldest; --m) {
    const Move& x = moves_[m - 1];
    if (x.timed && x.head_n == head_n && x.tail_n == tail_n && same_state(from, x.from)) {
      Move y = x;
      y.from = from;
      y.timed = false;
      y.joined = 0;
      return add_move(y);
    }
  }
  return npos;
}

// Whether two slots hold the same state bit for bit. Before a run's end no slot a move left
// has changed: a move's timing changes the new slot only.
bool DramBanks::same_state(uint32_t a, uint32_t b) const {
  const size_t p = bank_count();
  // Unit's fields end at `used` (then padding); banks have none.
  return std::memcmp(&pool_units_[a], &pool_units_[b], offsetof(Unit, used) + sizeof(bool)) == 0 &&
         std::memcmp(&pool_banks_[a * p], &pool_banks_[b * p], p * sizeof(Bank)) == 0;
}

// The move's index; it is listed under its slot for find_move().
size_t DramBanks::add_move(const Move& m) {
  moves_.push_back(m);
  Move& x = moves_.back();
  if (move_run_[x.from] != run_) {
    move_run_[x.from] = run_;
    x.next = npos;
  } else {
    x.next = first_move_[x.from];
  }
  first_move_[x.from] = moves_.size() - 1;
  return moves_.size() - 1;
}

// The unit leaves its slot for a copy (the slot keeps the state for the units still to come)
// and is timed; what its visits add to the counters is kept for the units that join it.
size_t DramBanks::timed_move(int unit, const Part& head, uint64_t head_n, const Part& tail, uint64_t tail_n,
                             bool is_write, double t0) {
  const auto i = static_cast<size_t>(unit);
  const uint32_t from = sid_[i];
  sid_[i] = new_slot(from);  // refs_[from] is settled at the run's end
  const Counters before = counters_;
  unit_run(unit, head, head_n, tail, tail_n, is_write, t0);
  const Counters& c = counters_;
  const Counters added{c.bursts - before.bursts,       c.row_hits - before.row_hits,   c.row_misses - before.row_misses,
                       c.refreshes - before.refreshes, c.fast_rows - before.fast_rows, 0};
  return add_move({from, sid_[i], head_n, tail_n, unit, true, 0, added, npos});
}

// The run's end: the slots' unit counts, the joined units' counters (those of the unit timed,
// once per unit: integers, so in any order), the slots no unit is left in back to the pool.
void DramBanks::settle_moves() {
  for (const Move& m : moves_) {
    refs_[m.to] += static_cast<uint32_t>(m.joined);
    refs_[m.from] -= static_cast<uint32_t>(m.joined + (m.timed ? 1 : 0));
    if (refs_[m.from] == 0) free_.push_back(m.from);
    counters_.bursts += m.added.bursts * m.joined;
    counters_.row_hits += m.added.row_hits * m.joined;
    counters_.row_misses += m.added.row_misses * m.joined;
    counters_.refreshes += m.added.refreshes * m.joined;
    counters_.fast_rows += m.added.fast_rows * m.joined;
    counters_.copied += m.joined;
  }
}

void DramBanks::unit_run(int unit, const Part& head, uint64_t head_n, const Part& tail, uint64_t tail_n, bool is_write,
                         double t0) {
  if (head_n) visit(unit, head.at.bank, head.at.row, head_n, is_write, t0);
  run_unit(unit, is_write, t0);
  if (tail_n) visit(unit, tail.at.bank, tail.at.row, tail_n, is_write, t0);
}

// `count` whole sweeps from `first`: unit by unit (units are independent), each through its
// rows in address order.
void DramBanks::sweep_run(uint64_t first, uint64_t count, bool is_write, double t0) {
  sweep_targets(first, first + count);
  for (int u = 0; u < units(); ++u) run_unit(u, is_write, t0);
}

// A unit's rows of a run of sweeps: visited one by one until streams_from() finds that every
// later row starts as soon as the bus is free; the rest of the run is then counted in one step.
void DramBanks::run_unit(int unit, bool is_write, double t0) {
  own(unit);  // before the reference: visits then change the unit's own slot
  const Unit& u = state(unit);
  const size_t n = seq_.size();
  size_t streak = 0;  // rows in a row that started when the bus was free
  for (size_t s = 0; s < n; ++s) {
    // Worth a look at the start, after the first row (an idle unit's waits for its request),
    // and once every bank had a row of the stream (the stream then always qualifies).
    const bool look = s < 2 || streak >= static_cast<size_t>(banks_per_unit_);
    if (fast_forward_ok_ && look && streams_from(unit, s, n - s, is_write, t0)) {
      fast_forward(unit, s, n - s, is_write);
      return;
    }
    const double before = u.bus_free;
    const bool used = u.used;
    const double start = visit(unit, seq_[s].bank, seq_[s].row, row_bursts_, is_write, t0);
    streak = used && start == before ? streak + 1 : 0;
  }
}

// Whether rows seq_[s, s + n) all start as soon as the unit's bus is free. They do when the
// first `banks` of them (distinct banks: a run of sweeps turns through them all) can open just
// in time, tRCD + tCL before the bus frees for them: each row's bank precharged and ready
// (tRAS, its last data, tRP), activations far enough from the unit's last ones (tRRD, tFAW)
// and from a refresh. Every later row then does too (fast_forward_ok_: a bank's next row
// opens while the other banks stream; after a refresh the rows reopen one per tRRD while the
// first one streams). An activation earlier than just in time only helps, so the timing of
// the data is what a visit per row gives.
bool DramBanks::streams_from(int unit, size_t s, size_t n, bool is_write, double t0) const {
  const Unit& u = state(unit);
  const double b0 = u.bus_free;
  if ((u.used && u.wrote != is_write) || b0 < t0) return false;  // a turnaround, or an idle bus
  if (b0 >= u.next_refresh) return true;                         // a refresh first: every bank closes
  const Bank* banks = banks_of(unit);
  size_t check = std::min(n, static_cast<size_t>(banks_per_unit_));
  // Only rows before the refresh: the division only where the refresh may come first (room
  // more than check + 1 rows leaves check rows whatever the quotient's rounding).
  const double room = u.next_refresh - b0;
  if (room <= static_cast<double>(check + 1) * row_time_)
    check = std::min(check, static_cast<size_t>(std::ceil(room / row_time_)));
  for (size_t i = 0; i < check; ++i) {
    const double act = b0 + static_cast<double>(i) * row_time_ - t_.rcd - t_.cl;
    const Bank& k = banks[seq_[s + i].bank];
    if (k.row == seq_[s + i].row) return false;  // a hit: visited as one
    const double ready = k.row >= 0 ? std::max({t0, k.act + t_.ras, k.data_end}) + t_.rp : std::max(t0, k.next_act);
    if (ready > act) return false;
    if (i == 0 && (u.refresh_end > act || u.last_act + t_.rrd > act)) return false;
    if (i < 4 && u.faw[(u.faw_i + static_cast<int>(i)) & 3] + t_.faw > act) return false;
  }
  return true;
}

// Rows seq_[s, s + k) of a unit back to back from its bus's free time, each a row miss whose
// activation came just in time (tRCD + tCL before its data). A refresh falls due before the
// first row that would start after its time: the bus then waits tRP + tRFC and the next row's
// tRCD + tCL, as a visit would. The banks keep the last rows' state.
void DramBanks::fast_forward(int unit, size_t s, size_t k, bool is_write) {
  own(unit);
  Unit& u = state(unit);
  chunks_.clear();  // (first row, its start) of each stretch between refreshes
  double bus = u.bus_free;
  size_t done = 0, after_refresh = 0;
  if (bus + static_cast<double>(k) * row_time_ < u.next_refresh) {  // most runs: no refresh falls due
    chunks_.emplace_back(0, bus);
    bus += static_cast<double>(k) * row_time_;
    done = k;
  }
  while (done < k) {
    if (bus >= u.next_refresh) {
      u.refresh_end = bus + t_.rp + t_.rfc;
      u.next_refresh += t_.refi;
      ++counters_.refreshes;
      bus = u.refresh_end + t_.rcd + t_.cl;
      after_refresh = done;
      continue;
    }
    const auto room = static_cast<size_t>(std::ceil((u.next_refresh - bus) / row_time_));
    const size_t rows = std::min(k - done, std::max<size_t>(room, 1));
    chunks_.emplace_back(done, bus);
    bus += static_cast<double>(rows) * row_time_;
    done += rows;
  }
  auto start_of = [&](size_t i) {
    size_t c = chunks_.size() - 1;
    while (chunks_[c].first > i) --c;
    return chunks_[c].second + static_cast<double>(i - chunks_[c].first) * row_time_;
  };
  Bank* banks = banks_of(unit);
  const size_t from = k > static_cast<size_t>(banks_per_unit_) ? k - static_cast<size_t>(banks_per_unit_) : 0;
  for (size_t i = from; i < k; ++i) {
    const double start = start_of(i), end = start + row_time_;
    Bank& bk = banks[seq_[s + i].bank];
    bk.act = start - t_.rcd - t_.cl;
    bk.row = open_page_ && i >= after_refresh ? seq_[s + i].row : -1;
    bk.data_end = end;
    if (!open_page_) bk.next_act = std::max(bk.act + t_.ras, end) + t_.rp;
    if (i + 4 >= k) {
      u.faw[u.faw_i] = bk.act;
      u.faw_i = (u.faw_i + 1) & 3;
      u.last_act = bk.act;
    }
  }
  const auto i = static_cast<size_t>(unit);
  if (first_[i] < 0) note_first(i, chunks_.front().second);
  u.bus_free = bus;
  u.wrote = is_write;
  u.used = true;
  last_[i] = bus;
  counters_.row_misses += k;
  counters_.fast_rows += k;
  counters_.bursts += k * row_bursts_;
}

double DramBanks::access(uint64_t addr, uint64_t len, bool is_write, double t0, bool each_unit) {
  busy_.clear();
  each_unit_ = each_unit;
  uint64_t b = addr / burst_bytes_;
  const uint64_t hi = (addr + len + burst_bytes_ - 1) / burst_bytes_;
  if (row_sweeps_ && by_unit_ && hi - b >= static_cast<uint64_t>(units())) {  // else a walk is cheaper
    by_unit_run(b, hi, is_write, t0);
    b = hi;
  }
  while (row_sweeps_ && b < hi) {
    const uint64_t sweep = b / sweep_bursts_, base = sweep * sweep_bursts_;
    const uint64_t a = b - base, e = std::min(hi - base, sweep_bursts_);
    if (a == 0 && e == sweep_bursts_) {  // whole sweeps
      const uint64_t n = (hi - base) / sweep_bursts_;
      sweep_run(sweep, n, is_write, t0);
      b = base + n * sweep_bursts_;
      continue;
    }
    if (e - a < static_cast<uint64_t>(units()))
      walk(b, base + e, is_write, t0);  // a few bursts: cheaper than a look at every unit
    else
      partial_sweep(sweep, a, e, is_write, t0);
    b = base + e;
  }
  if (b < hi) walk(b, hi, is_write, t0);
  double done = t0;
  for (size_t w = 0; w < visited_.size(); ++w) {  // the units visited, in order
    for (uint64_t bits = visited_[w]; bits; bits &= bits - 1) {
      const size_t u = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      busy_.push_back({static_cast<int>(u), first_[u], last_[u]});
      done = std::max(done, last_[u]);
      first_[u] = -1;
    }
    visited_[w] = 0;
  }
  return done;
}

}  // namespace lpu::sim
