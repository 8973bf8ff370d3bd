// Energy (sim/energy.h, docs/energy.md): counted events x the config's energies, plus static
// power x time. Closed forms computed here from the config and the program's shape (not from
// the simulator's counters), the config checks, the JSON fields, determinism, and that the
// counting changes no cycle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "generate/generate.h"
#include "isa/program.h"
#include "jobs/jobs.h"
#include "simulator.h"
#include "support/error.h"
#include "test_util.h"

using namespace lpu;
using ::testing::HasSubstr;

namespace {

const std::string kSmall = std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml";

ArchConfig small(const std::vector<std::string>& sets = {}) { return load_arch_config(kSmall, sets); }

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// lpu-small.yaml without its energy section (the lines from "energy:" on, and the comment
// block above it).
std::string small_without_energy() {
  std::string text = read_file(kSmall);
  size_t at = text.find("\n# Energy per counted event");
  EXPECT_NE(at, std::string::npos);
  return text.substr(0, at + 1);
}

double static_w(const ArchConfig& a) {
  double w = 0;
  for (const auto& [k, mw] : a.energy.static_mw) w += mw * 1e-3;
  return w;
}

// A GEMV [1, K] x [K, N] in f16: weights streamed from HBM by the SXE, the activation (K fp32
// words) read from and the result (N fp32 words) written to the LMU.
Program gemv(int64_t K, int64_t N) {
  return parse_program(strcat(".program g\n.buffer w hbm:0x0 f16[", N, ", ", K, "] weight\n.kernel 0 k\n",
                              "sxe.gemm f16 [1, ", K, ", ", N, "] lm:0x0 <- lm:0x0 [0, 1], hbm:0x0 [1, ", K,
                              "]\nhalt\n"));
}

// `n` DMA loads of [rows, 1024] f32 (rows x 4 KiB each) from consecutive HBM rows into two
// alternating LMU regions.
Program dma_stream(int n, int rows) {
  std::string s =
      strcat(".program dma_stream\n.buffer src hbm:0x0 f32[", n * rows, ", 1024] input\n.kernel 0 stream\n");
  for (int i = 0; i < n; ++i) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "dma.load f32 [%d, 1024] lm:0x%llx <- hbm:0x%llx [1024, 1]\n", rows,
                  static_cast<unsigned long long>((i % 2) * rows * 4096),
                  static_cast<unsigned long long>(i) * static_cast<unsigned long long>(rows) * 4096);
    s += buf;
  }
  return parse_program(s + "halt\n");
}

}  // namespace

// GEMV: bytes x 8 x pJ/bit + MACs x pJ/MAC + LMU bytes x pJ/B + static power x time, every
// term from the config and the shape.
TEST(Energy, GemvEqualsClosedForm) {
  const int64_t K = 4096, N = 2048;
  ArchConfig a = small({"hbm.capacity_gib=4"});
  ASSERT_TRUE(a.energy.configured);
  SimStats s = simulate(gemv(K, N), a, {}).stats;
  ASSERT_TRUE(s.energy.configured);
  const double weight_bytes = static_cast<double>(K * N * 2);
  const double hbm = weight_bytes * 8 * a.energy.hbm_read_pj_per_bit * 1e-12;
  const double sxe = static_cast<double>(K * N) * a.energy.sxe_pj_per_mac * 1e-12;
  const double lmu = (static_cast<double>(K * 4) * a.energy.lmu_read_pj_per_byte +
                      static_cast<double>(N * 4) * a.energy.lmu_write_pj_per_byte) *
                     1e-12;
  const double stat = static_w(a) * s.latency_us * 1e-6;
  EXPECT_EQ(s.hbm_read_bytes, static_cast<uint64_t>(weight_bytes));
  EXPECT_NEAR(s.energy.engines.at("hbm").dynamic_j, hbm, hbm * 1e-12);
  EXPECT_NEAR(s.energy.engines.at("sxe").dynamic_j, sxe, sxe * 1e-12);
  EXPECT_NEAR(s.energy.engines.at("lmu").dynamic_j, lmu, lmu * 1e-12);
  EXPECT_EQ(s.energy.engines.at("vxe").dynamic_j, 0.0);
  EXPECT_NEAR(s.energy.static_j, stat, stat * 1e-12);
  const double total = hbm + sxe + lmu + stat;
  EXPECT_NEAR(s.energy.total_j(), total, total * 1e-12)
      << "simulated " << s.energy.total_j() << " J, closed form " << total << " J";
  // The per-engine parts add up to the total.
  double sum = 0;
  for (const auto& [name, e] : s.energy.engines) sum += e.total_j();
  EXPECT_NEAR(sum, s.energy.total_j(), total * 1e-12);
}

// A DMA stream: HBM read bits and LMU written bytes (fp32: as many as read), plus static.
TEST(Energy, DmaStreamEqualsClosedForm) {
  ArchConfig a = small();
  SimStats s = simulate(dma_stream(16, 8), a, {}).stats;
  const double bytes = 16.0 * 8 * 4096;
  ASSERT_EQ(s.hbm_read_bytes, static_cast<uint64_t>(bytes));
  const double total = bytes * 8 * a.energy.hbm_read_pj_per_bit * 1e-12 +
                       bytes * a.energy.lmu_write_pj_per_byte * 1e-12 + static_w(a) * s.latency_us * 1e-6;
  EXPECT_NEAR(s.energy.total_j(), total, total * 1e-12);
  EXPECT_EQ(s.energy.events.lmu_write_bytes, static_cast<uint64_t>(bytes));
  EXPECT_EQ(s.energy.events.lmu_read_bytes, 0u);
}

// Halving the HBM energy per bit halves the HBM part and nothing else; no cycle moves.
TEST(Energy, HalvingHbmPjPerBitHalvesTheHbmPart) {
  ArchConfig a = small({"hbm.capacity_gib=4"});
  ArchConfig h = small({"hbm.capacity_gib=4", strcat("energy.hbm_read_pj_per_bit=", a.energy.hbm_read_pj_per_bit / 2)});
  Program p = gemv(2048, 2048);
  SimStats full = simulate(p, a, {}).stats, half = simulate(p, h, {}).stats;
  EXPECT_EQ(full.cycles, half.cycles);
  EXPECT_GT(full.energy.engines.at("hbm").dynamic_j, 0.0);
  EXPECT_DOUBLE_EQ(half.energy.engines.at("hbm").dynamic_j, full.energy.engines.at("hbm").dynamic_j / 2);
  for (const char* e : {"sxe", "vxe", "lmu", "esl"})
    EXPECT_DOUBLE_EQ(half.energy.engines.at(e).dynamic_j, full.energy.engines.at(e).dynamic_j) << e;
  EXPECT_DOUBLE_EQ(half.energy.static_j, full.energy.static_j);
}

// VXE element operations are counted by the op table's class; each class has its energy.
TEST(Energy, VxeOpsCountedByClass) {
  ArchConfig a = small();
  Program p = parse_program(
      ".program v\n.kernel 0 k\n"
      "vxe.exp [4, 16] lm:0x1000 <- lm:0x0 [16, 1]\n"
      "vxe.add [4, 16] lm:0x2000 <- lm:0x0 [16, 1], lm:0x1000 [16, 1]\n"
      "vxe.div [2, 16] lm:0x3000 <- lm:0x0 [16, 1], lm:0x1000 [16, 1]\n"
      "vxe.rsum [4, 16] lm:0x4000 <- lm:0x0 [16, 1]\nhalt\n");
  SimStats s = simulate(p, a, {}).stats;
  const auto& ops = s.energy.events.vxe_ops;
  EXPECT_EQ(ops.at("transcendental"), 64);
  EXPECT_EQ(ops.at("alu"), 64);
  EXPECT_EQ(ops.at("divide"), 32);
  EXPECT_EQ(ops.at("reduce"), 64);
  EXPECT_EQ(ops.at("mov"), 0);
  const auto& pj = a.energy.vxe_pj_per_op;
  double vxe = (64 * pj.at("transcendental") + 64 * pj.at("alu") + 32 * pj.at("divide") + 64 * pj.at("reduce")) * 1e-12;
  EXPECT_NEAR(s.energy.engines.at("vxe").dynamic_j, vxe, vxe * 1e-12);
  // LMU: every source read, every result written (fp32).
  EXPECT_EQ(s.energy.events.lmu_read_bytes, static_cast<uint64_t>((64 + 128 + 64 + 64) * 4));
  EXPECT_EQ(s.energy.events.lmu_write_bytes, static_cast<uint64_t>((64 + 64 + 32 + 4) * 4));
}

// The counting changes nothing else: a config without an energy section gives the same
// statistics (cycles, bytes, every engine) and no energy; two runs give identical JSON.
TEST(Energy, CountingChangesNoStatisticAndIsDeterministic) {
  ArchConfig with = small();
  ArchConfig without = load_arch_config_string(small_without_energy(), "lpu-small-no-energy");
  ASSERT_FALSE(without.energy.configured);
  WorkloadSpec w = resolve_workload("tiny-opt-decode");
  RunOutcome a = run_job(w, with, "greedy", false), b = run_job(w, without, "greedy", false);
  nlohmann::json ja = stats_to_json(a.sim.stats), jb = stats_to_json(b.sim.stats);
  ASSERT_TRUE(ja.contains("energy"));
  EXPECT_FALSE(jb.contains("energy"));
  ja.erase("energy");
  EXPECT_EQ(ja.dump(), jb.dump());
  RunOutcome again = run_job(w, with, "greedy", false);
  EXPECT_EQ(a.to_json().dump(), again.to_json().dump());
}

// The JSON of an LLM step: total, split per engine (dynamic and static), events, J/token.
TEST(Energy, JsonFieldsOfAnLlmStep) {
  RunOutcome o = run_job(resolve_workload("tiny-opt-decode"), small(), "greedy", false);
  nlohmann::json j = o.to_json();
  ASSERT_TRUE(j.contains("energy"));
  const auto& e = j["energy"];
  for (const char* k : {"total_j", "dynamic_j", "static_j", "seconds", "devices"}) EXPECT_TRUE(e.contains(k)) << k;
  for (const auto& name : energy_engines())
    for (const char* k : {"dynamic_j", "static_j", "total_j"}) EXPECT_TRUE(e["engines"][name].contains(k)) << name << k;
  for (const char* k :
       {"hbm_read_bytes", "hbm_write_bytes", "sxe_macs", "vxe_ops", "lmu_read_bytes", "lmu_write_bytes", "esl_bytes"})
    EXPECT_TRUE(e["events"].contains(k)) << k;
  for (const auto& c : energy_vxe_classes()) EXPECT_TRUE(e["events"]["vxe_ops"].contains(c)) << c;
  EXPECT_GT(e["total_j"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(e["total_j"].get<double>(), e["dynamic_j"].get<double>() + e["static_j"].get<double>());
  ASSERT_TRUE(j.contains("llm"));
  EXPECT_DOUBLE_EQ(j["llm"]["j_per_token"].get<double>(),
                   e["total_j"].get<double>() / j["llm"]["tokens_per_step"].get<double>());
  // Every SXE MAC of the program is counted (the work the roofline counts, halved).
  EXPECT_DOUBLE_EQ(e["events"]["sxe_macs"].get<double>(), j["work"]["sxe_flops"].get<double>() / 2);
}

// `lpu generate`: each step's energy is `lpu run`'s of that step; totals and per token add up.
TEST(Energy, GenerateStepsCarryEnergy) {
  ArchConfig a = small();
  CompileCache cache;
  GenerateOptions o;
  o.prompt_len = 5;
  o.gen_len = 3;
  WorkloadSpec w = resolve_workload("tiny-llama");
  GenerateResult r = run_generate(w, a, o, cache);
  double sum = 0;
  for (const GenerateStep& s : r.steps) {
    WorkloadSpec step = w;
    step.phase = s.phase;
    step.seq_len = s.seq_len;
    step.context = s.context;
    RunOutcome run = run_job(step, a, "greedy", false);
    EXPECT_EQ(s.energy_j, run.sim.stats.energy.total_j()) << "step " << s.step;
    sum += s.energy_j;
  }
  EXPECT_DOUBLE_EQ(r.energy_j(), sum);
  nlohmann::json j = r.to_json();
  ASSERT_TRUE(j.contains("energy"));
  EXPECT_DOUBLE_EQ(j["energy"]["total_j"].get<double>(), sum);
  EXPECT_DOUBLE_EQ(j["energy"]["j_per_token"].get<double>(), sum / 3);
  EXPECT_DOUBLE_EQ(j["energy"]["decode_j_per_token"].get<double>(), (r.steps[1].energy_j + r.steps[2].energy_j) / 2);
  EXPECT_TRUE(j["steps"][0].contains("energy_j"));
  EXPECT_THAT(r.to_csv(), HasSubstr(",program,energy_j\n"));
}

// Bad energies: exit 2 (InputError) naming the file, the line and the key.
TEST(Energy, BadValuesNameFileLineAndKey) {
  std::string base = read_file(kSmall);
  auto error_of = [](const std::string& yaml, const std::vector<std::string>& sets = {}) {
    try {
      load_arch_config_string(yaml, "bad.yaml", sets);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  // The line of a key in the file, 1-based.
  auto line_of = [&](const std::string& needle) {
    size_t at = base.find(needle);
    return 1 + std::count(base.begin(), base.begin() + static_cast<long>(at), '\n');
  };
  std::string neg = error_of(replaced("sxe_pj_per_mac: 0.5", "sxe_pj_per_mac: -0.5"));
  EXPECT_THAT(neg, HasSubstr(strcat("bad.yaml:", line_of("sxe_pj_per_mac:"), ": energy.sxe_pj_per_mac")));
  std::string nan = error_of(replaced("hbm_read_pj_per_bit: 3.9", "hbm_read_pj_per_bit: .nan"));
  EXPECT_THAT(nan, HasSubstr(strcat("bad.yaml:", line_of("hbm_read_pj_per_bit:"), ": energy.hbm_read_pj_per_bit")));
  EXPECT_THAT(nan, HasSubstr("finite"));
  std::string cls = error_of(replaced("    alu: 0.575", "    alu: -1"));
  EXPECT_THAT(cls, HasSubstr("energy.vxe_pj_per_op.alu"));
  std::string st = error_of(replaced("    hbm: 2000", "    hbm: -2000"));
  EXPECT_THAT(st, HasSubstr(strcat("bad.yaml:", line_of("    hbm: 2000"), ": energy.static_mw.hbm")));
  EXPECT_THAT(error_of(replaced("    isu: 10\n", "")), HasSubstr("energy.static_mw.isu: missing required key"));
  EXPECT_THAT(error_of(replaced("    mov: 0.05", "    mov: 0.05\n    fma: 1")), HasSubstr("energy.vxe_pj_per_op.fma"));
  EXPECT_THAT(error_of(base, {"energy.esl_pj_per_bit=-3"}), HasSubstr("--set energy.esl_pj_per_bit=-3"));
  // --set works on the energies.
  EXPECT_DOUBLE_EQ(load_arch_config_string(base, "ok.yaml", {"energy.static_mw.sxe=7"}).energy.static_mw.at("sxe"), 7);
}

// Every preset carries an energy section with every key.
TEST(Energy, EveryPresetHasEnergies) {
  for (const char* name : {"lpu-small", "lpu-asic", "lpu-fpga-u55c", "lpu-lpddr"}) {
    ArchConfig a = load_arch_config(resolve_config_path(name));
    EXPECT_TRUE(a.energy.configured) << name;
    EXPECT_EQ(a.energy.vxe_pj_per_op.size(), energy_vxe_classes().size()) << name;
    EXPECT_EQ(a.energy.static_mw.size(), energy_engines().size()) << name;
    EXPECT_GT(a.energy.hbm_read_pj_per_bit, 0) << name;
  }
}

// Two devices: an ESL send is charged its bits, the tile leaving the sender's local memory and
// landing in the receiver's; events are summed over the devices, and static power runs on both
// until the last one halts.
TEST(Energy, EslSendAndTwoDevices) {
  Program tx =
      parse_program(".program tx\n.kernel 0 k\nesl.send [4, 256] dev:1 lm:0x2000 <- lm:0x0 [256, 1] token:3\nhalt\n");
  Program rx = parse_program(
      ".program rx\n.kernel 0 k\nsync.wait 3\nvxe.mul [4, 256] lm:0x8000 <- lm:0x2000 [256, 1], #2.0\nhalt\n");
  ArchConfig a = small({"devices=2"});
  SimOptions o;
  o.other_devices = {&rx};
  SimStats s = simulate(tx, a, o).stats;
  ASSERT_EQ(s.device_cycles.size(), 2u);
  const uint64_t tile = 4 * 256 * 4;
  EXPECT_EQ(s.energy.events.esl_bytes, tile);
  EXPECT_EQ(s.energy.devices, 2);
  // LMU: the tile read at the sender and written at the receiver; the multiply reads and writes it.
  EXPECT_EQ(s.energy.events.lmu_read_bytes, 2 * tile);
  EXPECT_EQ(s.energy.events.lmu_write_bytes, 2 * tile);
  EXPECT_EQ(s.energy.events.vxe_ops.at("alu"), 1024);
  const double esl = static_cast<double>(tile) * 8 * a.energy.esl_pj_per_bit * 1e-12;
  EXPECT_NEAR(s.energy.engines.at("esl").dynamic_j, esl, esl * 1e-12);
  const double seconds = static_cast<double>(std::max(s.device_cycles[0], s.device_cycles[1])) / (a.clock_ghz * 1e9);
  EXPECT_NEAR(s.energy.seconds, seconds, 1.0 / (a.clock_ghz * 1e9));  // within a cycle
  const double stat = static_w(a) * 2 * s.energy.seconds;
  EXPECT_NEAR(s.energy.static_j, stat, stat * 1e-12);
}
