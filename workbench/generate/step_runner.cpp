#include "generate/step_runner.h"

#include "device_symmetry.h"
#include "generate/regional.h"
#include "policy_registry.h"
#include "support/error.h"

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
              ";break=", co.break_on_unsupported);
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

StepRunner::StepRunner(const ArchConfig& arch, const std::string& fusion, CompileCache& cache)
    : arch_(arch), cache_(cache) {
  if (require_policy(fusion).simulates)
    throw InputError(strcat("--fusion ", fusion,
                            ": serving prices every step with a fixed policy (greedy, none); the tuner's search "
                            "simulates its candidates for each compile"));
  co_ = compile_options_for(arch, fusion, BreakOptions{});
  devices_ = std::max<int64_t>(arch.devices, 1);
}

StepFigures StepRunner::run(const WorkloadSpec& step) {
  const std::string key = step_cache_key(step, co_, arch_);
  std::shared_ptr<const CompiledStep> e = cache_.find(key);
  if (!e) {
    ++compiles_;
    e = std::make_shared<const CompiledStep>(
        compile_ranks(step, devices_, [&](const WorkloadSpec& s, CompiledStep& info) {
          RegionalProgram rp = compile_regional(s, co_, [&](const Graph& g, const CompileOptions& opts) {
            return compile_with_memo(g, opts, cache_.cost_memo);
          });
          info.kernels = rp.kernels;
          info.compulsory_hbm_bytes = rp.compulsory_hbm_bytes;
          return std::move(rp.program);
        }));
    cache_.insert(key, e);
  }
  ++simulations_;
  SimStats st = simulate_compiled(*e, arch_);
  StepFigures f;
  f.cycles = st.cycles;
  f.latency_s = st.latency_us * 1e-6;
  f.energy_j = st.energy.total_j();
  f.hbm_read_bytes = st.hbm_read_bytes;
  f.hbm_write_bytes = st.hbm_write_bytes;
  f.kernels = e->kernels;
  return f;
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
