// The bank-level memory model (memory.model: banks; docs/memory.md) against closed forms
// derived here from each technology preset's own numbers (configs/memory/*.yaml), and the
// bandwidth model left as it was.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "config/arch_config.h"
#include "jobs/jobs.h"
#include "model/dram_banks.h"
#include "support/error.h"
#include "test_util.h"
#include "workload/workload.h"

using namespace lpu;

namespace {

const std::vector<std::string> kTechnologies = {"hbm2", "hbm3", "hbm3e", "lpddr5x"};

// A preset's figures, read straight from its file (not through the model's config code).
struct Preset {
  double rate_mtps, rcd, rp, cl, ras, rrd, faw, refi, rfc;  // timings in ns
  int channel_bits, pcs, banks, row_bytes, burst_length;
  double pc_bits() const { return static_cast<double>(channel_bits) / pcs; }
  double burst_bytes() const { return burst_length * pc_bits() / 8; }
  double burst_ns() const { return burst_length * 1e3 / rate_mtps; }
  double unit_gbps() const { return burst_bytes() / burst_ns(); }  // one pseudo-channel
  double channel_gbps() const { return unit_gbps() * pcs; }
  double row_ns() const { return row_bytes / unit_gbps(); }
};

Preset read_preset(const std::string& tech) {
  YAML::Node n = YAML::LoadFile(std::string(LPU_SOURCE_DIR) + "/configs/memory/" + tech + ".yaml");
  auto d = [&](const char* k) { return n[k].as<double>(); };
  auto i = [&](const char* k) { return n[k].as<int>(); };
  return {d("data_rate_mtps"), d("tRCD_ns"),      d("tRP_ns"),          d("tCL_ns"),
          d("tRAS_ns"),        d("tRRD_ns"),      d("tFAW_ns"),         d("tREFI_ns"),
          d("tRFC_ns"),        i("channel_bits"), i("pseudo_channels"), i("bank_groups") * i("banks_per_group"),
          i("row_bytes"),      i("burst_length")};
}

// A device of `channels` channels of `tech` on the bank model.
ArchConfig bank_arch(const std::string& tech, int channels, const std::vector<std::string>& sets = {}) {
  const Preset p = read_preset(tech);
  std::string yaml = strcat("name: t\nclock_ghz: 1.0\ndevices: 1\nhbm: {bandwidth_gbps: ", p.channel_gbps() * channels,
                            ", channels: ", channels, ", capacity_gib: 1}\nlmu: {capacity_kib: 64}\n",
                            "vxe: {lanes: 16}\nsxe: {mac_trees: 4, lanes: 8}\n",
                            "memory: {model: banks, technology: ", tech, ", channels: ", channels, "}\n");
  return load_arch_config_string(yaml, "t.yaml", sets);
}

}  // namespace

// (a) Long streaming reads reach the closed-form sustained bandwidth within 3%. The closed
// form: the data bus runs back to back at the peak while each row switch (activate, then
// tRCD + tCL) is hidden behind the rows other banks serve; each refresh interval loses its
// precharge-all (tRP), the refresh (tRFC) and the first row's opening (tRCD + tCL). The
// test checks first that this preset hides row switches (enough banks, rows long enough for
// tRRD and tFAW), the conditions under which the closed form holds.
TEST(MemoryBanks, StreamingReadsReachTheClosedFormSustainedBandwidth) {
  for (const auto& tech : kTechnologies) {
    const Preset p = read_preset(tech);
    ASSERT_GE((p.banks - 1) * p.row_ns(), p.rp + p.rcd + p.cl) << tech;
    ASSERT_GE(p.row_ns(), p.rrd) << tech;
    ASSERT_GE(4 * p.row_ns(), p.faw) << tech;
    const int channels = 4;
    sim::DramBanks banks(bank_arch(tech, channels).memory);
    const uint64_t run = 1 << 20, total = 64ull << 20;
    double done = 0;
    for (uint64_t a = 0; a < total; a += run) done = std::max(done, banks.access(a, run, false, 0));
    const double measured_gbps = static_cast<double>(total) / (done * 1e-3);  // bytes per ps -> GB/s
    const double peak = p.channel_gbps() * channels;
    const double closed = peak * (1 - (p.rp + p.rfc + p.rcd + p.cl) / p.refi);
    std::printf("%-8s streaming %.1f GB/s, closed form %.1f GB/s (peak %.1f)\n", tech.c_str(), measured_gbps, closed,
                peak);
    EXPECT_NEAR(measured_gbps / closed, 1.0, 0.03) << tech;
    EXPECT_EQ(banks.counters().row_hits, 0u) << tech;  // whole rows: one visit per row
  }
}

// (b) Random 64-byte reads over a footprint of R rows per bank land at the closed-form row
// miss rate: a bank's next visit finds its open row with probability 1/R, unless a refresh
// closed the row since the bank's last visit. Issued all at once (a gather), the reads are
// bounded by the activation window: a unit moves a burst per tBurst at most and activates at
// most once per max(tRRD, tFAW / 4); in-order service stalls on bank conflicts below that.
TEST(MemoryBanks, RandomReadsLandAtTheClosedFormRowMissRate) {
  for (const auto& tech : kTechnologies) {
    const Preset p = read_preset(tech);
    const int channels = 4, rows = 4;
    sim::DramBanks banks(bank_arch(tech, channels).memory);
    const uint64_t units = static_cast<uint64_t>(channels * p.pcs);
    const uint64_t footprint = rows * static_cast<uint64_t>(p.row_bytes) * units * static_cast<uint64_t>(p.banks);
    std::mt19937_64 rng(28);
    std::uniform_int_distribution<uint64_t> pick(0, footprint / 64 - 1);
    const int n = 200000;
    double done = 0;
    for (int i = 0; i < n; ++i) done = std::max(done, banks.access(pick(rng) * 64, 64, false, 0));
    const auto& c = banks.counters();
    const double visits = static_cast<double>(c.row_hits + c.row_misses);
    const double miss = static_cast<double>(c.row_misses) / visits;
    // Visits that are a bank's first after a refresh miss whatever their row.
    const double refreshed = std::min(1.0, std::floor(done / (p.refi * 1e3)) * p.banks * units / visits);
    const double closed = 1 - (1.0 / rows) * (1 - refreshed);
    const double visit_ns = std::max(p.burst_ns(), closed * std::max(p.rrd, p.faw / 4));
    const double bound_gbps = p.burst_bytes() * static_cast<double>(units) / visit_ns;
    const double measured_gbps = 64.0 * n / (done * 1e-3);
    std::printf("%-8s random 64 B at once: miss rate %.4f, closed form %.4f; %.1f GB/s, activation bound %.1f GB/s\n",
                tech.c_str(), miss, closed, measured_gbps, bound_gbps);
    EXPECT_NEAR(miss, closed, 0.01) << tech;
    EXPECT_LE(measured_gbps, bound_gbps) << tech;
  }
}

// (b) One random 64-byte read at a time (each asked for when the last one's data is in): the
// miss rate is 1 - 1/R and each read takes tCL + tBurst, plus tRP + tRCD when it misses (the
// two bursts of a read lie in the same bank and row of two channels: they hit or miss
// together). Refresh is moved out of the way (tREFI 1 s) so the closed form is exact.
TEST(MemoryBanks, DependentRandomReadsTakeTheClosedFormTime) {
  for (const auto& tech : kTechnologies) {
    const Preset p = read_preset(tech);
    const int channels = 4, rows = 4;
    sim::DramBanks banks(bank_arch(tech, channels, {"memory.tREFI_ns=1e9"}).memory);
    const uint64_t units = static_cast<uint64_t>(channels * p.pcs);
    const uint64_t footprint = rows * static_cast<uint64_t>(p.row_bytes) * units * static_cast<uint64_t>(p.banks);
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<uint64_t> pick(0, footprint / 64 - 1);
    const int n = 100000;
    double t = 0;
    for (int i = 0; i < n; ++i) t = banks.access(pick(rng) * 64, 64, false, t);
    const auto& c = banks.counters();
    const double miss = static_cast<double>(c.row_misses) / static_cast<double>(c.row_hits + c.row_misses);
    const double closed_miss = 1 - 1.0 / rows;
    const double read_ns = p.cl + p.burst_ns() + closed_miss * (p.rp + p.rcd);
    const double closed_gbps = 64 / read_ns, measured_gbps = 64.0 * n / (t * 1e-3);
    std::printf("%-8s random 64 B one at a time: miss rate %.4f (closed form %.4f); %.3f GB/s (closed form %.3f)\n",
                tech.c_str(), miss, closed_miss, measured_gbps, closed_gbps);
    EXPECT_NEAR(miss, closed_miss, 0.01) << tech;
    EXPECT_NEAR(measured_gbps / closed_gbps, 1.0, 0.03) << tech;
  }
}

// The fast path (rows of a stream counted in one step) against a visit per row, on a mix of
// runs: long and short, aligned and not, reads and writes, back to back and spaced out. The
// data timing agrees (activations differ: just in time against as early as possible).
TEST(MemoryBanks, FastForwardAgreesWithAVisitPerRow) {
  for (const auto& tech : kTechnologies) {
    const ArchConfig a = bank_arch(tech, 4);
    sim::DramBanks fast(a.memory), slow(a.memory, false);
    std::mt19937_64 rng(5);
    double t = 0, worst = 0, last_fast = 0, last_slow = 0;
    for (int i = 0; i < 400; ++i) {
      const uint64_t len = (rng() % 4 == 0) ? 64 + rng() % 4096 : (1 + rng() % 64) << 16;
      const uint64_t addr = (rng() % 2 ? (rng() % 4096) << 17 : rng() % (1ull << 32)) & ~uint64_t{31};
      const bool write = rng() % 5 == 0;
      t += (rng() % 3 == 0) ? static_cast<double>(rng() % 200000) : 0;
      last_fast = fast.access(addr, len, write, t);
      last_slow = slow.access(addr, len, write, t);
      worst = std::max(worst, std::fabs(last_fast - last_slow) / (last_slow - t));
    }
    std::printf("%-8s fast path (%.0f%% of rows) vs a visit per row: worst difference %.2e of a run's time\n",
                tech.c_str(), 100.0 * static_cast<double>(fast.counters().fast_rows) / fast.counters().row_misses,
                worst);
    EXPECT_LT(worst, 1e-9) << tech;
    EXPECT_NEAR(last_fast / last_slow, 1.0, 1e-9) << tech;
    EXPECT_EQ(fast.counters().bursts, slow.counters().bursts) << tech;
    EXPECT_GT(fast.counters().fast_rows, fast.counters().row_misses / 2) << tech;  // the fast path ran
    EXPECT_EQ(slow.counters().fast_rows, 0u) << tech;
  }
}

namespace {
// The distinct windows of busy(), sorted: all their union (the HBM's busy log) depends on.
std::vector<std::pair<double, double>> distinct_windows(const sim::DramBanks& banks) {
  std::vector<std::pair<double, double>> w;
  for (const auto& b : banks.busy()) w.emplace_back(b.start_ps, b.end_ps);
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  return w;
}
}  // namespace

// A run timed unit by unit (one pass, units in the same state sharing one and timed once)
// against sweep by sweep over all units: the same results bit for bit (time, each unit's
// window, counters), on a mix of runs that keeps units in step (whole sweeps, runs a multiple
// of a column of every unit) and runs that split them (any byte, a few bursts, writes), with
// and without the fast path, on the presets' mapping (Co above Pc and Ch: columns found by
// comparison) and two others (a division per unit). Asked for only the windows' union
// (each_unit false), the distinct windows are the same.
TEST(MemoryBanks, UnitByUnitMatchesSweepBySweepExactly) {
  for (const auto& tech : kTechnologies) {
    for (const std::string mapping : {"RoBaBgCoPcCh", "RoBaBgPcChCo", "RoBaBgPcCoCh"}) {
      for (const bool fast_forward : {true, false}) {
        const ArchConfig a = bank_arch(tech, 4, {"memory.address_mapping=" + mapping});
        sim::DramBanks by_unit(a.memory, fast_forward), by_sweep(a.memory, fast_forward, false);
        sim::DramBanks grouped(a.memory, fast_forward);
        const uint64_t column = static_cast<uint64_t>(by_unit.units()) * by_unit.burst_bytes();
        std::mt19937_64 rng(11);
        double t = 0;
        uint64_t last_addr = 0, last_len = 64;
        for (int i = 0; i < 3000; ++i) {
          // Runs of whole columns (units stay in step), now and then a few bytes of the last run
          // (their row hits read the banks the run left), then a mix with runs that split units.
          const uint64_t kind = i < 1000 ? 2 + rng() % 3 / 2 : rng() % 4;
          const uint64_t len = kind == 0 ? 64 + rng() % 4096 : kind == 3 ? 64 : (1 + rng() % 64) * column;
          const uint64_t addr = kind == 1   ? rng() % (1ull << 32)
                                : kind == 3 ? last_addr + rng() % last_len / 64 * 64
                                            : (rng() % 4096) * column;
          if (kind != 3) {
            last_addr = addr;
            last_len = len;
          }
          const bool write = rng() % 7 == 0;
          t += (rng() % 3 == 0) ? static_cast<double>(rng() % 200000) : 0;
          const double x = by_unit.access(addr, len, write, t), y = by_sweep.access(addr, len, write, t);
          ASSERT_EQ(x, y) << tech << " " << mapping << " run " << i;
          ASSERT_EQ(by_unit.busy().size(), by_sweep.busy().size()) << tech << " " << mapping << " run " << i;
          for (size_t k = 0; k < by_unit.busy().size(); ++k) {
            const auto &p = by_unit.busy()[k], &q = by_sweep.busy()[k];
            ASSERT_TRUE(p.unit == q.unit && p.start_ps == q.start_ps && p.end_ps == q.end_ps)
                << tech << " " << mapping << " run " << i;
          }
          ASSERT_EQ(grouped.access(addr, len, write, t, false), y) << tech << " " << mapping << " run " << i;
          ASSERT_EQ(distinct_windows(grouped), distinct_windows(by_sweep)) << tech << " " << mapping << " run " << i;
        }
        for (const sim::DramBanks* b : {&by_unit, &grouped}) {
          const auto &c = b->counters(), &d = by_sweep.counters();
          EXPECT_EQ(c.bursts, d.bursts) << tech << " " << mapping;
          EXPECT_EQ(c.row_hits, d.row_hits) << tech << " " << mapping;
          EXPECT_EQ(c.row_misses, d.row_misses) << tech << " " << mapping;
          EXPECT_EQ(c.refreshes, d.refreshes) << tech << " " << mapping;
          EXPECT_EQ(c.fast_rows, d.fast_rows) << tech << " " << mapping;
          EXPECT_EQ(c.copied, by_unit.counters().copied) << tech << " " << mapping;
        }
        const uint64_t copied = by_unit.counters().copied;
        std::printf("%-8s %s fast path %d: %llu of %d x 3000 unit runs took another's results\n", tech.c_str(),
                    mapping.c_str(), fast_forward, static_cast<unsigned long long>(copied), by_unit.units());
        if (mapping == "RoBaBgCoPcCh") {  // timed once
          EXPECT_GT(copied, 250u * static_cast<uint64_t>(by_unit.units() - 1)) << tech;
        }
        EXPECT_EQ(by_sweep.counters().copied, 0u) << tech;
      }
    }
  }
}

namespace {
WorkloadSpec decode_step(const std::string& name) {
  return resolve_workload(std::string(LPU_SOURCE_DIR) + "/workloads/" + name + ".yaml");
}
ArchConfig preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/" + name + ".yaml", sets);
}
}  // namespace

// (c) A decode step on both models: the same bytes move; the bank model's time is bounded by
// its peak (it cannot beat data rate x bus width) and stays above half of it on a weight
// stream of whole rows. The difference is reported (docs/memory.md quotes it).
TEST(MemoryBanks, DecodeStepOnBothModels) {
  const WorkloadSpec w = decode_step("opt-1.3b-decode");
  for (const std::string arch : {"lpu-asic", "lpu-lpddr"}) {
    const RunOutcome bw = run_job(w, preset(arch), "greedy", false);
    const ArchConfig banked = preset(arch, {"memory.model=banks"});
    const RunOutcome bk = run_job(w, banked, "greedy", false);
    const double bytes = static_cast<double>(bk.sim.stats.hbm_read_bytes + bk.sim.stats.hbm_write_bytes);
    EXPECT_EQ(bk.sim.stats.hbm_read_bytes, bw.sim.stats.hbm_read_bytes) << arch;
    const double us_bw = bw.sim.stats.latency_us, us_bk = bk.sim.stats.latency_us;
    const double gbps = bytes / (us_bk * 1e3);
    std::printf("%s opt-1.3b decode: bandwidth model %.2f us, bank model %.2f us (%+.2f%%), %.0f GB/s of %.0f peak\n",
                arch.c_str(), us_bw, us_bk, 100 * (us_bk / us_bw - 1), gbps, banked.memory.peak_gbps());
    EXPECT_LE(gbps, banked.memory.peak_gbps()) << arch;
    EXPECT_GT(gbps, 0.5 * banked.memory.peak_gbps()) << arch;
  }
}

// (d) Every shipped preset runs with --set memory.model=banks and nothing else, in timing and
// functional mode (the data path is the same; functional outputs still match the reference).
TEST(MemoryBanks, EveryPresetRunsOnTheBankModel) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(LPU_SOURCE_DIR) + "/configs")) {
    if (e.path().extension() != ".yaml") continue;
    ArchConfig a = load_arch_config(e.path().string(), {"memory.model=banks"});
    EXPECT_EQ(a.memory.model, ArchConfig::Memory::Model::Banks) << e.path();
    RunOutcome o = run_job(testutil::builtin("ln_gelu_add", 16, 256), a, "greedy", true);
    EXPECT_GT(o.sim.stats.cycles, 0u) << e.path();
    ASSERT_TRUE(o.check.has_value()) << e.path();
    EXPECT_TRUE(o.check->ok) << e.path();
    EXPECT_EQ(o.to_json()["arch"]["memory"]["model"], "banks") << e.path();
    ++n;
  }
  EXPECT_GE(n, 4);
}

// (e) The bandwidth model is the memory section's default and ignores the section's timing:
// a preset with its section gives the statistics (JSON, byte for byte) of the same preset
// without one.
TEST(MemoryBanks, BandwidthModelStatisticsDoNotDependOnTheSection) {
  const WorkloadSpec w = decode_step("opt-1.3b-decode");
  ArchConfig with = preset("lpu-asic");
  ASSERT_TRUE(with.memory.configured());
  ArchConfig without = with;
  without.memory = ArchConfig::Memory{};
  EXPECT_EQ(run_job(w, with, "greedy", false).to_json().dump(), run_job(w, without, "greedy", false).to_json().dump());
}

TEST(MemoryConfig, TechnologiesAreListedAndBadOnesNamed) {
  EXPECT_EQ(memory_technologies(), kTechnologies);
  try {
    preset("lpu-asic", {"memory.technology=ddr9"});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("memory.technology"), std::string::npos) << m;
    EXPECT_NE(m.find("lpddr5x"), std::string::npos) << m;
  }
  // A peak that disagrees with hbm.bandwidth_gbps names both.
  try {
    preset("lpu-asic", {"memory.model=banks", "memory.channels=10"});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hbm.bandwidth_gbps 3280"), std::string::npos) << e.what();
  }
  // Overrides replace the preset's figure; the channel count follows the bandwidth.
  ArchConfig a = preset("lpu-asic", {"memory.model=banks", "memory.tRCD_ns=20"});
  EXPECT_DOUBLE_EQ(a.memory.tRCD_ns, 20);
  EXPECT_EQ(a.memory.channels, 64);
  EXPECT_NEAR(a.memory.peak_gbps(), 3276.8, 1e-9);
  // Under the bandwidth model the section's timing is unused: any bandwidth goes (sweeps of
  // hbm.bandwidth_gbps on a preset stay valid).
  EXPECT_NO_THROW(preset("lpu-asic", {"hbm.bandwidth_gbps=82"}));
  EXPECT_NO_THROW(preset("lpu-asic", {"hbm.bandwidth_gbps=0.5"}));
}
