// `_lpu`: the native half of the Python module `lpu` (python/lpu/, docs/python.md). Each
// function is one job of the CLI called in process, through the same library calls as its
// cmd_*.cpp, and hands back the same JSON as its --json file (as text), plus what it prints.
// The package turns arguments into these plain ones (names, "key=value" lists) and the text
// into dicts. The GIL is released while a job runs: compiling runs in parallel from threads;
// simulations take turns at the SystemC kernel (systemc_turn(), sim/sc_kernel.h).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <tuple>

#include "generate/generate.h"
#include "jobs/backends.h"
#include "jobs/cli_support.h"
#include "jobs/compare.h"
#include "jobs/listings.h"
#include "jobs/manifest.h"
#include "jobs/report.h"
#include "jobs/run_report.h"
#include "lpu_convert.h"
#include "policy_registry.h"
#include "servesim/serve_job.h"
#include "support/error.h"
#include "sweep/sweep_layout.h"
#include "sweep/sweep_spec.h"
#include "sweep/sweep_store.h"

namespace pyb = pybind11;
using namespace pybind11::literals;

namespace lpu::pymod {

namespace {

using WorkloadTuple = std::tuple<std::string, std::string, std::string>;  // name_or_path, yaml, source

WorkloadArg workload_arg(const WorkloadTuple& t) { return {std::get<0>(t), std::get<1>(t), std::get<2>(t)}; }

// What every job takes besides its own options.
struct Common {
  WorkloadArg workload;
  std::string arch, fusion;
  std::vector<std::string> sets;
  std::string on_unsupported, unsupported_ops;
  int tp = 0;
};

// (json, text, failed check or "", trace or ""): `lpu run`, or a manifest of graph files.
std::tuple<std::string, std::string, std::string, std::string> run(const Common& c, bool functional, bool trace) {
  pyb::gil_scoped_release release;
  const Sets s(c.sets);
  const BreakOptions b = break_options(c.on_unsupported, c.unsupported_ops);
  if (c.workload.yaml.empty() && is_manifest_file(c.workload.name_or_path)) {
    if (trace) throw InputError("trace takes one graph, not a manifest");
    if (!s.workload.empty())
      throw InputError(
          strcat("--set ", kWorkloadKeyPrefix, s.workload.front(), ": a manifest of graph files has no workload keys"));
    ManifestRun r =
        run_manifest(load_manifest(c.workload.name_or_path), load_arch(c.arch, s, c.tp), c.fusion, functional, b);
    std::string failed =
        functional && !r.functional_ok ? "functional check failed in a graph of " + r.manifest.path : "";
    return {dump(r.to_json()), format_manifest_run(r), failed, ""};
  }
  const WorkloadSpec w = load_workload(c.workload, s);
  const ArchConfig arch = load_arch(c.arch, s, c.tp);
  RunOutcome o = run_job(w, arch, c.fusion, functional, trace, b);
  std::string text = format_run(o, s.arch), failed;
  if (o.check) {
    text += format_functional_check(*o.check);
    if (!o.check->ok) failed = "functional check failed: worst element " + o.check->worst;
  }
  return {dump(o.to_json()), text, failed, trace ? dump(trace_json_for(o)) : ""};
}

// (json, table, every check passed)
std::tuple<std::string, std::string, bool> compare(const Common& c, const std::string& policies, bool functional) {
  pyb::gil_scoped_release release;
  const Sets s(c.sets);
  CompareRequest r;
  r.workload = load_workload(c.workload, s);
  r.arch = load_arch(c.arch, s, c.tp);
  r.arch_overrides = s.arch;
  r.policies = policies;
  r.functional = functional;
  compare_policy_names(r.policies);  // as the CLI: the policies before the break options
  r.breaks = break_options(c.on_unsupported, c.unsupported_ops);
  CompareResult res = run_compare(r);
  return {dump(res.json), res.table, res.all_ok};
}

// ([(backend, text)], notes)
std::tuple<std::vector<std::pair<std::string, std::string>>, std::string> compile(const Common& c,
                                                                                  const std::string& emit) {
  pyb::gil_scoped_release release;
  const Sets s(c.sets);
  CompileRequest r;
  r.workload = load_workload(c.workload, s);
  r.arch = load_arch(c.arch, s, c.tp);
  r.fusion = c.fusion;
  r.breaks = [&c] { return break_options(c.on_unsupported, c.unsupported_ops); };
  r.emit = emit;
  std::ostringstream notes;
  auto texts = compile_texts(r, notes);
  return {texts, notes.str()};
}

// (json, summary); prompt_len, gen_len unset: the workload's keys, else the defaults.
std::tuple<std::string, std::string> generate(const Common& c, std::optional<int64_t> prompt_len,
                                              std::optional<int64_t> gen_len, bool symbolic, bool regional) {
  pyb::gil_scoped_release release;
  const Sets s(c.sets);
  GenerateOptions o;
  o.prompt_len = prompt_len;
  o.gen_len = gen_len;
  o.symbolic = symbolic;
  o.regional = regional;
  const WorkloadSpec w = load_workload(c.workload, s);
  const ArchConfig arch = load_arch(c.arch, s, c.tp);
  o.fusion = c.fusion;
  o.breaks = break_options(c.on_unsupported, c.unsupported_ops);
  CompileCache cache;
  GenerateResult r = run_generate(w, arch, o, cache);
  r.arch_overrides = s.arch;
  return {dump(r.to_json()), r.summary()};
}

// `lpu serve`'s options, as the package's keywords (python/lpu/__init__.py: serve); their
// defaults are the library's (ServeJobOptions, ServeTextOptions), as the CLI's are.
struct ServeArgs {
  ServeJobOptions o;
  ServeTextOptions t;
};

// (json, summary): `lpu serve` (a truncated run returns what it measured: "truncated" says so).
std::tuple<std::string, std::string> serve(const Common& c, const ServeArgs& a) {
  pyb::gil_scoped_release release;
  const Sets s(c.sets);
  const WorkloadSpec w = load_workload(c.workload, s);
  const ArchConfig arch = load_arch(c.arch, s, c.tp);
  ServeJobOptions o = a.o;
  o.fusion = c.fusion;
  apply_serve_text(o, w, a.t);
  const ServeJobResult r = run_serve_job(w, arch, o);
  return {dump(r.to_json()), r.summary()};
}

// A keyword of serve: a field of ServeArgs, read and written by name.
#define LPU_SERVE_ARG(NAME, FIELD) \
  def_property(                    \
      NAME, [](const ServeArgs& a) { return a.FIELD; }, [](ServeArgs& a, decltype(a.FIELD) v) { a.FIELD = v; })

void def_serve(pyb::module_& m) {
  pyb::class_<ServeArgs>(m, "_ServeArgs")
      .def(pyb::init<>())
      .LPU_SERVE_ARG("trace_file", o.trace_file)
      .LPU_SERVE_ARG("rate", t.rate)
      .LPU_SERVE_ARG("requests", o.generator.requests)
      .LPU_SERVE_ARG("seed", o.generator.seed)
      .LPU_SERVE_ARG("arrivals", t.arrivals)
      .LPU_SERVE_ARG("prompt", t.prompt)
      .LPU_SERVE_ARG("output", t.output)
      .LPU_SERVE_ARG("router", t.router)
      .LPU_SERVE_ARG("max_batched_tokens", o.scheduler.max_num_batched_tokens)
      .LPU_SERVE_ARG("max_seqs", o.scheduler.max_num_seqs)
      .LPU_SERVE_ARG("chunked_prefill", o.scheduler.chunked_prefill)
      .LPU_SERVE_ARG("chunk_size", o.scheduler.chunk_size)
      .LPU_SERVE_ARG("block_size", o.scheduler.block_size)
      .LPU_SERVE_ARG("replicas", o.replicas)
      .LPU_SERVE_ARG("prefill_replicas", o.prefill_replicas)
      .LPU_SERVE_ARG("prefill_gpu", o.prefill_gpu)
      .LPU_SERVE_ARG("link_gbps", o.link.bandwidth_gbps)
      .LPU_SERVE_ARG("link_latency_us", o.link.latency_us)
      .LPU_SERVE_ARG("slo_ttft_ms", o.slo.ttft_ms)
      .LPU_SERVE_ARG("slo_tpot_ms", o.slo.tpot_ms)
      .LPU_SERVE_ARG("exact", o.exact)
      .LPU_SERVE_ARG("error_samples", o.error_samples)
      .LPU_SERVE_ARG("cost_cache", o.cost_cache)
      .LPU_SERVE_ARG("find_rate", o.find_rate);
  m.def("serve", &serve, "common"_a, "args"_a);
}
#undef LPU_SERVE_ARG

// (config as JSON, its description): `lpu check-config ARCH --set ...`.
std::tuple<std::string, std::string> check_config(const std::string& arch, const std::vector<std::string>& sets) {
  pyb::gil_scoped_release release;
  const ArchConfig a = load_arch_config(resolve_config_path(arch), sets);
  return {dump(arch_to_json(a)), describe_arch_config(a)};
}

// A sweep directory's rows (DIR/results.jsonl, else its shards' files), as a JSON array.
std::string sweep_load(const std::string& dir) {
  pyb::gil_scoped_release release;
  std::vector<std::string> files;
  if (std::string whole = dir + "/results.jsonl"; std::filesystem::exists(whole)) {
    files.push_back(whole);
  } else {
    for (const auto& s : find_shard_files(dir)) files.push_back(s.jsonl);
  }
  if (files.empty()) throw InputError("sweep '" + dir + "': no results.jsonl and no shard results in it");
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& f : files)
    for (auto& r : read_result_rows(f)) rows.push_back(std::move(r));
  return rows.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The points of a sweep file, as `lpu sweep` runs them: each with its workload file, policy,
// base config and --set assignments, and its identity columns (JSON array).
std::string sweep_points(const std::string& file) {
  pyb::gil_scoped_release release;
  const SweepSpec spec = load_sweep_file(file);
  if (spec.serving()) throw InputError("sweep " + file + ": a serving sweep (command: serve) runs with `lpu sweep`");
  nlohmann::json out = nlohmann::json::array();
  for (const SweepPoint& p : expand_points(spec)) {
    nlohmann::json axes = nlohmann::json::object();
    for (size_t i = 0; i < spec.axes.size(); ++i) axes[spec.axes[i].key] = scalar_to_json(p.values[i]);
    out.push_back({{"point_id", p.id},
                   {"workload", spec.workloads[p.workload].name},
                   {"workload_file", spec.workloads[p.workload].file},
                   {"fusion", p.policy},
                   {"arch", spec.base},
                   {"sets", point_sets(spec, p)},
                   {"axes", axes},
                   {"sweep_hash", sweep_hash(spec)}});
  }
  return dump(out);
}

// A result row as the sweep writes it (make_row): `identity` first, then every scalar of `run`
// under its dotted name ("" : a failed point).
std::string result_row(const std::string& identity, const std::string& run) {
  const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(identity);  // items() must not outlive it
  std::vector<std::pair<std::string, nlohmann::json>> id;
  for (const auto& [k, v] : parsed.items()) id.emplace_back(k, v);
  if (run.empty()) return make_row(id, nullptr).dump();
  const nlohmann::json j = nlohmann::json::parse(run);
  return make_row(id, &j).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void def_jobs(pyb::module_& m) {
  pyb::class_<Common>(m, "_Common")
      .def(pyb::init([](const WorkloadTuple& w, std::string arch, std::string fusion, std::vector<std::string> sets,
                        std::string on_unsupported, std::string unsupported_ops, int tp) {
             return Common{workload_arg(w), arch, fusion, sets, on_unsupported, unsupported_ops, tp};
           }),
           "workload"_a, "arch"_a, "fusion"_a, "sets"_a, "on_unsupported"_a, "unsupported_ops"_a, "tp"_a);
  m.def("run", &run, "common"_a, "functional"_a, "trace"_a);
  m.def("compare", &compare, "common"_a, "policies"_a, "functional"_a);
  m.def("compile", &compile, "common"_a, "emit"_a);
  m.def("generate", &generate, "common"_a, "prompt_len"_a, "gen_len"_a, "symbolic"_a, "regional"_a);
  m.def("check_config", &check_config, "arch"_a, "sets"_a);
  m.def("sweep_load", &sweep_load, "dir"_a);
  m.def("sweep_points", &sweep_points, "file"_a);
  m.def("result_row", &result_row, "identity"_a, "run"_a);
  m.def("policy_names", [] { return policy_names(","); });
  m.def("backend_names", [] { return backend_names(); });
  m.def("default_config_name", [] { return default_config_name(); });
}

}  // namespace

}  // namespace lpu::pymod

PYBIND11_MODULE(_lpu, m) {
  m.doc() = "the workbench's jobs in process (the package `lpu` wraps this module: docs/python.md)";
  lpu::pymod::register_errors(m);
  lpu::pymod::def_jobs(m);
  lpu::pymod::def_serve(m);
}
