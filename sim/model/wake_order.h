// The order in which a device's processes wake when their timers fall on the same instant.
// SystemC runs processes whose timed waits end together in the order its event heap yields
// them, which depends on the heap's history rather than on the model. The engine workers and
// the ISU (as SC_METHODs) therefore wait on their own events, and this module, the device's one
// timed process, wakes them: at each instant, in rank order (engine workers by engine, then
// worker; the ISU last). So a run's course depends on the model's state alone, which layer
// memoisation (layer_memo.h) relies on, and a reordering of the heap cannot change a result.
// It costs a run about 9% of its simulation time, so only configs of one device (the only ones
// memoised) use it; a run of several devices waits on SystemC's timers as before.
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

#include "model/sim_context.h"

namespace lpu::sim {

class WakeOrder : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(WakeOrder);
  WakeOrder(sc_core::sc_module_name name, DeviceContext& ctx);
  // Notifies `e` after `delay` (rounded to whole picoseconds), after every lower rank due then.
  void after(double delay_ps, uint32_t rank, sc_core::sc_event& e);
  static constexpr uint32_t kIsuRank = UINT32_MAX;
  static uint32_t worker_rank(int engine, size_t worker) { return static_cast<uint32_t>(engine) << 16 | worker; }

 private:
  void fire();
  struct Due {
    uint64_t at;  // SystemC time, in its resolution's units
    uint32_t rank;
    sc_core::sc_event* event;
    bool operator>(const Due& o) const { return at != o.at ? at > o.at : rank > o.rank; }
  };
  DeviceContext& ctx_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  sc_core::sc_event next_;
};

}  // namespace lpu::sim
