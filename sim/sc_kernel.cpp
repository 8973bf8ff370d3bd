#include "sc_kernel.h"

#include <systemc>

#include <cstdlib>
#include <vector>

namespace lpu {

void fresh_systemc_context() {
  static bool configured = false;
  if (!configured) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    configured = true;
  }
  // Every context made here stays reachable on purpose: one cannot be deleted cleanly
  // (systemc-notes.md), and once a run's threads end with it nothing else points at it, which
  // LeakSanitizer would report on every simulating test. The list is never destroyed (a static
  // vector's storage would be freed at exit, before the leak check).
  static auto* const contexts = new std::vector<sc_core::sc_simcontext*>();
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  contexts->push_back(sc_core::sc_curr_simcontext);
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  // Silences "Info: /OSCI/SystemC: Simulation stopped by user."
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  // Infos (e.g. the VCD timescale note) are not for the CLI's users.
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

std::unique_lock<std::mutex> systemc_turn() {
  static std::mutex m;
  return std::unique_lock<std::mutex>(m);
}

}  // namespace lpu
