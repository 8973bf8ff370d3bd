// What can be checked about a program before simulating it on a config: the structural rules
// every reader applies (StructureCheck, for programs built in memory), and that every
// instruction stays inside the memories over all its loop iterations: HBM addresses below
// hbm.capacity_gib, local-memory addresses below lmu.capacity_kib, neither below 0. The
// engines trust this (their address arithmetic is not overflow-checked), and an error names
// the instruction's file and line, which the engines, seeing one expanded instance at run
// time, cannot.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "config/arch_config.h"
#include "isa/program.h"

namespace lpu {

// Throws InputError "LOCATION: message" (instruction_location) for the first violation.
void check_program(const Program& p, const ArchConfig& arch);

// Instruction index ranges [begin, end), sorted and disjoint.
using InstructionRanges = std::vector<std::pair<size_t, size_t>>;

// check_program without the memory bounds of the instructions in `bounds_skipped`: for a
// caller that proves them another way (simulator.cpp: the blocks of a decoder's layers that
// are their first block's counterparts, repeat_blocks.h). The first error it throws need not
// be check_program's first: a caller that gets one checks the whole program for that.
void check_program(const Program& p, const ArchConfig& arch, const InstructionRanges& bounds_skipped);

// check_program's memory-bounds check of the instructions in `ranges` only.
void check_memory_bounds(const Program& p, const ArchConfig& arch, const InstructionRanges& ranges);

// Fetches the ISU makes when it runs `p`: every instruction up to the first halt, loops
// expanded (an endloop once per iteration, a loop once per entry); UINT64_MAX when the count
// does not fit 64 bits. What a run costs in wall-clock time, roughly.
uint64_t instruction_fetches(const Program& p);

}  // namespace lpu
