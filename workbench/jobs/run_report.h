// What `lpu run` and `lpu sim` print: the metric table of one simulated run (cycles, traffic,
// utilisation, energy, tensor parallelism, graph breaks), the tuner's candidates, the energy
// by engine. Text only: the JSON is RunOutcome::to_json and stats_to_json.
#pragma once
#include <string>
#include <vector>

#include "jobs/jobs.h"

namespace lpu {

// The architecture as run: the config's name, and the --set overrides when there were any.
std::string effective_arch(const ArchConfig& a, const std::vector<std::string>& sets);
// "15 candidates in 1.23 s: 2.38% (4541 cycles) faster than greedy (...)".
std::string search_summary(const SearchReport& r);
// Every candidate the tuner tried, in the order tried, with its cycles against greedy.
std::string format_search_candidates(const SearchReport& r);
// Energy per engine: dynamic (events x config energies) and static (power x time).
std::string format_energy_table(const EnergyStats& e);
// `lpu run`: the metric table, then energy, search candidates, top kernels and op classes.
std::string format_run(const RunOutcome& o, const std::vector<std::string>& sets);
// The line under `lpu run --functional`: errors, tolerance, PASS or FAIL.
std::string format_functional_check(const FunctionalCheck& c);
// `lpu sim`: the metric table of a program simulated on its own (no compile, no workload).
std::string format_sim_run(const Program& p, const ArchConfig& arch, const std::vector<std::string>& sets,
                           const SimResult& r);

}  // namespace lpu
