// The Slurm client commands `lpu sweep --backend slurm` runs (sbatch, squeue, sacct,
// scontrol), each as a child process with a time limit, and what it reads from them.
#pragma once
#include <string>
#include <vector>

#include "process/proc.h"

namespace lpu {

// The program's path in PATH, or "".
std::string find_program(const std::string& name);

struct Captured {
  ChildExit exit;
  std::string out, err;
  bool timed_out = false;
};

// Runs a client command, its output through files in `scratch`; killed after `limit_s`
// (a controller that does not answer must not hang the sweep).
Captured capture(const std::vector<std::string>& argv, const std::string& scratch, double limit_s = 60);

// Array indices as Slurm writes them: 0-3,7,9-10 (`idx` sorted, distinct).
std::string array_list(const std::vector<int>& idx);

struct TaskState {
  int task = -1;
  std::string state, exit_code;  // COMPLETED, FAILED, CANCELLED, TIMEOUT, ...; "2:0"
};

// The final state of every array task of `job`: sacct where accounting is on, else scontrol
// (which remembers finished jobs for MinJobAge seconds).
std::vector<TaskState> task_states(const std::string& job, const std::string& scratch);

// Text as one line: lines trimmed, blank ones dropped, joined by " | ".
std::string one_line(const std::string& text);

}  // namespace lpu
