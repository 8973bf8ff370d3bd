// Column tiling: which nodes of a kernel can compute a window of their output columns.
// A matmul whose output row does not fit local memory is tiled along N: column tile j streams
// only the weight columns of tile j and its fused epilogue runs on those columns alone. Nodes
// upstream of the split (a norm feeding the matmul as its prologue, a per-row statistic an
// epilogue broadcasts) keep their whole row and are recomputed in every column tile, their HBM
// stores written by the first column tile only. A node that reduces over the split columns
// (softmax, layer norm after the matmul) cannot see its whole row in a column tile: such a
// kernel is not column-tileable, and the reason says which node.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

struct ColumnSplit {
  bool ok = false;
  std::string why_not;      // set when !ok: the node that needs its whole row, and why
  int64_t width = 0;        // columns of the split nodes (a matmul's N)
  int64_t granule = 1;      // column tiles start and end at multiples of this (two-level columns)
  std::vector<bool> split;  // per node of the kernel, in Kernel::nodes order
};

// Seeds are the kernel's matmuls (all of one N), or without a matmul its widest pointwise
// nodes; every in-kernel consumer of a split node is split too.
ColumnSplit analyze_column_split(const LoopProgram& p, const Kernel& k);

}  // namespace lpu
