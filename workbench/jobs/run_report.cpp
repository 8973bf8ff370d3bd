#include "jobs/run_report.h"

#include <algorithm>
#include <sstream>

#include "jobs/roofline.h"
#include "support/error.h"
#include "workload/transformer.h"

namespace lpu {

namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

// Utilisation (useful work over peak work) with what it counts, then busy time apart.
std::vector<std::string> engine_row(const EngineStats& e) {
  std::string what = e.work_unit == "MACs"          ? " of peak MACs"
                     : e.work_unit == "element_ops" ? " of peak element ops"
                     : e.work_unit == "bytes"       ? " of peak HBM bytes"
                                                    : " busy";
  std::string busy2 = e.work_unit.empty() ? "" : " (busy " + format_percent(e.busy_fraction) + ")";
  return {e.name + " utilisation", format_percent(e.utilization) + what + busy2};
}

// Energy (sim/energy.h): the total and its dynamic/static parts, per token for an LLM step;
// or why there is none.
void energy_rows(const EnergyStats& e, int64_t tokens, const ArchConfig& arch,
                 std::vector<std::vector<std::string>>& rows) {
  if (!e.configured) {
    rows.push_back({"energy", "not modelled (" + arch.file + " has no energy section)"});
    return;
  }
  rows.push_back({"energy", strcat(format_energy(e.total_j()), " (dynamic ", format_energy(e.dynamic_j), ", static ",
                                   format_energy(e.static_j), ")")});
  if (tokens > 0) rows.push_back({"energy per token", format_energy(e.total_j() / static_cast<double>(tokens))});
  if (e.seconds > 0) rows.push_back({"average power", fmt("%.2f W", e.total_j() / e.seconds)});
}

}  // namespace

// "15 candidates in 1.23 s: 2.38% (4541 cycles) faster than greedy (2 moved more HBM bytes than
// none: not chosen)"; the choice and any arch config change get rows of their own (print_run).
std::string search_summary(const SearchReport& r) {
  size_t rejected = 0;
  for (const auto& c : r.candidates) rejected += c.rejected.empty() ? 0 : 1;
  return strcat(r.candidates.size(), " candidates in ", format_number("%.2f s", r.seconds), ": ",
                format_number("%.2f%%", r.gain_percent()), " (", r.gain_cycles(), " cycles) faster than greedy",
                rejected ? strcat(" (", rejected, " moved more HBM bytes than none: not chosen)") : "");
}

// Every candidate the tuner tried, in the order tried, with its cycles against greedy.
std::string format_search_candidates(const SearchReport& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : r.candidates) {
    std::string vs =
        c.error.empty() && r.greedy_cycles
            ? format_number("%+.2f%%", 100.0 * (static_cast<double>(c.cycles) - static_cast<double>(r.greedy_cycles)) /
                                           static_cast<double>(r.greedy_cycles))
            : "-";
    std::string note = c.name == r.chosen ? "chosen" : !c.error.empty() ? "error: " + c.error : c.rejected;
    rows.push_back({c.name, c.error.empty() ? std::to_string(c.cycles) : "-", vs,
                    c.error.empty() ? format_bytes(static_cast<double>(c.hbm_bytes)) : "-", note});
  }
  return strcat(r.policy, " candidates (settings: the name's knobs on greedy; all of them in --json)\n",
                format_table({"candidate", "cycles", "vs_greedy", "hbm", "note"}, rows));
}

// The architecture as run: the config's name, and the --set overrides when there were any.
std::string effective_arch(const ArchConfig& a, const std::vector<std::string>& sets) {
  std::string s = a.name;
  for (size_t i = 0; i < sets.size(); ++i) s += (i ? ", " : " (overridden: ") + sets[i];
  return sets.empty() ? s : s + ")";
}

// Energy per engine: dynamic (events x config energies) and static (power x time).
namespace {
// How a run's step is split over its devices, for the "devices" row.
std::string parallelism(const RunOutcome& o, size_t devices) {
  const TransformerShape* m = decoder_of(o.workload);
  if (!m || m->experts == 0 || o.workload.moe_parallel != WorkloadSpec::MoeParallel::Expert)
    return "tensor parallelism";
  WorkloadSpec w = o.workload;
  w.tp = static_cast<int64_t>(devices);
  const ExpertDispatch d = expert_dispatch(*m, w);
  return strcat("tensor parallelism; expert parallelism: ", m->experts / w.tp, " whole experts a device, ",
                d.form == ExpertDispatch::Rows ? strcat(d.slots, " routed rows") : strcat(d.slots, " rows per expert"),
                " a layer");
}
}  // namespace

std::string format_energy_table(const EnergyStats& e) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : energy_engines()) {
    const EngineEnergy& g = e.engines.at(name);
    rows.push_back({name, format_energy(g.dynamic_j), format_energy(g.static_j), format_energy(g.total_j()),
                    format_percent(e.total_j() > 0 ? g.total_j() / e.total_j() : 0.0)});
  }
  rows.push_back(
      {"total", format_energy(e.dynamic_j), format_energy(e.static_j), format_energy(e.total_j()), "100.0 %"});
  return "energy by engine\n" + format_table({"engine", "dynamic", "static", "total", "share"}, rows);
}

std::string format_run(const RunOutcome& o, const std::vector<std::string>& sets) {
  std::ostringstream out;
  const auto& s = o.sim.stats;
  std::vector<std::vector<std::string>> rows = {
      {"workload", o.workload.name},
      {"arch", effective_arch(o.arch, sets)},
      {"fusion", o.fusion},
      {"kernels", std::to_string(o.comp.schedule.kernels.size())},
      {"instructions", std::to_string(s.instructions)},
      {"cycles", std::to_string(s.cycles)},
      {"latency", format_duration_us(s.latency_us)},
      {"HBM read", format_bytes(static_cast<double>(s.hbm_read_bytes))},
      {"HBM written", format_bytes(static_cast<double>(s.hbm_write_bytes))},
      {"compulsory HBM", format_bytes(static_cast<double>(o.comp.compulsory_hbm_bytes))},
      {"traffic / compulsory", fmt("%.3f", o.traffic_ratio())},
      {"search", o.search ? search_summary(*o.search) : std::string("-")},
      {"HBM bandwidth utilisation",
       format_percent(s.hbm_bandwidth_utilization) + " of " + format_bandwidth(o.arch.hbm.bandwidth_gbps * 1e9)},
      {"graph breaks",
       strcat(s.graph_breaks.size(), s.graph_breaks.empty() ? "" : fmt(", host time %.3f us", s.host_us()))},
  };
  // How the simulator got there: layers it skipped (the statistics are those of every layer).
  if (o.sim.memo_skipped_blocks)
    rows.push_back({"simulation", strcat(o.sim.memo_skipped_blocks,
                                         " repeating blocks (layers) skipped by layer memoisation (sim.memoize)")});
  if (o.search) {
    // After the search row: the choice, and what it changed in the arch config (search-isu may
    // turn on ISU options, and the run is then on another config than the one asked for).
    auto at = std::find_if(rows.begin(), rows.end(), [](const auto& r) { return r[0] == "search"; }) + 1;
    std::string changes;
    for (const auto& c : o.search->arch_changes) changes += (changes.empty() ? "" : ", ") + c;
    if (!changes.empty()) at = rows.insert(at, {"arch config changed", changes + " (by " + o.search->policy + ")"});
    rows.insert(at, {"search chose", o.search->chosen});
  }
  for (const auto& b : s.graph_breaks)
    rows.push_back({"  break " + b.node, strcat(b.op, ", ", format_bytes(static_cast<double>(b.bytes)), ", ",
                                                format_duration_us(b.host_us))});
  if (int64_t t = llm_tokens_per_step(o.workload); t > 0) {
    rows.push_back({"time per token", format_duration_us(s.latency_us / static_cast<double>(t))});
    rows.push_back({"tokens per second", fmt("%.1f", static_cast<double>(t) / (s.latency_us * 1e-6))});
    StepRoofs roofs = step_roofs(o);
    double per_cycle = static_cast<double>(t) * o.arch.clock_ghz * 1e9;
    rows.push_back(
        {"tokens/s roofs", strcat(fmt("%.1f", per_cycle / roofs.memory_cycles), " memory (HBM bytes), ",
                                  fmt("%.1f", per_cycle / roofs.compute_cycles), " compute (SXE MACs): ",
                                  roofs.compute_cycles > roofs.memory_cycles ? "compute" : "memory", "-bound")});
  }
  if (!s.devices.empty()) {  // tensor parallelism: every device's own counters
    uint64_t esl = 0, wait = 0, last = 0;
    for (const auto& d : s.devices) {
      esl += d.esl_bytes;
      wait = std::max(wait, d.sync_wait_cycles);
      last = std::max(last, d.cycles);
    }
    rows.push_back(
        {"devices", strcat(s.devices.size(), " (", parallelism(o, s.devices.size()), "), all halted at cycle ", last,
                           ", ", format_duration_us(static_cast<double>(last) / (o.arch.clock_ghz * 1e3)))});
    rows.push_back({"ESL sent", format_bytes(static_cast<double>(esl)) + " (all devices)"});
    rows.push_back({"exposed sync", strcat(wait, " cycles (the most any device waited at sync.wait)")});
    for (size_t d = 0; d < s.devices.size(); ++d) {
      const auto& x = s.devices[d];
      rows.push_back(
          {strcat("  device ", d),
           strcat(x.cycles, " cycles, HBM ", format_bytes(static_cast<double>(x.hbm_read_bytes + x.hbm_write_bytes)),
                  ", ESL ", format_bytes(static_cast<double>(x.esl_bytes)), " in ", x.esl_sends, " sends, sync wait ",
                  x.sync_wait_cycles, " cycles")});
    }
  }
  for (const auto& e : s.engines) rows.push_back(engine_row(e));
  energy_rows(s.energy, llm_tokens_per_step(o.workload), o.arch, rows);
  out << format_table({"metric", "value"}, rows);
  if (s.energy.configured) out << "\n" << format_energy_table(s.energy);
  if (o.search) out << "\n" << format_search_candidates(*o.search);
  // Where the time went, kernel by kernel (docs/sim-model.md, "Per-kernel attribution").
  out << "\n" << format_top_kernels(o, 10) << "\n" << format_class_roofline(o);
  return out.str();
}

std::string format_sim_run(const Program& p, const ArchConfig& arch, const std::vector<std::string>& sets,
                           const SimResult& r) {
  std::ostringstream out;
  const auto& s = r.stats;
  std::vector<std::vector<std::string>> rows = {{"program", p.name},
                                                {"arch", effective_arch(arch, sets)},
                                                {"instructions", std::to_string(s.instructions)},
                                                {"cycles", std::to_string(s.cycles)},
                                                {"device cycles",
                                                 [&] {
                                                   std::string d;
                                                   for (auto c : s.device_cycles)
                                                     d += (d.empty() ? "" : " ") + std::to_string(c);
                                                   return d;
                                                 }()},
                                                {"latency", format_duration_us(s.latency_us)},
                                                {"HBM read", format_bytes(static_cast<double>(s.hbm_read_bytes))},
                                                {"HBM written", format_bytes(static_cast<double>(s.hbm_write_bytes))}};
  for (const auto& e : s.engines) rows.push_back(engine_row(e));
  energy_rows(s.energy, 0, arch, rows);
  out << format_table({"metric", "value"}, rows);
  if (s.energy.configured) out << "\n" << format_energy_table(s.energy);
  return out.str();
}

std::string format_functional_check(const FunctionalCheck& c) {
  const std::string& rule = c.rule;  // one description, set where the check is made
  return fmt("functional: max abs error %.3g", c.max_abs_error) + fmt(", max rel error %.3g", c.max_rel_error) +
         " (tolerance " + rule + "): " + (c.ok ? "PASS" : "FAIL") + "\n";
}

}  // namespace lpu
