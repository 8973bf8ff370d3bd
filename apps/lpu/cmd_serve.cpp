// `lpu serve WORKLOAD` (docs/serving.md): many users' requests through a simulated cluster of
// replicas, every step priced by the compiled program on the cycle model.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli.h"
#include "jobs/cli_support.h"
#include "jobs/report.h"
#include "serve/result_io.h"
#include "serve/trace_events.h"
#include "servesim/serve_job.h"
#include "support/error.h"
#include "workload/transformer.h"

namespace lpu::cli {

namespace {

struct ServeFlags {
  std::string workload, json, csv, perfetto, report;
  ServeTextOptions text;
  bool no_chunked = false, json_wall = false, explain = false;
  ArchFlags af;
  ServeJobOptions o;
};

int serve(ServeFlags& f) {
  check_output_file("--json", f.json);
  check_output_file("--csv", f.csv);
  check_output_file("--perfetto", f.perfetto);
  check_output_file("--cost-cache", f.o.cost_cache);
  check_output_dir("--report", f.report);
  WorkloadSpec w = resolve_workload(f.workload, f.af.workload_sets());
  ArchConfig arch = f.af.load();
  ServeJobOptions& o = f.o;
  if (f.explain) o.explain = &std::cerr;
  apply_serve_text(o, w, f.text);
  o.scheduler.chunked_prefill = !f.no_chunked;
  o.progress = &std::cerr;
  ServeJobResult r = run_serve_job(w, arch, o);
  std::cout << r.summary();
  if (!f.json.empty()) write_json(f.json, r.to_json(f.json_wall));
  if (!f.csv.empty()) {
    std::ostringstream req;
    serve::write_requests_csv(r.result, req);
    write_file(f.csv, req.str());
  }
  if (!f.perfetto.empty()) write_json(f.perfetto, serve::serve_trace_json(r.result));
  if (!f.report.empty()) {
    // The page is drawn from the run's JSON (and its trace, pointed to from the page).
    std::filesystem::create_directories(f.report);
    ReportOptions ro;
    ro.out_dir = f.report;
    ro.inputs.push_back(f.report + "/serve.json");
    write_json(ro.inputs.back(), r.to_json(true));
    if (const int rc = report_command(ro); rc != 0) return rc;
  }
  return r.result.truncated ? 3 : 0;
}

void add_request_flags(CLI::App* s, ServeFlags& f) {
  s->add_option("--trace-file", f.o.trace_file,
                "requests from a trace (CSV or JSONL: arrival_s,prompt_tokens,output_tokens; Vidur's and "
                "SplitwiseSim's headers too), e.g. workloads/traces/chat-1000.csv");
  s->add_option("--rate", f.text.rate, "generator: mean arrival rate, requests per second")->capture_default_str();
  s->add_option("--requests", f.o.generator.requests, "generator: requests")->capture_default_str();
  s->add_option("--seed", f.o.generator.seed, "generator: seed")->capture_default_str();
  s->add_option("--arrivals", f.text.arrivals, "generator: poisson | gamma:CV")->capture_default_str();
  s->add_option("--prompt", f.text.prompt,
                "generator: prompt lengths: N | uniform:MIN:MAX | zipf:S:MIN:MAX | lognormal:MEDIAN:SIGMA:MIN:MAX | "
                "empirical:FILE:prompt|output (default: the chat trace's lognormal:1020:0.9, at most 2048 and half "
                "the model's max_position)");
  s->add_option("--output", f.text.output,
                "generator: output lengths (as --prompt; default: lognormal:129:1.0, at most 1024 and half the "
                "model's max_position)");
}

void add_cluster_flags(CLI::App* s, ServeFlags& f) {
  serve::SchedulerConfig& sc = f.o.scheduler;
  s->add_option("--max-batched-tokens", sc.max_num_batched_tokens, "token budget of a step")->capture_default_str();
  s->add_option("--max-seqs", sc.max_num_seqs, "sequences in a step (at most 256)")->capture_default_str();
  s->add_flag("--no-chunked-prefill", f.no_chunked, "prefill each prompt in one step (no chunks)");
  s->add_option("--chunk-size", sc.chunk_size, "longest prefill chunk of a sequence in a step")->capture_default_str();
  s->add_option("--block-size", sc.block_size, "tokens per KV-cache block")->capture_default_str();
  s->add_option("--replicas", f.o.replicas, "replicas (the decode pool's when --prefill-replicas is given)")
      ->capture_default_str();
  s->add_option("--router", f.text.router, "round-robin | least-outstanding-tokens")->capture_default_str();
  s->add_option("--prefill-replicas", f.o.prefill_replicas,
                "disaggregation: a pool of this many prefill replicas hands KV caches to the decode replicas");
  s->add_option("--prefill-gpu", f.o.prefill_gpu,
                "disaggregation: the prefill pool on GPUs (a config, or a name in configs/gpus/, e.g. h200): GPU "
                "prefill + LPU decode");
  s->add_option("--link-gbps", f.o.link.bandwidth_gbps, "disaggregation: KV link, Gbit/s")->capture_default_str();
  s->add_option("--link-latency-us", f.o.link.latency_us, "disaggregation: KV link latency, us")->capture_default_str();
  s->add_option("--slo-ttft-ms", f.o.slo.ttft_ms, "SLO: time to first token, ms")->capture_default_str();
  s->add_option("--slo-tpot-ms", f.o.slo.tpot_ms, "SLO: time per output token, ms")->capture_default_str();
}

}  // namespace

Command add_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* s = app.add_subcommand("serve", "simulate serving many users: continuous batching, paged KV cache, SLOs");
  s->add_option("workload", f->workload, "a built-in LLM (lpu list workloads) or a workload YAML naming one")
      ->required();
  f->af.add(s);
  f->af.add_tp(s);
  s->add_option("--fusion", f->o.fusion, "fusion policy: none | greedy")->capture_default_str();
  add_request_flags(s, *f);
  add_cluster_flags(s, *f);
  s->add_flag("--exact", f->o.exact, "compile and simulate every step (slow; default: the step-cost model)");
  s->add_flag("--explain-recompiles", f->explain,
              "with --exact: print why each step's program was compiled rather than instantiated from a symbolic "
              "one (a new batch, a guard that failed; to stderr)");
  s->add_option("--error-samples", f->o.error_samples, "steps simulated exactly to measure the step-cost model's error")
      ->capture_default_str();
  s->add_option("--cost-cache", f->o.cost_cache, "the step-cost model's memo across runs (a JSON file)");
  s->add_flag("--find-rate", f->o.find_rate, "search the highest rate whose p99 TTFT and TPOT meet the SLOs");
  s->add_option("--json", f->json, "write the summary, every request and every step series as JSON");
  s->add_flag("--json-wall", f->json_wall,
              "add \"wall\" to the JSON: wall times and the model's points simulated or loaded (they differ "
              "between runs; without it the JSON of a seed is byte-identical)");
  s->add_option("--csv", f->csv, "write one row per request as CSV");
  s->add_option("--perfetto", f->perfetto,
                "write a Perfetto/Chrome trace: a track per replica (its steps) and per request (queueing, prefill, "
                "KV transfer, decode; 200 sampled past that)");
  s->add_option("--report", f->report, "write an HTML report (latency CDFs, batch and KV use over time, a Gantt)");
  return {s, [f] { return serve(*f); }};
}

}  // namespace lpu::cli
