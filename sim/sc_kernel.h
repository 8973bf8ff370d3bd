// The one place that resets the SystemC kernel. SystemC keeps a single global simulation
// context per process (systemc-notes.md), so every simulation that runs after another one in
// the same process -- lpu::simulate(), the RTL co-simulation (sim/rtl/) -- starts here.
#pragma once

namespace lpu {

// Replaces the current SystemC simulation context with a new one and silences the kernel's
// start-up banner and "simulation stopped" message. The old context cannot be freed cleanly
// and is leaked (~ a few hundred KB per run); parallel sweeps use processes, not threads.
// Call before constructing any module of the next simulation.
void fresh_systemc_context();

}  // namespace lpu
