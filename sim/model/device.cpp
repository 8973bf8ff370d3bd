#include "model/device.h"

#include "support/error.h"

namespace lpu::sim {

namespace {
struct Registered {
  Unit unit;
  EngineFactory make;
};
std::vector<Registered>& registered() {
  static std::vector<Registered> r;
  return r;
}
}  // namespace

EngineRegistration::EngineRegistration(Unit unit, EngineFactory make) { registered().push_back({unit, make}); }

Device::Device(sc_core::sc_module_name name, DeviceContext& c)
    : sc_module(name),
      ctx(c),
      wakes("wakes", c),
      hbm("hbm", c),
      lmu("lmu", c),
      dma("dma", c, lmu),
      vxe("vxe", c, lmu),
      sxe("sxe", c, lmu),
      host("host", c),
      esl("esl", c),
      isu("isu", c) {
  // One device: its processes wake in the fixed order (what layer memoisation needs; several
  // devices never memoise, and their runs keep SystemC's order and the cost it spares).
  if (c.arch->devices == 1) c.wakes = &wakes;
  // TLM sockets bind one initiator each: the HBM exposes one target socket per path, and
  // both land in the same channel model (so the streams contend).
  dma.hbm_socket.bind(hbm.socket);
  sxe.hbm_socket.bind(hbm.sxe_socket);
  for (Engine* e : {static_cast<Engine*>(&dma), static_cast<Engine*>(&vxe), static_cast<Engine*>(&sxe),
                    static_cast<Engine*>(&host), static_cast<Engine*>(&esl)})
    add_engine(*e);
  for (const Registered& r : registered()) {
    extensions_.push_back(r.make(unit_name(r.unit), c, *this));
    if (extensions_.back()->unit() != r.unit)
      throw InternalError(strcat("engine ", unit_name(r.unit), ": its factory made an engine of another unit"));
    add_engine(*extensions_.back());
  }
  if (processes_are_threads(*c.arch)) {
    SC_THREAD(watchdog);
  } else {
    SC_METHOD(watchdog_step);
  }
}

void Device::add_engine(Engine& e) {
  e.attach(&isu, static_cast<int>(engines_.size()));
  isu.attach(&e);
  engines_.push_back(&e);
}

// Stops a run that exceeds the configured simulated-time limit (sim.max_us).
void Device::watchdog() {
  const sc_core::sc_time limit(ctx.arch->sim.max_us, sc_core::SC_US);
  if (ctx.sync)
    wait(limit, ctx.sync->end);  // or the run ended: the thread terminates
  else
    wait(limit);
  watchdog_expired();
}

// The same as an SC_METHOD: the first activation sets the limit, the second checks.
void Device::watchdog_step() {
  if (!watchdog_armed_) {
    watchdog_armed_ = true;
    const sc_core::sc_time limit(ctx.arch->sim.max_us, sc_core::SC_US);
    if (ctx.sync)
      next_trigger(limit, ctx.sync->end);
    else
      next_trigger(limit);
    return;
  }
  watchdog_expired();
}

// The limit passed, or the run ended: stops a run still going.
void Device::watchdog_expired() {
  if (!ctx.finished && !(ctx.sync && ctx.sync->ended)) sc_core::sc_stop();
}

}  // namespace lpu::sim
