// The workbench's small reports: what `lpu list`, `lpu check-config`, `lpu ref` and `lpu sim`
// print about its tables (ops, workloads, configs, ATen coverage), a config, a graph file's
// reference check and a program file.
#pragma once
#include <string>

#include "jobs/jobs.h"

namespace lpu {

std::string format_op_list();        // every op of the registry: name, category, meaning
std::string format_workload_list();  // built-in builders, then workloads/*.yaml
std::string format_config_list();    // configs/*.yaml
// The core ATen opset and how each op is handled, with the counts; `missing`: ops not handled.
std::string format_aten_coverage(int& missing);
// `check-config`: one config's summary line, and its energy model.
std::string describe_arch_config(const ArchConfig& a);
// `ref`: the graph's outputs and their errors against PyTorch, then PASS or FAIL.
std::string format_reference_run(const ReferenceRun& r);
// An LPU program as assembly (.s) or the binary form (.lpubin).
Program load_program_file(const std::string& path);

}  // namespace lpu
