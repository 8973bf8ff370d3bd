// Gathered weights streamed straight from their table (mixture of experts on the LPU).
// A Gather node picking whole slabs of an HBM table (an expert's weights: aten.index of a weight,
// passes/host_decompositions.cpp) whose output only matmuls read, as their B operand, one slab
// per matmul row, is never materialised: the gather emits nothing and each such matmul streams
// its rows' slabs from the table itself (sxe.gemm_gather, the row indices in local memory).
// Without this the slabs would be written to HBM and read back: 3x the weight traffic.
#pragma once
#include <cstdint>
#include <optional>

#include "loopir/loop_ir.h"

namespace lpu {

struct GatheredWeights {
  const LoopNode* gather = nullptr;  // the elided Gather node
  int64_t slab = 0;                  // elements per table row (one expert's weights)
  int64_t offset = 0;                // where B starts inside each row's slab
  int64_t ks = 0, ns = 0;            // B's element strides along K and N
  Expr row_index;                    // each matmul row's slab number: a load over the matmul's variables
};

// Whether `gather` (a Gather node) is elided: its table is a program input or weight, its output
// no graph output, and every reader a matmul that streams it as B, one slab per row.
bool gather_is_elided(const LoopProgram& p, const LoopNode& gather);

// For a matmul whose B operand is an elided gather's output: where its rows' weights lie in the
// table. Nullopt for any other matmul.
std::optional<GatheredWeights> gathered_weights(const LoopProgram& p, const LoopNode& matmul);

}  // namespace lpu
