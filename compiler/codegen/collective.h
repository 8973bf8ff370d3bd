// Code for the collectives of a partitioned graph (graph/collective.h) over the ESL
// (docs/tensor-parallel.md, "Code"). A collective node's operand is viewed as [rows, cols]
// (rows: the dims before the gathered one, or all but the last for all_reduce) and cut into
// column chunks. Each rank
//   1. loads its own chunks from HBM into its slot of the receive area,
//   2. sends chunk k to every peer (esl.send into the same slot of the peer's receive area,
//      adding one to the peer's token of chunk k), chunk k+1's sends issued before chunk k is
//      waited for, so the link, the DMA and the VXE work on different chunks at once,
//   3. waits for chunk k from its N-1 peers (sync.wait), sums the slots in rank order into an
//      accumulator (all_reduce; every rank gets bit-identical values) and stores chunk k to HBM
//      (all_gather: stores every slot's chunk into its place in the gathered output).
// The receive area sits at the top of local memory, reserved for the whole program (a peer
// may send before this device reaches the collective): two halves used by alternate
// collectives, each N slots plus an accumulator. Two halves suffice because each collective's
// operand depends on the previous collective's result on every rank (a decoder's residual
// stream), so a peer cannot send collective c+2 before this device has finished collective c.
#pragma once
#include <cstdint>
#include <vector>

#include "isa/program.h"
#include "loopir/loop_ir.h"

namespace lpu {

struct CollectivePlacement {
  uint64_t lm_base = 0;    // the receive area
  int64_t slot_bytes = 0;  // one slot: the largest operand of any collective, fp32, aligned
  int64_t group = 0;       // the largest group (0: the program has no collective)
  // Column chunks per collective: 4, fewer when a rank's row has under 64 x 4 columns (a
  // compiler choice: enough to overlap link, DMA and VXE; each chunk costs N-1 sends).
  int64_t chunks = 4;
  int64_t bytes() const { return group ? 2 * (group + 1) * slot_bytes : 0; }  // of the area
};
// Where `p`'s collectives receive: the area at lm_base (the driver reserves its bytes() at
// the top of local memory and gives the rest to every other kernel). The area takes at most a
// quarter of `lmu_bytes` (the config's local memory): a slot smaller than an operand makes
// the collective run in rounds, a barrier between them (each rank signals every peer that its
// slots are free, sync.signal dev:P, and waits for theirs).
CollectivePlacement place_collectives(const LoopProgram& p, uint64_t lm_base, int64_t lmu_bytes);

// The code of collective node `n` (a LoopKind::Host node whose op is a collective), the
// `seq`-th collective of the program (its half of the receive area: seq % 2).
std::vector<Instruction> emit_collective(const LoopProgram& p, const LoopNode& n, int kernel, int64_t seq,
                                         uint64_t in_addr, uint64_t out_addr, const CollectivePlacement& place);

}  // namespace lpu
