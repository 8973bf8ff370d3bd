#include "model/dram_banks.h"

#include <algorithm>
#include <limits>

#include "support/error.h"

namespace lpu::sim {

DramBanks::DramBanks(const ArchConfig::Memory& m) {
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
  units_.assign(static_cast<size_t>(m.channels) * static_cast<size_t>(pcs_), Unit{});
  for (auto& u : units_) u.next_refresh = t_.refi;
  banks_.assign(units_.size() * static_cast<size_t>(banks_per_unit_), Bank{});
  pending_.assign(units_.size(), Pending{});
  first_.assign(units_.size(), -1);
  last_.assign(units_.size(), 0);
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
void DramBanks::refresh(Unit& u, double t) {
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
  const size_t first = static_cast<size_t>(&u - units_.data()) * static_cast<size_t>(banks_per_unit_);
  for (size_t k = first; k < first + static_cast<size_t>(banks_per_unit_); ++k) banks_[k].row = -1;
}

void DramBanks::visit(int unit, int bank, int64_t row, uint64_t bursts, bool is_write, double t0) {
  Unit& u = units_[static_cast<size_t>(unit)];
  refresh(u, t0);
  Bank& k = banks_[static_cast<size_t>(unit) * static_cast<size_t>(banks_per_unit_) + static_cast<size_t>(bank)];
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
  if (first_[i] < 0) first_[i] = start;
  last_[i] = end;
}

void DramBanks::flush(int unit, bool is_write, double t0) {
  Pending& p = pending_[static_cast<size_t>(unit)];
  if (p.bursts) visit(unit, p.bank, p.row, p.bursts, is_write, t0);
  p.bursts = 0;
}

double DramBanks::access(uint64_t addr, uint64_t len, bool is_write, double t0) {
  busy_.clear();
  uint64_t b = addr / burst_bytes_;
  const uint64_t hi = (addr + len + burst_bytes_ - 1) / burst_bytes_;
  std::vector<int>& pending_units = touched_;
  auto flush_all = [&] {
    for (int u : pending_units) flush(u, is_write, t0);
    pending_units.clear();
  };
  if (b < hi) set_digits(b);
  while (b < hi) {
    if (row_sweeps_ && hi - b >= sweep_bursts_ && digit_[0] == 0 && digit_[1] == 0 && digit_[2] == 0) {
      // A row of every unit: the same bank and row in each, visited whole.
      flush_all();
      const int bank = bank_of();
      const int64_t row = row_of();
      for (int u = 0; u < units(); ++u) visit(u, bank, row, row_bursts_, is_write, t0);
      b += sweep_bursts_;
      step_digits(3);
      continue;
    }
    const int u = unit_of();
    Pending& p = pending_[static_cast<size_t>(u)];
    const int bank = bank_of();
    const int64_t row = row_of();
    if (p.bursts && p.bank == bank && p.row == row) {
      ++p.bursts;
    } else {
      if (p.bursts)
        flush(u, is_write, t0);
      else
        pending_units.push_back(u);
      p = {row, bank, 1};
    }
    ++b;
    step_digits(0);
  }
  flush_all();
  double done = t0;
  for (size_t u = 0; u < units_.size(); ++u) {
    if (first_[u] < 0) continue;
    busy_.push_back({static_cast<int>(u), first_[u], last_[u]});
    done = std::max(done, last_[u]);
    first_[u] = -1;
  }
  return done;
}

}  // namespace lpu::sim
