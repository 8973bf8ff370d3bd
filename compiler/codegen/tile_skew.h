// Software pipelining of a kernel's tiles by one stage (the emission order, nothing else).
//
// Engines take their instructions in program order (the ISU's rule), so a tile that streams
// with the matrix engine and then hands the result to the vector engine (a decode attention
// tile: scores or probabilities @ V, then the epilogue adding the new value) makes the next
// tile's vector work wait behind this tile's epilogue, which waits for the stream: the two
// engines take turns instead of overlapping. Each tile is cut where its first instruction
// off the matrix engine reads a matrix-engine result (stage A before the cut, B from it on),
// and the tiles are emitted A(0), A(1), B(0), A(2), B(1), ..., B(T-1): tile t+1's vector work
// comes before tile t's epilogue on the vector engine's queue.
//
// Why the order stays correct: within a tile nothing moves (so its register allocation holds);
// consecutive tiles use the two halves of double-buffered local memory, so A(t+1) and B(t)
// touch different registers; tile t+2 (tile t's half) comes after all of tile t; a kernel's
// tiles read no HBM that another of its tiles writes (in-kernel values stay in local memory).
// Single-buffered kernels, or tiles without such a cut, keep the plain order.
#pragma once
#include <vector>

#include "isa/program.h"

namespace lpu {

// Where tile `code` is cut: the index of its first instruction that is not the matrix engine's
// and reads local memory a matrix-engine instruction before it writes; code.size() when none.
size_t matrix_result_cut(const std::vector<Instruction>& code);

// The steps of the skewed order: step 0 = A(0), step t = A(t) + B(t-1), step T = B(T-1).
// Returns the tiles unchanged as steps when `buffers` < 2, there are fewer than 2 tiles, or no
// tile has a cut.
std::vector<std::vector<Instruction>> skew_tiles(const std::vector<std::vector<Instruction>>& tiles, int64_t buffers);

}  // namespace lpu
