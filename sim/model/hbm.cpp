#include "model/hbm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ios>

#include "support/error.h"

namespace lpu::sim {

Hbm::Hbm(sc_core::sc_module_name name, DeviceContext& ctx)
    : sc_module(name), socket("socket"), sxe_socket("sxe_socket"), ctx_(ctx) {
  socket.register_b_transport(this, &Hbm::b_transport);
  sxe_socket.register_b_transport(this, &Hbm::b_transport);
  const auto& h = ctx.arch->hbm;
  channel_free_ps_.assign(static_cast<size_t>(h.channels), 0.0);
  bytes_.assign(static_cast<size_t>(h.channels), 0);
  // GB/s = 1e9 B/s = 1e-3 B/ps.
  per_channel_bytes_per_ps_ = h.bandwidth_gbps * 1e-3 / h.channels * h.efficiency;
  latency_ps_ = std::round(h.latency_ns * 1000.0);  // whole picoseconds
  size_t channels = static_cast<size_t>(h.channels);
  if (ctx.arch->memory.model == ArchConfig::Memory::Model::Banks) {
    banks_ = std::make_unique<DramBanks>(ctx.arch->memory);
    latency_ps_ = std::max(0.0, std::round(h.latency_ns * 1000.0 - banks_->miss_latency_ps()));
    channels = static_cast<size_t>(banks_->units());
  }
  // For the trace: the busy window of each group of channels (8 groups at most).
  trace_groups_ = std::min<size_t>(channels, 8);
  per_group_ = (channels + trace_groups_ - 1) / trace_groups_;
}

// Inline: called for every channel of every transaction, the join usually taken.
inline void Hbm::note_busy(size_t c, double s, double e) {
  auto& windows = ctx_.hbm_windows;
  // A window that overlaps or touches the last one joins it: the log keeps only their union
  // (append_union), and most of a transaction's channel windows overlap.
  if (!windows.empty() && s <= windows.back().second && windows.back().first <= e) {
    windows.back().first = std::min(windows.back().first, s);
    windows.back().second = std::max(windows.back().second, e);
  } else {
    windows.emplace_back(s, e);
  }
  if (ctx_.record_trace) note_group_busy(c, s, e);
}

void Hbm::note_group_busy(size_t c, double s, double e) {
  size_t g = c / per_group_;
  g_start_[g] = g_start_[g] < 0 ? s : std::min(g_start_[g], s);
  g_end_[g] = std::max(g_end_[g], e);
}

double Hbm::serve_bandwidth(uint64_t lo, uint64_t hi, double start) {
  const auto& h = ctx_.arch->hbm;
  // Bytes per channel: walk interleave granules; whole rounds over all channels at once.
  uint64_t il = static_cast<uint64_t>(h.interleave_bytes);
  uint64_t nch = static_cast<uint64_t>(h.channels);
  // All zero between transactions (the loop below clears what it reads).
  std::vector<uint64_t>& bytes = bytes_;
  // The channels [first, end) hold this transaction's bytes: a small one touches one or two
  // of them, and only those are visited below.
  uint64_t first = nch, end = 0;
  // `granule` and `ch` follow pos (pos / il and its channel) without a division per granule.
  uint64_t pos = lo, granule = pos / il, ch = granule % nch;
  while (pos < hi) {
    uint64_t granule_end = (granule + 1) * il;
    uint64_t remaining = hi - pos;
    if (pos == granule * il && remaining >= il * nch) {
      uint64_t rounds = remaining / (il * nch);
      for (auto& b : bytes) b += rounds * il;
      first = 0;
      end = nch;
      pos += rounds * il * nch;
      granule += rounds * nch;
      continue;
    }
    uint64_t chunk = std::min(granule_end, hi) - pos;
    bytes[ch] += chunk;
    first = std::min(first, ch);
    end = std::max(end, ch + 1);
    pos += chunk;  // the next granule's start, or hi
    ++granule;
    if (++ch == nch) ch = 0;
  }
  double done = start;
  // Most channels of a transaction get the same bytes (whole rounds): their service time is
  // divided out once (the same operands give the same quotient).
  uint64_t last_bytes = 0;
  double last_ps = 0;
  for (size_t c = first; c < end; ++c) {
    const uint64_t b = bytes[c];
    if (!b) continue;
    bytes[c] = 0;
    if (b != last_bytes) {
      last_bytes = b;
      // Whole picoseconds, as every duration of the model: times then add exactly, so a run's
      // timing does not depend on where in time it happens (what layer memoisation needs).
      last_ps = std::ceil(static_cast<double>(last_bytes) / per_channel_bytes_per_ps_);
    }
    double s = std::max(start, channel_free_ps_[c]);
    double e = s + last_ps;
    channel_free_ps_[c] = e;
    done = std::max(done, e);
    note_busy(c, s, e);
  }
  return done;
}

double Hbm::serve_banks(uint64_t lo, uint64_t hi, bool is_write, double start) {
  // Without a trace only the union of the units' windows matters (append_union() sorts and
  // merges the log): the bank model may leave out units whose window another unit has.
  double done = banks_->access(lo, hi - lo, is_write, start, ctx_.record_trace);
  // Without a trace, a window the same as the last one noted changes nothing (the last window
  // of the log already holds it): units in step have the same windows.
  double s = -1, e = -1;
  for (const DramBanks::Busy& b : banks_->busy()) {
    if (!ctx_.record_trace && b.start_ps == s && b.end_ps == e) continue;
    note_busy(static_cast<size_t>(b.unit), b.start_ps, b.end_ps);
    s = b.start_ps;
    e = b.end_ps;
  }
  return done;
}

void Hbm::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const auto& h = ctx_.arch->hbm;
  uint64_t addr = trans.get_address();
  uint64_t len = trans.get_data_length();
  double start = ctx_.now_ps() + delay.to_double();

  // Burst-align the run: [first burst start, last burst end).
  uint64_t burst = banks_ ? banks_->burst_bytes() : static_cast<uint64_t>(h.burst_bytes);
  uint64_t lo = addr / burst * burst;
  uint64_t hi = (addr + len + burst - 1) / burst * burst;
  counters_.burst_bytes += hi - lo;
  (trans.is_read() ? ctx_.energy.hbm_read_bytes : ctx_.energy.hbm_write_bytes) += hi - lo;

  if (ctx_.record_trace) {
    g_start_.assign(trace_groups_, -1);
    g_end_.assign(trace_groups_, 0);
  }
  double done = banks_ ? serve_banks(lo, hi, !trans.is_read(), start) : serve_bandwidth(lo, hi, start);
  if (ctx_.record_trace)
    for (size_t g = 0; g < trace_groups_; ++g)
      if (g_start_[g] >= 0)
        ctx_.trace.push_back({-1 - static_cast<int>(g), -1, 0, g_start_[g], g_end_[g],
                              strcat(trans.is_read() ? "read " : "write ", len, " B @0x", std::hex, addr)});
  done += latency_ps_;

  // Functional data.
  if (ctx_.functional && trans.get_data_ptr()) {
    if (addr + len > ctx_.hbm_data.size()) {
      trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    if (trans.is_read())
      std::memcpy(trans.get_data_ptr(), &ctx_.hbm_data[addr], len);
    else
      std::memcpy(&ctx_.hbm_data[addr], trans.get_data_ptr(), len);
  }
  if (trans.is_read())
    counters_.read_bytes += len;
  else
    counters_.write_bytes += len;
  delay = ctx_.ps(done - ctx_.now_ps());
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace lpu::sim
