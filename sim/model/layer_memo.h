// Layer memoisation: a decoder's layers run the same instructions (repeat_blocks.h), so once
// the machine is seen in the same state at two block boundaries, every block after runs as
// the last one did, shifted in time. The run then jumps: the ISU's program counter, the
// instructions in flight and every time held in the device move on by k blocks and k block
// periods, and the statistics add k periods' worth. A block's kernels are active over three
// periods at most (their first fetches, their own, their last instructions draining), and the
// period just seen held one block in each of those three phases: what each phase added to its
// block's kernels makes up every skipped block's kernels, shifted in time. The rest of the
// program (the last blocks, the head) is simulated as usual. The statistics are bit-identical
// to simulating every block.
//
// Why that holds:
// - The state compared is all the state that decides what happens next, relative to the
//   boundary: the ISU's window and scoreboard, the engines' queues and running instructions,
//   when the SXE's trees, the LMU port and each HBM channel are next free (what lies in the
//   past counts as now), with instructions numbered from their block's start. It is taken at
//   the first ISU activation after the block's first fetch at which nothing else is pending
//   at that instant, so no SystemC event outside the model's state is in flight.
// - Times are whole picoseconds (every duration of the model is rounded up to one), so adding
//   a period is exact and a run does not depend on where in time it happens.
// - Processes whose timers end at the same instant wake in a fixed order (wake_order.h), and
//   the other orders SystemC chooses are among an engine's workers, which are alike (the
//   state lists their instructions in order). So what happens next depends on the state alone.
// - A run that passes sim.max_us after a jump (whose watchdog keeps SystemC's clock, which
//   lags the model's) or fails is simulated again without memoisation, for the same report.
// - Skipped blocks are the same instructions as the simulated ones, up to HBM regions mapped
//   one-to-one and a whole number of interleave rounds apart (repeat_blocks.h): the same
//   hazards, the same channels.
// Only single-device timing runs with the bandwidth memory model and SC_METHOD processes
// qualify (no functional data, trace or VCD, no RTL, no engine extensions); sim.memoize: false
// turns it off.
#pragma once
#include <cstdint>
#include <vector>

#include "model/repeat_blocks.h"
#include "model/sim_context.h"

namespace lpu::sim {

class Device;

class LayerMemo {
 public:
  LayerMemo(DeviceContext& ctx, Device& dev, const RepeatBlocks& blocks);
  // Whether memoisation may run on this device (see above).
  static bool qualifies(const DeviceContext& ctx, const Device& dev, bool vcd);

  // At the start of every ISU activation: a snapshot at a block boundary, and the jump.
  void at_isu_activation();

  // The run must be simulated again without memoisation (see above).
  bool rerun_needed() const;
  uint64_t skipped_blocks() const { return skipped_blocks_; }

 private:
  struct Snapshot {
    size_t block = 0;
    bool valid = false;
    double t = 0;
    std::vector<double> state;            // relative to the boundary (see capture())
    std::vector<double> acc;              // the statistics' accumulators, absolute
    std::vector<KernelCounters> kernels;  // blocks r-1 and r's kernels, their logs by length only
  };
  bool capture(size_t r, Snapshot& s);
  size_t kernel(size_t block, int q) const;  // block's q-th kernel
  template <class F>
  void accumulators(F&& f);
  bool jump(size_t t, size_t k);
  bool move_kernels(size_t t, size_t k, double period);
  void shift_state(size_t shift, double w);

  DeviceContext& ctx_;
  Device& dev_;
  RepeatBlocks blocks_;
  size_t next_ = 0;  // the block whose boundary comes next
  Snapshot prev_, cur_;
  bool done_ = false;
  uint64_t skipped_blocks_ = 0;
};

}  // namespace lpu::sim
