// Sweep files (axes, ranges, combine, validation messages) and the result store (row
// flattening, CSV quoting, recovery from a sweep killed mid-write).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/error.h"
#include "sweep/sweep_layout.h"
#include "sweep/sweep_serve.h"
#include "sweep/sweep_spec.h"
#include "sweep/sweep_store.h"

using namespace lpu;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// Tests run in the source directory (CMake WORKING_DIRECTORY): configs/ and workloads/ resolve.
const char* kHead = "base: lpu-small\nworkloads: [ln_gelu_add]\nfusion: [none, greedy]\n";

SweepSpec load(const std::string& body) { return load_sweep_string(std::string(kHead) + body, "s.yaml"); }

std::string error_of(const std::string& text) {
  try {
    load_sweep_string(text, "s.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> axis(const std::string& spec) {
  return load("axes:\n  hbm.bandwidth_gbps: " + spec + "\n").axes.at(0).values;
}

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("lpu_sweep_test_" + std::to_string(::getpid()) + "_" + std::to_string(n_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
  static inline int n_ = 0;
};

nlohmann::ordered_json ok_row(const std::string& id, double latency) {
  nlohmann::json run = {{"latency_us", latency}, {"engines", {{"vxe", {{"utilization", 0.5}}}}}, {"kernels", {1, 2}}};
  return make_row({{"point_id", id}, {"status", "ok"}}, &run);
}

}  // namespace

TEST(SweepSpec, ListsAndRangesExpandToCanonicalValues) {
  EXPECT_THAT(axis("[128, 256.5]"), ElementsAre("128", "256.5"));
  EXPECT_THAT(axis("{start: 64, stop: 256, step: 64}"), ElementsAre("64", "128", "192", "256"));
  EXPECT_THAT(axis("{start: 0.5, stop: 1.5, step: 0.5}"), ElementsAre("0.5", "1", "1.5"));
  EXPECT_THAT(axis("{start: 100, stop: 400, num: 4}"), ElementsAre("100", "200", "300", "400"));
  EXPECT_THAT(axis("{start: 16, stop: 256, num: 5, scale: log}"), ElementsAre("16", "32", "64", "128", "256"));
  EXPECT_THAT(axis("{start: 1.0, stop: 100.0, num: 3, scale: log}"), ElementsAre("1", "10", "100"));
  EXPECT_THAT(axis("{start: 64, stop: 512, factor: 2}"), ElementsAre("64", "128", "256", "512"));
  EXPECT_THAT(axis("300"), ElementsAre("300"));
}

TEST(SweepSpec, ProductAndZipCombineAxes) {
  SweepSpec p = load("axes:\n  hbm.bandwidth_gbps: [128, 256, 512]\n  lmu.capacity_kib: [64, 256]\n");
  auto pts = expand_points(p);
  ASSERT_EQ(pts.size(), 3u * 2 * 2);
  // Arch points outermost: the first 2 points (both policies) are the reference point.
  EXPECT_EQ(pts[0].id, "ln_gelu_add|none|hbm.bandwidth_gbps=128|lmu.capacity_kib=64");
  EXPECT_EQ(pts[1].id, "ln_gelu_add|greedy|hbm.bandwidth_gbps=128|lmu.capacity_kib=64");
  EXPECT_EQ(pts[2].id, "ln_gelu_add|none|hbm.bandwidth_gbps=128|lmu.capacity_kib=256");
  EXPECT_THAT(point_sets(p, pts[2]), ElementsAre("hbm.bandwidth_gbps=128", "lmu.capacity_kib=256"));
  std::set<std::string> ids;
  for (const auto& pt : pts) ids.insert(pt.id);
  EXPECT_EQ(ids.size(), pts.size());

  SweepSpec z = load("combine: zip\naxes:\n  vxe.lanes: [16, 32]\n  clock_ghz: [2.0, 1.0]\n");
  auto aps = arch_points(z);
  ASSERT_EQ(aps.size(), 2u);
  EXPECT_THAT(aps[1], ElementsAre("32", "1.0"));
  EXPECT_EQ(expand_points(z).size(), 4u);
}

TEST(SweepSpec, FixedSetsComeFirstAndNoAxesMeansOnePoint) {
  SweepSpec s = load("set:\n  hbm:\n    latency_ns: 80\n");
  auto pts = expand_points(s);
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_THAT(point_sets(s, pts[0]), ElementsAre("hbm.latency_ns=80"));
  EXPECT_EQ(pts[0].id, "ln_gelu_add|none");
}

TEST(SweepSpec, ErrorsNameFileLineAndKey) {
  std::string h = kHead;
  EXPECT_THAT(error_of(h + "axis:\n  clock_ghz: [1]\n"), HasSubstr("s.yaml:4: axis: unknown key (did you mean 'axes'?)"));
  EXPECT_THAT(error_of(h + "axes:\n  hbm.bandwith_gbps: [1]\n"),
              HasSubstr("s.yaml:5: axes.hbm.bandwith_gbps: value 1 rejected by the config: hbm.bandwith_gbps: unknown key"));
  EXPECT_THAT(error_of(h + "axes:\n  lmu.capacity_kib: [64, 0]\n"),
              HasSubstr("s.yaml:5: axes.lmu.capacity_kib: value 0 rejected by the config: lmu.capacity_kib: value 0 out of range"));
  EXPECT_THAT(error_of(h + "axes:\n  vxe.lanes: [16.5]\n"), HasSubstr("expected an integer"));
  EXPECT_THAT(error_of(h + "combine: zip\naxes:\n  vxe.lanes: [16, 32]\n  clock_ghz: [1.0]\n"),
              HasSubstr("s.yaml:7: axes.clock_ghz: has 1 values but axes.vxe.lanes has 2"));
  EXPECT_THAT(error_of(h + "combine: mix\n"), HasSubstr("s.yaml:4: combine: expected product or zip"));
  EXPECT_THAT(error_of(h + "axes:\n  vxe.lanes: {start: 1, stop: 8}\n"), HasSubstr("exactly one of step, num or factor"));
  EXPECT_THAT(error_of(h + "axes:\n  vxe.lanes: {start: 1, stop: 8, step: -1}\n"), HasSubstr("never gets from 1 to 8"));
  EXPECT_THAT(error_of(h + "axes:\n  vxe.lanes: {start: 1, stop: 3, num: 5}\n"), HasSubstr("repeats the value"));
  EXPECT_THAT(error_of(h + "axes:\n  vxe.lanes: [16, 16]\n"), HasSubstr("axes.vxe.lanes[1]: value listed twice"));
  EXPECT_THAT(error_of(h + "axes:\n  workload: [a]\n"), HasSubstr("a results column"));
  EXPECT_THAT(error_of("workloads: [ln_gelu_add]\nfusion: [fastest]\n"),
              HasSubstr("s.yaml:2: fusion[0]: unknown fusion policy 'fastest'"));
  EXPECT_THAT(error_of("workloads: [nope]\nfusion: none\n"), HasSubstr("s.yaml:1: workloads[0]: workload 'nope'"));
  EXPECT_THAT(error_of("workloads: [ln_gelu_add]\n"), HasSubstr("fusion: missing required key"));
  EXPECT_THAT(error_of("base: nope\nworkloads: [ln_gelu_add]\nfusion: none\n"), HasSubstr("s.yaml:1: base: config 'nope'"));
  EXPECT_THAT(error_of(h + "set:\n  hbm.latency_ns: -5\n"), HasSubstr("s.yaml:5: set.hbm.latency_ns: rejected by the config: hbm.latency_ns: value -5 out of range"));
}

TEST(SweepSpec, ScalarsBecomeTypedJson) {
  EXPECT_EQ(scalar_to_json("128"), nlohmann::json(128));
  EXPECT_EQ(scalar_to_json("2.5"), nlohmann::json(2.5));
  EXPECT_EQ(scalar_to_json("true"), nlohmann::json(true));
  EXPECT_EQ(scalar_to_json("greedy"), nlohmann::json("greedy"));
  EXPECT_EQ(scalar_to_json("["), nlohmann::json("["));  // not a YAML document by itself
}

TEST(SweepStore, RowsFlattenStatisticsAndKeepArraysNested) {
  nlohmann::json run = {{"latency_us", 1.5},
                        {"fusion", "none"},
                        {"engines", {{"vxe", {{"utilization", 0.25}}}}},
                        {"arch", {{"hbm", {{"bandwidth_gbps", 128}}}, {"vxe", {{"lanes", 64}, {"ops", {{"add", 1}}}}}}},
                        {"workload", {{"name", "w"}, {"d_model", 8}}},
                        {"kernels", {{{"name", "k0"}}}}};
  auto row = make_row({{"point_id", "p"}, {"fusion", "none"}}, &run);
  EXPECT_EQ(row["engines.vxe.utilization"], 0.25);
  EXPECT_EQ(row["arch.hbm.bandwidth_gbps"], 128);
  EXPECT_EQ(row["arch.vxe.lanes"], 64);
  EXPECT_FALSE(row.contains("arch.vxe.ops.add"));
  EXPECT_EQ(row["workload_spec"]["d_model"], 8);
  EXPECT_TRUE(row["kernels"].is_array());
  EXPECT_EQ(row.begin().key(), "point_id");  // identity columns first
}

TEST(SweepStore, CsvQuotingRoundTripsAndStaysOnOneLine) {
  std::vector<std::string> cells = {"a|b=1", "say \"hi\", twice", "line1\nline2", ""};
  std::string line = csv_line(cells);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_THAT(parse_csv_line(line.substr(0, line.size() - 1)), ElementsAre("a|b=1", "say \"hi\", twice", "line1 line2", ""));
}

TEST(SweepStore, HeaderWaitsForTheFirstSuccessAndRecoversFromTornRows) {
  TempDir d;
  std::vector<std::string> fixed = {"point_id", "status"};
  {
    ResultStore s(d.str(), fixed, false);
    s.append(make_row({{"point_id", "bad"}, {"status", "failed"}}, nullptr));
    EXPECT_FALSE(fs::exists(d.str() + "/results.csv"));  // no statistics known yet
    s.append(ok_row("p1", 2.0));
    s.append(ok_row("p2", 3.0));
  }
  std::string csv = slurp(d.str() + "/results.csv");
  EXPECT_THAT(csv, HasSubstr("point_id,status,engines.vxe.utilization,latency_us\n"));
  EXPECT_THAT(csv, HasSubstr("bad,failed,,\n"));
  EXPECT_THAT(csv, HasSubstr("p2,ok,0.5,3.0\n"));

  EXPECT_THROW(ResultStore(d.str(), fixed, false), InputError);  // results present, no --resume
  EXPECT_THROW(ResultStore(d.str(), {"point_id", "other"}, true), InputError);  // a different sweep

  // A kill mid-write: a torn JSONL row, and a CSV that lacks the last complete row.
  std::ofstream(d.str() + "/results.jsonl", std::ios::app) << R"({"point_id":"p3","sta)";
  std::string full = slurp(d.str() + "/results.csv");
  std::string without_p2 = full.substr(0, full.find("p2,"));
  std::ofstream(d.str() + "/results.csv", std::ios::trunc) << without_p2 << "p2,o";
  {
    ResultStore s(d.str(), fixed, true);
    EXPECT_EQ(s.finished(), (std::set<std::string>{"bad", "p1", "p2"}));
    EXPECT_EQ(s.notes().size(), 3u);  // two torn lines, one restored row
    s.append(ok_row("p3", 4.0));
    s.close();
  }
  std::string jsonl = slurp(d.str() + "/results.jsonl");
  EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 4);
  std::stringstream in(jsonl);
  for (std::string line; std::getline(in, line);) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  EXPECT_EQ(slurp(d.str() + "/results.csv"), full + "p3,ok,0.5,4.0\n");
}

TEST(SweepStore, AllFailedSweepsStillGetACsvHeaderThatResumeReplaces) {
  TempDir d;
  {
    ResultStore s(d.str(), {"point_id", "status"}, false);
    s.append(make_row({{"point_id", "bad"}, {"status", "failed"}}, nullptr));
    s.close();
  }
  EXPECT_EQ(slurp(d.str() + "/results.csv"), "point_id,status\nbad,failed\n");
  {
    ResultStore s(d.str(), {"point_id", "status"}, true);
    s.append(ok_row("p1", 2.0));
  }
  EXPECT_EQ(slurp(d.str() + "/results.csv"),
            "point_id,status,engines.vxe.utilization,latency_us\nbad,failed,,\np1,ok,0.5,2.0\n");
}

// Shards: I/N parsing and the assignment (index modulo N: disjoint, together the sweep).
TEST(SweepShard, ParsesIOfNAndRejectsTheRest) {
  Shard s = parse_shard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.suffix(), "-2-of-5");
  for (const char* bad : {"3/2", "2/2", "0/0", "-1/2", "1", "1/", "/2", "a/b", "1/2/3", "1 /2", "99999999999/1"})
    EXPECT_THROW(parse_shard(bad), InputError) << bad;
  EXPECT_THAT([] {
    try {
      parse_shard("3/2");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  }(), HasSubstr("below the count"));
}

TEST(SweepShard, ShardsPartitionThePoints) {
  SweepSpec s = load("axes:\n  hbm.bandwidth_gbps: [128, 256, 512]\n  lmu.capacity_kib: [64, 128, 256]\n");
  size_t n = expand_points(s).size();
  ASSERT_EQ(n, 18u);
  for (int count : {1, 4, 18, 25}) {
    std::vector<int> owners(n, 0);
    for (int i = 0; i < count; ++i) {
      std::vector<size_t> mine = shard_point_indices(expand_points(s), Shard{i, count});
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      // Balanced: every shard has floor(n / count) or one more point.
      EXPECT_GE(mine.size(), n / static_cast<size_t>(count)) << "shard " << i << " of " << count;
      EXPECT_LE(mine.size(), n / static_cast<size_t>(count) + 1) << "shard " << i << " of " << count;
      for (size_t p : mine) owners[p] += 1;
    }
    for (size_t p = 0; p < n; ++p) EXPECT_EQ(owners[p], 1) << "point " << p << " of " << count << " shards";
  }
}

// An axis whose period matches the split must not line up with it: round-robin over the
// expansion order put every `none` point in shard 0 of 2 and every `greedy` one in shard 1.
TEST(SweepShard, NoAxisLinesUpWithTheSplit) {
  SweepSpec s = load("axes:\n  hbm.bandwidth_gbps: {start: 100, stop: 1000, num: 10}\n"
                     "  lmu.capacity_kib: [64, 128, 256, 512]\n");
  s.policies = {"none", "greedy"};
  std::vector<SweepPoint> all = expand_points(s);
  ASSERT_EQ(all.size(), 80u);
  for (int count : {2, 4, 10}) {
    for (int i = 0; i < count; ++i) {
      std::vector<size_t> mine = shard_point_indices(all, Shard{i, count});
      size_t greedy = 0;
      for (size_t p : mine) greedy += all[p].policy == "greedy";
      // Neither policy takes a shard alone (the old assignment: 0 or all of them).
      EXPECT_GT(greedy, 0u) << "shard " << i << " of " << count;
      EXPECT_LT(greedy, mine.size()) << "shard " << i << " of " << count;
    }
  }
}

// The sweep hash names what the points compute, not where the file lies.
TEST(SweepHash, DependsOnContentNotOnNameOrPath) {
  std::string body = "axes:\n  hbm.bandwidth_gbps: [128, 256]\n";
  std::string h = sweep_hash(load(body));
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h, sweep_hash(load_sweep_string(std::string("name: other\n") + kHead + body, "elsewhere/t.yaml")));
  EXPECT_NE(h, sweep_hash(load("axes:\n  hbm.bandwidth_gbps: [128, 512]\n")));
  EXPECT_NE(h, sweep_hash(load("set: {hbm.latency_ns: 80}\n" + body)));
  EXPECT_NE(h, sweep_hash(load("combine: zip\n" + body)));
}

// A built-in model named without a file (found by fuzz_sweep_yaml: the sweep made its missing
// path absolute and died, exit 4): its points run it by name, and the hash is stable.
TEST(SweepSpec, BuiltInModelNamesNeedNoFile) {
  SweepSpec s = load_sweep_string("workloads: [tiny-llama, ln_gelu_add]\nfusion: [none]\n", "s.yaml");
  ASSERT_EQ(s.workloads.size(), 2u);
  EXPECT_EQ(s.workloads[0].name, "tiny-llama");
  EXPECT_EQ(s.workloads[0].file, "tiny-llama");
  EXPECT_EQ(sweep_hash(s), sweep_hash(load_sweep_string("workloads: [tiny-llama, ln_gelu_add]\nfusion: [none]\n", "s.yaml")));
}

// Workload keys as axes (`workload.KEY`, docs/sweeps.md): each point passes the value to
// `lpu run --set workload.KEY=V`, and each value is checked against every workload of the
// sweep when the file loads (a value the workload refuses, a key a workload lacks).
TEST(SweepSpec, WorkloadKeysAreAxes) {
  SweepSpec s = load_sweep_string(
      "base: lpu-small\nworkloads: [tiny-llama, tiny-opt-decode]\nfusion: [greedy]\naxes:\n  workload.batch: [1, 4]\n"
      "  hbm.bandwidth_gbps: [128, 256]\n",
      "s.yaml");
  std::vector<SweepPoint> pts = expand_points(s);
  ASSERT_EQ(pts.size(), 8u);
  std::vector<std::string> sets = point_sets(s, pts.back());
  EXPECT_NE(std::find(sets.begin(), sets.end(), "workload.batch=4"), sets.end());
  EXPECT_THAT(error_of("base: lpu-small\nworkloads: [tiny-llama]\nfusion: [greedy]\naxes:\n  workload.batch: [1, 300]\n"),
              ::testing::HasSubstr("s.yaml:5: axes.workload.batch: value 300 rejected by the config: workload tiny-llama: "));
  EXPECT_THAT(error_of("base: lpu-small\nworkloads: [gemv]\nfusion: [greedy]\naxes:\n  workload.heads: [2]\n"),
              ::testing::HasSubstr("workload gemv: "));
  EXPECT_THAT(error_of("base: lpu-small\nworkloads: [gemv]\nfusion: [greedy]\naxes:\n  workload.heads: [2]\n"),
              ::testing::HasSubstr("heads: unknown key"));
}

// fuzz_sweep_yaml timed out (over 10 s under ASan) on an 801-value axis times a 5-value one
// (every value and all 4005 combinations checked): each check parsed the base config again.
// The base is parsed once now, and the checks of one axis, or of the combinations, share a
// copy of it; a rejected value deep in a long axis still names itself.
TEST(SweepSpec, LongAxesValidateAgainstOneParsedBase) {
  SweepSpec s = load(
      "axes:\n  hbm.bandwidth_gbps: {start: 82, stop: 512, step: .6}\n  clock_ghz: [4.0, 2.0, 1.0, 0.5, 0.25]\n");
  EXPECT_EQ(s.axes.at(0).values.size(), 717u);
  EXPECT_EQ(arch_points(s).size(), 717u * 5);  // under kMaxCombinationsChecked: all checked
  EXPECT_EQ(expand_points(s).size(), 717u * 5 * 2);
  std::string e = error_of(std::string(kHead) + "axes:\n  hbm.latency_ns: [1, 2, 3, 4, 5, 6, 7, 8, 9, -1, 10]\n");
  EXPECT_THAT(e, HasSubstr("s.yaml:5: axes.hbm.latency_ns: value -1 rejected by the config")) << e;
  e = error_of(std::string(kHead) + "axes:\n  vxe.lanes: [8, 16]\n  clock_ghz: [1, 2, 20]\n");
  EXPECT_THAT(e, HasSubstr("value 20 rejected by the config")) << e;
}

// ---- serving sweeps (command: serve; sweep/sweep_serve.h) ----

namespace {

const char* kServeHead = "command: serve\nbase: lpu-small\nworkloads: [tiny-llama]\n";

std::string serve_error(const std::string& body) { return error_of(std::string(kServeHead) + body); }

}  // namespace

TEST(ServeSweep, KeysBecomeServeFlags) {
  SweepSpec s =
      load_sweep_string(std::string(kServeHead) +
                            "set: {serve.requests: 8, serve.chunked_prefill: false, serve.exact: true}\n"
                            "axes:\n  serve.rate: [2, 4.5]\n  serve.router: [round-robin, least-outstanding-tokens]\n",
                        "s.yaml");
  EXPECT_TRUE(s.serving());
  EXPECT_THAT(s.policies, ElementsAre("greedy"));  // `fusion:` may be left out: lpu serve's default
  EXPECT_EQ(s.traces, "none");                     // lpu serve writes no trace
  std::vector<SweepPoint> pts = expand_points(s);
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_EQ(pts[3].id, "tiny-llama|greedy|serve.rate=4.5|serve.router=least-outstanding-tokens");
  EXPECT_THAT(serve_flags(point_sets(s, pts[3]), "."),
              ElementsAre("--requests", "8", "--no-chunked-prefill", "--exact", "--rate", "4.5", "--router",
                          "least-outstanding-tokens"));
  EXPECT_THAT(serve_flags({"hbm.bandwidth_gbps=64", "serve.find_rate=false", "serve.chunked_prefill=true"}, "."),
              ::testing::IsEmpty());
  nlohmann::json m = sweep_manifest(s);
  EXPECT_EQ(m["command"], "serve");
  EXPECT_EQ(m["base_arch"]["name"], "lpu-small");  // serve.* keys are no config keys
  // A run sweep's manifest and hash say nothing of a command (they stay what they were).
  EXPECT_FALSE(sweep_manifest(load("")).contains("command"));
}

TEST(ServeSweep, KeysOutsideServingSweepsAndUnknownKeysNameTheirLine) {
  EXPECT_THAT(error_of(std::string(kHead) + "axes:\n  serve.rate: [1, 2]\n"),
              HasSubstr("s.yaml:5: axes.serve.rate: serving keys need `command: serve`"));
  EXPECT_THAT(error_of(std::string(kHead) + "set: {serve.rate: 1}\n"),
              HasSubstr("s.yaml:4: set.serve.rate: serving keys"));
  std::string e = serve_error("axes:\n  serve.rat: [1]\n");
  EXPECT_THAT(e, HasSubstr("s.yaml:5: axes.serve.rat: unknown serving key 'serve.rat'; expected one of: serve.rate,"));
  EXPECT_THAT(serve_error("set:\n  serve:\n    json: x.json\n"),
              HasSubstr("s.yaml:6: set.serve.json: unknown serving key"));
  EXPECT_THAT(error_of("command: generate\nworkloads: [tiny-llama]\n"),
              HasSubstr("s.yaml:1: command: expected run or serve"));
}

TEST(ServeSweep, ValuesOfTheWrongTypeAreRejectedOnLoad) {
  EXPECT_THAT(serve_error("axes:\n  serve.rate: [1, fast]\n"),
              HasSubstr("s.yaml:5: axes.serve.rate: value fast rejected by lpu serve: serve.rate: expected a finite "
                        "number, got 'fast'"));
  EXPECT_THAT(serve_error("axes:\n  serve.rate: [.nan]\n"), HasSubstr("expected a finite number"));
  EXPECT_THAT(serve_error("axes:\n  serve.requests: [1.5]\n"), HasSubstr("serve.requests: expected a whole number"));
  EXPECT_THAT(serve_error("axes:\n  serve.seed: [-1]\n"), HasSubstr("serve.seed: expected a whole number >= 0"));
  EXPECT_THAT(serve_error("set: {serve.chunked_prefill: maybe}\n"),
              HasSubstr("s.yaml:4: set.serve.chunked_prefill: rejected by lpu serve: serve.chunked_prefill: expected "
                        "true or false, got 'maybe'"));
}

TEST(ServeSweep, ValuesAreCheckedAsLpuServeChecksThem) {
  EXPECT_THAT(serve_error("axes:\n  serve.rate: [4, 0]\n"),
              HasSubstr("axes.serve.rate: value 0 rejected by lpu serve: rate: expected > 0"));
  EXPECT_THAT(serve_error("axes:\n  serve.router: [magic]\n"),
              HasSubstr("axes.serve.router: value magic rejected by lpu serve: router: 'magic'"));
  EXPECT_THAT(serve_error("axes:\n  serve.arrivals: [weibull]\n"), HasSubstr("--arrivals: 'weibull'"));
  EXPECT_THAT(serve_error("axes:\n  serve.prompt: ['uniform:9:3']\n"),
              HasSubstr("axes.serve.prompt: value uniform:9:3"));
  EXPECT_THAT(serve_error("axes:\n  serve.chunk_size: [0]\n"), HasSubstr("chunk_size must be >= 1, got 0"));
  EXPECT_THAT(serve_error("axes:\n  serve.requests: [0]\n"), HasSubstr("requests: expected >= 1, got 0"));
  EXPECT_THAT(serve_error("axes:\n  serve.replicas: [0]\n"), HasSubstr("replicas must be >= 1, got 0"));
  EXPECT_THAT(serve_error("axes:\n  serve.prefill_replicas: [-1]\n"), HasSubstr("--prefill-replicas: expected >= 0"));
  EXPECT_THAT(serve_error("set: {serve.slo_ttft_ms: 0}\n"),
              HasSubstr("s.yaml:4: set.serve.slo_ttft_ms: rejected by lpu serve"));
  // Keys fine alone that lpu serve rejects together: a prefill pool with a link of 0 Gbit/s.
  EXPECT_THAT(serve_error("axes:\n  serve.prefill_replicas: [0, 1]\n  serve.link_gbps: [0, 100]\n"),
              HasSubstr("s.yaml:5: axes: the combination serve.prefill_replicas=1, serve.link_gbps=0 is rejected by "
                        "lpu serve: link: bandwidth_gbps must be > 0"));
  EXPECT_THAT(serve_error("set: {serve.find_rate: true, serve.trace_file: workloads/traces/chat-1000.csv}\n"),
              HasSubstr("--find-rate: searches arrival rates of the generator"));
  EXPECT_THAT(serve_error("axes:\n  serve.trace_file: [no-such-trace.csv]\n"),
              HasSubstr("axes.serve.trace_file: value no-such-trace.csv rejected by lpu serve: "));
}

TEST(ServeSweep, WorkloadsPoliciesAndTracesFitServing) {
  EXPECT_THAT(error_of("command: serve\nworkloads: [ln_gelu_add]\n"),
              HasSubstr("s.yaml:2: workloads[0]: workload ln_gelu_add is not a built-in LLM"));
  EXPECT_THAT(serve_error("fusion: [none, search]\n"),
              HasSubstr("s.yaml:4: fusion[1]: 'search': serving prices every step with a fixed policy"));
  EXPECT_THAT(serve_error("traces: reference\n"), HasSubstr("s.yaml:4: traces: a serving sweep records no traces"));
  EXPECT_EQ(load_sweep_string(std::string(kServeHead) + "fusion: [none, greedy]\n", "s.yaml").policies.size(), 2u);
}

// The example of docs/sweeps.md loads, and every point is a serving run of the sweep file's keys.
TEST(ServeSweep, ExampleSweepFileLoads) {
  SweepSpec s = load_sweep_file("configs/sweeps/serve_tiny.yaml");
  EXPECT_TRUE(s.serving());
  EXPECT_EQ(expand_points(s).size(), 6u);
}

// `set:` may fix workload.* and serve.* keys: the manifest's base config and the sweep hash are
// made from the config keys alone (a `set: {workload.batch: 2}` failed to load in both before).
TEST(ServeSweep, SetKeysThatAreNoConfigKeysLeaveTheBaseConfigAlone) {
  SweepSpec w = load_sweep_string("workloads: [tiny-llama]\nfusion: [greedy]\nset: {workload.batch: 2}\n", "s.yaml");
  EXPECT_EQ(sweep_manifest(w)["base_arch"]["name"], "lpu-small");
  SweepSpec a = load_sweep_string(std::string(kServeHead) + "set: {serve.rate: 2}\n", "s.yaml");
  SweepSpec b = load_sweep_string(std::string(kServeHead) + "set: {serve.rate: 3}\n", "s.yaml");
  EXPECT_NE(sweep_hash(a), sweep_hash(b));  // the fixed serving keys are part of what points compute
}
