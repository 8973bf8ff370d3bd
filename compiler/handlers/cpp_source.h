// C++ source handler: a scheduled loop-IR program -> one self-contained C++17 translation
// unit (`lpu compile --emit cpp` writes it as kernels.cpp). The same loop IR that becomes LPU
// assembly through codegen/lpu_codegen.cpp becomes portable C++ here, by walking node bodies
// with a handler whose values are C++ expressions (docs/handlers.md).
//
// Buffer ABI of the generated code:
//   * A buffer table: the program inputs (graph order), then every buffer a kernel writes to
//     HBM, in kernel order (cpp_buffer_table). The generated code describes it too, see below.
//   * buffers[i] points to a dense row-major float array of lpu_buffer_numel(i) elements. Host
//     storage is fp32 for every logical dtype, as in the reference executor (ref/tensor.h), so
//     casts are no-ops.
// Exported (extern "C"):
//   void kernel_NAME(float* const* buffers)      one per kernel of the schedule
//   int lpu_buffer_count(void)
//   const char* lpu_buffer_name(int i)           nullptr when i is out of range
//   long long lpu_buffer_numel(int i)            -1 when i is out of range
//   const char* lpu_buffer_role(int i)           "input", "weight", "intermediate", "output"
//   int lpu_kernel_count(void)
//   const char* lpu_kernel_name(int i)
//   int lpu_run_kernel(int i, float* const* buffers)   0, or -1 when i is out of range
//   void lpu_run(float* const* buffers)          every kernel, in schedule order
//
// Inside a kernel the nodes run in order, each as its own loop nest over its ranges (and
// reduction ranges). A buffer produced and consumed inside the kernel and not written to HBM
// is a local array of the kernel, complete before its consumers run: the simplest choice that
// is correct for any fused group. (Interleaving the nests row by row, as the LPU's tiling does,
// would shrink the locals to one row; that is a scheduling decision, not a handler's.)
//
// Bodies: one `const float tmpN = ...;` per distinct subexpression (CSE by text), numbered in
// evaluation order within a node; literals are inlined. Indices are int64_t arithmetic with
// lpu_floordiv / lpu_mod (floor division, non-negative modulo: loopir/index.h). Reductions
// accumulate in double with the semantics of ops/reduction.h.
#pragma once
#include <string>
#include <vector>

#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

// The ABI's buffer table: buffer names, index = position in `buffers`.
std::vector<std::string> cpp_buffer_table(const LoopProgram& p, const Schedule& s);

// The whole translation unit. Throws InputError when a kernel reads a buffer that neither an
// input nor an earlier kernel provides, when an index uses a variable outside its node's
// loops, or for a node kind or op this handler does not know.
std::string emit_cpp_source(const LoopProgram& p, const Schedule& s);

}  // namespace lpu
