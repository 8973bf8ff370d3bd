// `lpu sweep FILE -o DIR` (docs/sweeps.md): a design-space sweep, here or as a Slurm job array;
// `lpu sweep merge DIR...` joins the shards of one.
#include <unistd.h>

#include <cmath>
#include <memory>
#include <thread>

#include "cli.h"
#include "jobs/cli_support.h"
#include "support/error.h"
#include "sweep/sweep.h"
#include "sweep/sweep_merge.h"
#include "sweep/sweep_slurm.h"

namespace lpu::cli {

namespace {

struct SweepFlags {
  SweepOptions so;
  SlurmOptions slo;
  std::string file, json, shard, backend = "local";
  CLI::App* app = nullptr;
  CLI::Option* out = nullptr;
  // merge
  CLI::App* merge = nullptr;
  std::vector<std::string> merge_dirs;
  std::string merge_out;  // its --json is the sweep's (one variable, as the flag was)
};

// Every check of the flags, before anything runs or is written.
void validate(SweepFlags& f) {
  if (f.file.empty()) throw InputError("sweep: a sweep file is required (lpu sweep FILE -o DIR)");
  if (f.out->count() == 0) throw InputError("sweep: -o DIR is required");
  if (!std::isfinite(f.so.timeout_s) || f.so.timeout_s < 0)
    throw InputError(strcat("--timeout: expected seconds >= 0 (0: no limit), got ", f.so.timeout_s));
  check_output_dir("-o", f.so.out_dir);
  check_output_file("--json", f.json);
  f.so.progress_bar = isatty(STDOUT_FILENO);
  if (!f.shard.empty()) f.so.shard = parse_shard(f.shard);
}

int sweep(SweepFlags& f) {
  if (*f.merge) return merge_command(f.merge_dirs, f.merge_out, f.json);
  validate(f);
  if (f.backend == "slurm") {
    if (f.so.shard.active()) throw InputError("--shard runs one shard here; --backend slurm submits all of them");
    if (f.app->get_option("-j")->count() == 0) f.so.jobs = 1;  // a task's CPUs: one unless asked
    return slurm_sweep_command(f.file, f.so, f.slo, f.json);
  }
  if (f.backend != "local") throw InputError("--backend " + f.backend + ": expected local or slurm");
  for (const char* o : {"--array-size", "--partition", "--time", "--mem"})
    if (f.app->get_option(o)->count()) throw InputError(std::string(o) + " applies to --backend slurm only");
  if (f.slo.dry_run) return sweep_dry_run(f.file, f.so);
  return sweep_command(f.file, f.so, f.json);
}

void add_merge(SweepFlags& f) {
  f.merge = f.app->add_subcommand("merge", "join the shard results of one sweep into results.csv/results.jsonl");
  f.merge->add_option("dirs", f.merge_dirs, "results directories holding results-I-of-N.jsonl")->required();
  f.merge->add_option("-o,--out", f.merge_out, "where to write results.{csv,jsonl} (default: the first directory)");
  f.merge->add_option("--json", f.json, "write what was merged and what is missing as JSON");
}

}  // namespace

Command add_sweep(CLI::App& app) {
  auto f = std::make_shared<SweepFlags>();
  f->so.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto* swp = f->app = app.add_subcommand("sweep", "run a design-space sweep (docs/sweeps.md), N processes at a time");
  swp->add_option("file", f->file, "sweep YAML (see configs/sweeps/)");
  swp->add_option("-j,--jobs", f->so.jobs, "points simulated at once (child processes; default: the CPU count)")
      ->capture_default_str();
  f->out = swp->add_option("-o,--out", f->so.out_dir, "results directory: results.csv, results.jsonl, traces/");
  swp->add_flag("--resume", f->so.resume, "continue a sweep in -o: skip the points it already finished");
  swp->add_option("--timeout", f->so.timeout_s, "fail a point that runs longer than this many seconds (0: no limit)");
  swp->add_option("--json", f->json, "write a summary (counts, failures, fastest points) as JSON");
  swp->add_option("--shard", f->shard, "run only shard I of N (I/N, from 0), into DIR/results-I-of-N.*");
  swp->add_option("--backend", f->backend, "local (child processes here) or slurm (one job array)")
      ->capture_default_str();
  swp->add_option("--array-size", f->slo.array_size, "slurm: array tasks (shards; default min(points, 100))");
  swp->add_option("--partition", f->slo.partition, "slurm: partition");
  swp->add_option("--time", f->slo.time, "slurm: time limit per task (sbatch --time)");
  swp->add_option("--mem", f->slo.mem, "slurm: memory per task (sbatch --mem)");
  swp->add_flag("--dry-run", f->slo.dry_run,
                "print what would run (local: the points; slurm: the sbatch script), run nothing");
  add_merge(*f);
  return {swp, [f] { return sweep(*f); }};
}

}  // namespace lpu::cli
