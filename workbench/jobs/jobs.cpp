#include "jobs/jobs.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>

#include "host_pricing.h"
#include "isa/operands.h"
#include "jobs/roofline.h"
#include "jobs/scalar_json.h"
#include "policy_registry.h"
#include "ref/reference.h"
#include "support/error.h"
#include "workload/tensor_parallel.h"
#include "workload/transformer.h"

namespace lpu {

FunctionalCheck check_outputs(const std::vector<Tensor>& expected, const std::vector<std::string>& names,
                              const TensorMap& actual, DType dtype) {
  FunctionalCheck c;
  // fp16/bf16: the unfused schedule rounds every intermediate to the HBM dtype while the
  // reference keeps fp32, so errors compound along a layer; 5e-2 covers a few layers.
  c.atol = dtype == DType::f32 ? 1e-4 : 5e-2;
  c.rtol = dtype == DType::f32 ? 1e-4 : 5e-2;
  c.rule =
      strcat("|sim-ref| <= ", c.atol, " + ", c.rtol, "*|ref| against the reference executor (", dtype_name(dtype), ")");
  c.ok = true;
  double worst_excess = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    auto it = actual.find(names[i]);
    if (it == actual.end()) throw InternalError("simulation produced no output " + names[i]);
    const Tensor& a = it->second;
    const Tensor& e = expected[i];
    if (a.numel() != e.numel()) throw InternalError("output " + names[i] + " has the wrong size");
    for (int64_t k = 0; k < a.numel(); ++k) {
      double av = a.data[static_cast<size_t>(k)], ev = e.data[static_cast<size_t>(k)];
      double err = std::fabs(av - ev);
      if (std::isnan(av) != std::isnan(ev)) err = INFINITY;
      c.max_abs_error = std::max(c.max_abs_error, err);
      c.max_rel_error = std::max(c.max_rel_error, err / std::max(std::fabs(ev), 1e-6));
      double excess = err - (c.atol + c.rtol * std::fabs(ev));
      if (excess > worst_excess) {
        worst_excess = excess;
        c.worst = strcat(names[i], "[", k, "]: simulated ", av, " vs reference ", ev);
      }
      if (excess > 0) c.ok = false;
    }
  }
  return c;
}

FunctionalCheck check_against_expected(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  if (actual.size() != expected.size())
    throw InternalError(strcat(actual.size(), " outputs to check against ", expected.size(), " expected"));
  FunctionalCheck c;
  c.rule =
      "|sim-torch| <= tol*max(1,|torch|) against PyTorch's outputs, tol f32 1e-4, f16/bf16 2e-2, integer/bool exact";
  c.ok = true;
  double worst_excess = -INFINITY;
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& a = actual[i];
    const Tensor& e = expected[i];
    if (a.numel() != e.numel()) throw InternalError(strcat("output", i, " has the wrong size"));
    DType t = e.type.dtype;
    double tol = t == DType::f32 ? 1e-4 : is_floating(t) ? 2e-2 : 0.0;
    double max_abs = 0;
    for (int64_t k = 0; k < a.numel(); ++k) {
      double av = a.data[static_cast<size_t>(k)], ev = e.data[static_cast<size_t>(k)];
      // Equal infinities (a -inf mask) and NaN against NaN count as exact.
      double err = av == ev || (std::isnan(av) && std::isnan(ev)) ? 0.0 : std::fabs(av - ev);
      if (std::isnan(err)) err = INFINITY;
      max_abs = std::max(max_abs, err);
      c.max_rel_error = std::max(c.max_rel_error, err / std::max(std::fabs(ev), 1e-6));
      double excess = err - tol * std::max(1.0, std::fabs(ev));
      if (excess > worst_excess) {
        worst_excess = excess;
        c.worst = strcat("output", i, "[", k, "]: ", av, " vs PyTorch ", ev);
      }
      if (excess > 0) c.ok = false;
    }
    c.max_abs_per_output.push_back(max_abs);
    c.max_abs_error = std::max(c.max_abs_error, max_abs);
  }
  return c;
}

ReferenceRun run_reference_check(const std::string& graph_path) {
  ReferenceRun r;
  r.file = load_graph_file(graph_path);
  r.core = normalize_graph(r.file.graph);
  std::vector<Tensor> expected = load_expected_outputs(r.file);
  r.check = check_against_expected(run_reference(r.core, load_graph_inputs(r.file, r.core)), expected);
  return r;
}

namespace {

// Expert parallelism's capacity may drop routed rows (moe_parallel: expert), so its answer is
// the partitioned model's: the ranks' references, joined, in `names` order (equal to the whole
// model's when nothing is dropped, TensorParallel.ExpertParallelEqualsTheWholeModelWithoutDrops).
std::vector<Tensor> partitioned_reference(const RunOutcome& o, const TensorMap& inputs,
                                          const std::vector<TensorMap>& rank_inputs,
                                          const std::vector<std::string>& names, const std::vector<TensorType>& types) {
  std::vector<Graph> cores{o.comp.core};
  std::vector<TensorMap> ins{inputs};
  for (size_t r = 0; r < o.rank_comps.size(); ++r) {
    cores.push_back(o.rank_comps[r].core);
    ins.push_back(rank_inputs.at(r));
  }
  std::vector<TensorMap> ref_ranks;
  for (auto& outs : run_reference_ranks(cores, ins)) {
    TensorMap m;
    for (size_t i = 0; i < names.size() && i < outs.size(); ++i) m[names[i]] = std::move(outs[i]);
    ref_ranks.push_back(std::move(m));
  }
  TensorMap joined = join_rank_outputs(names, types, ref_ranks);
  std::vector<Tensor> expected;
  for (const auto& name : names) expected.push_back(joined.at(name));
  return expected;
}

// Weights and inputs must fit one device's HBM: say so before compiling.
void check_fits_hbm(const Graph& g, const WorkloadSpec& w, const ArchConfig& arch, bool from_file, bool partitioned) {
  double need = 0;
  for (const auto& n : g.nodes())
    if (n.kind == NodeKind::Placeholder || n.kind == NodeKind::Parameter) need += static_cast<double>(stored_bytes(n));
  double cap = arch.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0;
  if (need > cap) {
    // The advice must work: the fewest devices (a multiple of this run's) whose share fits and
    // that divide the model's heads, KV heads and FFN; only the built-in decoders split.
    const TransformerShape* m = from_file ? nullptr : find_transformer(w.model);
    const int64_t now = std::max(arch.devices, 1);
    int64_t n = now * static_cast<int64_t>(std::ceil(need / cap));
    while (m && n <= 1024 && (m->heads % n || m->kv_heads % n || m->ffn % n)) ++n;
    // (lpu-asic is the preset with the most HBM: suggested only to a run on another config.)
    const std::string bigger = arch.name == "lpu-asic" ? "" : " (e.g. --arch lpu-asic)";
    std::string advice = m && n <= 1024
                             ? strcat("it would need ", n, " devices: split it with --set devices=", n, " (or --tp ", n,
                                      ", tensor parallelism) or use a config with more HBM per device", bigger)
                             : strcat("it would need ", n,
                                      " devices, and only the built-in decoders split across devices "
                                      "(tensor parallelism); use a config with more HBM per device",
                                      bigger);
    throw InputError(strcat("workload ", w.name, " needs ", format_bytes(need), " (", format_binary_bytes(need),
                            ") of weights and inputs", !partitioned ? "" : strcat(" per device (devices = ", now, ")"),
                            " but ", arch.name, " has ", arch.hbm.capacity_gib, " GiB of HBM per device: ", advice));
  }
}

}  // namespace

RunOutcome run_job(const WorkloadSpec& w, const ArchConfig& arch, const std::string& fusion, bool functional,
                   bool trace, const BreakOptions& b, const std::string& vcd_path) {
  RunOutcome o;
  o.workload = w;
  o.arch = arch;
  o.fusion = fusion;
  // A graph file brings its own inputs, weights and PyTorch's outputs (read only when functional).
  std::optional<GraphFile> file;
  if (!w.graph.empty()) file = load_graph_file(w.graph);
  // devices > 1: tensor parallelism, one graph per device (workload/tensor_parallel.h).
  std::vector<Graph> ranks;
  if (arch.devices > 1) ranks = build_rank_graphs(w, arch.devices);
  Graph g = file ? file->graph : ranks.empty() ? build_graph(w) : ranks[0];
  check_fits_hbm(g, w, arch, file.has_value(), !ranks.empty());
  if (!ranks.empty() && require_policy(fusion).simulates)
    throw InputError(strcat("--fusion ", fusion, ": the tuner searches one device's program; with devices = ",
                            arch.devices, " use a fixed policy (greedy, none, ...)"));
  if (require_policy(fusion).simulates) {
    SearchReport rep;
    Tuned t = tune(g, arch, tune_options_for(fusion), rep, b);
    o.comp = std::move(t.comp);
    o.arch = t.arch;
    o.search = rep;
  } else {
    o.comp = compile_graph(g, compile_options_for(arch, fusion, b));
  }
  for (size_t r = 1; r < ranks.size(); ++r)
    o.rank_comps.push_back(compile_graph(ranks[r], compile_options_for(arch, fusion, b)));
  TensorMap inputs;
  SimOptions so;
  // Tensor parallelism, functional: the whole model's inputs, each rank given its slices.
  Graph whole_core;
  TensorMap whole_inputs;
  std::vector<TensorMap> rank_inputs;
  if (functional && !ranks.empty()) {
    whole_core = normalize_graph(build_graph(w));  // w.tp is 1: the whole model
    whole_inputs = make_random_inputs(whole_core, w.seed);
    inputs = slice_rank_inputs(whole_core, whole_inputs, o.comp.core, 0, arch.devices);
    for (size_t r = 1; r < ranks.size(); ++r)
      rank_inputs.push_back(
          slice_rank_inputs(whole_core, whole_inputs, o.rank_comps[r - 1].core, static_cast<int64_t>(r), arch.devices));
  } else if (functional) {
    inputs = file ? load_graph_inputs(*file, o.comp.core) : make_random_inputs(o.comp.core, w.seed);
  }
  for (size_t r = 1; r < ranks.size(); ++r) {
    so.other_devices.push_back(&o.rank_comps[r - 1].code.program);
    if (functional) so.other_inputs.push_back(&rank_inputs[r - 1]);
  }
  so.functional = functional;
  so.record_trace = trace;
  so.vcd_path = vcd_path;
  auto t0 = std::chrono::steady_clock::now();
  o.sim = simulate(o.comp.code.program, o.arch, so, functional ? &inputs : nullptr);
  o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (functional && !ranks.empty()) {  // the devices' outputs joined, against the whole model's reference
    std::vector<TensorMap> per_rank{o.sim.outputs};
    for (const auto& t : o.sim.other_outputs) per_rank.push_back(t);
    std::vector<Tensor> expected = run_reference(whole_core, whole_inputs);
    std::vector<TensorType> types;
    for (const auto& t : expected) types.push_back(t.type);
    const auto& names = o.comp.loop_ir.outputs;
    if (w.moe_parallel == WorkloadSpec::MoeParallel::Expert)
      expected = partitioned_reference(o, inputs, rank_inputs, names, types);
    o.check = check_outputs(expected, names, join_rank_outputs(names, types, per_rank), w.dtype);
  } else if (functional && file) {
    std::vector<Tensor> actual;
    for (const auto& name : o.comp.loop_ir.outputs) {
      auto it = o.sim.outputs.find(name);
      if (it == o.sim.outputs.end()) throw InternalError("simulation produced no output " + name);
      actual.push_back(it->second);
    }
    o.check = check_against_expected(actual, load_expected_outputs(*file));
  } else if (functional) {
    auto expected = run_reference(o.comp.core, inputs);
    o.check = check_outputs(expected, o.comp.loop_ir.outputs, o.sim.outputs, w.dtype);
  }
  return o;
}

namespace {
// The arithmetic a program does, for rooflines: one VXE element operation per element of
// every vector op and reduction (moves are not arithmetic). No `default:` on purpose: a new
// opcode (the SXE's, say) must decide here how it counts, or the build warns.
// The program's arithmetic, loops expanded: each instruction's from the opcode table
// (isa/operands.h), the one place that says what an instruction computes.
nlohmann::json work_to_json(const Program& p) {
  uint64_t vxe = 0, sxe = 0;
  std::vector<uint64_t> times{1};  // iterations of the enclosing loops, multiplied
  for (const auto& in : p.code) {
    if (in.opcode == Opcode::LoopBegin) {
      times.push_back(times.back() * static_cast<uint64_t>(in.token));
    } else if (in.opcode == Opcode::LoopEnd) {
      if (times.size() > 1) times.pop_back();
    } else {
      const InstructionArith a = instruction_arith(in);
      vxe += times.back() * a.vxe_ops;
      sxe += times.back() * a.sxe_flops;
    }
  }
  return {{"vxe_elem_ops", vxe}, {"sxe_flops", sxe}};
}
}  // namespace

double RunOutcome::traffic_ratio() const {
  return comp.compulsory_hbm_bytes ? static_cast<double>(sim.stats.hbm_read_bytes + sim.stats.hbm_write_bytes) /
                                         static_cast<double>(comp.compulsory_hbm_bytes)
                                   : 0.0;
}

nlohmann::json RunOutcome::to_json() const {
  nlohmann::json j = stats_to_json(sim.stats);
  j["fusion"] = fusion;
  j["num_kernels"] = comp.schedule.kernels.size();
  j["compulsory_hbm_bytes"] = comp.compulsory_hbm_bytes;
  j["traffic_ratio"] = traffic_ratio();
  nlohmann::json wl = {
      {"name", workload.name},       {"file", workload.file},       {"model", workload.model},
      {"graph", workload.graph},     {"phase", workload.phase},     {"batch", workload.batch},
      {"seq_len", workload.seq_len}, {"context", workload.context}, {"dtype", dtype_name(workload.dtype)}};
  for (const auto& [k, v] : workload.params) wl[k] = v;
  if (workload.weight_quant.on()) {  // only when packed: unpacked runs keep the JSON they had
    wl["weight_dtype"] = quant_format_name(workload.weight_quant.format);
    wl["group_size"] = workload.weight_quant.group;
  }
  if (workload.moe_parallel == WorkloadSpec::MoeParallel::Expert) {  // likewise
    wl["moe_parallel"] = "expert";
    wl["expert_capacity"] = workload.expert_capacity;
  }
  // A built-in LLM's shape as its workload keys (docs/workloads.md), typed: the preset's, or
  // what the file described.
  if (const TransformerShape* m = decoder_of(workload)) {
    nlohmann::json d = nlohmann::json::object();
    for (const auto& [k, v] : decoder_keys(*m)) d[k] = scalar_to_json(v);
    wl["decoder"] = d;
  }
  j["workload"] = wl;
  j["arch"] = arch_to_json(arch);
  j["work"] = work_to_json(comp.code.program);
  // Kernels: add the graph nodes each came from.
  for (size_t k = 0; k < j["kernels"].size() && k < comp.schedule.kernels.size(); ++k) {
    nlohmann::json nodes = nlohmann::json::array();
    for (int n : comp.schedule.kernels[k].nodes) nodes.push_back(comp.loop_ir.nodes[static_cast<size_t>(n)].origin);
    j["kernels"][k]["nodes"] = nodes;
  }
  auto classes = kernel_classes(*this);
  for (size_t k = 0; k < j["kernels"].size() && k < classes.size(); ++k) j["kernels"][k]["op_class"] = classes[k];
  j["roofline_classes"] = roofline_classes_json(*this);
  StepFloor floor = step_floor(*this);
  double cycles = static_cast<double>(sim.stats.cycles);
  j["hbm_floor"] = {{"compulsory_bytes", floor.bytes},
                    {"peak_cycles", floor.peak_cycles},
                    {"sustained_cycles", floor.sustained_cycles},
                    {"of_peak_floor", cycles > 0 ? floor.peak_cycles / cycles : 0.0},
                    {"of_sustained_floor", cycles > 0 ? floor.sustained_cycles / cycles : 0.0}};
  if (int64_t t = llm_tokens_per_step(workload); t > 0 && sim.stats.latency_us > 0) {
    double ms = sim.stats.latency_us / 1e3;
    j["llm"] = {{"tokens_per_step", t},
                {"ms_per_token", ms / static_cast<double>(t)},
                {"tokens_per_s", static_cast<double>(t) / (ms / 1e3)}};
    if (sim.stats.energy.configured) j["llm"]["j_per_token"] = sim.stats.energy.total_j() / static_cast<double>(t);
    // The step's two roofs: its compulsory HBM bytes at peak bandwidth, and its SXE work at
    // the SXE's peak (mac_trees x lanes MACs a cycle). Batching reuses each weight for every
    // sequence: the memory roof rises with the batch until the compute roof caps it.
    StepRoofs roofs = step_roofs(*this);
    double s_per_cycle = 1e-9 / arch.clock_ghz, tokens = static_cast<double>(t);
    auto per_s = [&](double cycles) { return cycles > 0 ? tokens / (cycles * s_per_cycle) : 0.0; };
    j["llm"]["memory_roof_tokens_per_s"] = per_s(roofs.memory_cycles);
    j["llm"]["compute_roof_tokens_per_s"] = per_s(roofs.compute_cycles);
    j["llm"]["roof_tokens_per_s"] = per_s(std::max(roofs.memory_cycles, roofs.compute_cycles));
    j["llm"]["roof_latency_us"] = std::max(roofs.memory_cycles, roofs.compute_cycles) * s_per_cycle * 1e6;
    j["llm"]["bound"] = roofs.compute_cycles > roofs.memory_cycles ? "compute" : "memory";
  }
  if (search) {
    nlohmann::json cands = nlohmann::json::array();
    for (const auto& c : search->candidates) {
      nlohmann::json settings = nlohmann::json::object();
      for (const auto& [k, v] : c.settings.fields()) settings[k] = scalar_to_json(v);  // typed: 0.5, true
      nlohmann::json cj = {{"name", c.name}, {"cycles", c.cycles}, {"hbm_bytes", c.hbm_bytes}, {"settings", settings}};
      if (!c.error.empty()) cj["error"] = c.error;
      if (!c.rejected.empty()) cj["rejected"] = c.rejected;
      cands.push_back(cj);
    }
    // The arch config keys the choice changed: `arch` above is the config it ran on, this says
    // how it differs from the one asked for (search-isu only; [] for search).
    j["search"] = {{"policy", search->policy},
                   {"candidates_evaluated", search->candidates.size()},
                   {"chosen", search->chosen},
                   {"greedy_cycles", search->greedy_cycles},
                   {"best_cycles", search->best_cycles},
                   {"gain_cycles", search->gain_cycles()},
                   {"gain_percent", search->gain_percent()},
                   {"arch_changes", search->arch_changes},
                   {"seconds", search->seconds},
                   {"candidates", cands}};
  }
  if (check) {
    j["functional"] = {{"max_abs_error", check->max_abs_error},
                       {"max_rel_error", check->max_rel_error},
                       {"atol", check->atol},
                       {"rtol", check->rtol},
                       {"ok", check->ok}};
    j["functional"]["rule"] = check->rule;
  }
  return j;
}

StepRoofs step_roofs(const RunOutcome& o) {
  StepRoofs r;
  r.memory_cycles = static_cast<double>(o.comp.compulsory_hbm_bytes) / o.arch.hbm_bytes_per_cycle();
  // The SXE's FLOPs, loops expanded, each gemm's over the packed weights a lane takes per cycle.
  double lane_flops = 0;
  std::vector<double> times{1};
  for (const auto& in : o.comp.code.program.code) {
    if (in.opcode == Opcode::LoopBegin) {
      times.push_back(times.back() * static_cast<double>(in.token));
    } else if (in.opcode == Opcode::LoopEnd) {
      if (times.size() > 1) times.pop_back();
    } else {
      lane_flops += times.back() * static_cast<double>(instruction_arith(in).sxe_flops) /
                    o.arch.sxe.packed_lanes_of(quant_format_name(in.quant.format));
    }
  }
  r.compute_cycles = lane_flops / (2.0 * o.arch.sxe.mac_trees * o.arch.sxe.lanes);
  return r;
}

int64_t llm_tokens_per_step(const WorkloadSpec& w) {
  if (!decoder_of(w)) return 0;
  return w.phase == "prefill" ? w.tokens() : w.batch;
}

std::string describe_graph_breaks(const Program& p, const ArchConfig& arch) {
  std::string s =
      strcat("graph breaks: ", p.host_ops.size(),
             " (each a host round trip: host.latency_us + bytes / host.link_gbps + host.op_us on ", arch.name, ")\n");
  double total = 0;
  for (const auto& h : p.host_ops) {
    int64_t bytes = sim::graph_break_bytes(p, h);
    double us = sim::graph_break_us(arch, bytes);
    total += us;
    s += strcat("  break ", h.node, " op=", h.op, " bytes=", bytes, " host_us=", us, "\n");
  }
  if (!p.host_ops.empty()) s += strcat("  total host_us=", total, "\n");
  return s;
}

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) w[i] = header[i].size();
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  // Numbers right-aligned, text (and the first column) left: a column is numeric when each of
  // its cells starts like a number (a digit, a sign or a point) or is empty.
  std::vector<bool> numeric(w.size(), true);
  numeric[0] = false;
  for (const auto& r : rows)
    for (size_t i = 1; i < r.size() && i < w.size(); ++i)
      if (!r[i].empty() && !std::isdigit(static_cast<unsigned char>(r[i][0])) && r[i][0] != '-' && r[i][0] != '+' &&
          r[i][0] != '.')
        numeric[i] = false;
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < w.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "";
      std::string pad(w[i] - cell.size(), ' ');
      s += (i ? "  " : "") + (numeric[i] ? pad + cell : cell + pad);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(header);
  std::string rule;
  for (size_t i = 0; i < w.size(); ++i) rule += (i ? "  " : "") + std::string(w[i], '-');
  out += rule + "\n";
  for (const auto& r : rows) out += line(r);
  return out;
}

}  // namespace lpu
