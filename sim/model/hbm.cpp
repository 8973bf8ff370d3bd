#include "model/hbm.h"

#include <algorithm>
#include <cstring>
#include <ios>

#include "support/error.h"

namespace lpu::sim {

Hbm::Hbm(sc_core::sc_module_name name, DeviceContext& ctx) : sc_module(name), socket("socket"), sxe_socket("sxe_socket"), ctx_(ctx) {
  socket.register_b_transport(this, &Hbm::b_transport);
  sxe_socket.register_b_transport(this, &Hbm::b_transport);
  const auto& h = ctx.arch->hbm;
  channel_free_ps_.assign(static_cast<size_t>(h.channels), 0.0);
  // GB/s = 1e9 B/s = 1e-3 B/ps.
  per_channel_bytes_per_ps_ = h.bandwidth_gbps * 1e-3 / h.channels * h.efficiency;
  latency_ps_ = h.latency_ns * 1000.0;
}

void Hbm::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const auto& h = ctx_.arch->hbm;
  uint64_t addr = trans.get_address();
  uint64_t len = trans.get_data_length();
  double start = (sc_core::sc_time_stamp() + delay).to_double();

  // Burst-align the run: [first burst start, last burst end).
  uint64_t burst = static_cast<uint64_t>(h.burst_bytes);
  uint64_t lo = addr / burst * burst;
  uint64_t hi = (addr + len + burst - 1) / burst * burst;
  ctx_.hbm_burst_bytes += hi - lo;
  (trans.is_read() ? ctx_.energy.hbm_read_bytes : ctx_.energy.hbm_write_bytes) += hi - lo;

  // Bytes per channel: walk interleave granules; whole rounds over all channels at once.
  uint64_t il = static_cast<uint64_t>(h.interleave_bytes);
  uint64_t nch = static_cast<uint64_t>(h.channels);
  std::vector<uint64_t> bytes(nch, 0);
  uint64_t pos = lo;
  while (pos < hi) {
    uint64_t granule_end = (pos / il + 1) * il;
    uint64_t remaining = hi - pos;
    if (pos % il == 0 && remaining >= il * nch) {
      uint64_t rounds = remaining / (il * nch);
      for (auto& b : bytes) b += rounds * il;
      pos += rounds * il * nch;
      continue;
    }
    uint64_t chunk = std::min(granule_end, hi) - pos;
    bytes[(pos / il) % nch] += chunk;
    pos += chunk;
  }
  double done = start;
  // For the trace: the busy window of each group of channels (8 groups at most).
  size_t groups = std::min<size_t>(nch, 8), per_group = (nch + groups - 1) / groups;
  std::vector<double> g_start(groups, -1), g_end(groups, 0);
  for (size_t c = 0; c < nch; ++c) {
    if (!bytes[c]) continue;
    double s = std::max(start, channel_free_ps_[c]);
    double e = s + static_cast<double>(bytes[c]) / per_channel_bytes_per_ps_;
    channel_free_ps_[c] = e;
    done = std::max(done, e);
    ctx_.hbm_windows.emplace_back(s, e);
    size_t g = c / per_group;
    g_start[g] = g_start[g] < 0 ? s : std::min(g_start[g], s);
    g_end[g] = std::max(g_end[g], e);
  }
  if (ctx_.record_trace)
    for (size_t g = 0; g < groups; ++g)
      if (g_start[g] >= 0)
        ctx_.trace.push_back({-1 - static_cast<int>(g), -1, 0, g_start[g], g_end[g],
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
    ctx_.hbm_read_bytes += len;
  else
    ctx_.hbm_write_bytes += len;
  delay = sc_core::sc_time(done, sc_core::SC_PS) - sc_core::sc_time_stamp();
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace lpu::sim
