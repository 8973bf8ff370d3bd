// Process-wide allocator settings for the command-line programs (lpu, lpu-bench), which build
// and drop many short-lived graphs, programs and simulations in one process.
#pragma once

namespace lpu {

// Keeps freed memory in the process for reuse instead of returning it to the kernel: blocks
// under 64 MiB come from the heap (glibc otherwise maps every block over 128 KiB afresh and
// unmaps it when freed), and the heap's top is trimmed only past 256 MiB free. Each new
// mapping costs a page fault per page on first touch, and each unmapping a TLB flush, which a
// compile and a simulation paid over and over for the same sizes. Measured side by side
// (docs/benchmarks.md): `lpu generate opt-1.3b --arch lpu-asic --prompt-len 32 --gen-len 2016`
// compiles in 1.7-1.9 s instead of 2.5-2.9 s and simulates 6% faster. Peak memory is
// unchanged; what was freed is held until exit. Not for library code: a host process
// (Python) keeps its own. These are glibc's settings: where the programs link mimalloc
// (LPU_ALLOCATOR, apps/CMakeLists.txt; the default) malloc is mimalloc's, which keeps freed
// segments for reuse itself, and this call changes nothing.
void retain_freed_memory();

}  // namespace lpu
