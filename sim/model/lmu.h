// LMU: local memory. Capacity, a shared port of `bytes_per_cycle`, and banks.
// Accesses reserve the port timeline (DMA and VXE contend for it). A strided access whose
// element stride shares a factor with the bank count hits fewer banks and is slowed by that
// factor (bank conflicts); unit-stride and broadcast (stride 0) accesses are conflict-free.
#pragma once
#include "model/sim_context.h"

namespace lpu::sim {

class Lmu : public sc_core::sc_module {
  friend class LayerMemo;

 public:
  Lmu(sc_core::sc_module_name name, DeviceContext& ctx);

  // Reserves the port for `read_bytes` + `write_bytes` starting no earlier than `start_ps`;
  // returns the end time. Both are counted for energy (they share the port's time).
  double reserve(double start_ps, uint64_t read_bytes, uint64_t write_bytes, int64_t elem_stride = 1);
  // Conflict slow-down of an element stride.
  double conflict_factor(int64_t elem_stride) const;

  float* data(uint64_t byte_addr);
  void check(uint64_t byte_addr, uint64_t bytes, const char* what) const;

 private:
  DeviceContext& ctx_;
  double port_free_ps_ = 0;
  double bytes_per_ps_;
};

}  // namespace lpu::sim
