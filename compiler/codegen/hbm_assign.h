// HBM buffer assignment: the order of a program's buffers in HBM and which of them share bytes.
//
// Weights come first, then the other inputs, then every buffer a kernel writes to HBM, in kernel
// order. Weights, inputs and outputs each get bytes of their own. An intermediate shares the
// bytes of the same intermediate of an earlier decoder layer (the same name but for the layer
// tag, `l2.fc1` and `l0.fc1`: isa/layer_template.h) once that one is dead: its last reader
// comes before the kernel that first writes the new one. A decoder's activations then take one
// layer's worth of HBM instead of one per layer, as a runtime that reuses activation memory
// needs, while the layout stays periodic in the layers (the regional compiler's layer template
// extends it to any depth) and affine in the context (generate's program templates).
// Intermediates without a layer tag (graphs from PyTorch) keep bytes of their own.
//
// The regions are laid out by the rule of isa/hbm_layout.h. Sharing bytes is safe in the
// simulator however the engines overlap: its scoreboard orders a write after every earlier
// read of the same bytes (write-after-read).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

struct HbmAssignment {
  std::vector<std::string> order;  // buffers in HBM, in .buffer order
  std::vector<size_t> leader;      // per buffer of `order`: its region's leader (an index into it)
};

// `elided(k)`: kernel k writes nothing to HBM (an elided gather, codegen/gathered_weights.h).
HbmAssignment assign_hbm(const LoopProgram& p, const Schedule& s, const std::function<bool(const Kernel&)>& elided);

}  // namespace lpu
