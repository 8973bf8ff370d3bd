#include "servesim/serve_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>

#include "generate/step_runner.h"
#include "serve/gpu_model.h"
#include "serve/result_io.h"
#include "serve/trace_reader.h"
#include "servesim/sim_step_cost.h"
#include "support/error.h"
#include "support/units.h"
#include "workload/transformer.h"

namespace lpu {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Keeps a uniform sample of the steps a model priced (reservoir sampling, a seeded generator:
// the same run samples the same steps) with what the model said of each.
class SampledCost : public serve::StepCostModel {
 public:
  SampledCost(serve::StepCostModel& inner, size_t k) : inner_(inner), k_(k) {}
  serve::StepCost cost(const serve::StepBatch& b) override {
    serve::StepCost c = inner_.cost(b);
    ++seen_;
    if (samples_.size() < k_) {
      samples_.push_back({b, c});
    } else if (k_ > 0) {
      const uint64_t j = rng_() % seen_;
      if (j < k_) samples_[j] = {b, c};
    }
    return c;
  }
  const std::vector<std::pair<serve::StepBatch, serve::StepCost>>& samples() const { return samples_; }

 private:
  serve::StepCostModel& inner_;
  size_t k_;
  uint64_t seen_ = 0;
  std::mt19937_64 rng_{20261203};
  std::vector<std::pair<serve::StepBatch, serve::StepCost>> samples_;
};

void check_options(const ServeJobOptions& o) {
  auto positive = [](const char* key, double v) {
    if (!(v > 0) || !std::isfinite(v)) throw InputError(strcat(key, ": expected a number > 0, got ", v));
  };
  positive("--slo-ttft-ms", o.slo.ttft_ms);
  positive("--slo-tpot-ms", o.slo.tpot_ms);
  if (o.replicas < 1) throw InputError(strcat("--replicas: expected >= 1, got ", o.replicas));
  // Each replica is simulated with its own scheduler state; as for devices, 4096 at most.
  if (o.replicas > 4096 || o.prefill_replicas > 4096)
    throw InputError(
        strcat("--replicas / --prefill-replicas: at most 4096, got ", std::max(o.replicas, o.prefill_replicas)));
  if (o.prefill_replicas < 0) throw InputError(strcat("--prefill-replicas: expected >= 0, got ", o.prefill_replicas));
  if (o.error_samples < 0) throw InputError(strcat("--error-samples: expected >= 0, got ", o.error_samples));
  if (o.context_step < 1) throw InputError(strcat("--context-step: expected >= 1, got ", o.context_step));
  if (o.find_rate && !o.trace_file.empty())
    throw InputError("--find-rate: searches arrival rates of the generator; a trace file (--trace-file) has its own");
  if (!o.prefill_gpu.empty() && o.prefill_replicas < 1)
    throw InputError("--prefill-gpu: the GPU pool needs --prefill-replicas N (N >= 1)");
  if (o.prefill_replicas > 0) {
    positive("--link-gbps", o.link.bandwidth_gbps);
    if (!(o.link.latency_us >= 0) || !std::isfinite(o.link.latency_us))
      throw InputError(strcat("--link-latency-us: expected a number >= 0, got ", o.link.latency_us));
  }
}

std::string request_where(const ServeJobOptions& o, const serve::Request& r) {
  if (!o.trace_file.empty() && r.line > 0) return strcat(o.trace_file, ":", r.line, ": request ", r.id);
  return strcat("request ", r.id, o.trace_file.empty() ? " (generated)" : "");
}

// Every request must fit the model's positions and, alone, a replica's KV cache.
void check_requests(const serve::RequestList& reqs, const ServeJobOptions& o, const Deployment& d,
                    const serve::SchedulerConfig& sc) {
  for (const serve::Request& r : reqs) {
    const int64_t total = r.prompt_tokens + r.output_tokens;
    if (total > d.max_position)
      throw InputError(strcat(request_where(o, r), ": prompt_tokens ", r.prompt_tokens, " + output_tokens ",
                              r.output_tokens, " = ", total, " tokens, more than ", d.model, "'s max_position ",
                              d.max_position));
    const int64_t kv_tokens = total - 1, blocks = (kv_tokens + sc.block_size - 1) / sc.block_size;
    if (blocks > sc.kv_capacity_blocks) {
      const double bytes = static_cast<double>(blocks * sc.block_size) * d.replica_kv_bytes_per_token();
      const double need = d.weight_bytes * static_cast<double>(d.devices) + d.activation_bytes + bytes;
      throw InputError(strcat(
          request_where(o, r), ": its KV cache (", kv_tokens, " tokens, ", format_bytes(bytes),
          ") can never fit a replica's ",
          format_bytes(static_cast<double>(sc.kv_capacity_blocks * sc.block_size) * d.replica_kv_bytes_per_token()),
          " of KV on ", d.devices, " device(s); it needs about ",
          static_cast<int64_t>(std::ceil(need / d.hbm_bytes_per_device)), " devices (--tp N)"));
    }
  }
}

// A GPU config by path, or by name in configs/gpus/.
serve::GpuConfig gpu_config(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  const fs::path named = fs::path(LPU_SOURCE_DIR) / "configs" / "gpus" / (name_or_path + ".yaml");
  std::error_code ec;
  if (name_or_path.find('/') == std::string::npos && !fs::exists(name_or_path, ec) && fs::exists(named, ec))
    return serve::load_gpu_config(named.string());
  if (!fs::exists(name_or_path, ec)) {
    std::string names;
    for (const auto& e : fs::directory_iterator(fs::path(LPU_SOURCE_DIR) / "configs" / "gpus", ec))
      if (e.path().extension() == ".yaml") names += (names.empty() ? "" : ", ") + e.path().stem().string();
    throw InputError(strcat("--prefill-gpu '", name_or_path,
                            "': no such GPU config (a YAML path, or a name in configs/gpus/: ", names, ")"));
  }
  return serve::load_gpu_config(name_or_path);
}

serve::ModelDims model_dims(const WorkloadSpec& w) {
  const TransformerShape& m = *decoder_of(w);
  const double elem = dtype_bytes(w.dtype);
  return {m.layers,
          m.d_model,
          m.heads,
          m.kv_heads,
          m.hd(),
          m.ffn,
          m.vocab,
          m.gated(),
          m.norm == TransformerShape::RmsNorm,
          m.positions == TransformerShape::Rotary,
          elem,
          elem,
          m.parameters()};
}

// The model's error against exact simulation on the sampled steps (|model - exact| / exact).
StepCostError measure_error(const std::vector<std::pair<serve::StepBatch, serve::StepCost>>& samples,
                            ExactStepCost& exact, const ServeJobOptions& o, double& wall_s) {
  StepCostError error;
  const auto te = Clock::now();
  if (o.progress) *o.progress << "serve: " << samples.size() << " steps simulated exactly for the model's error\n";
  std::vector<double> errs;
  for (const auto& [batch, predicted] : samples) {
    serve::StepCost truth = exact.cost(batch);
    errs.push_back(std::abs(predicted.time_s - truth.time_s) / truth.time_s);
    if (std::getenv("LPU_STEPCOST_LOG")) {
      int64_t chunks = 0, ctx = 0;
      for (const auto& q : batch.seqs) chunks += q.new_tokens > 1, ctx = std::max(ctx, q.context_before);
      std::fprintf(stderr,
                   "[stepcost] sample S=%zu N=%lld chunks=%lld max_context=%lld model %.6g exact %.6g: %.3f%%\n",
                   batch.seqs.size(), static_cast<long long>(batch.total_tokens()), static_cast<long long>(chunks),
                   static_cast<long long>(ctx), predicted.time_s, truth.time_s, errs.back() * 100);
    }
    if (truth.energy_j > 0)
      error.energy_max = std::max(error.energy_max, std::abs(predicted.energy_j - truth.energy_j) / truth.energy_j);
  }
  std::sort(errs.begin(), errs.end());
  error.samples = static_cast<int64_t>(errs.size());
  error.p50 = errs[(errs.size() - 1) / 2];
  error.max = errs.back();
  wall_s = seconds_since(te);
  return error;
}

}  // namespace

void apply_serve_text(ServeJobOptions& o, const WorkloadSpec& w, const ServeTextOptions& t) {
  if (o.trace_file.empty()) {
    const TransformerShape* m = decoder_of(w);
    const int64_t half = m ? m->max_position / 2 : 2048;
    o.generator.arrival = serve::parse_arrival_spec(t.arrivals, t.rate, "--arrivals");
    o.generator.prompt = serve::parse_length_spec(
        t.prompt.empty() ? strcat("lognormal:1020:0.9:1:", std::min<int64_t>(2048, half)) : t.prompt, "--prompt");
    o.generator.output = serve::parse_length_spec(
        t.output.empty() ? strcat("lognormal:129:1.0:1:", std::min<int64_t>(1024, half)) : t.output, "--output");
  }
  o.router = serve::parse_router(t.router);
}

ServeJobResult run_serve_job(const WorkloadSpec& w, const ArchConfig& arch, const ServeJobOptions& o) {
  const auto t0 = Clock::now();
  check_options(o);
  ServeJobResult r;
  r.workload = w;
  r.arch = arch;
  r.exact = o.exact;
  r.deployment =
      plan_deployment(w, arch, o.scheduler.max_num_batched_tokens, std::max<int64_t>(o.scheduler.block_size, 1));
  serve::SchedulerConfig sc = o.scheduler;
  if (sc.block_size < 1) throw InputError(strcat("--block-size: expected >= 1, got ", sc.block_size));
  sc.kv_capacity_blocks = r.deployment.kv_capacity_blocks(sc.block_size);
  r.requests = o.trace_file.empty() ? serve::generate_requests(o.generator) : serve::read_trace(o.trace_file);
  check_requests(r.requests, o, r.deployment, sc);

  CompileCache cache;
  StepRunner runner(arch, o.fusion, cache);
  if (o.explain) runner.set_explain([&](const std::string& line) { *o.explain << "[recompiles] " << line << "\n"; });
  ExactStepCost exact(w, runner, o.exact);
  FittedStepCostOptions fo;
  fo.context_step = o.context_step;
  fo.cache_file = o.exact ? "" : o.cost_cache;
  FittedStepCost fitted(w, runner, step_cost_cache_key(w, arch, o.fusion), fo);
  SampledCost sampled(fitted, static_cast<size_t>(o.exact ? 0 : o.error_samples));
  serve::StepCostModel* model = o.exact ? static_cast<serve::StepCostModel*>(&exact) : &sampled;
  std::unique_ptr<serve::GpuStepCost> gpu;
  if (!o.prefill_gpu.empty()) {
    gpu = std::make_unique<serve::GpuStepCost>(gpu_config(o.prefill_gpu), model_dims(w));
    r.prefill_gpu = gpu->gpu().name;
  }

  serve::ClusterConfig& c = r.cluster;
  c.pool.replicas = o.prefill_replicas > 0 ? o.prefill_replicas : o.replicas;
  c.pool.scheduler = sc;
  c.pool.cost = model;
  c.disaggregated = o.prefill_replicas > 0;
  if (c.disaggregated) {
    c.decode_pool = c.pool;
    c.decode_pool.replicas = o.replicas;
    // A GPU prefill replica holds a request's KV only until its transfer: its capacity is not
    // the bound (left at the scheduler's default).
    if (gpu) c.pool.cost = gpu.get(), c.pool.scheduler.kv_capacity_blocks = serve::SchedulerConfig{}.kv_capacity_blocks;
    c.link = o.link;
    c.link.kv_bytes_per_token = r.deployment.replica_kv_bytes_per_token();
  }
  c.router = o.router;
  c.slo = o.slo;
  c.watchdog = o.watchdog;

  const auto tm = Clock::now();
  if (o.find_rate) {
    if (o.progress) *o.progress << "serve: searching the highest rate meeting the SLOs\n";
    r.capacity = serve::find_max_rate(o.generator, c, o.search);
    if (r.capacity->found) {
      serve::GeneratorSpec g = o.generator;
      g.arrival.rate = r.capacity->max_rate;
      r.requests = serve::generate_requests(g);
    }
  }
  if (o.progress) *o.progress << "serve: " << r.requests.size() << " requests\n";
  r.result = serve::simulate_serving(r.requests, c);
  r.model_wall_s = seconds_since(tm);
  r.points_simulated = fitted.simulated();
  r.points_loaded = fitted.loaded();
  r.exact_steps = exact.steps();
  r.compiles = runner.compiles();
  r.symbolic = runner.symbolic_counters();

  if (!o.exact && !sampled.samples().empty()) r.error = measure_error(sampled.samples(), exact, o, r.error_wall_s);
  if (!o.exact) {
    std::string why;
    if (!fitted.save(&why) && o.progress) *o.progress << "serve: warning: step-cost memo not saved: " << why << "\n";
  }
  r.wall_s = seconds_since(t0);
  return r;
}

}  // namespace lpu
