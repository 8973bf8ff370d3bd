// `lpu sweep FILE --backend slurm -o DIR`: the sweep as one Slurm job array. Each array task
// runs `lpu sweep FILE --shard I/N --resume -o DIR` on a node (DIR, FILE, the lpu binary and
// the configs must be reachable there at the same paths: a shared filesystem). This process
// writes the sbatch script into DIR/slurm/, submits it, shows progress from the shard result
// files and squeue, reports failed tasks with their Slurm state and log, and finally merges
// the shards into DIR/results.{csv,jsonl}. `--resume` resubmits only the shards that still
// have points without a result. docs/sweeps.md, "Slurm".
#pragma once
#include <string>

#include "sweep/sweep.h"

namespace lpu {

struct SlurmOptions {
  int array_size = 0;          // tasks = shards (0: min(points, 100))
  std::string partition, time, mem;
  bool dry_run = false;        // print the script; write and submit nothing
};

// Exit 0 when every point of the sweep has a successful result, 1 when some failed or are
// missing (a task died), 2 bad input (including a missing sbatch or a refused submission;
// nothing is then left in DIR).
int slurm_sweep_command(const std::string& file, const SweepOptions& so, const SlurmOptions& sl, const std::string& json);

}  // namespace lpu
