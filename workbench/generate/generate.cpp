#include "generate/generate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "codegen/lpu_codegen.h"
#include "generate/front_end_steps.h"
#include "generate/step_runner.h"
#include "generate/symbolic_steps.h"
#include "isa/encoding.h"
#include "isa/program_template.h"
#include "policy_registry.h"
#include "process/forked_work.h"
#include "process/progress.h"
#include "support/error.h"
#include "workload/tensor_parallel.h"
#include "workload/transformer.h"

namespace lpu {

LatencySummary summarize_latencies(std::vector<double> v) {
  LatencySummary s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto rank = [&](double p) {
    auto r = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(r, 1, v.size()) - 1];
  };
  s.p50 = rank(50);
  s.p99 = rank(99);
  s.min = v.front();
  s.max = v.back();
  return s;
}

namespace {

// Step k's workload: the prefill of the prompt, or one decode step at its context.
WorkloadSpec step_workload(const WorkloadSpec& w, int64_t prompt_len, int64_t k) {
  WorkloadSpec s = w;
  s.phase = k == 1 ? "prefill" : "decode";
  s.seq_len = k == 1 ? prompt_len : 1;
  s.context = k == 1 ? 0 : prompt_len + k - 2;
  return s;
}

// A length: the flag, else the workload's key, else the default; with where it came from.
int64_t resolve_length(const std::optional<int64_t>& flag, int64_t key, int64_t dflt, const std::string& name,
                       const std::string& flag_name, const WorkloadSpec& w, std::string& source) {
  if (flag) {
    source = flag_name;
    if (*flag < 1 || *flag > (int64_t{1} << 24))
      throw InputError(strcat(name, ": ", flag_name, " ", *flag, " out of range 1 .. ", int64_t{1} << 24));
    return *flag;
  }
  source = key ? w.file : "default";
  return key ? key : dflt;
}

// The HBM a step needs on one device: its graph's inputs and weights, the same criterion as
// `lpu run` (run_job). The KV cache is the placeholders named *_cache.
struct HbmNeed {
  double total = 0, kv_cache = 0, weights = 0;
};
HbmNeed hbm_need(const Graph& g) {
  HbmNeed n;
  for (const auto& node : g.nodes()) {
    if (node.kind != NodeKind::Placeholder && node.kind != NodeKind::Parameter) continue;
    auto b = static_cast<double>(stored_bytes(node));
    n.total += b;
    if (node.kind == NodeKind::Parameter)
      n.weights += b;
    else if (node.name.size() > 6 && node.name.compare(node.name.size() - 6, 6, "_cache") == 0)
      n.kv_cache += b;
  }
  return n;
}

void check_fits(const WorkloadSpec& w, const ArchConfig& arch, const WorkloadSpec& step, const std::string& key,
                const std::string& what, int64_t devices = 1) {
  // With tensor parallelism, rank 0's share (the largest: the vocabulary may split unevenly).
  HbmNeed n = hbm_need(devices > 1 ? build_rank_graphs(step, devices).front() : build_graph(step));
  double cap = arch.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0;
  if (n.total <= cap) return;
  // Weights alone too big: no length would fit, so the lengths are not to blame.
  const std::string& k = n.weights > cap ? w.name : key;
  throw InputError(strcat(
      k, ": ", what, " needs ", static_cast<int64_t>(n.total), " bytes (", format_bytes(n.total), ") of HBM: KV cache ",
      static_cast<int64_t>(n.kv_cache), " bytes (", format_bytes(n.kv_cache), "), weights ",
      static_cast<int64_t>(n.weights), " bytes, other inputs ", static_cast<int64_t>(n.total - n.kv_cache - n.weights),
      " bytes; but ", arch.name, " has hbm.capacity_gib = ", arch.hbm.capacity_gib, " GiB (", static_cast<int64_t>(cap),
      " bytes) per device", devices > 1 ? strcat(" (devices = ", devices, ")") : std::string(), ": it would need ",
      static_cast<int64_t>(std::ceil(n.total / cap)) * devices, " devices (--set devices=N, tensor parallelism)"));
}

// A graph file that is one decode step against a static KV cache: what transformers'
// TorchExportableModuleWithStaticCache exports (docs/generate.md, "Graph files"). The exporter
// records the cache writes in meta.buffer_writes; each names a placeholder of shape
// [batch, kv_heads, max_cache_len, head_dim], and the graph takes one token per call.
StaticKvCache static_kv_cache_of(const WorkloadSpec& w) {
  const std::string& path = w.graph;
  GraphFile f = load_graph_file(path);
  const auto none = [&](const std::string& why) {
    return InputError(strcat(path,
                             ": generate takes a built-in LLM or a graph file of one decode step against a static KV "
                             "cache (transformers' TorchExportableModuleWithStaticCache, exported by lpu_frontend.hf."
                             "export_decode); this graph ",
                             why));
  };
  auto bw = f.meta.find("buffer_writes");
  if (bw == f.meta.end() || !bw->is_array() || bw->empty())
    throw none("has no meta.buffer_writes (the KV cache writes the exporter records)");
  StaticKvCache c;
  for (const auto& e : *bw) {
    if (!e.is_object() || !e.contains("buffer") || !e["buffer"].is_string())
      throw none("has a meta.buffer_writes entry without a \"buffer\" name");
    const std::string b = e["buffer"].get<std::string>();
    const Node* n = nullptr;
    for (const auto& node : f.graph.nodes())
      if (node.name == b && node.kind == NodeKind::Placeholder) n = &node;
    if (!n) throw none(strcat("writes buffer ", b, " (meta.buffer_writes), which is no input of the graph"));
    if (n->type.shape.size() != 4)
      throw none(strcat("has KV cache ", b, " of shape ", n->type.shape.size(), "-d; expected [batch, kv_heads, ",
                        "max_cache_len, head_dim]"));
    const int64_t len = n->type.shape[2];
    if (c.max_cache_len && len != c.max_cache_len)
      throw none(
          strcat("has KV caches of different lengths: ", c.buffer, " holds ", c.max_cache_len, ", ", b, " ", len));
    if (!c.max_cache_len) c.buffer = b;
    c.max_cache_len = len;
    ++c.buffers;
  }
  for (const auto& node : f.graph.nodes())
    if (node.kind == NodeKind::Placeholder && (node.name == "input_ids" || node.name == "inputs_embeds") &&
        node.type.shape.size() >= 2 && node.type.shape[1] != 1)
      throw none(strcat("takes ", node.type.shape[1], " tokens per call (", node.name, "); a decode step takes 1"));
  return c;
}

// One generation in progress: the request, the result being filled, and the phases of
// run_generate as methods over them: validate (lengths, devices, HBM), compile a step
// (exactly cached, symbolic or fresh), simulate it, record it.
class Generation {
 public:
  using Entry = std::shared_ptr<const CompileCache::Entry>;
  Generation(const WorkloadSpec& w, const ArchConfig& arch, const GenerateOptions& o, CompileCache& cache)
      : w_(w), arch_(arch), o_(o), cache_(cache) {}
  GenerateResult run();

 private:
  void validate();
  void check_lengths(const TransformerShape* m, const std::string& prompt_src, const std::string& gen_src);
  void plan();
  Program compile_rank(const WorkloadSpec& s, CompileCache::Entry& e);
  Compilation compile_at_depth(const WorkloadSpec& s, const CompileOptions& opts);
  Entry compile_step(const WorkloadSpec& s);
  void explain(const std::string& line) {
    if (o_.explain) *o_.explain << "[recompiles] " << line << "\n";
  }
  Entry symbolic_step(const WorkloadSpec& s, int64_t k, int64_t max_context, bool& inst);
  Entry step_program(const WorkloadSpec& s, int64_t k, GenerateStep& st);
  // A step compiled, waiting for its simulation; `simulate` is false where its program is the
  // step before's (the same figures: the simulator is deterministic and a timing run reads no data).
  struct PendingStep {
    GenerateStep st;
    Entry e;
    bool simulate = true;
  };
  PendingStep prepare_step(int64_t k);
  void record_step(PendingStep& p, const StepSimFigures& f);
  void run_steps_here();
  void run_steps_forked();
  // A forked simulation's request: a step's program encoded, or a step of a template by its id
  // and context, with the template itself the first time that worker gets one of its steps.
  void send_step(ForkedWorkers& workers, std::vector<uint64_t>& held, int64_t k, const CompiledStep& e,
                 std::vector<uint8_t>& bin);
  std::string serve_step(const std::string& request);

  const WorkloadSpec& w_;
  const ArchConfig& arch_;
  const GenerateOptions& o_;
  CompileCache& cache_;
  GenerateResult r_;
  // A graph file: every step runs the same decode-step program (graph_step below).
  std::optional<StaticKvCache> graph_cache_;
  int64_t devices_ = 1;
  CompileOptions co_;
  bool symbolic_ = false;
  std::unique_ptr<SymbolicSteps> sym_;
  std::unique_ptr<FrontEndSteps> front_ends_;  // with sym_: decode steps' front halves from templates
  int64_t last_context_ = 0;
  std::unique_ptr<Progress> progress_;
  Entry last_prepared_;          // the program of the step prepared last
  StepSimFigures last_figures_;  // the figures of the step recorded last
  // In a forked simulation: the template of the last step sent as one and that step's program,
  // instantiated in place for the next context (ProgramTemplate::instantiate_into).
  struct HeldTemplate {  // no member initialisers: clang could not default-construct it in the optional below
    uint64_t id;
    ProgramTemplate t;
    CompiledStep step;
  };
  std::optional<HeldTemplate> held_;
};

// The lengths against the graph's static KV cache or the model's positions.
void Generation::check_lengths(const TransformerShape* m, const std::string& prompt_src, const std::string& gen_src) {
  GenerateResult& r = r_;
  if (graph_cache_) {
    // The tokens fed through the graph: the prompt and every generated one but the last; each
    // takes a cache slot.
    const int64_t need = r.prompt_len + r.gen_len - 1;
    if (need > graph_cache_->max_cache_len) {
      bool prompt_alone = r.prompt_len >= graph_cache_->max_cache_len;
      throw InputError(strcat(prompt_alone ? "prompt_len" : "gen_len", " (", prompt_alone ? prompt_src : gen_src,
                              "): prompt_len ", r.prompt_len, " + gen_len ", r.gen_len, " feeds ", need,
                              " tokens through the graph, but its static KV cache (", graph_cache_->buffer, ") holds ",
                              graph_cache_->max_cache_len, " (max_cache_len; at most ",
                              std::max<int64_t>(graph_cache_->max_cache_len - r.prompt_len + 1, 0),
                              " generated tokens after a ", r.prompt_len, "-token prompt)"));
    }
    check_fits(w_, arch_, w_, w_.name, "one decode step of the graph");
  } else if (r.prompt_len + r.gen_len > m->max_position) {
    // The sequence at the end holds prompt_len + gen_len tokens (the last one is produced, never
    // fed back): it must fit the model's positions.
    bool prompt_alone = r.prompt_len >= m->max_position;  // no room for even one generated token
    std::string key = prompt_alone ? "prompt_len" : "gen_len";
    const std::string& src = prompt_alone ? prompt_src : gen_src;
    std::string room =
        prompt_alone
            ? strcat("a prompt must leave room for one generated token: prompt_len < ", m->max_position)
            : strcat("at most ", m->max_position - r.prompt_len, " tokens after a ", r.prompt_len, "-token prompt");
    throw InputError(strcat(key, " (", src, "): prompt_len ", r.prompt_len, " + gen_len ", r.gen_len, " = ",
                            r.prompt_len + r.gen_len, " tokens is beyond ", m->name, "'s max_position ",
                            m->max_position, " (", room, ")"));
  }
}

// Everything that can be refused is, before anything is compiled.
void Generation::validate() {
  const WorkloadSpec& w = w_;
  if (!w.graph.empty()) graph_cache_ = static_kv_cache_of(w);
  const TransformerShape* m = decoder_of(w);
  if (!m && !graph_cache_) {
    std::string all;
    for (const auto& s : transformer_shapes()) all += (all.empty() ? "" : ", ") + s.name;
    throw InputError(strcat("generate: workload ", w.name, " is not a built-in LLM (", all,
                            ", or model: ", kDecoderModel, " with its keys)"));
  }
  // batch > 1: every step runs the batch's sequences together (one context for all of them).
  GenerateResult& r = r_;
  r.workload = w;
  r.arch = arch_;
  r.fusion = o_.fusion;
  std::string prompt_src, gen_src;
  r.prompt_len = resolve_length(o_.prompt_len, w.prompt_len, GenerateOptions::kDefaultPromptLen, "prompt_len",
                                "--prompt-len", w, prompt_src);
  r.gen_len =
      resolve_length(o_.gen_len, w.gen_len, GenerateOptions::kDefaultGenLen, "gen_len", "--gen-len", w, gen_src);
  // devices > 1: tensor parallelism, each rank's graph compiled (workload/tensor_parallel.h).
  devices_ = std::max<int64_t>(arch_.devices, 1);
  if (devices_ > 1 && graph_cache_) build_rank_graphs(w, devices_);  // refuses a graph file, naming it
  if (devices_ > 1 && require_policy(o_.fusion).simulates)
    throw InputError(strcat("--fusion ", o_.fusion, ": the tuner searches one device's program; with devices = ",
                            devices_, " use a fixed policy (greedy, none)"));
  r.devices = devices_;
  r.static_kv_cache = graph_cache_;
  check_lengths(m, prompt_src, gen_src);
  // The largest steps (the prefill, the last decode step: a decode step's inputs grow with its
  // context) must fit one device, checked before anything is compiled.
  if (!graph_cache_)
    check_fits(w, arch_, step_workload(w, r.prompt_len, 1), "prompt_len",
               strcat("the prefill of ", r.prompt_len, " tokens"), devices_);
  if (r.gen_len > 1 && !graph_cache_)
    check_fits(w, arch_, step_workload(w, r.prompt_len, r.gen_len), "gen_len",
               strcat("prompt_len ", r.prompt_len, " + gen_len ", r.gen_len, ": the last decode step (context ",
                      r.prompt_len + r.gen_len - 2, ")"),
               devices_);
  // search-isu may pick other ISU options per step: a generation on a config that changes from
  // token to token is no answer to "how fast is this hardware"; set isu.* with --set instead.
  if (o_.fusion == "search-isu")
    throw InputError(
        "fusion: generate takes none, greedy or search; search-isu changes the arch config per step "
        "(use --set isu.weight_prefetch=true --set isu.chaining=true to study those options)");
}

// How the steps compile: options, progress, symbolic and regional compilation where they apply.
void Generation::plan() {
  co_ = compile_options_for(arch_, o_.fusion, o_.breaks);
  if (o_.progress)
    progress_ = std::make_unique<Progress>(*o_.progress, static_cast<size_t>(r_.gen_len), 0, o_.progress_bar,
                                           "generate", "steps", false);
  // A graph file's steps are one program (a static cache): the exact cache serves them all.
  symbolic_ = o_.symbolic && !require_policy(o_.fusion).simulates && !graph_cache_;
  r_.symbolic = symbolic_;
  r_.regional = o_.regional && !require_policy(o_.fusion).simulates && !graph_cache_;
  last_context_ = r_.prompt_len + r_.gen_len - 2;
  if (symbolic_) {
    sym_ = std::make_unique<SymbolicSteps>(cache_, co_.codegen.hbm_alignment, SymbolicSteps::Make::Eager,
                                           [this](const std::string& line) { explain(line); });
    front_ends_ = std::make_unique<FrontEndSteps>(last_context_);
  }
}

Program Generation::compile_rank(const WorkloadSpec& s, CompileCache::Entry& e) {
  if (require_policy(o_.fusion).simulates) {  // the tuner (one device); search-isu is refused above
    SearchReport rep;
    Compilation c = tune(build_graph(s), arch_, tune_options_for(o_.fusion), rep, o_.breaks).comp;
    e.kernels = c.schedule.kernels.size();
    e.compulsory_hbm_bytes = c.compulsory_hbm_bytes;
    return std::move(c.code.program);
  }
  if (o_.regional) {  // the repeated layer compiled once (regional.h); whole when it does not apply
    RegionalProgram rp = compile_regional(
        s, co_,
        std::function<Compilation(const WorkloadSpec&, const CompileOptions&)>(
            [&](const WorkloadSpec& at, const CompileOptions& opts) { return compile_at_depth(at, opts); }));
    r_.regional_compiles += rp.regional;
    e.kernels = rp.kernels;
    e.compulsory_hbm_bytes = rp.compulsory_hbm_bytes;
    return std::move(rp.program);
  }
  Compilation c = compile_at_depth(s, co_);
  e.kernels = c.schedule.kernels.size();
  e.compulsory_hbm_bytes = c.compulsory_hbm_bytes;
  return std::move(c.code.program);
}

// A decode step of a built-in decoder through the front-end templates; anything else whole.
Compilation Generation::compile_at_depth(const WorkloadSpec& s, const CompileOptions& opts) {
  if (!front_ends_ || s.phase != "decode" || !s.graph.empty() || !decoder_of(s))
    return compile_with_memo(build_graph(s), opts, cache_.cost_memo);
  WorkloadSpec sym = s;
  sym.context = -1;
  const std::string key = strcat(step_cache_key(sym, opts, arch_), ";tp=", s.tp, ";rank=", s.tp_rank);
  return front_ends_->compile(key, s, opts, cache_.cost_memo);
}

// One compile of a step: every rank's program (rank 0's kernels and compulsory bytes).
Generation::Entry Generation::compile_step(const WorkloadSpec& s) {
  ++r_.compiles;
  return std::make_shared<const CompileCache::Entry>(
      compile_ranks(s, devices_, [&](const WorkloadSpec& sr, CompiledStep& e) { return compile_rank(sr, e); }));
}

WorkloadSpec at_context(const WorkloadSpec& s, int64_t c) {
  WorkloadSpec x = s;
  x.context = c;
  return x;
}

// A decode step through the symbolic programs (symbolic_steps.h), the context its symbol.
Generation::Entry Generation::symbolic_step(const WorkloadSpec& s, int64_t k, int64_t max_context, bool& inst) {
  WorkloadSpec sym = s;
  sym.context = -1;  // the key of every context
  return sym_->program(
      step_cache_key(sym, co_, arch_), s.context, max_context, strcat("step ", k, " (context ", s.context, ")"),
      [&](int64_t c) { return compile_step(at_context(s, c)); }, inst);
}

// Step k's program: instantiated from a symbolic one, from the exact cache, or compiled.
Generation::Entry Generation::step_program(const WorkloadSpec& s, int64_t k, GenerateStep& st) {
  if (symbolic_ && k >= 2) return symbolic_step(s, k, last_context_, st.instantiated);
  std::string key = step_cache_key(graph_cache_ ? w_ : s, co_, arch_);
  Entry e = cache_.find(key);
  st.cached = e != nullptr;
  if (!e) {
    e = compile_step(graph_cache_ ? w_ : s);
    cache_.insert(key, e);
  } else {
    ++r_.cache_hits;
  }
  return e;
}

Generation::PendingStep Generation::prepare_step(int64_t k) {
  GenerateResult& r = r_;
  WorkloadSpec s = graph_cache_ ? w_ : step_workload(w_, r.prompt_len, k);
  if (graph_cache_) {  // the graph's own shapes; the phase, tokens and context are the step's
    s.phase = k == 1 ? "prefill" : "decode";
    s.seq_len = k == 1 ? r.prompt_len : 1;
    s.context = k == 1 ? 0 : r.prompt_len + k - 2;
  }
  PendingStep p;
  GenerateStep& st = p.st;
  st.step = k;
  st.phase = s.phase;
  st.position = r.prompt_len + k - 1;
  st.context = s.context;
  st.seq_len = s.seq_len;
  auto tc = Clock::now();
  p.e = step_program(s, k, st);
  st.compile_wall_s = seconds_since(tc);
  p.simulate = p.e != last_prepared_;
  last_prepared_ = p.e;
  return p;
}

void Generation::record_step(PendingStep& p, const StepSimFigures& sim) {
  GenerateResult& r = r_;
  GenerateStep& st = p.st;
  const int64_t k = st.step;
  if (p.simulate) {
    ++r.simulations;
    last_figures_ = sim;
    st.simulate_wall_s = sim.wall_s;
  } else {
    st.simulation_reused = true;
  }
  const StepSimFigures& f = last_figures_;
  // A graph file's prefill feeds the prompt through the decode-step graph token by token.
  const int64_t calls = graph_cache_ && k == 1 ? r.prompt_len : 1;
  st.graph_calls = calls;
  st.cycles = f.cycles * static_cast<uint64_t>(calls);
  st.latency_s = f.latency_us * 1e-6 * static_cast<double>(calls);
  st.hbm_read_bytes = f.hbm_read_bytes * static_cast<uint64_t>(calls);
  st.hbm_write_bytes = f.hbm_write_bytes * static_cast<uint64_t>(calls);
  st.energy_j = f.energy_j * static_cast<double>(calls);
  st.kernels = p.e->kernels;
  if (o_.on_step) o_.on_step(st, p.e->program);
  r.steps.push_back(st);
  if (progress_) progress_->update(static_cast<size_t>(k), 0, 0, k == r.gen_len);
}

// One step after the other, each compiled and simulated in this process.
void Generation::run_steps_here() {
  for (int64_t k = 1; k <= r_.gen_len; ++k) {
    PendingStep p = prepare_step(k);
    record_step(p, p.simulate ? simulate_step_figures(*p.e, arch_) : last_figures_);
  }
}

// Steps compiled here, in order, and simulated by forked workers (process/forked_work.h) that
// get each program encoded (isa/encoding.h, as `lpu sim` reads a .lpubin) while this process
// compiles the next steps; results are recorded in step order. Each simulation is the one
// run_steps_here would make, so every figure is the same; only the wall times differ. One
// device only (tensor parallelism simulates every rank's program: run_steps_here).
// Requests end in their kind: 'P' after an encoded program; 'T' after [the template's bytes],
// its id (u64) and the context (i64), in this binary's byte order (the worker is a fork of it).
std::string Generation::serve_step(const std::string& request) {
  const auto* data = reinterpret_cast<const uint8_t*>(request.data());
  if (!request.empty() && request.back() == 'P') {
    CompiledStep c;
    c.program = decode_program(data, request.size() - 1, "", Checksum::Skip);
    return encode_figures(simulate_step_figures(c, arch_));
  }
  if (request.size() < 17 || request.back() != 'T') throw InternalError("generate: a malformed step request");
  const size_t head = request.size() - 17;
  uint64_t id;
  int64_t at;
  std::memcpy(&id, data + head, 8);
  std::memcpy(&at, data + head + 8, 8);
  if (head > 0) {
    held_.emplace();
    held_->id = id;
    held_->t = ProgramTemplate::decode(request.substr(0, head));
    held_->step.program = held_->t.base();
  } else if (!held_ || held_->id != id) {
    throw InternalError(strcat("generate: a step of template ", id, " went to a worker that does not hold it"));
  }
  held_->t.instantiate_into(held_->step.program, at);
  return encode_figures(simulate_step_figures(held_->step, arch_));
}

void Generation::send_step(ForkedWorkers& workers, std::vector<uint64_t>& held, int64_t k, const CompiledStep& e,
                           std::vector<uint8_t>& bin) {
  const int w = workers.pick();
  uint64_t& holds = held.at(static_cast<size_t>(w + 1));  // [0]: requests served here
  if (e.source) {
    const CompiledStep::Source& s = *e.source;
    std::string msg;
    if (holds != s.template_id) msg = *s.encoded_template;
    msg.append(reinterpret_cast<const char*>(&s.template_id), 8);
    msg.append(reinterpret_cast<const char*>(&s.at), 8);
    msg.push_back('T');
    holds = s.template_id;
    workers.send_to(w, static_cast<uint64_t>(k), msg.data(), msg.size());
    return;
  }
  encode_program_into(e.program, bin, Checksum::Skip);
  bin.push_back('P');
  workers.send_to(w, static_cast<uint64_t>(k), bin.data(), bin.size());
}

void Generation::run_steps_forked() {
  ForkedWorkers workers(static_cast<int>(std::min<int64_t>(o_.jobs, r_.gen_len)),
                        [this](const std::string& request) { return serve_step(request); });
  std::vector<uint64_t> held(static_cast<size_t>(workers.workers()) + 1, 0);  // template id per worker
  r_.simulation_processes = std::max(1, workers.workers());
  std::deque<PendingStep> waiting;                  // prepared, not yet recorded, in step order
  std::map<uint64_t, ForkedWorkers::Result> ready;  // simulations back, by step
  auto record_ready = [&] {
    for (; !waiting.empty(); waiting.pop_front()) {
      PendingStep& p = waiting.front();
      if (!p.simulate) {
        record_step(p, last_figures_);
        continue;
      }
      auto it = ready.find(static_cast<uint64_t>(p.st.step));
      if (it == ready.end()) return;
      if (!it->second.ok()) it->second.rethrow();  // the first failing step's error, as in order
      record_step(p, decode_figures(it->second.bytes));
      ready.erase(it);
    }
  };
  auto take = [&](bool block) {
    for (auto r = workers.next(block); r; r = workers.next(false)) ready[r->id] = std::move(*r);
  };
  std::vector<uint8_t> bin;  // one buffer for every step's encoding (encode_program_into)
  for (int64_t k = 1; k <= r_.gen_len; ++k) {
    PendingStep p = prepare_step(k);
    if (p.simulate) {
      try {
        send_step(workers, held, k, *p.e, bin);
      } catch (const InputError&) {  // a field beyond the binary records (a dimension >= 2^32): here
        ready[static_cast<uint64_t>(k)].bytes = encode_figures(simulate_step_figures(*p.e, arch_));
      }
    }
    waiting.push_back(std::move(p));
    take(false);
    record_ready();
  }
  while (!waiting.empty()) {
    take(true);
    record_ready();
  }
  workers.finish();
}

GenerateResult Generation::run() {
  auto t0 = Clock::now();
  validate();
  size_t memo_hits0 = cache_.cost_memo.hits(), memo_misses0 = cache_.cost_memo.misses();
  plan();
  if (o_.jobs > 1 && devices_ == 1 && r_.gen_len > 1) {
    if (sym_) sym_->set_encode_templates(true, static_cast<bool>(o_.on_step));
    run_steps_forked();
  } else
    run_steps_here();
  if (progress_) progress_->finish();
  if (sym_) {
    const SymbolicCounters& n = sym_->counters();
    r_.instantiated = n.instantiated;
    r_.cache_hits += n.instantiated;
    r_.guard_extensions = n.guard_extensions;
    r_.guard_failures = n.guard_failures;
    r_.templates = n.templates;
  }
  if (front_ends_) {
    r_.front_ends_instantiated = front_ends_->counters().instantiated;
    r_.front_ends_compiled = front_ends_->counters().compiled;
  }
  r_.cost_memo_hits = cache_.cost_memo.hits() - memo_hits0;
  r_.cost_memo_misses = cache_.cost_memo.misses() - memo_misses0;
  r_.wall_s = seconds_since(t0);
  return std::move(r_);
}

}  // namespace

GenerateResult run_generate(const WorkloadSpec& w, const ArchConfig& arch, const GenerateOptions& o,
                            CompileCache& cache) {
  return Generation(w, arch, o, cache).run();
}

double GenerateResult::total_latency_s() const {
  double t = 0;
  for (const auto& s : steps) t += s.latency_s;
  return t;
}

uint64_t GenerateResult::total_cycles() const {
  uint64_t c = 0;
  for (const auto& s : steps) c += s.cycles;
  return c;
}

uint64_t GenerateResult::hbm_bytes() const {
  uint64_t b = 0;
  for (const auto& s : steps) b += s.hbm_read_bytes + s.hbm_write_bytes;
  return b;
}

double GenerateResult::energy_j() const {
  double j = 0;
  for (const auto& s : steps) j += s.energy_j;
  return j;
}

LatencySummary GenerateResult::per_token() const {
  std::vector<double> v;
  for (const auto& s : steps)
    if (s.step >= 2) v.push_back(s.latency_s);
  return summarize_latencies(v);
}

namespace {

std::string graph_cache_note(const std::optional<StaticKvCache>& c) {
  return c ? "off (a graph file: one static program for every step, from the exact cache)" : "off";
}

const char* program_source(const GenerateStep& s) {
  return s.instantiated ? "instantiated" : s.cached ? "cached" : "compiled";
}

nlohmann::json summary_json(const LatencySummary& s) {
  if (s.count == 0) return nullptr;  // gen_len 1: no decode step
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p99", s.p99}, {"min", s.min}, {"max", s.max}};
}

}  // namespace

nlohmann::json GenerateResult::to_json() const {
  nlohmann::json wl = {{"name", workload.name},   {"file", workload.file},     {"model", workload.model},
                       {"batch", workload.batch}, {"layers", workload.layers}, {"dtype", dtype_name(workload.dtype)}};
  nlohmann::json steps_j = nlohmann::json::array();
  uint64_t rd = 0, wr = 0, decode_cycles = 0;
  double decode_s = 0, compile_s = 0, simulate_s = 0, decode_j = 0;
  for (const auto& s : steps) {
    steps_j.push_back({{"step", s.step},
                       {"phase", s.phase},
                       {"position", s.position},
                       {"context", s.context},
                       {"seq_len", s.seq_len},
                       {"cycles", s.cycles},
                       {"latency_s", s.latency_s},
                       {"hbm_bytes", s.hbm_read_bytes + s.hbm_write_bytes},
                       {"hbm_read_bytes", s.hbm_read_bytes},
                       {"hbm_write_bytes", s.hbm_write_bytes},
                       {"kernels", s.kernels},
                       {"program", program_source(s)},
                       {"graph_calls", s.graph_calls},
                       {"simulation_reused", s.simulation_reused}});
    if (arch.energy.configured) steps_j.back()["energy_j"] = s.energy_j;
    rd += s.hbm_read_bytes;
    wr += s.hbm_write_bytes;
    compile_s += s.compile_wall_s;
    simulate_s += s.simulate_wall_s;
    if (s.step >= 2) {
      decode_s += s.latency_s;
      decode_cycles += s.cycles;
      decode_j += s.energy_j;
    }
  }
  double total = total_latency_s();
  nlohmann::json j = {
      {"kind", "generate"},
      {"workload", wl},
      {"static_kv_cache", static_kv_cache ? nlohmann::json{{"buffer", static_kv_cache->buffer},
                                                           {"buffers", static_kv_cache->buffers},
                                                           {"max_cache_len", static_kv_cache->max_cache_len}}
                                          : nlohmann::json(nullptr)},
      {"arch", arch_to_json(arch)},
      {"arch_overrides", arch_overrides},
      {"fusion", fusion},
      {"devices_used", devices},
      {"prompt_len", prompt_len},
      {"gen_len", gen_len},
      {"steps_count", steps.size()},
      {"ttft_s", ttft_s()},
      {"ttft_cycles", steps.empty() ? 0 : steps.front().cycles},
      {"per_token_latency_s", summary_json(per_token())},
      {"total_latency_s", total},
      {"total_cycles", total_cycles()},
      // Tokens of every sequence of the batch (each step produces one per sequence).
      {"batch", workload.batch},
      {"tokens_per_s", total > 0 ? static_cast<double>(tokens()) / total : 0.0},
      {"tokens_per_s_per_sequence", total > 0 ? static_cast<double>(steps.size()) / total : 0.0},
      {"decode_tokens_per_s",
       decode_s > 0 ? static_cast<double>((steps.size() - 1) * static_cast<size_t>(workload.batch)) / decode_s : 0.0},
      {"decode_cycles", decode_cycles},
      {"hbm_bytes", rd + wr},
      {"hbm_read_bytes", rd},
      {"hbm_write_bytes", wr},
      {"compile_cache",
       {{"compiles", compiles},
        {"hits", cache_hits},
        {"symbolic", symbolic},
        {"regional", regional},
        {"regional_compiles", regional_compiles},
        {"simulations", simulations},
        {"instantiated", instantiated},
        {"guard_extensions", guard_extensions},
        {"guard_failures", guard_failures},
        {"templates", templates},
        {"front_ends_instantiated", front_ends_instantiated},
        {"front_ends_compiled", front_ends_compiled}}},
      {"cost_model_memo", {{"hits", cost_memo_hits}, {"misses", cost_memo_misses}}},
      {"steps", steps_j},
      // The only part that differs between two runs of the same generation.
      // simulate_s sums the steps' simulations, which overlap when several processes ran them.
      {"wall",
       {{"total_s", wall_s},
        {"compile_s", compile_s},
        {"simulate_s", simulate_s},
        {"simulation_processes", simulation_processes}}},
  };
  if (arch.energy
          .configured) {  // per token: every generated token (one per step and sequence), and the decode steps alone
    double n = static_cast<double>(tokens());
    j["energy"] = {
        {"total_j", energy_j()},
        {"j_per_token", n > 0 ? energy_j() / n : 0.0},
        {"prefill_j", steps.empty() ? 0.0 : steps.front().energy_j},
        {"decode_j", decode_j},
        {"decode_j_per_token", steps.size() > 1 ? decode_j / (n - static_cast<double>(workload.batch)) : 0.0}};
  }
  return j;
}

std::string GenerateResult::to_csv() const {
  std::ostringstream out;
  const bool energy = arch.energy.configured;
  out << "step,phase,position,context,seq_len,cycles,latency_s,hbm_bytes,hbm_read_bytes,hbm_write_bytes,program"
      << (energy ? ",energy_j" : "") << "\n";
  for (const auto& s : steps) {
    out << s.step << "," << s.phase << "," << s.position << "," << s.context << "," << s.seq_len << "," << s.cycles
        << "," << format_number("%.9e", s.latency_s) << "," << s.hbm_read_bytes + s.hbm_write_bytes << ","
        << s.hbm_read_bytes << "," << s.hbm_write_bytes << "," << program_source(s);
    if (energy) out << "," << format_number("%.9e", s.energy_j);
    out << "\n";
  }
  return out.str();
}

std::string GenerateResult::summary() const {
  auto us = [](double s) { return format_duration_us(s * 1e6); };
  LatencySummary pt = per_token();
  double total = total_latency_s(), compile_s = 0, simulate_s = 0;
  for (const auto& s : steps) {
    compile_s += s.compile_wall_s;
    simulate_s += s.simulate_wall_s;
  }
  std::vector<std::vector<std::string>> rows = {
      {"workload", workload.graph.empty() ? workload.name : workload.graph},
      {"arch", arch.name},
      {"devices", devices > 1 ? strcat(devices, " (tensor parallelism; figures of device 0, which the others wait for)")
                              : strcat("1 of ", arch.devices)},
      {"fusion", fusion},
      {"KV cache", static_kv_cache ? strcat("static: ", static_kv_cache->max_cache_len, " slots in ",
                                            static_kv_cache->buffers, " buffers (", static_kv_cache->buffer,
                                            ", ...); every step attends over all of them, masked")
                                   : std::string("grows with the context (one slot per token)")},
      {"prompt / generated tokens",
       strcat(prompt_len, " / ", gen_len, workload.batch > 1 ? strcat(" per sequence, batch ", workload.batch) : "")},
      {"steps", strcat(steps.size(), " (1 prefill + ", steps.size() - 1, " decode)")},
      {"time to first token",
       us(ttft_s()) + (static_kv_cache ? strcat(" (prefill: the decode-step graph once per prompt token, ", prompt_len,
                                                " calls, incl. token 1)")
                                       : std::string(" (prefill incl. token 1)"))},
      {"per-token latency mean", pt.count ? us(pt.mean) : "-"},
      {"per-token latency p50", pt.count ? us(pt.p50) : "-"},
      {"per-token latency p99", pt.count ? us(pt.p99) : "-"},
      {"per-token latency min / max", pt.count ? us(pt.min) + " / " + us(pt.max) : "-"},
      {"total latency", us(total)},
      {"tokens per second",
       format_number("%.1f", total > 0 ? static_cast<double>(tokens()) / total : 0.0) +
           (workload.batch > 1 ? strcat(" (", workload.batch, " sequences x ",
                                        format_number("%.1f", static_cast<double>(steps.size()) / total), ")")
                               : std::string())},
      {"HBM traffic", format_bytes(static_cast<double>(hbm_bytes()))},
      {"energy",
       !arch.energy.configured ? "not modelled (" + arch.file + " has no energy section)"
       : steps.empty()
           ? "-"
           : strcat(format_energy(energy_j()), " (", format_energy(energy_j() / static_cast<double>(tokens())),
                    " per token; TTFT ", format_energy(steps.front().energy_j),
                    steps.size() > 1 ? "; decode " +
                                           format_energy((energy_j() - steps.front().energy_j) /
                                                         static_cast<double>(tokens() - workload.batch)) +
                                           " per token"
                                     : std::string(),
                    ")")},
      {"compiles / cache hits",
       strcat(compiles, " / ", cache_hits, regional ? strcat(" (", regional_compiles, " regional)") : std::string())},
      {"symbolic decode programs",
       symbolic ? strcat(templates, " templates, ", instantiated, " steps instantiated, ", guard_extensions,
                         " guard extensions, ", guard_failures, " guard failures")
                : graph_cache_note(static_kv_cache)},
      {"front ends of compiles",
       symbolic ? strcat(front_ends_instantiated, " from templates, ", front_ends_compiled, " compiled in full")
                : std::string("-")},
      {"cost-model memo hits / misses", strcat(cost_memo_hits, " / ", cost_memo_misses)},
      {"wall",
       strcat(format_number("%.2f s", wall_s), " (compile ", format_number("%.2f s", compile_s), ", simulate ",
              format_number("%.2f s", simulate_s),
              simulation_processes > 1 ? strcat(" in ", simulation_processes, " processes") : std::string(), ")")},
  };
  std::string out = format_table({"metric", "value"}, rows);
  // Latency against position, a few evenly spaced steps (every step is in --json / --csv).
  std::vector<std::vector<std::string>> lv;
  size_t n = steps.size(), shown = std::min<size_t>(n, 9);
  for (size_t i = 0; i < shown; ++i) {
    const GenerateStep& s = steps[shown > 1 ? i * (n - 1) / (shown - 1) : 0];
    lv.push_back({std::to_string(s.step), s.phase, std::to_string(s.position), std::to_string(s.context),
                  std::to_string(s.cycles), us(s.latency_s),
                  format_bytes(static_cast<double>(s.hbm_read_bytes + s.hbm_write_bytes)), program_source(s)});
  }
  out += "\n" + format_table({"step", "phase", "position", "context", "cycles", "latency", "HBM", "program"}, lv);
  return out;
}

}  // namespace lpu
