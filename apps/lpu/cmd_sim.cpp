// `lpu sim PROGRAM...`: simulate LPU programs (assembly or binary), one per device.
#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/cli_support.h"
#include "jobs/listings.h"
#include "jobs/run_report.h"
#include "support/error.h"

namespace lpu::cli {

namespace {

struct SimFlags {
  std::vector<std::string> programs;
  std::string json, trace, vcd;
  ArchFlags af;
};

// Device i runs programs[i]; the config must have at least that many devices. Timing mode.
int sim(const SimFlags& f) {
  check_output_file("--json", f.json);
  check_output_file("--trace", f.trace);
  check_output_file("--vcd", f.vcd);
  std::vector<Program> progs;
  for (const auto& path : f.programs) progs.push_back(load_program_file(path));
  ArchConfig arch = f.af.load_without_workload("a program");
  if (static_cast<int>(progs.size()) > arch.devices)
    throw InputError(strcat(progs.size(), " programs but ", arch.name, " has devices = ", arch.devices,
                            " (use --set devices=", progs.size(), ")"));
  SimOptions o;
  for (size_t d = 1; d < progs.size(); ++d) o.other_devices.push_back(&progs[d]);
  o.record_trace = !f.trace.empty();
  o.vcd_path = f.vcd;
  SimResult r = simulate(progs.front(), arch, o);
  std::cout << format_sim_run(progs.front(), arch, f.af.arch_sets(), r);
  if (!f.json.empty()) write_json(f.json, stats_to_json(r.stats));
  if (!f.trace.empty()) write_json(f.trace, trace_to_json(r.trace));
  return 0;
}

}  // namespace

Command add_sim(CLI::App& app) {
  auto f = std::make_shared<SimFlags>();
  auto* s = app.add_subcommand("sim", "simulate LPU programs (assembly .s or binary .lpubin), one per device");
  s->add_option("programs", f->programs, "program files: device 0, 1, ...")->required();
  f->af.add(s);
  s->add_option("--json", f->json, "write statistics as JSON");
  s->add_option("--trace", f->trace, "write a Chrome/Perfetto trace-event timeline");
  s->add_option("--vcd", f->vcd, "write a VCD waveform of engine queue occupancy, busy workers, in-flight count");
  return {s, [f] { return sim(*f); }};
}

}  // namespace lpu::cli
