// `lpu`: the workbench's command line. Exit codes: 0 ok, 1 a failed check, 2 bad input,
// 3 a simulation that cannot finish, 4 an internal error (a bug: please report it).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "driver/aten_coverage.h"
#include "driver/compile.h"
#include "graph/ops.h"
#include "handlers/counting.h"
#include "handlers/cpp_source.h"
#include "handlers/torch_graph.h"
#include "handlers/triton_source.h"
#include "ref/reference.h"
#include "isa/encoding.h"
#include "generate.h"
#include "jobs.h"
#include "manifest.h"
#include "passes/passes.h"
#include "policy_registry.h"
#include "report.h"
#include "roofline.h"
#include "sweep.h"
#include "sweep_merge.h"
#include "sweep_slurm.h"
#include "support/error.h"
#include "workload/tensor_parallel.h"

namespace fs = std::filesystem;
using namespace lpu;

namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

void write_file(const std::string& path, const std::string& text) {
  fs::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  std::ofstream f(path, std::ios::binary);  // --emit bin
  if (ec || !f) throw InputError(strcat(path, ": cannot write", ec ? ": " + ec.message() : ""));
  f << text;
}

// Output paths are checked before any work starts: a bad one is exit 2 naming the flag, not a
// filesystem exception (exit 4) after the run, nor SystemC's VCD writer dying on SIGFPE. The
// checks create nothing (a run refused later must leave no empty file or directory behind):
// the nearest existing ancestor must be a directory we may write into.
// access(2) says yes to root everywhere, and /proc or a read-only mount refuse only when a file
// is made: so make one in `dir` (a probe, removed at once).
void probe_directory(const std::string& flag, const std::string& shown, const fs::path& dir) {
  fs::path probe = dir / strcat(".lpu-write-probe-", getpid());
  int fd = ::open(probe.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
  if (fd < 0) throw InputError(strcat(flag, " ", shown, ": cannot write into ", dir.string(), ": ", std::strerror(errno)));
  ::close(fd);
  ::unlink(probe.c_str());
}

void check_creatable(const std::string& flag, const fs::path& p) {
  std::error_code ec;
  fs::path anc = p.has_parent_path() ? p.parent_path() : fs::path(".");
  while (!anc.empty() && !fs::exists(anc, ec) && anc.has_parent_path() && anc != anc.parent_path()) anc = anc.parent_path();
  // A relative path none of whose directories exist yet ("out/sweeps/x" in a new checkout)
  // is created below the working directory.
  if (anc.empty() || (anc.is_relative() && !fs::exists(anc, ec))) anc = ".";
  if (!fs::is_directory(anc, ec))
    throw InputError(strcat(flag, " ", p.string(), ": cannot write: ", anc.string(), " is not a directory"));
  probe_directory(flag, p.string(), anc);
}

void check_output_file(const std::string& flag, const std::string& path) {
  if (path.empty()) return;  // not asked for (an explicitly empty path is caught at parse time)
  fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw InputError(strcat(flag, " ", path, ": cannot write: it is a directory"));
  if (fs::exists(p, ec)) {
    if (access(path.c_str(), W_OK) != 0) throw InputError(strcat(flag, " ", path, ": cannot write: ", std::strerror(errno)));
    return;
  }
  check_creatable(flag, p);
}

void check_output_dir(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (!fs::is_directory(path, ec)) throw InputError(strcat(flag, " ", path, ": exists and is not a directory"));
    probe_directory(flag, path, fs::path(path));
    return;
  }
  check_creatable(flag, fs::path(path));
}

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
    std::string vs = c.error.empty() && r.greedy_cycles
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

void write_json(const std::string& path, const nlohmann::json& j) { write_file(path, j.dump(2) + "\n"); }

struct ArchFlags {
  std::string arch = default_config_name();
  std::vector<std::string> sets;
  void add(CLI::App* app) {
    app->add_option("--arch", arch, "architecture config: a YAML path or a name in configs/")->capture_default_str();
    app->add_option("--set", sets,
                    "override a config key, e.g. --set hbm.bandwidth_gbps=230, or a workload key, e.g. "
                    "--set workload.batch=8 (repeatable)");
  }
  // The architecture's overrides, and the workload's (`workload.KEY=VALUE`, prefix removed).
  std::vector<std::string> arch_sets() const {
    std::vector<std::string> out;
    for (const auto& s : sets)
      if (s.rfind(kWorkloadKeyPrefix, 0) != 0) out.push_back(s);
    return out;
  }
  std::vector<std::string> workload_sets() const {
    std::vector<std::string> out;
    for (const auto& s : sets)
      if (s.rfind(kWorkloadKeyPrefix, 0) == 0) out.push_back(s.substr(std::string(kWorkloadKeyPrefix).size()));
    return out;
  }
  int tp = 0;  // --tp N: devices=N (tensor parallelism), after the --set overrides
  void add_tp(CLI::App* app) {
    app->add_option("--tp", tp, "tensor parallelism over N devices: sets devices=N (docs/tensor-parallel.md)")
        ->check(CLI::Range(1, 1024));
  }
  ArchConfig load() const {
    std::vector<std::string> s = arch_sets();
    if (tp > 0) s.push_back(strcat("devices=", tp));
    return load_arch_config(resolve_config_path(arch), s);
  }
  // For commands without a workload YAML (a manifest of graph files, a program): no workload keys.
  ArchConfig load_without_workload(const std::string& what) const {
    if (auto w = workload_sets(); !w.empty())
      throw InputError(strcat("--set ", kWorkloadKeyPrefix, w.front(), ": ", what, " has no workload keys"));
    return load();
  }
};

std::vector<std::string> split_list(const std::string& s);

// --on-unsupported / --unsupported-ops: graph breaks (docs/graph-breaks.md).
struct BreakFlags {
  std::string on_unsupported = "error";
  std::string unsupported_ops;
  void add(CLI::App* app) {
    app->add_option("--on-unsupported", on_unsupported,
                    "an op the LPU back end does not support: error (exit 2) | break (run it on the host: a graph break)")
        ->capture_default_str();
    app->add_option("--unsupported-ops", unsupported_ops,
                    "test switch: comma-separated core ops to treat as unsupported, e.g. erf,exp");
  }
  BreakOptions get() const {
    if (on_unsupported != "error" && on_unsupported != "break")
      throw InputError("--on-unsupported: expected error or break, got '" + on_unsupported + "'");
    BreakOptions b;
    b.on_unsupported_break = on_unsupported == "break";
    for (const auto& op : split_list(unsupported_ops)) b.unsupported_ops.insert(op);
    return b;
  }
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

// The architecture as run: the config's name, and the --set overrides when there were any.
std::string effective_arch(const ArchConfig& a, const std::vector<std::string>& sets) {
  std::string s = a.name;
  for (size_t i = 0; i < sets.size(); ++i) s += (i ? ", " : " (overridden: ") + sets[i];
  return sets.empty() ? s : s + ")";
}

// Utilisation (useful work over peak work) with what it counts, then busy time apart.
std::vector<std::string> engine_row(const EngineStats& e) {
  std::string what = e.work_unit == "MACs" ? " of peak MACs" : e.work_unit == "element_ops" ? " of peak element ops"
                     : e.work_unit == "bytes" ? " of peak HBM bytes" : " busy";
  std::string busy2 = e.work_unit.empty() ? "" : " (busy " + format_percent(e.busy_fraction) + ")";
  return {e.name + " utilisation", format_percent(e.utilization) + what + busy2};
}

// Energy (sim/energy.h): the total and its dynamic/static parts, per token for an LLM step;
// or why there is none.
void energy_rows(const EnergyStats& e, int64_t tokens, const ArchConfig& arch, std::vector<std::vector<std::string>>& rows) {
  if (!e.configured) {
    rows.push_back({"energy", "not modelled (" + arch.file + " has no energy section)"});
    return;
  }
  rows.push_back({"energy", strcat(format_energy(e.total_j()), " (dynamic ", format_energy(e.dynamic_j), ", static ",
                                   format_energy(e.static_j), ")")});
  if (tokens > 0) rows.push_back({"energy per token", format_energy(e.total_j() / static_cast<double>(tokens))});
  if (e.seconds > 0) rows.push_back({"average power", fmt("%.2f W", e.total_j() / e.seconds)});
}

// Energy per engine: dynamic (events x config energies) and static (power x time).
std::string format_energy_table(const EnergyStats& e) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : energy_engines()) {
    const EngineEnergy& g = e.engines.at(name);
    rows.push_back({name, format_energy(g.dynamic_j), format_energy(g.static_j), format_energy(g.total_j()),
                    format_percent(e.total_j() > 0 ? g.total_j() / e.total_j() : 0.0)});
  }
  rows.push_back({"total", format_energy(e.dynamic_j), format_energy(e.static_j), format_energy(e.total_j()), "100.0 %"});
  return "energy by engine\n" + format_table({"engine", "dynamic", "static", "total", "share"}, rows);
}

void print_run(const RunOutcome& o, const std::vector<std::string>& sets) {
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
      {"traffic / compulsory", fmt("%.3f", o.to_json()["traffic_ratio"].get<double>())},
      {"search", o.search ? search_summary(*o.search) : std::string("-")},
      {"HBM bandwidth utilisation", format_percent(s.hbm_bandwidth_utilization) + " of " +
                                        format_bandwidth(o.arch.hbm.bandwidth_gbps * 1e9)},
      {"graph breaks", strcat(s.graph_breaks.size(), s.graph_breaks.empty() ? "" : fmt(", host time %.3f us", s.host_us()))},
  };
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
    rows.push_back({"  break " + b.node, strcat(b.op, ", ", format_bytes(static_cast<double>(b.bytes)), ", ", format_duration_us(b.host_us))});
  if (int64_t t = llm_tokens_per_step(o.workload); t > 0) {
    rows.push_back({"time per token", format_duration_us(s.latency_us / static_cast<double>(t))});
    rows.push_back({"tokens per second", fmt("%.1f", static_cast<double>(t) / (s.latency_us * 1e-6))});
    StepRoofs roofs = step_roofs(o);
    double per_cycle = static_cast<double>(t) * o.arch.clock_ghz * 1e9;
    rows.push_back({"tokens/s roofs",
                    strcat(fmt("%.1f", per_cycle / roofs.memory_cycles), " memory (HBM bytes), ",
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
    rows.push_back({"devices", strcat(s.devices.size(), " (tensor parallelism), all halted at cycle ", last, ", ",
                                      format_duration_us(static_cast<double>(last) / (o.arch.clock_ghz * 1e3)))});
    rows.push_back({"ESL sent", format_bytes(static_cast<double>(esl)) + " (all devices)"});
    rows.push_back({"exposed sync", strcat(wait, " cycles (the most any device waited at sync.wait)")});
    for (size_t d = 0; d < s.devices.size(); ++d) {
      const auto& x = s.devices[d];
      rows.push_back({strcat("  device ", d),
                      strcat(x.cycles, " cycles, HBM ", format_bytes(static_cast<double>(x.hbm_read_bytes + x.hbm_write_bytes)),
                             ", ESL ", format_bytes(static_cast<double>(x.esl_bytes)), " in ", x.esl_sends, " sends, sync wait ",
                             x.sync_wait_cycles, " cycles")});
    }
  }
  for (const auto& e : s.engines) rows.push_back(engine_row(e));
  energy_rows(s.energy, llm_tokens_per_step(o.workload), o.arch, rows);
  std::cout << format_table({"metric", "value"}, rows);
  if (s.energy.configured) std::cout << "\n" << format_energy_table(s.energy);
  if (o.search) std::cout << "\n" << format_search_candidates(*o.search);
  // Where the time went, kernel by kernel (docs/sim-model.md, "Per-kernel attribution").
  std::cout << "\n" << format_top_kernels(o, 10) << "\n" << format_class_roofline(o);
}

int cmd_run(const std::string& workload, const ArchFlags& af, const BreakFlags& bf, const std::string& fusion,
            bool functional, const std::string& json, const std::string& trace, const std::string& vcd) {
  check_output_file("--json", json);
  check_output_file("--trace", trace);
  check_output_file("--vcd", vcd);
  if (is_manifest_file(workload)) {  // several graphs from torch.compile (apps/lpu/manifest.h)
    if (!trace.empty() || !vcd.empty()) throw InputError("--trace and --vcd take one graph, not a manifest");
    ManifestRun r = run_manifest(load_manifest(workload), af.load_without_workload("a manifest of graph files"), fusion, functional, bf.get());
    std::cout << format_manifest_run(r);
    if (!json.empty()) write_json(json, r.to_json());
    if (functional && !r.functional_ok) throw CheckFailed("functional check failed in a graph of " + workload);
    return 0;
  }
  WorkloadSpec w = resolve_workload(workload, af.workload_sets());
  ArchConfig arch = af.load();
  RunOutcome o = run_job(w, arch, fusion, functional, !trace.empty(), bf.get(), vcd);
  print_run(o, af.arch_sets());
  if (!json.empty()) write_json(json, o.to_json());
  if (!trace.empty()) write_json(trace, trace_json_for(o));
  if (o.check) {
    const std::string& rule = o.check->rule;  // one description, set where the check is made
    std::cout << fmt("functional: max abs error %.3g", o.check->max_abs_error)
              << fmt(", max rel error %.3g", o.check->max_rel_error) << " (tolerance " << rule
              << "): " << (o.check->ok ? "PASS" : "FAIL") << "\n";
    if (!o.check->ok) throw CheckFailed("functional check failed: worst element " + o.check->worst);
  }
  return 0;
}

// `lpu generate` (apps/lpu/generate.h): flags over the workload's prompt_len/gen_len keys.
int cmd_generate(const std::string& workload, const ArchFlags& af, const BreakFlags& bf, const std::string& fusion,
                 GenerateOptions o, const std::string& json, const std::string& csv) {
  check_output_file("--json", json);
  check_output_file("--csv", csv);
  WorkloadSpec w = resolve_workload(workload, af.workload_sets());
  ArchConfig arch = af.load();
  o.fusion = fusion;
  o.breaks = bf.get();
  o.progress = &std::cout;
  o.progress_bar = isatty(STDOUT_FILENO);
  CompileCache cache;
  GenerateResult r = run_generate(w, arch, o, cache);
  r.arch_overrides = af.arch_sets();
  std::cout << r.summary();
  if (!json.empty()) write_json(json, r.to_json());
  if (!csv.empty()) write_file(csv, r.to_csv());
  return 0;
}

// Where a policy's gain over the first one came from: HBM bytes, kernels (each dependent
// kernel boundary drains the pipeline) and ISU stall cycles.
std::string why_column(const RunOutcome& base, const RunOutcome& r) {
  if (&base == &r) return "baseline";
  auto traffic = [](const RunOutcome& o) {
    return static_cast<double>(o.sim.stats.hbm_read_bytes + o.sim.stats.hbm_write_bytes);
  };
  auto stalls = [](const RunOutcome& o) {
    return static_cast<double>(o.sim.stats.isu_hazard_stall_cycles + o.sim.stats.isu_queue_stall_cycles);
  };
  auto signed_ = [](double d, const std::string& text) { return (d > 0 ? "+" : d < 0 ? "-" : "+-") + text; };
  double db = traffic(r) - traffic(base);
  double dk = static_cast<double>(r.comp.schedule.kernels.size()) - static_cast<double>(base.comp.schedule.kernels.size());
  double ds = stalls(r) - stalls(base);
  return signed_(db, format_bytes(std::fabs(db))) + " HBM, " + signed_(dk, fmt("%.0f", std::fabs(dk))) + " kernels, " +
         signed_(ds, fmt("%.0f", std::fabs(ds))) + " stall cycles";
}

int cmd_compare(const std::string& workload, const ArchFlags& af, const BreakFlags& bf, const std::string& policies,
                bool functional, const std::string& json, const std::string& report) {
  check_output_file("--json", json);
  check_output_dir("--report", report);
  WorkloadSpec w = resolve_workload(workload, af.workload_sets());
  ArchConfig arch = af.load();
  std::vector<std::string> names;
  for (const auto& p : split_list(policies)) {
    if (std::find(names.begin(), names.end(), p) != names.end())
      throw InputError("--fusion: policy '" + p + "' given twice in '" + policies + "'");
    require_policy(p, "--fusion policy");
    names.push_back(p);
  }
  if (names.empty()) throw InputError("--fusion: no policy given");
  bool progress = isatty(STDERR_FILENO);  // long runs say what they are doing, on a terminal only
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i < names.size(); ++i) {
    if (progress) std::cerr << "\r[" << i + 1 << "/" << names.size() << "] " << w.name << " " << names[i] << "...\x1b[K" << std::flush;
    runs.push_back(run_job(w, arch, names[i], functional, !report.empty(), bf.get()));
  }
  if (progress) std::cerr << "\r\x1b[K" << std::flush;
  double base = static_cast<double>(runs.front().sim.stats.cycles);
  int64_t tokens = llm_tokens_per_step(w);
  std::vector<std::vector<std::string>> rows;
  nlohmann::json out = {{"workload", w.name}, {"arch", arch.name}, {"arch_overrides", af.arch_sets()}, {"runs", nlohmann::json::array()}};
  bool all_ok = true;
  for (const auto& r : runs) {
    const auto& s = r.sim.stats;
    std::vector<std::string> row = {r.fusion,
                                    std::to_string(r.comp.schedule.kernels.size()),
                                    format_bytes(static_cast<double>(s.hbm_read_bytes)),
                                    format_bytes(static_cast<double>(s.hbm_write_bytes)),
                                    format_bytes(static_cast<double>(r.comp.compulsory_hbm_bytes)),
                                    std::to_string(s.cycles),
                                    format_duration_us(s.latency_us)};
    if (tokens > 0) {
      row.push_back(fmt("%.3f", s.latency_us / 1e3 / static_cast<double>(tokens)));
      row.push_back(fmt("%.1f", static_cast<double>(tokens) / (s.latency_us * 1e-6)));
    }
    if (s.energy.configured) {
      row.push_back(format_energy(s.energy.total_j()));
      if (tokens > 0) row.push_back(fmt("%.3f", s.energy.total_j() * 1e3 / static_cast<double>(tokens)));
    }
    // Traffic over compulsory rather than bandwidth utilisation: fusion moves fewer bytes in
    // less time, so utilisation can fall when fusion helps and read like a regression.
    row.push_back(fmt("%.3f", r.to_json()["traffic_ratio"].get<double>()));
    row.push_back(fmt("%.2fx", base / static_cast<double>(std::max<uint64_t>(s.cycles, 1))));
    if (r.check) {
      row.push_back(fmt("%.2g", r.check->max_abs_error) + (r.check->ok ? " ok" : " FAIL"));
      all_ok = all_ok && r.check->ok;
    }
    row.push_back(why_column(runs.front(), r));
    rows.push_back(row);
    nlohmann::json j = r.to_json();
    j["speedup_vs_first"] = base / static_cast<double>(std::max<uint64_t>(s.cycles, 1));
    out["runs"].push_back(j);
  }
  std::vector<std::string> header = {"fusion", "kernels", "hbm_read", "hbm_write", "compulsory", "cycles", "latency"};
  if (tokens > 0) {
    header.push_back("ms/token");
    header.push_back("tokens/s");
  }
  if (runs.front().sim.stats.energy.configured) {  // one config for every policy
    header.push_back("energy");
    if (tokens > 0) header.push_back("mJ/token");
  }
  header.push_back("traffic/compulsory");
  header.push_back("speedup");
  if (functional) header.push_back("max_abs_err");
  header.push_back("why (vs " + runs.front().fusion + ")");
  std::cout << "workload " << w.name << " on " << effective_arch(arch, af.arch_sets()) << "\n" << format_table(header, rows);
  // One rule for every policy (the same check), printed once under the table as `run` does.
  if (functional && runs.front().check) std::cout << "functional check: tolerance " << runs.front().check->rule << "\n";
  if (!json.empty()) {
    write_json(json, out);
    std::cout << "wrote " << json << "\n";
  }
  if (!report.empty() && write_compare_report(out, runs, report) != 0) return 2;
  if (!all_ok) throw CheckFailed("functional check failed");
  return 0;
}

// --emit triton-data: what scripts/triton_check.py needs to check an emitted Triton module without
// lpu: the inputs (stored as fp32, or, for a built-in workload's large random inputs, the seed of
// ref/tensor.cpp's LCG, which the script reproduces) and the reference outputs (the reference
// executor's, or PyTorch's for a graph file), in triton_data.json + triton_data.bin (fp32 LE).
void write_triton_data(const WorkloadSpec& w, const Compilation& c, const std::string& outdir) {
  std::optional<GraphFile> file;
  if (!w.graph.empty()) file = load_graph_file(w.graph);
  TensorMap inputs = file ? load_graph_inputs(*file, c.core) : make_random_inputs(c.core, w.seed);
  std::vector<Tensor> expected = file ? load_expected_outputs(*file) : run_reference(c.core, inputs);
  std::string bin;
  auto put = [&](const Tensor& t) {
    nlohmann::json e;
    e["offset"] = bin.size();
    e["numel"] = t.data.size();
    bin.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
    return e;
  };
  int64_t total = 0;
  for (const auto& [name, t] : inputs) total += t.numel();
  constexpr int64_t kStoreLimit = int64_t{1} << 21;  // elements: beyond, built-in inputs go by seed
  nlohmann::json j, ins = nlohmann::json::object(), outs = nlohmann::json::object();
  j["format"] = "lpu-triton-data/1";
  j["workload"] = w.name;
  j["program"] = c.loop_ir.name;
  j["reference"] = file ? "PyTorch (graph file)" : "reference executor";
  j["bin"] = "triton_data.bin";
  for (const auto& n : c.core.nodes()) {
    if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
    const Tensor& t = inputs.at(n.name);
    nlohmann::json e = file || total <= kStoreLimit ? put(t) : nlohmann::json::object();
    if (!file) {
      e["lcg_seed"] = w.seed + static_cast<uint64_t>(n.id) * 7919;
      e["lcg_scale"] = random_input_scale(n);  // then rounded to the dtype again (ref/reference.h)
    }
    e["shape"] = t.type.shape;
    e["dtype"] = dtype_name(t.type.dtype);
    ins[n.name] = e;
  }
  if (expected.size() != c.loop_ir.outputs.size()) throw InternalError("triton-data: output count differs from the program's");
  for (size_t i = 0; i < expected.size(); ++i) {
    nlohmann::json e = put(expected[i]);
    e["shape"] = expected[i].type.shape;
    e["dtype"] = dtype_name(expected[i].type.dtype);
    outs[c.loop_ir.outputs[i]] = e;
  }
  j["inputs"] = ins;
  j["outputs"] = outs;
  write_file(outdir + "/triton_data.bin", bin);
  write_file(outdir + "/triton_data.json", j.dump(1) + "\n");
}

int cmd_compile(const std::string& workload, const ArchFlags& af, const BreakFlags& bf, const std::string& fusion,
                const std::string& emit, const std::string& outdir) {
  check_output_dir("-o", outdir);
  WorkloadSpec w = resolve_workload(workload, af.workload_sets());
  ArchConfig arch = af.load();
  // devices > 1: rank 0's program as `lpu run` simulates it (tensor parallelism); asm and bin
  // also write every other device's program (program.devN.s / .lpubin, the files `lpu sim` takes).
  std::vector<Graph> ranks;
  if (arch.devices > 1) ranks = build_rank_graphs(w, arch.devices);
  Graph g = ranks.empty() ? build_graph(w) : ranks[0];
  // Only the stages asked for run, so graph/core work for graphs the back end cannot lower yet.
  bool lower = false;
  for (const auto& e : split_list(emit)) lower = lower || (e != "graph" && e != "core");
  Compilation c;
  SearchReport rep;
  if (lower) {
    if (require_policy(fusion).simulates) {
      Tuned t = tune(g, arch, tune_options_for(fusion), rep, bf.get());
      c = std::move(t.comp);
      arch = t.arch;  // the graph-break costs below are priced on what the choice runs on
      // The program is for the chosen candidate's config: say which, and what it changed.
      std::string changes;
      for (const auto& ch : rep.arch_changes) changes += (changes.empty() ? "" : ", ") + ch;
      std::cout << fusion << ": " << search_summary(rep) << "; chose " << rep.chosen
                << (changes.empty() ? "" : "; the program is for the arch config with " + changes) << "\n";
    } else {
      c = compile_graph(g, compile_options_for(arch, fusion, bf.get()));
    }
  } else {
    c.captured = g;
    c.core = normalize_graph(g);
  }
  std::map<std::string, std::pair<std::string, std::function<std::string()>>> artefacts = {
      {"graph", {"graph.txt", [&] { return print_graph(c.captured); }}},
      {"core", {"core.txt", [&] { return print_graph(c.core); }}},
      {"loopir", {"loopir.txt", [&] { return print_loop_ir(c.loop_ir); }}},
      {"schedule", {"schedule.txt", [&] { return print_schedule(c.loop_ir, c.schedule) + describe_graph_breaks(c.code.program, arch); }}},
      {"schedule-json", {"schedule.json", [&] { return schedule_to_json(c.loop_ir, c.schedule); }}},
      {"asm", {"program.s", [&] { return print_program(c.code.program); }}},
      {"cpp", {"kernels.cpp", [&] { return emit_cpp_source(c.loop_ir, c.schedule); }}},
      {"triton", {"triton_kernels.py", [&] { return emit_triton_module(c.loop_ir, c.schedule); }}},
      {"torch", {"torch_graph.py", [&] { return emit_torch_graph_module(c.core, c.loop_ir.outputs); }}},
      {"triton-plan", {"triton_plan.json", [&] { return triton_buffer_plan_json(c.loop_ir, c.schedule); }}},
      {"triton-data", {"triton_data.json", [&] { return std::string(); }}},  // written by write_triton_data
      {"counts", {"counts.txt", [&] { return print_counts(count_kernels(c.loop_ir, c.schedule)); }}},
      {"counts_json", {"counts.json", [&] { return counts_to_json(count_kernels(c.loop_ir, c.schedule)).dump(2) + "\n"; }}},
      {"bin", {"program.lpubin", [&] {
                 std::vector<uint8_t> bin = encode_program(c.code.program);
                 return std::string(bin.begin(), bin.end());
               }}},
  };
  for (const auto& e : split_list(emit)) {
    auto it = artefacts.find(e);
    if (it == artefacts.end())
      throw InputError("--emit: unknown artefact '" + e +
                       "' (graph, core, loopir, schedule, schedule-json, asm, bin, cpp, triton, triton-plan, triton-data, torch, counts, counts_json)");
    if (e == "bin" && outdir.empty()) throw InputError("--emit bin writes a binary file: give -o DIR");
    if (e == "triton-data") {
      if (outdir.empty()) throw InputError("--emit triton-data writes a binary file: give -o DIR");
      write_triton_data(w, c, outdir);
      std::cout << "wrote " << outdir << "/triton_data.json, " << outdir << "/triton_data.bin\n";
      continue;
    }
    if (e == "schedule" && !outdir.empty())  // the text report always comes with its JSON
      write_file(outdir + "/schedule.json", artefacts.at("schedule-json").second());
    if (outdir.empty()) {
      std::cout << it->second.second();
    } else {
      write_file(outdir + "/" + it->second.first, it->second.second());
      std::cout << "wrote " << outdir << "/" << it->second.first << "\n";
    }
    if ((e == "asm" || e == "bin") && ranks.size() > 1) {
      if (require_policy(fusion).simulates)
        throw InputError(strcat("--fusion ", fusion, ": the tuner searches one device's program; with devices = ",
                                arch.devices, " use a fixed policy (greedy, none, ...)"));
      if (outdir.empty()) throw InputError(strcat("--emit ", e, " with devices = ", arch.devices, " writes one file per device: give -o DIR"));
      for (size_t r = 1; r < ranks.size(); ++r) {
        Program p = compile_graph(ranks[r], compile_options_for(arch, fusion, bf.get())).code.program;
        std::string name = strcat("program.dev", r, e == "asm" ? ".s" : ".lpubin");
        if (e == "asm") {
          write_file(outdir + "/" + name, print_program(p));
        } else {
          std::vector<uint8_t> bin = encode_program(p);
          write_file(outdir + "/" + name, std::string(bin.begin(), bin.end()));
        }
        std::cout << "wrote " << outdir << "/" << name << "\n";
      }
    }
  }
  return 0;
}

// The frontend's check up to the core graph: reference executor vs PyTorch's outputs.
int cmd_ref(const std::string& path) {
  ReferenceRun r = run_reference_check(path);
  const auto& outs = r.file.graph.outputs();
  std::cout << "graph " << r.file.graph.name() << ": " << r.file.graph.size() << " nodes, " << r.core.size()
            << " after normalisation\n";
  for (size_t i = 0; i < outs.size(); ++i)
    std::cout << "  output" << i << " %" << r.file.graph.node(outs[i]).name << " "
              << type_str(r.file.graph.node(outs[i]).type)
              << fmt(": max abs error %.3g", r.check.max_abs_per_output[i]) << "\n";
  std::cout << fmt("reference vs PyTorch: max abs error %.3g", r.check.max_abs_error) << " (tolerance "
            << r.check.rule << "): " << (r.check.ok ? "PASS" : "FAIL") << "\n";
  if (!r.check.ok) throw CheckFailed("reference differs from PyTorch: worst element " + r.check.worst);
  return 0;
}

// Simulates an LPU program given as assembly (.s) or the binary form (.lpubin), timing mode.
Program load_program_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open file");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  return fs::path(path).extension() == ".lpubin"
             ? decode_program(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path)
             : parse_program(bytes, path);
}

// Device i runs paths[i]; the config must have at least that many devices.
int cmd_sim(const std::vector<std::string>& paths, const ArchFlags& af, const std::string& json,
            const std::string& trace, const std::string& vcd) {
  check_output_file("--json", json);
  check_output_file("--trace", trace);
  check_output_file("--vcd", vcd);
  std::vector<Program> progs;
  for (const auto& path : paths) progs.push_back(load_program_file(path));
  ArchConfig arch = af.load_without_workload("a program");
  if (static_cast<int>(progs.size()) > arch.devices)
    throw InputError(strcat(progs.size(), " programs but ", arch.name, " has devices = ", arch.devices,
                            " (use --set devices=", progs.size(), ")"));
  const Program& p = progs.front();
  SimOptions o;
  for (size_t d = 1; d < progs.size(); ++d) o.other_devices.push_back(&progs[d]);
  o.record_trace = !trace.empty();
  o.vcd_path = vcd;
  SimResult r = simulate(p, arch, o);
  const auto& s = r.stats;
  std::vector<std::vector<std::string>> rows = {{"program", p.name},
                                                {"arch", effective_arch(arch, af.arch_sets())},
                                                {"instructions", std::to_string(s.instructions)},
                                                {"cycles", std::to_string(s.cycles)},
                                                {"device cycles", [&] {
                                                   std::string d;
                                                   for (auto c : s.device_cycles) d += (d.empty() ? "" : " ") + std::to_string(c);
                                                   return d;
                                                 }()},
                                                {"latency", format_duration_us(s.latency_us)},
                                                {"HBM read", format_bytes(static_cast<double>(s.hbm_read_bytes))},
                                                {"HBM written", format_bytes(static_cast<double>(s.hbm_write_bytes))}};
  for (const auto& e : s.engines) rows.push_back(engine_row(e));
  energy_rows(s.energy, 0, arch, rows);
  std::cout << format_table({"metric", "value"}, rows);
  if (s.energy.configured) std::cout << "\n" << format_energy_table(s.energy);
  if (!json.empty()) write_json(json, stats_to_json(s));
  if (!trace.empty()) write_json(trace, trace_to_json(r.trace));
  return 0;
}

int cmd_check_config(const std::vector<std::string>& files, const std::vector<std::string>& sets) {
  for (const auto& f : files) {
    ArchConfig a = load_arch_config(resolve_config_path(f), sets);
    std::cout << a.file << ": ok (" << a.name << ", " << a.clock_ghz << " GHz, " << a.devices << " device(s), HBM "
              << a.hbm.bandwidth_gbps << " GB/s x " << a.hbm.channels << " channels, LMU " << a.lmu.capacity_kib
              << " KiB, VXE " << a.vxe.lanes << " lanes, SXE " << a.sxe.mac_trees << "x" << a.sxe.lanes << ")\n";
    if (!a.energy.configured) {
      std::cout << "  energy: not modelled (no energy section)\n";
      continue;
    }
    const auto& e = a.energy;
    std::string vxe, st;
    for (const auto& c : energy_vxe_classes()) vxe += strcat(vxe.empty() ? "" : ", ", c, " ", e.vxe_pj(c));
    for (const auto& n : energy_engines()) st += strcat(st.empty() ? "" : ", ", n, " ", e.static_mw.at(n));
    std::cout << "  energy: HBM " << e.hbm_read_pj_per_bit << "/" << e.hbm_write_pj_per_bit
              << " pJ/bit read/written, SXE " << e.sxe_pj_per_mac << " pJ/MAC, LMU " << e.lmu_read_pj_per_byte << "/"
              << e.lmu_write_pj_per_byte << " pJ/B read/written, ESL " << e.esl_pj_per_bit << " pJ/bit\n"
              << "  energy: VXE pJ/op " << vxe << "\n"
              << "  energy: static mW " << st << "\n";
  }
  return 0;
}

// `lpu list ops --aten`: the core ATen opset and how each op is handled, with the counts.
int cmd_list_aten() {
  CoreAtenSet set = core_aten_coverage();
  std::map<std::string, int> count;
  std::vector<std::vector<std::string>> rows;
  for (const auto& op : set.ops) {
    std::string ov;
    for (const auto& o : op.overloads) ov += (ov.empty() ? "" : ",") + o;
    rows.push_back({"aten." + op.name, ov, op.handling});
    ++count[op.handling];
  }
  std::cout << format_table({"op", "overloads", "handling"}, rows);
  auto n = static_cast<int>(set.ops.size());
  std::cout << "core ATen opset of PyTorch " << set.torch_version << ": " << n - count["missing"] << " of " << n
            << " ops handled (" << count["lowered"] << " lowered, " << count["decomposed"] << " decomposed, "
            << count["host"] + count["host (timing only)"] << " on the host, " << count["host (timing only)"]
            << " of them timing only); " << count["missing"] << " missing\n";
  return count["missing"] ? 1 : 0;
}

int cmd_list(const std::string& what, bool aten) {
  if (aten && what != "ops") throw InputError("list: --aten goes with `list ops`");
  if (aten) return cmd_list_aten();
  if (what == "ops") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& op : all_ops()) rows.push_back({op.name, op_category_name(op.category), op.doc});
    std::cout << format_table({"op", "category", "meaning"}, rows);
  } else if (what == "workloads") {
    std::vector<std::vector<std::string>> rows;
    for (const auto& b : model_builders()) rows.push_back({b.name, "model", b.description});
    if (fs::is_directory(workloads_dir()))
      for (const auto& e : fs::directory_iterator(workloads_dir()))
        if (e.path().extension() == ".yaml") rows.push_back({e.path().stem().string(), "file", e.path().string()});
    std::sort(rows.begin() + static_cast<long>(model_builders().size()), rows.end());
    std::cout << format_table({"name", "kind", "description"}, rows);
  } else if (what == "configs") {
    std::vector<std::vector<std::string>> rows;
    for (const std::string& dir : {std::string("configs"), std::string(LPU_SOURCE_DIR) + "/configs"}) {
      if (!fs::is_directory(dir)) continue;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".yaml") rows.push_back({e.path().stem().string(), e.path().string()});
      break;
    }
    std::sort(rows.begin(), rows.end());
    std::cout << format_table({"config", "file"}, rows);
  } else {
    throw InputError("list: expected ops, workloads or configs, got '" + what + "'");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lpu: hardware/compiler co-design workbench for LLM accelerators"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");

  std::string workload, fusion = "greedy", json, trace, emit = "asm", outdir, policies = "none,greedy", what;
  bool functional = false;
  std::string vcd;
  ArchFlags af;
  BreakFlags bf;

  const char* workload_help = "workload YAML, name in workloads/, or graph file (.json, .txt)";
  auto* run = app.add_subcommand("run", "compile and simulate one workload");
  run->add_option("workload", workload, workload_help)->required();
  af.add(run);
  af.add_tp(run);
  bf.add(run);
  run->add_option("--fusion", fusion, "fusion policy: " + policy_names() + " (docs/scheduling.md)")->capture_default_str();
  run->add_flag("--functional", functional,
                "simulate with real data and compare with the reference executor (graph files: with PyTorch's outputs)");
  run->add_option("--json", json, "write statistics as JSON");
  run->add_option("--trace", trace, "write a Chrome/Perfetto trace-event timeline");
  run->add_option("--vcd", vcd, "write a VCD waveform of engine queue occupancy, busy workers, in-flight count");

  auto* cmp = app.add_subcommand("compare", "run one workload under several fusion policies, side by side");
  cmp->add_option("workload", workload, workload_help)->required();
  af.add(cmp);
  af.add_tp(cmp);
  bf.add(cmp);
  cmp->add_option("--fusion", policies, "comma-separated policies")->capture_default_str();
  cmp->add_flag("--functional", functional, "also check every policy's outputs against the reference");
  cmp->add_option("--json", json, "write all runs as JSON");
  std::string report_dir;
  cmp->add_option("--report", report_dir, "also write an HTML report with plots and timelines into this directory");

  SweepOptions so;
  std::string sweep_file;
  so.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto* swp = app.add_subcommand("sweep", "run a design-space sweep (docs/sweeps.md), N processes at a time");
  swp->add_option("file", sweep_file, "sweep YAML (see configs/sweeps/)");
  swp->add_option("-j,--jobs", so.jobs, "points simulated at once (child processes; default: the CPU count)")->capture_default_str();
  auto* swp_out = swp->add_option("-o,--out", so.out_dir, "results directory: results.csv, results.jsonl, traces/");
  swp->add_flag("--resume", so.resume, "continue a sweep in -o: skip the points it already finished");
  swp->add_option("--timeout", so.timeout_s, "fail a point that runs longer than this many seconds (0: no limit)");
  swp->add_option("--json", json, "write a summary (counts, failures, fastest points) as JSON");
  std::string shard, backend = "local";
  SlurmOptions slo;
  swp->add_option("--shard", shard, "run only shard I of N (I/N, from 0), into DIR/results-I-of-N.*");
  swp->add_option("--backend", backend, "local (child processes here) or slurm (one job array)")->capture_default_str();
  swp->add_option("--array-size", slo.array_size, "slurm: array tasks (shards; default min(points, 100))");
  swp->add_option("--partition", slo.partition, "slurm: partition");
  swp->add_option("--time", slo.time, "slurm: time limit per task (sbatch --time)");
  swp->add_option("--mem", slo.mem, "slurm: memory per task (sbatch --mem)");
  swp->add_flag("--dry-run", slo.dry_run, "print what would run (local: the points; slurm: the sbatch script), run nothing");
  std::vector<std::string> merge_dirs;
  std::string merge_out;
  auto* mrg = swp->add_subcommand("merge", "join the shard results of one sweep into results.csv/results.jsonl");
  mrg->add_option("dirs", merge_dirs, "results directories holding results-I-of-N.jsonl")->required();
  mrg->add_option("-o,--out", merge_out, "where to write results.{csv,jsonl} (default: the first directory)");
  mrg->add_option("--json", json, "write what was merged and what is missing as JSON");

  ReportOptions ro;
  auto* rep = app.add_subcommand("report", "write an HTML report with plots (docs/reports.md)");
  rep->add_option("inputs", ro.inputs, "a sweep directory, compare/run JSON files, trace files")->required();
  rep->add_option("-o,--out", ro.out_dir, "report directory (index.html and PNGs)")->required();
  rep->add_option("--cost", ro.cost, "Pareto cost: a results column, e.g. arch.lmu.capacity_kib (default: a relative hardware-cost proxy)");
  rep->add_option("--json", ro.json, "write the report's list of plots and notes as JSON");

  auto* comp = app.add_subcommand("compile", "compile a workload and print or write its IRs");
  comp->add_option("workload", workload, workload_help)->required();
  af.add(comp);
  bf.add(comp);
  comp->add_option("--fusion", fusion, "fusion policy: " + policy_names() + " (docs/scheduling.md)")->capture_default_str();
  comp->add_option("--emit", emit,
                   "comma-separated: graph, core, loopir, schedule, schedule-json, asm, bin, cpp, triton (triton_kernels.py), "
                   "triton-plan (triton_plan.json), triton-data (triton_data.{json,bin}: inputs and reference outputs for "
                   "scripts/triton_check.py; needs -o), torch (torch_graph.py: the core graph as eager PyTorch calls), counts, "
                   "counts_json")
      ->capture_default_str();
  comp->add_option("-o,--out", outdir, "directory to write into (default: stdout)");

  auto* gen = app.add_subcommand("generate", "simulate a whole generation: the prefill, then one decode step per token");
  gen->add_option("workload", workload, "a built-in LLM (lpu list workloads) or a workload YAML naming one")->required();
  af.add(gen);
  bf.add(gen);
  gen->add_option("--fusion", fusion, "fusion policy: none | greedy | search")->capture_default_str();
  int64_t prompt_len = 0, gen_len = 0;
  auto* gen_prompt = gen->add_option("--prompt-len", prompt_len, "prompt tokens (default: the workload's prompt_len, else 32)");
  auto* gen_gen = gen->add_option("--gen-len", gen_len, "tokens to generate (default: the workload's gen_len, else 32)");
  std::string csv;
  bool gen_no_symbolic = false, gen_explain = false, gen_no_regional = false;
  gen->add_flag("--no-symbolic", gen_no_symbolic,
                "compile every decode step (no symbolic context, guards or instantiation)");
  gen->add_flag("--no-regional", gen_no_regional,
                "compile whole models (no regional compilation: the repeated decoder layer compiled once and "
                "instantiated per layer)");
  gen->add_flag("--explain-recompiles", gen_explain,
                "print why each decode step was recompiled: which guard failed and why (to stderr)");
  gen->add_option("--json", json, "write every metric and every step as JSON");
  gen->add_option("--csv", csv, "write one row per step as CSV");

  std::vector<std::string> cfg_files;
  std::vector<std::string> cfg_sets;
  auto* chk = app.add_subcommand("check-config", "validate architecture config files");
  chk->add_option("files", cfg_files, "config YAML paths or names in configs/")->required();
  chk->add_option("--set", cfg_sets, "override a key before validation (repeatable)");

  std::string graph_path;
  auto* ref = app.add_subcommand("ref", "check a graph file up to the core graph: reference executor vs PyTorch");
  ref->add_option("graph", graph_path, "graph file (.json) with a sidecar holding inputs, weights, expected outputs")
      ->required();

  std::vector<std::string> programs;
  auto* sim = app.add_subcommand("sim", "simulate LPU programs (assembly .s or binary .lpubin), one per device");
  sim->add_option("programs", programs, "program files: device 0, 1, ...")->required();
  af.add(sim);
  sim->add_option("--json", json, "write statistics as JSON");
  sim->add_option("--trace", trace, "write a Chrome/Perfetto trace-event timeline");
  sim->add_option("--vcd", vcd, "write a VCD waveform of engine queue occupancy, busy workers, in-flight count");

  auto* lst = app.add_subcommand("list", "list built-in workloads, configs or ops");
  lst->add_option("what", what, "workloads | configs | ops")->required();
  bool list_aten = false;
  lst->add_flag("--aten", list_aten, "with ops: coverage of PyTorch's core ATen opset (exit 1 if any op is missing)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\nRun with --help for more information.\n";
    return 2;
  }
  // A path flag given an empty value ("--json ''") is a mistake, not "no output".
  for (CLI::App* sub : app.get_subcommands())
    for (const char* flag : {"--json", "--csv", "--trace", "--vcd", "--report", "-o"})
      if (CLI::Option* opt = sub->get_option_no_throw(flag); opt && opt->count() > 0 && opt->as<std::string>().empty()) {
        std::cerr << "error: " << flag << ": empty path\n";
        return 2;
      }

  try {
    if (*run) return cmd_run(workload, af, bf, fusion, functional, json, trace, vcd);
    if (*gen) {
      GenerateOptions go;
      if (gen_prompt->count()) go.prompt_len = prompt_len;
      if (gen_gen->count()) go.gen_len = gen_len;
      go.symbolic = !gen_no_symbolic;
      go.regional = !gen_no_regional;
      if (gen_explain) go.explain = &std::cerr;
      return cmd_generate(workload, af, bf, fusion, go, json, csv);
    }
    if (*cmp) return cmd_compare(workload, af, bf, policies, functional, json, report_dir);
    if (*mrg) return merge_command(merge_dirs, merge_out, json);
    if (*swp) {
      if (sweep_file.empty()) throw InputError("sweep: a sweep file is required (lpu sweep FILE -o DIR)");
      if (swp_out->count() == 0) throw InputError("sweep: -o DIR is required");
      if (!std::isfinite(so.timeout_s) || so.timeout_s < 0)
        throw InputError(strcat("--timeout: expected seconds >= 0 (0: no limit), got ", so.timeout_s));
      check_output_dir("-o", so.out_dir);
      check_output_file("--json", json);
      so.progress_bar = isatty(STDOUT_FILENO);
      if (!shard.empty()) so.shard = parse_shard(shard);
      if (backend == "slurm") {
        if (so.shard.active()) throw InputError("--shard runs one shard here; --backend slurm submits all of them");
        if (swp->get_option("-j")->count() == 0) so.jobs = 1;  // a task's CPUs: one unless asked
        return slurm_sweep_command(sweep_file, so, slo, json);
      }
      if (backend != "local") throw InputError("--backend " + backend + ": expected local or slurm");
      for (const char* o : {"--array-size", "--partition", "--time", "--mem"})
        if (swp->get_option(o)->count()) throw InputError(std::string(o) + " applies to --backend slurm only");
      if (slo.dry_run) return sweep_dry_run(sweep_file, so);
      return sweep_command(sweep_file, so, json);
    }
    if (*rep) {
      check_output_dir("-o", ro.out_dir);
      check_output_file("--json", ro.json);
      return report_command(ro);
    }
    if (*comp) return cmd_compile(workload, af, bf, fusion, emit, outdir);
    if (*chk) return cmd_check_config(cfg_files, cfg_sets);
    if (*ref) return cmd_ref(graph_path);
    if (*lst) return cmd_list(what, list_aten);
    if (*sim) return cmd_sim(programs, af, json, trace, vcd);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const CheckFailed& e) {
    std::cerr << "check failed: " << e.what() << "\n";
    return 1;
  } catch (const SimulationStuck& e) {
    std::cerr << "simulation stuck: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "internal error (a bug in the workbench): " << e.what() << "\n";
    return 4;
  }
  return 0;
}
