// Software pipelining of a kernel's tiles: the emission order, and vector work cut into row groups.
//
// Engines take their instructions in program order (the ISU's rule), so a tile that streams
// with the matrix engine and hands the result to the vector engine makes the next tile's
// vector work wait behind this tile's. A decode attention tile does it twice: K streams into
// scores, the vector engine's softmax, V streams, the vector engine's epilogue. Each tile is
// cut into stages at every instruction off the matrix engine that must wait for a matrix
// instruction of its stage (it reads the result, or overwrites an operand the stream still
// reads); stage s of tile t is emitted in step t + s, a step's stages in ascending order:
// A(0) | A(1) B(0) | B(1) C(0) | C(1) for two tiles of three stages, so the vector engine
// takes tile 1's softmax before tile 0's epilogue, and the matrix engine streams K(1) while
// the softmax of tile 0 runs.
//
// Why the order stays correct: within a tile nothing moves (its register allocation holds);
// tiles that are not `buffers` apart use different regions of local memory, and where a step
// starts tile t while a stage of tile t - buffers (its region) is still to come, that stage
// goes first in the step (two cuts at most, so it is that tile's last); a kernel's tiles read
// no HBM that another of its tiles writes (in-kernel values stay in local memory).
// Single-buffered kernels, or tiles without a cut, keep the plain order.
#pragma once
#include <vector>

#include "isa/program.h"

namespace lpu {

// Where tile `code` is cut into stages: the index of each stage's first instruction after the
// first (ascending; at most `max_cuts`), empty when no instruction waits on the matrix engine.
std::vector<size_t> matrix_stage_cuts(const std::vector<Instruction>& code, size_t max_cuts = 2);

// A tile's vector work between its two matrix stages (a decode attention's softmax between the
// K and V streams) cut into row groups and emitted group by group, as far as local-memory
// dependencies allow. The matrix stage after it reads the result a few rows at a time (one
// head's V stream each), so it starts after the first group instead of after all rows, and the
// vector engine's softmax overlaps the V streams even within one tile (OPT-30B's 56 heads are one
// tile on lpu-asic). A run is cut only where the first matrix instruction after it does not wait
// for the last group; every piece pays the vector pipeline's latency again. Emission order and
// instruction count change, what each element computes does not (vector ops are row-local).
// Tiles with fewer than two cuts are returned as they are.
std::vector<Instruction> interleave_row_groups(const std::vector<Instruction>& code);

// The tiles in skewed order, as steps: steps [prologue, steps.size() - epilogue) are the steady
// ones (every stage present, the same structure; they may fold into a loop), the rest are
// emitted as they are. Unskewed: the tiles themselves, all steady.
struct SkewedTiles {
  std::vector<std::vector<Instruction>> steps;
  size_t prologue = 0, epilogue = 0;
};
SkewedTiles skew_tiles(std::vector<std::vector<Instruction>> tiles, int64_t buffers);

}  // namespace lpu
