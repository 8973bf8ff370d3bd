#include "model/device.h"

namespace lpu::sim {

Device::Device(sc_core::sc_module_name name, DeviceContext& c)
    : sc_module(name), ctx(c), hbm("hbm", c), lmu("lmu", c), dma("dma", c, lmu), vxe("vxe", c, lmu), sxe("sxe", c, lmu), host("host", c), esl("esl", c),
      isu("isu", c) {
  // TLM sockets bind one initiator each: the HBM exposes one target socket per path, and
  // both land in the same channel model (so the streams contend).
  dma.hbm_socket.bind(hbm.socket);
  sxe.hbm_socket.bind(hbm.sxe_socket);
  sxe.attach(&isu);
  isu.attach(Unit::Sxe, &sxe);
  host.attach(&isu);
  isu.attach(Unit::Host, &host);
  dma.attach(&isu);
  vxe.attach(&isu);
  isu.attach(Unit::Dma, &dma);
  isu.attach(Unit::Vxe, &vxe);
  esl.attach(&isu);
  isu.attach(Unit::Esl, &esl);
  SC_THREAD(watchdog);
}

// Stops a run that exceeds the configured simulated-time limit (sim.max_us).
void Device::watchdog() {
  const sc_core::sc_time limit(ctx.arch->sim.max_us, sc_core::SC_US);
  if (ctx.sync)
    wait(limit, ctx.sync->end);  // or the run ended: the thread terminates
  else
    wait(limit);
  if (!ctx.finished && !(ctx.sync && ctx.sync->ended)) sc_core::sc_stop();
}

}  // namespace lpu::sim
