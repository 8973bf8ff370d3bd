#include "model/wake_order.h"

namespace lpu::sim {

WakeOrder::WakeOrder(sc_core::sc_module_name name, DeviceContext& ctx) : sc_module(name), ctx_(ctx) {
  SC_METHOD(fire);
  dont_initialize();
  sensitive << next_;
}

void WakeOrder::after(double delay_ps, uint32_t rank, sc_core::sc_event& e) {
  const sc_core::sc_time delay = ctx_.ps(delay_ps);
  const uint64_t at = ctx_.kernel->time_stamp().value() + delay.value();
  const bool earliest = due_.empty() || at < due_.top().at;
  due_.push({at, rank, &e});
  // A later notification still pending is replaced by this earlier one (SystemC's rule).
  if (earliest) next_.notify(delay);
}

// Everything due now, in rank order: immediate notifications make the processes runnable in
// this evaluation phase in the order they are notified.
void WakeOrder::fire() {
  const uint64_t now = ctx_.kernel->time_stamp().value();
  while (!due_.empty() && due_.top().at <= now) {
    sc_core::sc_event* e = due_.top().event;
    due_.pop();
    e->notify();
  }
  if (!due_.empty()) next_.notify(sc_core::sc_time::from_value(due_.top().at - now));
}

}  // namespace lpu::sim
