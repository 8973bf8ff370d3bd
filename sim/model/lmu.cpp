#include "model/lmu.h"

#include <cmath>
#include <numeric>

#include "support/error.h"

namespace lpu::sim {

Lmu::Lmu(sc_core::sc_module_name name, DeviceContext& ctx) : sc_module(name), ctx_(ctx) {
  bytes_per_ps_ = ctx.arch->lmu.bytes_per_cycle / ctx.period.to_double();
  if (ctx.functional) ctx.lmu_data.assign(static_cast<size_t>(ctx.arch->lmu_bytes() / 4), 0.0f);
}

double Lmu::conflict_factor(int64_t s) const {
  if (s == 0 || s == 1 || s == -1) return 1.0;
  int64_t g = std::gcd(s < 0 ? -s : s, static_cast<int64_t>(ctx_.arch->lmu.banks));
  return static_cast<double>(g);
}

double Lmu::reserve(double start_ps, uint64_t read_bytes, uint64_t write_bytes, int64_t elem_stride) {
  ctx_.energy.lmu_read_bytes += read_bytes;
  ctx_.energy.lmu_write_bytes += write_bytes;
  const uint64_t bytes = read_bytes + write_bytes;
  double s = std::max(start_ps, port_free_ps_);
  double e = s + std::ceil(static_cast<double>(bytes) / bytes_per_ps_ * conflict_factor(elem_stride));  // whole ps
  port_free_ps_ = e;
  return e;
}

void Lmu::check(uint64_t addr, uint64_t bytes, const char* what) const {
  if (addr + bytes > static_cast<uint64_t>(ctx_.arch->lmu_bytes()))
    throw InputError(strcat("device ", ctx_.device, ": ", what, " touches local memory [", addr, ", ", addr + bytes,
                            ") beyond its capacity of ", ctx_.arch->lmu_bytes(), " bytes"));
}

float* Lmu::data(uint64_t byte_addr) { return &ctx_.lmu_data[byte_addr / 4]; }

}  // namespace lpu::sim
