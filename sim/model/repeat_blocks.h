// The stretch of a program where one block of instructions repeats: a decoder's layers. Found
// before the run for layer memoisation (layer_memo.h), which may simulate such blocks once
// and skip the rest only if they are the same instructions in every way that decides time:
// - the same fields but the HBM address (opcode, shape, strides, local-memory addresses...);
// - kernels in step: block r's instructions belong to block 0's kernels plus r x its kernel
//   count, and no kernel of a block has instructions outside it;
// - HBM addresses in the corresponding region (isa/hbm_layout.h) at the same offset, where
//   "corresponding" is one map between regions for the whole stretch (layer r's weights to
//   layer r+1's, a shared region to itself) that is a function and one-to-one: then two
//   accesses overlap in blocks r and r+1 exactly when their counterparts do in blocks r+1 and
//   r+2, so the scoreboard sees the same hazards;
// - corresponding regions a whole number of HBM interleave rounds apart, so every access
//   spreads over the channels as its counterpart does;
// - no loops, barriers, host calls, ESL sends or gathers (whose addresses come from data).
#pragma once
#include <cstddef>

#include "config/arch_config.h"
#include "isa/program.h"

namespace lpu::sim {

struct RepeatBlocks {
  size_t first = 0;                   // the first instruction of block 0
  size_t length = 0;                  // instructions per block
  size_t count = 0;                   // blocks, all equivalent (at least 3)
  int first_kernel = 0, kernels = 0;  // block r's kernels: [first_kernel + r x kernels, ... + kernels)
  size_t start(size_t r) const { return first + r * length; }
};

// The longest such stretch, or count 0 when the program has none of 3 blocks or more. The
// program must have passed check_program (program_check.h).
RepeatBlocks find_repeat_blocks(const Program& p, const ArchConfig& arch);

// The same in two steps, for a caller that checks the program on the way (simulator.cpp):
// - candidate_blocks: the stretch whose blocks have the same opcodes, from opcodes and block
//   lengths alone (safe on a program not checked yet; first_kernel and kernels unset);
// - find_repeat_blocks(p, arch, candidate): the longest run of its blocks that are equivalent
//   as above. Of the program, only the candidate's block 0 needs to have passed the checks
//   (its operands' extents are taken); the other blocks are compared field by field with it.
RepeatBlocks candidate_blocks(const Program& p);
RepeatBlocks find_repeat_blocks(const Program& p, const ArchConfig& arch, const RepeatBlocks& candidate);

}  // namespace lpu::sim
