// Layer memoisation (sim/model/layer_memo.h): the blocks of repeating instructions it finds,
// the ones it must refuse, and a run that skips layers giving the statistics of one that
// simulates every layer, byte for byte.
#include <gtest/gtest.h>

#include <functional>

#include "jobs/jobs.h"
#include "model/repeat_blocks.h"
#include "program_check.h"
#include "simulator.h"
#include "support/error.h"
#include "test_util.h"

using namespace lpu;

namespace {

ArchConfig preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml", sets);
}

Program compiled(const std::string& workload, const ArchConfig& a, const std::vector<std::string>& sets = {}) {
  return compile_graph(build_graph(resolve_workload(workload, sets)), compile_options_for(a, "greedy")).code.program;
}

// The statistics JSON with and without memoisation, and the blocks the memoised run skipped.
struct Both {
  std::string on, off;
  uint64_t skipped = 0;
};
Both simulate_both(const Program& p, ArchConfig a) {
  Both b;
  SimResult on = simulate(p, a, {});
  b.on = stats_to_json(on.stats).dump(1);
  b.skipped = on.memo_skipped_blocks;
  a.sim.memoize = false;
  SimResult off = simulate(p, a, {});
  EXPECT_EQ(off.memo_skipped_blocks, 0u);
  b.off = stats_to_json(off.stats).dump(1);
  return b;
}

}  // namespace

TEST(RepeatBlocks, FindsTheLayersOfADecoder) {
  const ArchConfig a = preset("lpu-asic");
  const Program p = compiled("opt-1.3b-decode", a);
  const sim::RepeatBlocks rb = sim::find_repeat_blocks(p, a);
  // OPT-1.3B's 24 layers as two kernels each (attention; the output projection through the
  // next layer's QKV), the last layer's second kernel (with the head) different.
  EXPECT_EQ(rb.count, 23u);
  EXPECT_EQ(rb.kernels, 2);
  EXPECT_EQ(rb.first_kernel, 1);
  for (size_t r = 0; r < rb.count; ++r)
    EXPECT_EQ(p.code[rb.start(r)].kernel, rb.first_kernel + static_cast<int>(r) * rb.kernels);
}

// A block that is not its neighbours' counterpart (a field, an HBM offset inside its region,
// a region two blocks share that were apart) ends the stretch: the longest run left is taken.
TEST(RepeatBlocks, EndWhereABlockDiffers) {
  const ArchConfig a = preset("lpu-asic");
  const Program p = compiled("opt-1.3b-decode", a);
  const sim::RepeatBlocks rb = sim::find_repeat_blocks(p, a);
  ASSERT_EQ(rb.count, 23u);
  size_t gemm = 0;  // an sxe.gemm of block 0 (its weights: a layer's own region)
  while (p.code[rb.first + gemm].opcode != Opcode::SxeGemm) ++gemm;
  auto found = [&](const Program& q) {
    const sim::RepeatBlocks f = sim::find_repeat_blocks(q, a);
    return std::make_pair(f.count, f.first);
  };
  const auto before_16 = std::make_pair(size_t{16}, rb.first);  // blocks 0-15
  {
    Program q = p;
    q.code[rb.start(16) + 3].lm_addr += 64;  // a field
    EXPECT_EQ(found(q), before_16);
    q = p;
    q.code[rb.start(6) + 3].lm_addr += 64;  // blocks 7-22 are the longest run left
    EXPECT_EQ(found(q), std::make_pair(size_t{16}, rb.start(7)));
  }
  {
    Program q = p;
    q.code[rb.start(16) + gemm].hbm_addr += 512;  // the same region, another offset
    EXPECT_EQ(found(q), before_16);
  }
  {
    Program q = p;  // block 16 streams block 15's weights: two regions would map onto one
    q.code[rb.start(16) + gemm].hbm_addr = p.code[rb.start(15) + gemm].hbm_addr;
    EXPECT_EQ(found(q), before_16);
  }
  {
    // Regions whose channels differ: the same program where an interleave round is twice as
    // large (a layer's regions lie one round of the compiled config apart, not two).
    const ArchConfig wide = preset("lpu-asic", {"hbm.interleave_bytes=131072"});
    EXPECT_EQ(sim::find_repeat_blocks(p, wide).count, 0u);
  }
}

TEST(RepeatBlocks, NoneInProgramsWithoutRepeats) {
  const ArchConfig a = preset("lpu-small");
  EXPECT_EQ(sim::find_repeat_blocks(compiled("ln_gelu_add", a), a).count, 0u);
  EXPECT_EQ(sim::find_repeat_blocks(Program{}, a).count, 0u);
}

// The decoders skip most of their layers and keep every statistic, the per-kernel ones
// (cycles, attribution) included.
TEST(LayerMemo, DecodersSkipLayersWithTheSameStatistics) {
  struct Case {
    const char* workload;
    const char* arch;
    std::vector<std::string> sets;
    uint64_t min_skipped;
  };
  for (const Case& c :
       {Case{"opt-1.3b-decode", "lpu-asic", {}, 15}, Case{"llama2-7b-decode", "lpu-asic", {}, 20},
        Case{"opt-1.3b-decode", "lpu-small", {}, 15}, Case{"llama2-7b", "lpu-asic", {"batch=4", "context=700"}, 20},
        Case{"opt-1.3b", "lpu-asic", {"phase=prefill", "seq_len=64", "context=0"}, 10}}) {
    SCOPED_TRACE(std::string(c.workload) + " on " + c.arch);
    const ArchConfig a = preset(c.arch);
    const Both b = simulate_both(compiled(c.workload, a, c.sets), a);
    EXPECT_GE(b.skipped, c.min_skipped);
    EXPECT_EQ(b.on, b.off);
  }
}

// A run that passes sim.max_us after a jump (the watchdog keeps SystemC's clock, which lags
// the model's) is simulated again without memoisation: the same failure as without it.
TEST(LayerMemo, ARunPastTheTimeLimitFailsAsWithout) {
  ArchConfig a = preset("lpu-asic");
  const Program p = compiled("opt-1.3b-decode", a);
  a.sim.max_us = 1000;  // the step takes 1078 us
  std::string with, without;
  try {
    simulate(p, a, {});
  } catch (const SimulationStuck& e) {
    with = e.what();
  }
  a.sim.memoize = false;
  try {
    simulate(p, a, {});
  } catch (const SimulationStuck& e) {
    without = e.what();
  }
  EXPECT_NE(without, "");
  EXPECT_EQ(with, without);
}

// What does not qualify simulates every block: functional runs, traces, tensor parallelism.
TEST(LayerMemo, OnlyTimingRunsOfOneDevice) {
  const ArchConfig a = preset("lpu-asic");
  const Program p = compiled("opt-1.3b-decode", a);
  SimOptions trace;
  trace.record_trace = true;
  EXPECT_EQ(simulate(p, a, trace).memo_skipped_blocks, 0u);
  EXPECT_EQ(simulate(p, preset("lpu-asic", {"memory.model=banks"}), {}).memo_skipped_blocks, 0u);
  EXPECT_GT(simulate(p, a, {}).memo_skipped_blocks, 0u);
}

// simulate() checks the memory bounds of a decoder's later layers through their equivalence to
// the first (simulator.cpp, check_finding_blocks). A bad program must still get check_program's
// own first error: mutations of one field of one instruction, in the first, a middle and the
// last layer and outside the layers, each give simulate() the message check_program gives (or
// none when the mutation keeps the program valid). On lpu-small, where the layers' stretch
// starts at layer 1, too.
TEST(LayerMemo, ChecksOfSkippedLayersGiveCheckProgramsErrors) {
  for (const char* arch_name : {"lpu-asic", "lpu-small"}) {
    const ArchConfig a = preset(arch_name);
    const Program base = compiled("opt-1.3b-decode", a);
    const sim::RepeatBlocks rb = sim::find_repeat_blocks(base, a);
    ASSERT_GE(rb.count, 3u);
    const uint64_t capacity = static_cast<uint64_t>(a.hbm.capacity_gib * 1024.0 * 1024.0 * 1024.0);
    // An instruction with an HBM operand at offset k of block r (or outside the blocks).
    auto hbm_instruction = [&](size_t from) {
      for (size_t i = from; i < base.code.size(); ++i)
        if (base.code[i].hbm_addr != 0) return i;
      return base.code.size();
    };
    const std::vector<size_t> at = {hbm_instruction(0),
                                    hbm_instruction(rb.start(0)),
                                    hbm_instruction(rb.start(1)),
                                    hbm_instruction(rb.start(rb.count / 2) + 3),
                                    hbm_instruction(rb.start(rb.count - 1) + 1),
                                    hbm_instruction(rb.start(rb.count))};
    const std::vector<std::function<void(Instruction&)>> mutations = {
        [&](Instruction& in) { in.hbm_addr = capacity - 64; },   // past the end of HBM
        [&](Instruction& in) { in.hbm_addr += 1 << 20; },        // elsewhere, maybe in bounds
        [&](Instruction& in) { in.lm_addr = 1ull << 40; },       // past local memory
        [&](Instruction& in) { in.rows = 0; },                   // a structural error
        [&](Instruction& in) { in.hbm_rs = int64_t{1} << 50; },  // an overflowing extent
    };
    int errors = 0;
    for (size_t i : at) {
      ASSERT_LT(i, base.code.size());
      for (size_t m = 0; m < mutations.size(); ++m) {
        Program p = base;
        mutations[m](p.code[i]);
        std::string want, got;
        try {
          check_program(p, a);
        } catch (const InputError& e) {
          want = e.what();
        }
        try {
          simulate(p, a, {});
        } catch (const InputError& e) {
          got = e.what();
        }
        if (!want.empty()) {
          EXPECT_EQ(got, want) << arch_name << " instruction " << i << " mutation " << m;
          ++errors;
        }
      }
    }
    EXPECT_GE(errors, 20) << arch_name;  // most mutations are errors
  }
}
