// Triton source handler: a scheduled loop-IR program -> one Python module with one Triton kernel
// per scheduled kernel and a launcher (`lpu compile --emit triton` writes it as
// triton_kernels.py). The bodies are walked with an ops handler whose values are Triton-language
// expressions (docs/handlers.md, "Triton"), the same way the C++ source handler does it.
//
// The module (Python 3, imports torch, triton, triton.language as tl):
//   BUFFER_PLAN   a dict literal: program, policy, inputs (graph order), outputs, every buffer
//                 (shape, dtype, role, storage: "input" | "hbm" | "scratch") and every kernel in
//                 schedule order (name, triton function, mode, grid, nodes, hbm_outputs, reads,
//                 writes). triton_buffer_plan_json gives the same plan as JSON.
//   allocate(inputs, device="cuda")  -> dict of every buffer: the inputs (moved to the device,
//                 checked for shape, converted to the plan's dtype), torch.empty for the rest, and
//                 "__lpu_sync", the grid barrier's counter
//   launch(bufs)  runs every kernel in schedule order (a graph break runs on the host in torch)
//   run(inputs, device="cuda") -> {output name: tensor}   allocate + launch
//
// Kernel modes (what one Triton program does):
//   rows   grid (rows, column blocks): program (r, c) runs every node of the kernel for row r
//          (the schedule's row/column view, loopir LoopNode::row_vars) and, when the kernel is
//          column-local, column block c. A buffer produced and consumed inside the kernel lives in
//          a scratch buffer; tl.debug_barrier() between dependent nodes makes one node's stores
//          visible to the next node's loads in the same program. Chosen when every read of such a
//          buffer stays inside the row (and column block) that wrote it, and the kernel has no
//          matmul (or is column-local).
//   grid   one program per SM (the launcher asks the device): each node's work items (rows x
//          column blocks; rows for a reduction) are dealt out to all programs, and a grid barrier
//          (TorchInductor's flip-bit counter) separates a node from the nodes it reads, or a CTA
//          barrier where the reader's item is the writer's. For fused matmuls (a decode step's
//          GEMVs would otherwise run on one program) and kernels whose rows read each other.
//   dot    a kernel of one matmul node mul(load A, load B): BLOCK_M x BLOCK_N tiles with tl.dot
//          (blocks >= 16, masked edges, fp32 accumulation; fp32 operands with
//          input_precision="ieee"). A matmul whose A does not vary with M (a GEMV) runs as rows.
//   host   a graph break: no Triton kernel; the launcher calls torch.
// Kernels of identical code (a model's layers) share one function, so one Triton compilation.
// Indices are int64; floor division and modulo print as Python // and %, which are exact for
// non-negative operands (Triton's integer // and % truncate like C); where Index::bounds cannot
// prove an operand non-negative, the exact floor form is emitted instead.
#pragma once
#include <string>

#include "loopir/kernel.h"
#include "loopir/loop_ir.h"

namespace lpu {

// The whole module. Throws InputError when a kernel reads a buffer that neither an input nor an
// earlier kernel provides, when an index uses a variable outside its node's loops, or for a node
// kind or op this handler does not know.
std::string emit_triton_module(const LoopProgram& p, const Schedule& s);

// The module's BUFFER_PLAN as JSON (same content).
std::string triton_buffer_plan_json(const LoopProgram& p, const Schedule& s);

}  // namespace lpu
