#include "jobs/backends.h"

#include "handlers/counting.h"
#include "handlers/cpp_source.h"
#include "handlers/torch_graph.h"
#include "handlers/triton_source.h"
#include "isa/encoding.h"
#include "jobs/cli_support.h"
#include "jobs/run_report.h"
#include "jobs/triton_data.h"
#include "policy_registry.h"
#include "support/error.h"
#include "workload/tensor_parallel.h"

namespace lpu {

namespace {

std::string binary_program(const Program& p) {
  std::vector<uint8_t> bin = encode_program(p);
  return std::string(bin.begin(), bin.end());
}

using Render = std::function<std::string(const EmitContext&)>;

Backend entry(std::string name, std::vector<std::string> files, std::string help, bool lowers, bool binary,
              Render render) {
  Backend b;
  b.name = std::move(name);
  b.files = std::move(files);
  b.help = std::move(help);
  b.lowers = lowers;
  b.binary = binary;
  b.render = std::move(render);
  return b;
}

// The workload as each device's graph sees it (its device count; rank 0).
WorkloadSpec on_devices(WorkloadSpec w, const ArchConfig& arch) {
  w.tp = arch.devices;
  return w;
}

std::vector<Backend> make_backends() {
  using C = const EmitContext&;
  std::vector<Backend> b;
  b.push_back(entry("graph", {"graph.txt"}, "", false, false, [](C c) { return print_graph(c.comp.captured); }));
  b.push_back(entry("core", {"core.txt"}, "", false, false, [](C c) { return print_graph(c.comp.core); }));
  b.push_back(entry("loopir", {"loopir.txt"}, "", true, false, [](C c) { return print_loop_ir(c.comp.loop_ir); }));
  b.push_back(entry("schedule", {"schedule.txt", "schedule.json"}, "", true, false, [](C c) {
    const TransformerShape* m = decoder_of(c.workload);
    return print_schedule(c.comp.loop_ir, c.comp.schedule) + describe_graph_breaks(c.comp.code.program, c.arch) +
           (m ? describe_mla_choice(*m, c.workload) + describe_expert_dispatch(*m, on_devices(c.workload, c.arch))
              : "");
  }));
  b.back().companion = "schedule-json";  // the text report always comes with its JSON
  b.push_back(entry("schedule-json", {"schedule.json"}, "", true, false,
                    [](C c) { return schedule_to_json(c.comp.loop_ir, c.comp.schedule); }));
  b.push_back(entry("asm", {"program.s"}, "", true, false, [](C c) { return print_program(c.comp.code.program); }));
  b.back().per_device_suffix = ".s";
  b.back().render_program = [](const Program& p) { return print_program(p); };
  b.push_back(
      entry("bin", {"program.lpubin"}, "", true, true, [](C c) { return binary_program(c.comp.code.program); }));
  b.back().per_device_suffix = ".lpubin";
  b.back().render_program = binary_program;
  b.push_back(entry("cpp", {"kernels.cpp"}, "", true, false,
                    [](C c) { return emit_cpp_source(c.comp.loop_ir, c.comp.schedule); }));
  b.push_back(entry("triton", {"triton_kernels.py"}, "triton_kernels.py", true, false,
                    [](C c) { return emit_triton_module(c.comp.loop_ir, c.comp.schedule); }));
  b.push_back(entry("triton-plan", {"triton_plan.json"}, "triton_plan.json", true, false,
                    [](C c) { return triton_buffer_plan_json(c.comp.loop_ir, c.comp.schedule); }));
  b.push_back(entry("triton-data", {"triton_data.json", "triton_data.bin"},
                    "triton_data.{json,bin}: inputs and reference outputs for scripts/triton_check.py; needs -o", true,
                    true, {}));
  b.back().write = [](C c, const std::string& dir) {
    write_triton_data(c.workload, c.comp, dir);
    return strcat("wrote ", dir, "/triton_data.json, ", dir, "/triton_data.bin\n");
  };
  b.push_back(entry("torch", {"torch_graph.py"}, "torch_graph.py: the core graph as eager PyTorch calls", true, false,
                    [](C c) { return emit_torch_graph_module(c.comp.core, c.comp.loop_ir.outputs); }));
  b.push_back(entry("counts", {"counts.txt"}, "", true, false,
                    [](C c) { return print_counts(count_kernels(c.comp.loop_ir, c.comp.schedule)); }));
  b.push_back(entry("counts_json", {"counts.json"}, "", true, false,
                    [](C c) { return counts_to_json(count_kernels(c.comp.loop_ir, c.comp.schedule)).dump(2) + "\n"; }));
  return b;
}

// The graphs to compile: rank 0's program as `lpu run` simulates it with devices > 1 (tensor
// parallelism), the others kept for the per-device files.
struct CompilePlan {
  std::vector<Graph> ranks;
  Graph graph;
  bool lower = false;
};

CompilePlan plan_compile(const CompileRequest& r) {
  CompilePlan p;
  if (r.arch.devices > 1) p.ranks = build_rank_graphs(r.workload, r.arch.devices);
  p.graph = p.ranks.empty() ? build_graph(r.workload) : p.ranks[0];
  // Only the stages asked for run, so graph/core work for graphs the back end cannot lower yet.
  for (const auto& e : split_list(r.emit)) {
    const Backend* b = find_backend(e);
    p.lower = p.lower || !b || b->lowers;
  }
  return p;
}

// The compilation the backends render; a tuner policy may change the arch (`arch`).
Compilation compile_for_emit(const CompileRequest& r, const CompilePlan& p, ArchConfig& arch, std::ostream& out) {
  Compilation c;
  if (!p.lower) {
    c.captured = p.graph;
    c.core = normalize_graph(p.graph);
    return c;
  }
  if (!require_policy(r.fusion).simulates)
    return compile_graph(p.graph, compile_options_for(arch, r.fusion, r.breaks()));
  SearchReport rep;
  Tuned t = tune(p.graph, arch, tune_options_for(r.fusion), rep, r.breaks());
  c = std::move(t.comp);
  arch = t.arch;  // the graph-break costs below are priced on what the choice runs on
  // The program is for the chosen candidate's config: say which, and what it changed.
  std::string changes;
  for (const auto& ch : rep.arch_changes) changes += (changes.empty() ? "" : ", ") + ch;
  out << r.fusion << ": " << search_summary(rep) << "; chose " << rep.chosen
      << (changes.empty() ? "" : "; the program is for the arch config with " + changes) << "\n";
  return c;
}

// asm and bin with devices > 1: every other device's program too (program.devN.s / .lpubin,
// the files `lpu sim` takes).
void emit_other_devices(const CompileRequest& r, const CompilePlan& p, const ArchConfig& arch, const Backend& b,
                        std::ostream& out) {
  if (require_policy(r.fusion).simulates)
    throw InputError(strcat("--fusion ", r.fusion, ": the tuner searches one device's program; with devices = ",
                            arch.devices, " use a fixed policy (greedy, none, ...)"));
  if (r.outdir.empty())
    throw InputError(
        strcat("--emit ", b.name, " with devices = ", arch.devices, " writes one file per device: give -o DIR"));
  for (size_t d = 1; d < p.ranks.size(); ++d) {
    Program prog = compile_graph(p.ranks[d], compile_options_for(arch, r.fusion, r.breaks())).code.program;
    std::string name = strcat("program.dev", d, b.per_device_suffix);
    write_file(r.outdir + "/" + name, b.render_program(prog));
    out << "wrote " << r.outdir << "/" << name << "\n";
  }
}

void emit_one(const CompileRequest& r, const std::string& e, const EmitContext& ctx, std::ostream& out) {
  const Backend* b = find_backend(e);
  if (!b) throw InputError("--emit: unknown artefact '" + e + "' (" + backend_names() + ")");
  if (b->binary && r.outdir.empty()) throw InputError("--emit " + e + " writes a binary file: give -o DIR");
  if (b->write) {
    out << b->write(ctx, r.outdir);
    return;
  }
  if (!b->companion.empty() && !r.outdir.empty()) {
    const Backend& c = *find_backend(b->companion);
    write_file(r.outdir + "/" + c.files.front(), c.render(ctx));
  }
  if (r.outdir.empty()) {
    out << b->render(ctx);
  } else {
    write_file(r.outdir + "/" + b->files.front(), b->render(ctx));
    out << "wrote " << r.outdir << "/" << b->files.front() << "\n";
  }
}

}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> all = make_backends();
  return all;
}

const Backend* find_backend(const std::string& name) {
  for (const auto& b : backends())
    if (b.name == name) return &b;
  return nullptr;
}

std::string backend_names() {
  std::string s;
  for (const auto& b : backends()) s += (s.empty() ? "" : ", ") + b.name;
  return s;
}

std::string emit_help() {
  std::string s;
  for (const auto& b : backends()) s += (s.empty() ? "" : ", ") + b.name + (b.help.empty() ? "" : " (" + b.help + ")");
  return "comma-separated: " + s;
}

std::vector<std::pair<std::string, std::string>> compile_texts(const CompileRequest& r, std::ostream& notes) {
  CompilePlan p = plan_compile(r);
  for (const auto& e : split_list(r.emit)) {  // every name checked before the work starts
    const Backend* b = find_backend(e);
    if (!b) throw InputError("--emit: unknown artefact '" + e + "' (" + backend_names() + ")");
    if (b->binary || b->write) throw InputError("--emit " + e + " writes files: give -o DIR");
    if (!b->per_device_suffix.empty() && p.ranks.size() > 1)
      throw InputError(
          strcat("--emit ", e, " with devices = ", r.arch.devices, " writes one file per device: give -o DIR"));
  }
  ArchConfig arch = r.arch;
  Compilation c = compile_for_emit(r, p, arch, notes);
  EmitContext ctx{r.workload, c, arch};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : split_list(r.emit)) out.emplace_back(e, find_backend(e)->render(ctx));
  return out;
}

int compile_command(const CompileRequest& r, std::ostream& out) {
  CompilePlan p = plan_compile(r);
  ArchConfig arch = r.arch;
  Compilation c = compile_for_emit(r, p, arch, out);
  EmitContext ctx{r.workload, c, arch};
  for (const auto& e : split_list(r.emit)) {
    emit_one(r, e, ctx, out);
    const Backend& b = *find_backend(e);
    if (!b.per_device_suffix.empty() && p.ranks.size() > 1) emit_other_devices(r, p, arch, b, out);
  }
  return 0;
}

}  // namespace lpu
