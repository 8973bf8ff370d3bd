// The semantics of every ReductionType (class Reducer) moved to the op-table leaf,
// ops/reduction.h, so that the VXE model shares them without seeing the loop IR
// (docs/layers.md).
#pragma once
#include "ops/reduction.h"
