// Decoupled engines (issue 14): the ISU's issue window (isu.lookahead) lets an instruction of
// one engine go past a blocked instruction of another, never past one it conflicts with;
// isu.prefetch_depth bounds the sxe.gemms streaming before their activation; sxe.streams lets
// consecutive gemm streams overlap so the HBM latency is paid once; the opcode table is the
// one routing of opcodes to units.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "config/arch_config.h"
#include "isa/operands.h"
#include "isa/program.h"
#include "jobs/jobs.h"
#include "jobs/roofline.h"
#include "simulator.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
ArchConfig arch(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml", sets);
}

// The trace events of instructions whose text starts with `prefix`, in issue order.
std::vector<TraceRecord> events(const SimResult& r, const std::string& prefix) {
  std::vector<TraceRecord> out;
  for (const auto& t : r.trace)
    if (t.text.rfind(prefix, 0) == 0) out.push_back(t);
  return out;
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

SimResult traced(const Program& p, const ArchConfig& a) {
  SimOptions o;
  o.record_trace = true;
  return simulate(p, a, o);
}

// A slow activation load (1024 single-element rows), a gemm that needs it, then a large
// independent weight-free DMA load.
const char* kBlockedGemm =
    ".program ooo\n.buffer x hbm:0x0 f32[1024, 64] input\n.buffer w hbm:0x40000 f16[256, 1024] weight\n"
    ".buffer y hbm:0x100000 f32[64, 1024] input\n.kernel 0 k\n"
    "dma.load f32 [1, 1024] lm:0x0 <- hbm:0x0 [0, 64]\n"
    "sxe.gemm f16 [1, 1024, 256] lm:0x1000 <- lm:0x0 [0, 1], hbm:0x40000 [1, 1024]\n"
    "dma.load f32 [16, 1024] lm:0x10000 <- hbm:0x100000 [1024, 1]\nhalt\n";
}  // namespace

// Out of order: the independent DMA issues past the sxe.gemm blocked on its activation
// (RAW on lm:0x0) and overlaps the slow load; in order it waits behind the gemm.
TEST(IsuWindow, IndependentDmaIssuesPastABlockedGemm) {
  Program p = parse_program(kBlockedGemm);
  SimResult in_order = traced(p, arch("lpu-small"));
  SimResult ooo = traced(p, arch("lpu-small", {"isu.lookahead=4"}));
  EXPECT_EQ(in_order.stats.isu_out_of_order_issues, 0u);
  EXPECT_EQ(ooo.stats.isu_out_of_order_issues, 1u);
  EXPECT_LT(ooo.stats.cycles, in_order.stats.cycles);
  auto slow = events(ooo, "dma.load f32 [1, 1024]"), big = events(ooo, "dma.load f32 [16, 1024]");
  auto gemm = events(ooo, "sxe.gemm");
  ASSERT_EQ(slow.size(), 1u);
  ASSERT_EQ(big.size(), 1u);
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_LT(big[0].start_us, slow[0].start_us + slow[0].dur_us) << "the big load overlaps the slow one";
  // The RAW across engines is kept: the gemm starts after its activation arrived.
  EXPECT_GE(gemm[0].start_us, slow[0].start_us + slow[0].dur_us);
  auto big_in_order = events(in_order, "dma.load f32 [16, 1024]");
  auto slow_in_order = events(in_order, "dma.load f32 [1, 1024]");
  EXPECT_GE(big_in_order[0].start_us, slow_in_order[0].start_us + slow_in_order[0].dur_us);
}

// Hazards against earlier *unissued* instructions hold too: a later DMA that overwrites what a
// blocked VXE op still has to read (WAR) waits for the op, however wide the window.
TEST(IsuWindow, WriteAfterReadPastABlockedInstructionIsNotReordered) {
  Program p = parse_program(
      ".program war\n.buffer x hbm:0x0 f32[1024, 64] input\n.buffer y hbm:0x100000 f32[1, 1024] input\n"
      ".kernel 0 k\n"
      "dma.load f32 [1, 1024] lm:0x0 <- hbm:0x0 [0, 64]\n"
      "vxe.exp [1, 1024] lm:0x2000 <- lm:0x0 [1024, 1]\n"
      "dma.load f32 [1, 1024] lm:0x0 <- hbm:0x100000 [1024, 1]\nhalt\n");
  SimResult r = traced(p, arch("lpu-small", {"isu.lookahead=16"}));
  auto exp = events(r, "vxe.exp");
  auto second = events(r, "dma.load f32 [1, 1024] lm:0x0 <- hbm:0x100000");
  ASSERT_EQ(exp.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_GE(second[0].start_us, exp[0].start_us + exp[0].dur_us);
}

// Functional results do not depend on the window: a decode step computes the same outputs
// in order and out of order (the scoreboard, not the order, keeps them right).
TEST(IsuWindow, FunctionalResultsMatchInOrderIssue) {
  WorkloadSpec w = resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/tiny-opt-decode.yaml");
  RunOutcome a = run_job(w, arch("lpu-small"), "greedy", true);
  RunOutcome b = run_job(w, arch("lpu-small", {"isu.lookahead=32", "sxe.streams=4"}), "greedy", true);
  ASSERT_FALSE(a.sim.outputs.empty());
  for (const auto& [name, t] : a.sim.outputs) {
    ASSERT_TRUE(b.sim.outputs.count(name)) << name;
    EXPECT_EQ(t.data, b.sim.outputs.at(name).data) << name;
  }
  EXPECT_GT(b.sim.stats.isu_out_of_order_issues, 0u);
  EXPECT_LE(b.sim.stats.cycles, a.sim.stats.cycles);
}

// isu.prefetch_depth bounds the gemms streaming before their activation is ready: four
// independent gemms wait on one slow load; with depth 1 only one starts before it arrives.
TEST(IsuWindow, PrefetchDepthBoundsEarlyWeightStreams) {
  std::string s =
      ".program pf\n.buffer x hbm:0x0 f32[1024, 64] input\n.buffer w hbm:0x40000 f16[4, 256, 1024] weight\n"
      ".kernel 0 k\ndma.load f32 [1, 1024] lm:0x0 <- hbm:0x0 [0, 64]\n";
  for (int g = 0; g < 4; ++g)
    s += strcat("sxe.gemm f16 [1, 1024, 256] lm:", hex(0x10000 + g * 0x1000),
                " <- lm:0x0 [0, 1], hbm:", hex(0x40000 + g * 0x80000), " [1, 1024]\n");
  Program p = parse_program(s + "halt\n");
  auto early = [&](int depth) {
    SimResult r = traced(p, arch("lpu-small", {"isu.weight_prefetch=true", "isu.lookahead=8", "sxe.streams=4",
                                               strcat("isu.prefetch_depth=", depth)}));
    auto load = events(r, "dma.load");
    int n = 0;
    for (const auto& g : events(r, "sxe.gemm"))
      if (g.start_us < load.at(0).start_us + load.at(0).dur_us) ++n;
    return n;
  };
  EXPECT_EQ(early(1), 1);
  EXPECT_EQ(early(2), 2);
  EXPECT_EQ(early(4), 4);
}

// sxe.streams: per-head gemms of decode attention (small, independent) pay the HBM latency
// once when their streams overlap, instead of once each.
TEST(SxeStreams, ConsecutiveGemmStreamsHideTheLatency) {
  std::string s = ".program heads\n.buffer k hbm:0x0 f16[32, 1024, 64] weight\n.kernel 0 k\n";
  for (int h = 0; h < 32; ++h)
    s += strcat("sxe.gemm f16 [1, 64, 1024] lm:", hex(0x1000 + h * 0x1000),
                " <- lm:0x0 [0, 1], hbm:", hex(static_cast<uint64_t>(h) * 1024 * 64 * 2), " [1, 64]\n");
  Program p = parse_program(s + "halt\n");
  ArchConfig one = arch("lpu-asic", {"sxe.streams=1"}), four = arch("lpu-asic", {"sxe.streams=4"});
  SimStats a = simulate(p, one, {}).stats, b = simulate(p, four, {}).stats;
  double roofline = 32.0 * 1024 * 64 * 2 / (one.hbm_bytes_per_cycle() * one.hbm.efficiency);
  EXPECT_LT(roofline / static_cast<double>(a.cycles), 0.5);   // 32 x (latency + drain)
  EXPECT_GT(roofline / static_cast<double>(b.cycles), 0.85);  // the latency paid about once
}

// Decode attention on lpu-asic (the preset has the decoupled ISU and SXE streams): the
// attention class of an OPT-1.3B layer at context 1040 reaches at least 60% of its roofline
// (63.2%; 23.4% with the in-order ISU and one stream: docs/rooflines.md).
TEST(SxeStreams, DecodeAttentionNearerItsRoofline) {
  WorkloadSpec w = resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/opt-1.3b-decode.yaml");
  w.layers = 1;
  w.context = 1040;
  auto attention = [&](const ArchConfig& a) {
    RunOutcome o = run_job(w, a, "greedy", false);
    for (const auto& c : roofline_by_class(o))
      if (c.op_class == "attention") return c.roofline_cycles / static_cast<double>(c.cycles);
    return 0.0;
  };
  double before = attention(arch("lpu-asic", {"sxe.streams=1", "isu.lookahead=1"}));
  double after = attention(arch("lpu-asic"));
  EXPECT_LT(before, 0.3) << "after " << after;
  EXPECT_GT(after, 0.6) << "before " << before;
}

// One table routes every opcode: names round-trip, codes are distinct, and each opcode has
// its unit.
TEST(OpcodeTable, NamesCodesAndUnits) {
  std::set<int> codes;
  for (size_t i = 0; i < kOpcodeCount; ++i) {
    Opcode op = static_cast<Opcode>(i);
    const OpcodeInfo& info = opcode_info(op);
    EXPECT_EQ(info.op, op);
    EXPECT_TRUE(codes.insert(info.code).second) << info.name;
    EXPECT_EQ(opcode_by_code(info.code), &info);
    if (op != Opcode::VxeOp && op != Opcode::VxeReduce) {
      EXPECT_EQ(opcode_by_name(info.name), &info) << info.name;
    }
  }
  EXPECT_EQ(opcode_unit(Opcode::SxeGemm), Unit::Sxe);
  EXPECT_EQ(opcode_unit(Opcode::DmaGather), Unit::Dma);
  EXPECT_EQ(opcode_unit(Opcode::VxeMov), Unit::Vxe);
  EXPECT_EQ(opcode_unit(Opcode::SyncWait), Unit::Isu);
  EXPECT_EQ(opcode_by_name("vxe.op"), nullptr);
  EXPECT_EQ(opcode_by_code(255), nullptr);
}

// The work an instruction does comes from the table's WORK and ARITH columns, for the engines'
// statistics (MACs, element operations, bytes) and for rooflines (FLOPs, VXE operations).
TEST(OpcodeTable, WorkAndArithmetic) {
  Program p = parse_program(
      ".program w\n"
      "  sxe.gemm f16 [2, 3, 4] lm:0x0 <- lm:0x100 [3, 1], hbm:0x0 [4, 1]\n"
      "  vxe.add [2, 4] lm:0x0 <- lm:0x100 [4, 1], #1\n"
      "  vxe.rsum [2, 4] lm:0x0 <- lm:0x100 [4, 1]\n"
      "  vxe.mov [2, 4] lm:0x0 <- lm:0x100 [4, 1]\n"
      "  dma.load f16 [2, 4] lm:0x0 <- hbm:0x0 [4, 1]\n"
      "  halt\n",
      "w.s");
  const double work[] = {24, 8, 8, 8, 16, 0};
  const uint64_t flops[] = {48, 0, 0, 0, 0, 0}, vxe_ops[] = {0, 8, 8, 0, 0, 0};
  for (size_t i = 0; i < p.code.size(); ++i) {
    EXPECT_EQ(instruction_work(p.code[i]), work[i]) << print_instruction(p.code[i]);
    EXPECT_EQ(instruction_arith(p.code[i]).sxe_flops, flops[i]) << print_instruction(p.code[i]);
    EXPECT_EQ(instruction_arith(p.code[i]).vxe_ops, vxe_ops[i]) << print_instruction(p.code[i]);
  }
  // The operand roles in message order: a gemm writes its destination, reads A and the weights.
  std::vector<std::string> roles;
  for_each_operand(p.code[0], [&](const OperandAccess& a) { roles.push_back(a.role); });
  EXPECT_EQ(roles, (std::vector<std::string>{"destination", "activation A", "weights B"}));
}

// The new keys are validated on load.
TEST(IsuWindow, ConfigKeysAreValidated) {
  EXPECT_THROW(arch("lpu-small", {"isu.lookahead=0"}), InputError);
  EXPECT_THROW(arch("lpu-small", {"isu.prefetch_depth=0"}), InputError);
  EXPECT_THROW(arch("lpu-small", {"sxe.streams=0"}), InputError);
  EXPECT_EQ(arch("lpu-small", {"isu.lookahead=8"}).isu.lookahead, 8);
}

// A destination row stride (lm_rs) is in the scoreboard's footprint: an sxe.gemm reading the
// last row of the right half of a [64, 512] register waits for the vxe.mov that fills that
// half (a dense [64, 256] destination would end 0xfc00 bytes before that row), and one reading
// elsewhere does not.
TEST(IsuWindow, AReaderOfAColumnWindowWaitsForItsWriter) {
  auto program = [](const std::string& a) {
    return parse_program(
        ".program win\n.buffer w hbm:0x0 f16[256, 64] weight\n.kernel 0 k\n"
        "vxe.mov [64, 256] lm:0x0 [512, 1] <- lm:0x20000 [256, 1]\n"
        "vxe.mov [64, 256] lm:0x400 [512, 1] <- lm:0x20000 [256, 1]\n"
        "sxe.gemm f16 [1, 256, 64] lm:0x38000 <- lm:" +
        a + " [0, 1], hbm:0x0 [64, 1]\nhalt\n");
  };
  auto gemm_start_after_writer = [&](const std::string& a) {
    SimResult r = traced(program(a), arch("lpu-small"));
    auto writer = events(r, "vxe.mov [64, 256] lm:0x400"), gemm = events(r, "sxe.gemm");
    EXPECT_EQ(writer.size(), 1u);
    EXPECT_EQ(gemm.size(), 1u);
    return gemm.at(0).start_us - (writer.at(0).start_us + writer.at(0).dur_us);
  };
  EXPECT_GE(gemm_start_after_writer("0x1fc00"), 0.0);  // (63 * 512 + 256) * 4: the window's last row
  EXPECT_LT(gemm_start_after_writer("0x30000"), 0.0);  // no overlap: it goes at once
}
