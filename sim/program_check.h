// What can be checked about a program before simulating it on a config: the structural rules
// every reader applies (StructureCheck, for programs built in memory), and that every
// instruction stays inside the memories over all its loop iterations: HBM addresses below
// hbm.capacity_gib, local-memory addresses below lmu.capacity_kib, neither below 0. The
// engines trust this (their address arithmetic is not overflow-checked), and an error names
// the instruction's file and line, which the engines, seeing one expanded instance at run
// time, cannot.
#pragma once
#include <cstdint>

#include "config/arch_config.h"
#include "isa/program.h"

namespace lpu {

// Throws InputError "LOCATION: message" (instruction_location) for the first violation.
void check_program(const Program& p, const ArchConfig& arch);

// Fetches the ISU makes when it runs `p`: every instruction up to the first halt, loops
// expanded (an endloop once per iteration, a loop once per entry); UINT64_MAX when the count
// does not fit 64 bits. What a run costs in wall-clock time, roughly.
uint64_t instruction_fetches(const Program& p);

}  // namespace lpu
