// First-order behaviour of the SystemC model against closed-form expectations.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "config/arch_config.h"
#include "isa/encoding.h"
#include "isa/program.h"
#include "model/attribution.h"
#include "simulator.h"
#include "support/error.h"

using namespace lpu;

namespace {

ArchConfig arch(const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml", sets);
}

// `n` DMA loads of [rows, 1024] f32 from consecutive HBM rows into two alternating LMU regions.
Program dma_stream(int n, int rows) {
  std::string s = ".program dma_stream\n";
  s += strcat(".buffer src hbm:0x0 f32[", n * rows, ", 1024] input\n.kernel 0 stream\n");
  for (int i = 0; i < n; ++i) {
    uint64_t lm = (i % 2) * static_cast<uint64_t>(rows) * 4096;
    uint64_t hbm = static_cast<uint64_t>(i) * rows * 4096;
    char buf[160];
    std::snprintf(buf, sizeof buf, "dma.load f32 [%d, 1024] lm:0x%llx <- hbm:0x%llx [1024, 1]\n", rows,
                  static_cast<unsigned long long>(lm), static_cast<unsigned long long>(hbm));
    s += buf;
  }
  return parse_program(s + "halt\n");
}

}  // namespace

// A long DMA stream reaches bandwidth x efficiency within 2%.
TEST(SimModel, LargeDmaReachesConfiguredBandwidth) {
  ArchConfig a = arch();
  Program p = dma_stream(64, 16);  // 64 x 64 KiB = 4 MiB
  SimStats s = simulate(p, a, {}).stats;
  double bytes = 64.0 * 16 * 4096;
  double expected_cycles = bytes / (a.hbm_bytes_per_cycle() * a.hbm.efficiency);
  EXPECT_EQ(s.hbm_read_bytes, static_cast<uint64_t>(bytes));
  EXPECT_NEAR(static_cast<double>(s.cycles) / expected_cycles, 1.0, 0.02)
      << "cycles " << s.cycles << " expected " << expected_cycles;
}

// Memory-bound: halving hbm.bandwidth_gbps nearly doubles the time.
TEST(SimModel, HalvingBandwidthNearlyDoublesAMemoryBoundStream) {
  Program p = dma_stream(64, 16);
  double full = static_cast<double>(simulate(p, arch(), {}).stats.cycles);
  double half = static_cast<double>(simulate(p, arch({"hbm.bandwidth_gbps=128"}), {}).stats.cycles);
  EXPECT_GT(half / full, 1.9);
  EXPECT_LT(half / full, 2.05);
}

// Short rows waste burst bandwidth: a column-strided load moves whole bursts per element.
TEST(SimModel, StridedAccessesPayForWholeBursts) {
  Program p = parse_program(
      ".program strided\n.buffer src hbm:0x0 f32[256, 256] input\n.kernel 0 k\n"
      "dma.load f32 [1, 256] lm:0x0 <- hbm:0x0 [0, 256]\nhalt\n");
  SimStats s = simulate(p, arch(), {}).stats;
  EXPECT_EQ(s.hbm_read_bytes, 256u * 4);
  EXPECT_EQ(s.hbm_burst_bytes, 256u * 64);  // one 64-byte burst per 4-byte element
}

// A VXE op takes latency + ceil(elements / lanes) * ii cycles (issue overlaps it).
TEST(SimModel, VxeOpTakesConfiguredLatencyAndThroughput) {
  ArchConfig a = arch({"vxe.lanes=16", "vxe.ops.exp.latency=20", "vxe.ops.exp.ii=4"});
  Program p = parse_program(".program v\n.kernel 0 k\nvxe.exp [4, 256] lm:0x0 <- lm:0x4000 [256, 1]\nhalt\n");
  SimStats s = simulate(p, a, {}).stats;
  uint64_t expected = 20 + (4 * 256 / 16) * 4;
  EXPECT_EQ(s.cycles, expected);
  // An add is faster than an exp on the same tile.
  Program q = parse_program(".program v\n.kernel 0 k\nvxe.add [4, 256] lm:0x0 <- lm:0x4000 [256, 1], #1.0\nhalt\n");
  EXPECT_LT(simulate(q, a, {}).stats.cycles, s.cycles);
}

// LMU port bandwidth bounds a wide cheap op: 16 KiB read + 16 KiB written at 64 B/cycle.
TEST(SimModel, LmuPortBoundsWideOps) {
  ArchConfig a = arch({"vxe.lanes=1024", "lmu.bytes_per_cycle=64", "vxe.ops.add.latency=0"});
  Program p = parse_program(".program v\n.kernel 0 k\nvxe.add [4, 1024] lm:0x0 <- lm:0x4000 [1024, 1], #1.0\nhalt\n");
  EXPECT_EQ(simulate(p, a, {}).stats.cycles, 2u * 16384 / 64);
}

// The scoreboard orders a load before the vector op that reads it, and lets independent
// work overlap: two independent loads + op chains take less than their sum.
TEST(SimModel, ScoreboardOrdersDependentWorkAndOverlapsIndependentWork) {
  ArchConfig a = arch();
  Program dep = parse_program(
      ".program d\n.buffer src hbm:0x0 f32[64, 1024] input\n.kernel 0 k\n"
      "dma.load f32 [16, 1024] lm:0x0 <- hbm:0x0 [1024, 1]\n"
      "vxe.exp [16, 1024] lm:0x10000 <- lm:0x0 [1024, 1]\nhalt\n");
  SimStats d = simulate(dep, a, {}).stats;
  Program load_only = parse_program(
      ".program d\n.buffer src hbm:0x0 f32[64, 1024] input\n.kernel 0 k\n"
      "dma.load f32 [16, 1024] lm:0x0 <- hbm:0x0 [1024, 1]\nhalt\n");
  Program op_only = parse_program(".program d\n.kernel 0 k\nvxe.exp [16, 1024] lm:0x10000 <- lm:0x0 [1024, 1]\nhalt\n");
  uint64_t l = simulate(load_only, a, {}).stats.cycles, o = simulate(op_only, a, {}).stats.cycles;
  EXPECT_GE(d.cycles + 1, l + o - 1);  // serialised by the RAW hazard
  // Independent: op on other data overlaps the load.
  Program indep = parse_program(
      ".program d\n.buffer src hbm:0x0 f32[64, 1024] input\n.kernel 0 k\n"
      "dma.load f32 [16, 1024] lm:0x0 <- hbm:0x0 [1024, 1]\n"
      "vxe.exp [16, 1024] lm:0x10000 <- lm:0x20000 [1024, 1]\nhalt\n");
  EXPECT_LT(simulate(indep, a, {}).stats.cycles, l + o - 10);
}

TEST(SimModel, WeightsLargerThanHbmSayHowManyDevices) {
  Program p = parse_program(".program big\n.buffer w hbm:0x0 f16[4, 1073741824] weight\nhalt\n");
  try {
    simulate(p, arch(), {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("would need 2 devices"), std::string::npos) << e.what();
  }
}

TEST(SimModel, WatchdogStopsRunawayPrograms) {
  ArchConfig a = arch({"sim.max_us=0.01"});
  EXPECT_THROW(simulate(dma_stream(64, 16), a, {}), SimulationStuck);
}

TEST(SimModel, OutOfRangeLocalMemoryIsAnInputError) {
  Program p = parse_program(".program v\n.kernel 0 k\nvxe.exp [4, 256] lm:0xfff000 <- lm:0x0 [256, 1]\nhalt\n");
  EXPECT_THROW(simulate(p, arch(), {}), InputError);
}

// One slice per instruction on its engine's track, and the busy window of every HBM channel
// group each transfer used on that group's track.
TEST(SimModel, TraceHasOneSlicePerInstructionAndHbmChannelTracks) {
  SimOptions o;
  o.record_trace = true;
  SimResult r = simulate(dma_stream(4, 4), arch(), o);  // 4 loads of 16 KiB: all 8 channels each
  size_t dma = 0, hbm = 0;
  std::set<std::string> tracks;
  for (const auto& t : r.trace) {
    tracks.insert(t.engine);
    if (t.engine == "dma") ++dma;
    if (t.engine.rfind("hbm ch", 0) == 0) ++hbm;
  }
  EXPECT_EQ(dma, 4u);
  EXPECT_EQ(hbm, 4u * 8);
  EXPECT_EQ(tracks.size(), 9u);
  // In the trace-event file: every slice, a named process, at least one named track per
  // engine (one per in-flight slot), and no two slices overlapping on one track.
  auto j = trace_to_json(r.trace);
  size_t slices = 0, names = 0;
  bool process = false;
  std::map<int, std::vector<std::pair<double, double>>> by_tid;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++slices;
      by_tid[e["tid"].get<int>()].push_back({e["ts"].get<double>(), e["dur"].get<double>()});
    } else if (e["name"] == "thread_name") {
      ++names;
    } else if (e["name"] == "process_name") {
      process = true;
    }
  }
  EXPECT_EQ(slices, r.trace.size());
  EXPECT_TRUE(process);
  EXPECT_GE(names, tracks.size());
  for (auto& [tid, spans] : by_tid) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first + 1e-6) << "track " << tid;
  }
}

// A GEMV of K x N takes the cycles implied by mac_trees, lanes and HBM bandwidth (within 5%):
//   compute-bound: ceil(N / trees) * ceil(K / lanes) beats per tree (+ pipeline fill);
//   memory-bound:  K * N * 2 bytes / (bandwidth x efficiency).
TEST(SimModel, GemvMatchesClosedFormWithinFivePercent) {
  struct Case {
    int64_t K, N;
    const char* bw;
  };
  for (const Case& c : {Case{4096, 4096, "256"}, Case{2048, 8192, "256"}, Case{4096, 4096, "4096"},
                        Case{1024, 16384, "4096"}, Case{8192, 1024, "64"}}) {
    ArchConfig a = arch({std::string("hbm.bandwidth_gbps=") + c.bw, "hbm.capacity_gib=4"});
    std::string text =
        strcat(".program g\n.buffer w hbm:0x0 f16[", c.N, ", ", c.K, "] weight\n.kernel 0 k\n", "sxe.gemm f16 [1, ",
               c.K, ", ", c.N, "] lm:0x0 <- lm:0x0 [0, 1], hbm:0x0 [1, ", c.K, "]\nhalt\n");
    Program p = parse_program(text);
    double cycles = static_cast<double>(simulate(p, a, {}).stats.cycles);
    double compute =
        std::ceil(static_cast<double>(c.N) / a.sxe.mac_trees) * std::ceil(static_cast<double>(c.K) / a.sxe.lanes);
    double memory = static_cast<double>(c.K * c.N * 2) / (a.hbm_bytes_per_cycle() * a.hbm.efficiency);
    double expected = std::max(compute, memory);
    EXPECT_NEAR(cycles / expected, 1.0, 0.05)
        << c.K << "x" << c.N << " at " << c.bw << " GB/s: " << cycles << " vs " << expected;
  }
}

// Not the model's formula again but its behaviour: a GEMV bound by the MAC trees halves when
// the trees double and ignores bandwidth; one bound by HBM halves when bandwidth doubles and
// ignores the trees (the question behind "--set sxe.mac_trees=64 changes no cycle" on a
// memory-bound decode step).
TEST(SimModel, GemvScalesWithTheResourceThatBindsIt) {
  auto cycles = [](int64_t K, int64_t N, std::vector<std::string> sets) {
    sets.push_back("hbm.capacity_gib=4");
    ArchConfig a = arch(sets);
    std::string text =
        strcat(".program g\n.buffer w hbm:0x0 f16[", N, ", ", K, "] weight\n.kernel 0 k\n", "sxe.gemm f16 [1, ", K,
               ", ", N, "] lm:0x0 <- lm:0x0 [0, 1], hbm:0x0 [1, ", K, "]\nhalt\n");
    return static_cast<double>(simulate(parse_program(text), a, {}).stats.cycles);
  };
  const int64_t K = 4096, N = 4096;
  // Compute-bound: plenty of bandwidth for few trees.
  double c8 = cycles(K, N, {"hbm.bandwidth_gbps=4096", "sxe.mac_trees=8"});
  double c16 = cycles(K, N, {"hbm.bandwidth_gbps=4096", "sxe.mac_trees=16"});
  double c16_bw = cycles(K, N, {"hbm.bandwidth_gbps=8192", "sxe.mac_trees=16"});
  EXPECT_NEAR(c8 / c16, 2.0, 0.1) << c8 << " vs " << c16;
  EXPECT_NEAR(c16_bw / c16, 1.0, 0.02) << c16_bw << " vs " << c16;
  // Memory-bound: narrow HBM, many trees.
  double m64 = cycles(K, N, {"hbm.bandwidth_gbps=64", "sxe.mac_trees=32"});
  double m128 = cycles(K, N, {"hbm.bandwidth_gbps=128", "sxe.mac_trees=32"});
  double m64_trees = cycles(K, N, {"hbm.bandwidth_gbps=64", "sxe.mac_trees=64"});
  EXPECT_NEAR(m64 / m128, 2.0, 0.1) << m64 << " vs " << m128;
  EXPECT_NEAR(m64_trees / m64, 1.0, 0.02) << m64_trees << " vs " << m64;
}

// Tokens: a signal is a barrier after earlier work; a wait nobody can satisfy is reported
// (which device waits for which token), not left to run into the time limit.
TEST(SimModel, SignalWaitsForEarlierWorkAndWaitConsumesIt) {
  Program p = parse_program(
      ".program s\n.buffer src hbm:0x0 f32[16, 1024] input\n.kernel 0 k\n"
      "dma.load f32 [16, 1024] lm:0x0 <- hbm:0x0 [1024, 1]\n"
      "sync.signal 7\nsync.wait 7\nvxe.exp [1, 16] lm:0x20000 <- lm:0x30000 [16, 1]\nhalt\n");
  Program q = parse_program(
      ".program s\n.buffer src hbm:0x0 f32[16, 1024] input\n.kernel 0 k\n"
      "dma.load f32 [16, 1024] lm:0x0 <- hbm:0x0 [1024, 1]\n"
      "vxe.exp [1, 16] lm:0x20000 <- lm:0x30000 [16, 1]\nhalt\n");
  uint64_t with = simulate(p, arch(), {}).stats.cycles, without = simulate(q, arch(), {}).stats.cycles;
  EXPECT_GT(with, without);  // the exp no longer overlaps the load
}

TEST(SimModel, DeadlockIsReportedWithWhoWaitsForWhat) {
  Program p = parse_program(".program d\n.kernel 0 k\nsync.signal 1\nsync.wait 1\nsync.wait 2\nhalt\n", "d.s");
  try {
    simulate(p, arch(), {});
    FAIL();
  } catch (const SimulationStuck& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("device 0 isu waits for token 2"), std::string::npos) << m;
    EXPECT_NE(m.find("line 5"), std::string::npos) << m;
  }
  // Two devices: device 1 halts at once, so device 0's wait can never be satisfied either.
  EXPECT_THROW(simulate(p, arch({"devices=2"}), {}), SimulationStuck);
  // A token sent to another device crosses the ESL; a target beyond the config is bad input.
  Program q = parse_program(".program d\n.kernel 0 k\nsync.signal 1 dev:1\nhalt\n");
  EXPECT_NO_THROW(simulate(q, arch({"devices=2"}), {}));
  EXPECT_THROW(simulate(q, arch(), {}), InputError);
}

// Device to device: device 0 computes a tile and sends it over the ESL with a token; device 1
// waits for the token and uses the tile. Device 1 finishes after the send plus the link latency
// and transfer; without the sender it can never finish (reported, not hung).
TEST(SimModel, EslSendDeliversATileAndATokenToAnotherDevice) {
  Program tx = parse_program(
      ".program tx\n.kernel 0 k\nvxe.add [4, 256] lm:0x0 <- lm:0x10000 [256, 1], #1.0\n"
      "esl.send [4, 256] dev:1 lm:0x2000 <- lm:0x0 [256, 1] token:3\nhalt\n");
  Program rx = parse_program(
      ".program rx\n.kernel 0 k\nsync.wait 3\nvxe.mul [4, 256] lm:0x8000 <- lm:0x2000 [256, 1], #2.0\nhalt\n");
  ArchConfig a = arch({"devices=2", "esl.latency_ns=500", "esl.bandwidth_gbps=64"});
  SimOptions o;
  o.other_devices = {&rx};
  SimStats s = simulate(tx, a, o).stats;
  ASSERT_EQ(s.device_cycles.size(), 2u);
  // Device 0 halts when its link has sent the 4 KiB tile (64 cycles at 64 GB/s, 1 GHz); the tile
  // and token land 500 ns later; device 1's multiply follows.
  EXPECT_GE(s.device_cycles[0], 64u);
  EXPECT_GE(s.device_cycles[1], s.device_cycles[0] + 500);
  EXPECT_LT(s.device_cycles[1], s.device_cycles[0] + 500 + 100);
  EXPECT_THROW(simulate(rx, a, {}), SimulationStuck);  // device 1 idle: nobody sends token 3
  // Text and binary forms carry loops, steps, tokens and sends exactly.
  Program p = parse_program(
      ".program all\n.buffer b hbm:0x0 f32[64, 64] input\n.kernel 0 k\nloop 4\n"
      "dma.load f32 [16, 64] lm:0x0 <- hbm:0x0 [64, 1] step hbm:+0x1000 lm:+0x40\nendloop\n"
      "sync.signal 2 dev:1\nsync.wait 2\nesl.send [1, 64] dev:1 lm:0x0 <- lm:0x0 [64, 1] token:2\nhalt\n");
  Program q = parse_program(print_program(p));
  Program r = decode_program(encode_program(p));
  ASSERT_EQ(q.code.size(), p.code.size());
  ASSERT_EQ(r.code.size(), p.code.size());
  for (size_t i = 0; i < p.code.size(); ++i) {
    EXPECT_TRUE(q.code[i].same_as(p.code[i])) << print_instruction(p.code[i]);
    EXPECT_TRUE(r.code[i].same_as(p.code[i])) << print_instruction(p.code[i]);
  }
}

// Chaining: with isu.chaining a VXE op consuming an sxe.gemm's output starts on its first
// results, overlapping the gemm; it still ends after the gemm's last result plus its latency.
TEST(SimModel, ChainingOverlapsAVxeConsumerWithItsGemm) {
  Program p = parse_program(
      ".program c\n.buffer w hbm:0x0 f16[4096, 1024] weight\n.kernel 0 k\n"
      "sxe.gemm f16 [1, 1024, 4096] lm:0x10000 <- lm:0x0 [0, 1], hbm:0x0 [1, 1024]\n"
      "vxe.exp [1, 4096] lm:0x20000 <- lm:0x10000 [4096, 1]\nhalt\n");
  ArchConfig off = arch({"vxe.lanes=4"}), on = arch({"vxe.lanes=4", "isu.chaining=true"});
  uint64_t c_off = simulate(p, off, {}).stats.cycles, c_on = simulate(p, on, {}).stats.cycles;
  Program gemm_only = parse_program(
      ".program c\n.buffer w hbm:0x0 f16[4096, 1024] weight\n.kernel 0 k\n"
      "sxe.gemm f16 [1, 1024, 4096] lm:0x10000 <- lm:0x0 [0, 1], hbm:0x0 [1, 1024]\nhalt\n");
  uint64_t g = simulate(gemm_only, on, {}).stats.cycles;
  EXPECT_LT(c_on, c_off);
  EXPECT_GE(c_on, g + static_cast<uint64_t>(on.vxe.timing("exp").latency));
}

// Weight prefetch: with isu.weight_prefetch an sxe.gemm waiting for its activation (here a
// slow strided DMA) streams its weights meanwhile; the MAC work still follows the activation.
TEST(SimModel, WeightPrefetchOverlapsTheStreamWithTheActivationsProducer) {
  Program p = parse_program(
      ".program w\n.buffer x hbm:0x0 f32[1024, 64] input\n.buffer w hbm:0x40000 f16[4096, 1024] weight\n"
      ".kernel 0 k\ndma.load f32 [1, 1024] lm:0x0 <- hbm:0x0 [0, 64]\n"
      "sxe.gemm f16 [1, 1024, 4096] lm:0x10000 <- lm:0x0 [0, 1], hbm:0x40000 [1, 1024]\nhalt\n");
  uint64_t off = simulate(p, arch(), {}).stats.cycles;
  uint64_t on = simulate(p, arch({"isu.weight_prefetch=true"}), {}).stats.cycles;
  Program dma_only = parse_program(
      ".program w\n.buffer x hbm:0x0 f32[1024, 64] input\n.kernel 0 k\ndma.load f32 [1, 1024] lm:0x0 <- hbm:0x0 [0, "
      "64]\nhalt\n");
  uint64_t d = simulate(dma_only, arch(), {}).stats.cycles;
  EXPECT_LT(on, off);
  EXPECT_GT(on, d);  // the gemm's MAC work follows the activation
}

namespace {
std::string sim_error(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    simulate(parse_program(text, "t.s"), arch(sets), {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
const char* kHead = ".program b\n.buffer x hbm:0x0 f32[4, 8] input\n.kernel 0 k\n";
}  // namespace

// Every operand's range over all its loop iterations is checked against the memories of the
// config before simulating, naming the line (the engines see only expanded instances).
TEST(SimModel, AddressesAreCheckedAgainstTheMemoriesWithTheirLine) {
  std::string m = sim_error(std::string(kHead) + "dma.load f32 [4, 8] lm:0x0 <- hbm:0x100000000 [8, 1]\nhalt\n");
  EXPECT_NE(m.find("t.s:4: dma.load source touches HBM [0x100000000, 0x100000080), beyond its capacity of 4.00 GiB"),
            std::string::npos)
      << m;
  m = sim_error(std::string(kHead) + "vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, -1]\nhalt\n");
  EXPECT_NE(m.find("t.s:4: vxe.relu source reaches 28 bytes below address 0 of local memory (LMU)"), std::string::npos)
      << m;
  m = sim_error(std::string(kHead) + "vxe.relu [4, 8] lm:0x400 <- lm:0x0 [8, 1]\nhalt\n", {"lmu.capacity_kib=1"});
  EXPECT_NE(m.find("t.s:4: vxe.relu destination touches local memory (LMU) [0x400, 0x480)"), std::string::npos) << m;
  m = sim_error(std::string(kHead) + "dma.load f32 [4, 8] lm:0x0 <- hbm:0x0 [9223372036854775807, 1]\nhalt\n");
  EXPECT_NE(m.find("t.s:4: dma.load source: its HBM addresses overflow 64 bits"), std::string::npos) << m;
  // The last of 9 iterations of a step of 32 KiB ends beyond a 256 KiB local memory.
  m = sim_error(std::string(kHead) +
                "loop 9\nvxe.relu [4, 8] lm:0x0 <- lm:0x0 [8, 1] step lm:+0x8000\nendloop\nhalt\n");
  EXPECT_NE(m.find("t.s:5: vxe.relu destination touches local memory (LMU) [0x0, 0x40080) over 9 loop iterations"),
            std::string::npos)
      << m;
  EXPECT_EQ(sim_error(std::string(kHead) +
                      "loop 8\nvxe.relu [4, 8] lm:0x0 <- lm:0x0 [8, 1] step lm:+0x8000\nendloop\nhalt\n"),
            "");
}

TEST(SimModel, ProgramsBuiltInMemoryAreCheckedToo) {
  Program p = parse_program(std::string(kHead) + "vxe.relu [4, 8] lm:0x100 <- lm:0x0 [8, 1]\nhalt\n");
  p.source.clear();
  p.code[0].lm_addr = 1 << 30;
  try {
    simulate(p, arch(), {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("program b: instruction 0: vxe.relu destination"), std::string::npos)
        << e.what();
  }
  p.code[0].lm_addr = 0x100;
  p.code[0].cols = 0;
  EXPECT_THROW(simulate(p, arch(), {}), InputError);
}

// Loops whose bodies take no simulated time never reach sim.max_us: the wall-clock limit
// stops them (9e7 fetches: under the bound program_check refuses).
TEST(SimModel, WallClockLimitStopsLoopsThatSpin) {
  Program p = parse_program(".program spin\nloop 10000\nloop 9000\nendloop\nendloop\nhalt\n");
  try {
    simulate(p, arch({"sim.max_wall_s=0.05"}), {});
    FAIL();
  } catch (const SimulationStuck& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("wall-clock limit sim.max_wall_s = 0.05 s"), std::string::npos) << m;
    EXPECT_NE(m.find("fetches 90020002 instructions"), std::string::npos) << m;
  }
}

// Past 10^8 fetches a program is refused before simulating: the watchdog bounds a run's time,
// not the memory its per-kernel logs take per fetched instruction.
TEST(SimModel, ProgramsFetchingPastTheBoundAreRefused) {
  Program p = parse_program(".program spin\nloop 1000000\nloop 1000000\nendloop\nendloop\nhalt\n");
  try {
    simulate(p, arch(), {});
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("fetches 1000002000002 instructions with its loops expanded"), std::string::npos) << m;
    EXPECT_NE(m.find("<asm>:3: "), std::string::npos) << m;  // the inner loop passes the bound
  }
}

// A run's SystemC threads end with it: their stacks are unmapped, so thousands of runs in one
// process (a long generation) do not pile up memory mappings. Left waiting at sc_stop, every
// run kept ~28 mappings: a 4000-step generation hit vm.max_map_count (65530) and SystemC warned.
TEST(SimModel, RepeatedRunsKeepNoThreadStacks) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "ASan holds freed stacks in its quarantine, still mapped";
#endif
#endif
  auto mappings = [] {
    std::ifstream f("/proc/self/maps");
    size_t n = 0;
    for (std::string line; std::getline(f, line);) ++n;
    return n;
  };
  const Program p = dma_stream(4, 16);
  ArchConfig two = arch({"devices=2"});
  SimOptions so;
  so.other_devices = {&p};
  so.mirror_symmetric_devices = false;  // two devices' threads
  simulate(p, two, so);
  const size_t before = mappings();
  for (int i = 0; i < 200; ++i) simulate(p, two, so);
  EXPECT_LT(mappings(), before + 100) << "200 runs of 2 devices";
}

// A destination row stride (lm_rs): two vxe.mov fill the halves of one [4, 8] register, a
// dma.store writes it whole; a vxe.add into the right half of a loaded register leaves its
// left half as loaded. Functional, against values written out by hand.
TEST(SimModel, ColumnWindowsFillAWiderRegister) {
  Program p = parse_program(
      ".program cat\n.buffer a hbm:0x0 f32[4, 4] input\n.buffer b hbm:0x40 f32[4, 4] input\n"
      ".buffer c hbm:0x80 f32[4, 8] input\n.buffer y hbm:0x100 f32[4, 8] output\n"
      ".buffer z hbm:0x180 f32[4, 8] output\n.kernel 0 k\n"
      "dma.load f32 [4, 4] lm:0x0 <- hbm:0x0 [4, 1]\n"
      "dma.load f32 [4, 4] lm:0x40 <- hbm:0x40 [4, 1]\n"
      "vxe.mov [4, 4] lm:0x100 [8, 1] <- lm:0x0 [4, 1]\n"
      "vxe.mov [4, 4] lm:0x110 [8, 1] <- lm:0x40 [4, 1]\n"
      "dma.store f32 [4, 8] hbm:0x100 [8, 1] <- lm:0x100\n"
      "dma.load f32 [4, 8] lm:0x200 <- hbm:0x80 [8, 1]\n"
      "vxe.add [4, 4] lm:0x210 [8, 1] <- lm:0x0 [4, 1], lm:0x40 [4, 1]\n"
      "dma.store f32 [4, 8] hbm:0x180 [8, 1] <- lm:0x200\nhalt\n");
  TensorMap in;
  for (const char* n : {"a", "b", "c"}) in[n] = Tensor(p.find_buffer(n)->type);
  for (size_t k = 0; k < 16; ++k) {
    in["a"].data[k] = static_cast<float>(k + 1);
    in["b"].data[k] = static_cast<float>(100 + k);
  }
  for (size_t k = 0; k < 32; ++k) in["c"].data[k] = -static_cast<float>(k + 1);
  SimOptions o;
  o.functional = true;
  for (const Program& q : {p, decode_program(encode_program(p))}) {
    SimResult r = simulate(q, arch(), o, &in);
    std::vector<float> y, z;
    for (size_t row = 0; row < 4; ++row)
      for (size_t col = 0; col < 8; ++col) {
        const size_t k = row * 4 + col % 4;
        y.push_back(col < 4 ? in["a"].data[k] : in["b"].data[k]);
        z.push_back(col < 4 ? in["c"].data[row * 8 + col] : in["a"].data[k] + in["b"].data[k]);
      }
    EXPECT_EQ(r.outputs.at("y").data, y);
    EXPECT_EQ(r.outputs.at("z").data, z);
  }
}

// The memory bounds check walks a strided destination to its last element.
TEST(SimModel, AStridedDestinationIsCheckedToItsLastElement) {
  std::string m = sim_error(std::string(kHead) + "vxe.mov [4, 8] lm:0x0 [1024, 1] <- lm:0x0 [8, 1]\nhalt\n",
                            {"lmu.capacity_kib=8"});
  EXPECT_NE(m.find("t.s:4: vxe.mov destination touches local memory (LMU) [0x0, 0x3020)"), std::string::npos) << m;
  EXPECT_EQ(sim_error(std::string(kHead) + "vxe.mov [4, 8] lm:0x0 [1024, 1] <- lm:0x0 [8, 1]\nhalt\n",
                      {"lmu.capacity_kib=16"}),
            "");
  // A program built in memory: lm_rs where no form writes it is refused, naming the instruction.
  Program p = parse_program(std::string(kHead) + "dma.load f32 [4, 8] lm:0x0 <- hbm:0x0 [8, 1]\nhalt\n");
  p.source.clear();
  p.code[0].lm_rs = 16;
  try {
    simulate(p, arch(), {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "program b: instruction 0: dma.load: only vxe.<op> and vxe.mov take a destination row stride"),
              std::string::npos)
        << e.what();
  }
}

// Per-kernel attribution (model/attribution.h) against its definition, picosecond by
// picosecond: each instant goes to the highest-priority category whose interval holds it,
// else to Other; the parts sum exactly to the span. Logs of whole-ps intervals (as the model
// logs), in shuffled order, overlapping within and across categories, some outside the span.
TEST(SimModel, AttributionGivesEachInstantToTheFirstActiveCategory) {
  std::mt19937_64 rng(28);
  for (int round = 0; round < 200; ++round) {
    std::vector<lpu::sim::SpanInterval> log;
    const int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      const double a = static_cast<double>(rng() % 400), len = static_cast<double>(rng() % 40);
      log.push_back({a, a + len, static_cast<lpu::sim::Span>(rng() % lpu::sim::kSpanKinds)});
    }
    const double lo = static_cast<double>(rng() % 100), hi = lo + static_cast<double>(rng() % 300);
    std::array<double, lpu::sim::kSpanKinds> want{};
    for (double t = lo; t < hi; t += 1) {
      size_t k = lpu::sim::kSpanKinds - 1;
      for (const auto& iv : log)
        if (iv.lo <= t && t < iv.hi) k = std::min(k, static_cast<size_t>(iv.what));
      want[k] += 1;
    }
    EXPECT_EQ(lpu::sim::attribute_span(log, lo, hi), want) << "round " << round;
  }
}
