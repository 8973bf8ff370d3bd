// Interpreter handler: computes real values for a loop-IR program. Values are whole arrays
// over a node's iteration domain (ranges x reduction ranges), so each op is one vector op.
#pragma once
#include "loopir/loop_ir.h"
#include "ref/tensor.h"

namespace lpu {

// Runs every node of `p` in order. `inputs` has a tensor per program input (by name).
// Returns the program outputs, in order.
std::vector<Tensor> interpret_loop_ir(const LoopProgram& p, const TensorMap& inputs);

}  // namespace lpu
