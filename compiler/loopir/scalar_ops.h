// The scalar op table LPU_SCALAR_OPS moved to the op-table leaf, ops/scalar_ops.h, so that the
// ISA and the simulator use it without seeing the loop IR (docs/layers.md).
#pragma once
#include "ops/scalar_ops.h"
