// The one place that resets the SystemC kernel. SystemC keeps a single global simulation
// context per process (systemc-notes.md), so every simulation that runs after another one in
// the same process -- lpu::simulate(), the RTL co-simulation (sim/rtl/) -- starts here.
#pragma once
#include <mutex>

namespace lpu {

// Replaces the current SystemC simulation context with a new one and silences the kernel's
// start-up banner and "simulation stopped" message. The old context cannot be freed cleanly
// and is leaked (its bookkeeping: tens of KB per run, measured 57 MB peak RSS over a 2016-step
// generation); the threads' stacks are not, because a run's threads return before it stops
// (end_simulation() in model/sim_context.h). Parallel sweeps use processes, not threads.
// Call before constructing any module of the next simulation.
void fresh_systemc_context();

// The turn of one simulation at the SystemC kernel. The kernel's context and its process
// bookkeeping are process-wide globals, so two simulations in one process cannot run at once:
// a caller that runs several threads (the Python module, docs/python.md) holds this from
// before its modules are constructed until they are destroyed. Compiling needs no turn.
std::unique_lock<std::mutex> systemc_turn();

}  // namespace lpu
