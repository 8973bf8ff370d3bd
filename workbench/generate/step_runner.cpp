#include "generate/step_runner.h"

#include <cstring>
#include <type_traits>

#include "device_symmetry.h"
#include "generate/regional.h"
#include "policy_registry.h"
#include "process/progress.h"
#include "support/error.h"
#include "workload/transformer.h"

namespace lpu {

std::string step_cache_key(const WorkloadSpec& s, const CompileOptions& co, const ArchConfig& arch) {
  std::string k =
      strcat("name=", s.name, ";model=", s.model, ";phase=", s.phase, ";batch=", s.batch, ";seq_len=", s.seq_len,
             ";context=", s.context, ";layers=", s.layers, ";dtype=", dtype_name(s.dtype));
  for (const auto& [p, v] : s.params) k += strcat(";", p, "=", v);
  if (s.decoder) k += ";decoder=" + describe_decoder(*s.decoder);
  if (s.weight_quant.on()) k += ";weights=" + quant_str(s.weight_quant);
  if (s.moe_parallel == WorkloadSpec::MoeParallel::Expert) k += strcat(";moe=expert/", s.expert_capacity);
  for (const auto& r : s.ragged) k += strcat(";seq=", r.context, "+", r.tokens);
  k += strcat(";fusion=", co.fusion, ";lmu_fraction=", co.fusion_lmu_fraction, ";lmu_bytes=", co.codegen.lmu_bytes,
              ";double_buffer=", co.codegen.double_buffer, ";hbm_alignment=", co.codegen.hbm_alignment,
              ";max_tile_rows=", co.codegen.max_tile_rows, ";fold_loops=", co.codegen.fold_loops,
              ";skew_tiles=", co.codegen.skew_tiles, ";break=", co.break_on_unsupported);
  for (const auto& op : co.unsupported_ops) k += ";unsupported=" + op;
  if (co.fusion == "search") k += ";arch=" + arch_to_json(arch).dump();
  return k;
}

CompiledStep compile_ranks(const WorkloadSpec& s, int64_t devices,
                           const std::function<Program(const WorkloadSpec&, CompiledStep&)>& compile_rank) {
  CompiledStep fresh;
  for (int64_t rank = 0; rank < devices; ++rank) {
    WorkloadSpec sr = s;
    if (devices > 1) {
      sr.tp = devices;
      sr.tp_rank = rank;
    }
    CompiledStep info;
    Program p = compile_rank(sr, rank == 0 ? fresh : info);
    if (rank == 0)
      fresh.program = std::move(p);
    else
      fresh.others.push_back(std::move(p));
  }
  if (devices > 1) {
    std::vector<const Program*> others;
    for (const Program& p : fresh.others) others.push_back(&p);
    fresh.rotations = rotation_asymmetry(fresh.program, others, static_cast<int>(devices)).empty();
  }
  return fresh;
}

SimStats simulate_compiled(const CompiledStep& e, const ArchConfig& arch) {
  SimOptions so;
  so.others_rotate_device0 = e.rotations;
  so.kernel_breakdown = false;  // a step's totals are what is read
  if (!e.rotations)
    for (const Program& p : e.others) so.other_devices.push_back(&p);
  return simulate(e.program, arch, so).stats;
}

StepSimFigures simulate_step_figures(const CompiledStep& e, const ArchConfig& arch) {
  const auto t0 = Clock::now();
  const SimStats st = simulate_compiled(e, arch);
  StepSimFigures f;
  f.cycles = st.cycles;
  f.hbm_read_bytes = st.hbm_read_bytes;
  f.hbm_write_bytes = st.hbm_write_bytes;
  f.latency_us = st.latency_us;
  f.energy_j = st.energy.total_j();
  f.wall_s = seconds_since(t0);
  return f;
}

static_assert(std::is_trivially_copyable_v<StepSimFigures>);

std::string encode_figures(const StepSimFigures& f) { return std::string(reinterpret_cast<const char*>(&f), sizeof f); }

StepSimFigures decode_figures(const std::string& bytes) {
  if (bytes.size() != sizeof(StepSimFigures))
    throw InternalError(strcat("step figures: ", bytes.size(), " bytes, expected ", sizeof(StepSimFigures)));
  StepSimFigures f;
  std::memcpy(&f, bytes.data(), sizeof f);
  return f;
}

namespace {
CompileOptions fixed_policy_options(const ArchConfig& arch, const std::string& fusion) {
  if (require_policy(fusion).simulates)
    throw InputError(strcat("--fusion ", fusion,
                            ": serving prices every step with a fixed policy (greedy, none); the tuner's search "
                            "simulates its candidates for each compile"));
  return compile_options_for(arch, fusion, BreakOptions{});
}
}  // namespace

StepRunner::StepRunner(const ArchConfig& arch, const std::string& fusion, CompileCache& cache)
    : arch_(arch),
      cache_(cache),
      co_(fixed_policy_options(arch, fusion)),
      devices_(std::max<int64_t>(arch.devices, 1)),
      sym_(cache, co_.codegen.hbm_alignment, SymbolicSteps::Make::Lazy, [this](const std::string& line) {
        if (explain_) explain_(line);
      }) {}

void StepRunner::set_explain(SymbolicSteps::Explain e) { explain_ = std::move(e); }

std::shared_ptr<const CompiledStep> StepRunner::compile(const WorkloadSpec& step) {
  ++compiles_;
  return std::make_shared<const CompiledStep>(
      compile_ranks(step, devices_, [&](const WorkloadSpec& s, CompiledStep& info) {
        RegionalProgram rp = compile_regional(s, co_, [&](const Graph& g, const CompileOptions& opts) {
          return compile_with_memo(g, opts, cache_.cost_memo);
        });
        info.kernels = rp.kernels;
        info.compulsory_hbm_bytes = rp.compulsory_hbm_bytes;
        return std::move(rp.program);
      }));
}

StepFigures StepRunner::simulate(const CompiledStep& e) {
  ++simulations_;
  SimStats st = simulate_compiled(e, arch_);
  StepFigures f;
  f.cycles = st.cycles;
  f.latency_s = st.latency_us * 1e-6;
  f.energy_j = st.energy.total_j();
  f.hbm_read_bytes = st.hbm_read_bytes;
  f.hbm_write_bytes = st.hbm_write_bytes;
  f.kernels = e.kernels;
  return f;
}

StepFigures StepRunner::run(const WorkloadSpec& step) {
  const std::string key = step_cache_key(step, co_, arch_);
  std::shared_ptr<const CompiledStep> e = cache_.find(key);
  if (!e) {
    e = compile(step);
    cache_.insert(key, e);
  }
  return simulate(*e);
}

namespace {

// A step's sequences with a cached context, the smallest such context (the symbol) and the
// largest value the symbol may take (every shifted sequence within max_position).
struct CachedShift {
  int64_t x = 0, max_x = 0;
  bool any = false;
};

CachedShift cached_shift(const WorkloadSpec& s) {
  CachedShift c;
  const TransformerShape* m = decoder_of(s);
  const int64_t max_position = m ? m->max_position : 0;
  if (s.ragged.empty()) {
    if (s.context <= 0 || !m) return c;
    return {s.context, max_position - s.seq_len, true};
  }
  for (const WorkloadSpec::RaggedSeq& q : s.ragged)
    if (q.context > 0) c.x = c.any ? std::min(c.x, q.context) : q.context, c.any = true;
  if (!c.any || !m) return {};
  c.max_x = INT64_MAX;
  for (const WorkloadSpec::RaggedSeq& q : s.ragged)
    if (q.context > 0) c.max_x = std::min(c.max_x, c.x + max_position - q.context - q.tokens);
  return c;
}

// The step with its cached contexts moved so that the smallest is `x`.
WorkloadSpec shifted(const WorkloadSpec& s, int64_t from, int64_t x) {
  WorkloadSpec t = s;
  if (t.ragged.empty()) {
    t.context = x;
    return t;
  }
  for (WorkloadSpec::RaggedSeq& q : t.ragged)
    if (q.context > 0) q.context += x - from;
  return t;
}

std::string describe_step(const WorkloadSpec& s) {
  if (s.ragged.empty()) return strcat("1 sequence, ", s.seq_len, " token(s) on ", s.context, " cached");
  int64_t tokens = 0, lo = INT64_MAX, hi = 0, chunks = 0;
  for (const WorkloadSpec::RaggedSeq& q : s.ragged) {
    tokens += q.tokens;
    chunks += q.tokens > 1;
    if (q.context > 0) lo = std::min(lo, q.context), hi = std::max(hi, q.context);
  }
  return strcat(s.ragged.size(), " sequences, ", tokens, " tokens (", chunks, " prompt chunk(s)), contexts ", lo, "..",
                hi);
}

}  // namespace

StepFigures StepRunner::run_in_sequence(const WorkloadSpec& step) {
  ++sequenced_;
  const CachedShift c = cached_shift(step);
  if (!c.any || c.max_x < c.x) return run(step);
  // The key of every shift: cached contexts relative to the smallest (negative, so that they
  // differ from an empty cache's 0 in the key).
  WorkloadSpec rel = step;
  if (rel.ragged.empty()) {
    rel.context = -1;
  } else {
    for (WorkloadSpec::RaggedSeq& q : rel.ragged)
      if (q.context > 0) q.context = -1 - (q.context - c.x);
  }
  bool inst = false;
  std::shared_ptr<const CompiledStep> e = sym_.program(
      step_cache_key(rel, co_, arch_), c.x, c.max_x, strcat("step ", sequenced_, " (", describe_step(step), ")"),
      [&](int64_t x) { return compile(shifted(step, c.x, x)); }, inst);
  return simulate(*e);
}

StepFigures StepRunner::run_by_layers(const WorkloadSpec& step) {
  const int64_t depth = decoder_depth(step);
  if (depth < 3) return run(step);
  WorkloadSpec s1 = step, s2 = step;
  s1.layers = 1;
  s2.layers = 2;
  const StepFigures a = run(s1), b = run(s2);
  const auto extra = static_cast<double>(depth - 1);
  auto line = [&](double x1, double x2) { return x1 + extra * (x2 - x1); };
  auto uline = [&](uint64_t x1, uint64_t x2) {
    return static_cast<uint64_t>(std::llround(line(static_cast<double>(x1), static_cast<double>(x2))));
  };
  StepFigures f;
  f.cycles = uline(a.cycles, b.cycles);
  f.latency_s = line(a.latency_s, b.latency_s);
  f.energy_j = line(a.energy_j, b.energy_j);
  f.hbm_read_bytes = uline(a.hbm_read_bytes, b.hbm_read_bytes);
  f.hbm_write_bytes = uline(a.hbm_write_bytes, b.hbm_write_bytes);
  f.kernels = b.kernels + static_cast<size_t>(depth - 2) * (b.kernels - a.kernels);
  return f;
}

}  // namespace lpu
