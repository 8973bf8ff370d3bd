// The serving run's Perfetto trace (serve/trace_events.h): a track per replica with its steps
// and a track per request with its phases, slices never overlapping on a track, times equal to
// the records'. Also writes the report fixtures (tests/fixtures/serve/) the Python tests read.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "serve/cluster.h"
#include "serve/generator.h"
#include "serve/result_io.h"
#include "serve/trace_events.h"
#include "serve_test_util.h"

using namespace lpu::serve;
using lpu::serve::testing::LinearCost;
using Json = nlohmann::json;

namespace {

RequestList poisson(int64_t n, double rate, const std::string& prompt, const std::string& output) {
  GeneratorSpec g;
  g.requests = n;
  g.seed = 7;
  g.arrival.rate = rate;
  g.prompt = parse_length_spec(prompt, "prompt");
  g.output = parse_length_spec(output, "output");
  return generate_requests(g);
}

// Two replicas, batching, chunked prefill and KV pressure (some preemptions).
ClusterConfig unified(StepCostModel* cost) {
  ClusterConfig c;
  c.pool.cost = cost;
  c.pool.replicas = 2;
  c.pool.scheduler.max_num_batched_tokens = 512;
  c.pool.scheduler.max_num_seqs = 32;
  c.pool.scheduler.chunk_size = 256;
  c.pool.scheduler.kv_capacity_blocks = 300;
  c.router = RouterKind::LeastOutstandingTokens;
  c.slo = Slo{250, 25};
  return c;
}

ClusterConfig disaggregated(StepCostModel* prefill, StepCostModel* decode) {
  ClusterConfig c = unified(prefill);
  c.pool.replicas = 1;
  c.disaggregated = true;
  c.decode_pool = c.pool;
  c.decode_pool.cost = decode;
  c.decode_pool.replicas = 2;
  c.link = LinkConfig{100, 10, 131072};
  return c;
}

struct Slice {
  double ts, dur;
  std::string name;
};

// (pid, tid) -> the track's slices in time order; names of processes and threads.
struct Tracks {
  std::map<std::pair<int, int>, std::vector<Slice>> slices;
  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::string> thread;
};

Tracks tracks_of(const Json& trace) {
  Tracks t;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") t.slices[{e["pid"], e["tid"]}].push_back({e["ts"], e["dur"], e["name"]});
    if (e["ph"] == "M" && e["name"] == "process_name") t.process[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") t.thread[{e["pid"], e["tid"]}] = e["args"]["name"];
  }
  for (auto& [k, v] : t.slices)
    std::stable_sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) { return a.ts < b.ts; });
  return t;
}

void expect_no_overlap(const Tracks& t) {
  for (const auto& [track, v] : t.slices)
    for (size_t i = 0; i + 1 < v.size(); ++i)
      EXPECT_LE(v[i].ts + v[i].dur, v[i + 1].ts + 1e-6)
          << t.thread.at(track) << ": " << v[i].name << " overlaps " << v[i + 1].name;
}

int pid_named(const Tracks& t, const std::string& name) {
  for (const auto& [pid, n] : t.process)
    if (n == name) return pid;
  ADD_FAILURE() << "no process " << name;
  return -1;
}

}  // namespace

TEST(ServeTraceEvents, ATrackPerReplicaWithAStepSliceEach) {
  LinearCost cost;
  ServeResult r = simulate_serving(poisson(120, 30, "uniform:16:600", "uniform:1:80"), unified(&cost));
  Tracks t = tracks_of(serve_trace_json(r));
  int pid = pid_named(t, "unified pool");
  for (const ReplicaSeries& s : r.replicas) {
    EXPECT_EQ(t.thread.at({pid, s.index + 1}), "replica " + std::to_string(s.index));
    const std::vector<Slice>& v = t.slices.at({pid, s.index + 1});
    ASSERT_EQ(v.size(), s.samples.size());
    ASSERT_EQ(static_cast<int64_t>(v.size()), s.steps);
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_DOUBLE_EQ(v[i].ts, s.samples[i].start_s * 1e6);
      EXPECT_NEAR(v[i].dur, s.samples[i].duration_s * 1e6, 1e-6);
      EXPECT_EQ(v[i].name, "step " + std::to_string(i));
    }
  }
  expect_no_overlap(t);
}

TEST(ServeTraceEvents, ATrackPerRequestWithItsPhases) {
  LinearCost cost;
  ServeResult r = simulate_serving(poisson(120, 30, "uniform:16:600", "uniform:1:80"), unified(&cost));
  ASSERT_FALSE(r.truncated);
  Json trace = serve_trace_json(r);
  Tracks t = tracks_of(trace);
  int pid = pid_named(t, "requests");
  ASSERT_EQ(trace["otherData"]["request_tracks"], r.requests.size());
  for (size_t k = 0; k < r.requests.size(); ++k) {
    const RequestRecord& q = r.requests[k];
    std::pair<int, int> track{pid, static_cast<int>(k) + 1};
    EXPECT_EQ(t.thread.at(track), "request " + std::to_string(q.id));
    const std::vector<Slice>& v = t.slices.at(track);
    // Back to back from arrival to the last token, the phases in order.
    std::vector<std::string> names;
    for (const Slice& s : v) names.push_back(s.name);
    std::vector<std::string> expected;
    if (q.first_scheduled_s > q.arrival_s) expected.push_back("queueing");
    expected.push_back("prefill");
    if (q.last_token_s > q.first_token_s) expected.push_back("decode");
    EXPECT_EQ(names, expected) << "request " << q.id;
    EXPECT_DOUBLE_EQ(v.front().ts, (expected[0] == "queueing" ? q.arrival_s : q.first_scheduled_s) * 1e6);
    EXPECT_NEAR(v.back().ts + v.back().dur, q.last_token_s * 1e6, 1e-6);
    for (size_t i = 0; i + 1 < v.size(); ++i) EXPECT_NEAR(v[i].ts + v[i].dur, v[i + 1].ts, 1e-6);
  }
  expect_no_overlap(t);
}

TEST(ServeTraceEvents, DisaggregationShowsTheKvTransferAndBothPools) {
  LinearCost prefill, decode;
  ServeResult r = simulate_serving(poisson(60, 20, "uniform:16:600", "uniform:2:40"), disaggregated(&prefill, &decode));
  ASSERT_FALSE(r.truncated);
  Tracks t = tracks_of(serve_trace_json(r));
  EXPECT_EQ(t.slices.count({pid_named(t, "prefill pool"), 1}), 1u);
  EXPECT_EQ(t.slices.count({pid_named(t, "decode pool"), 2}), 1u);
  int pid = pid_named(t, "requests");
  for (size_t k = 0; k < r.requests.size(); ++k) {
    const RequestRecord& q = r.requests[k];
    const std::vector<Slice>& v = t.slices.at({pid, static_cast<int>(k) + 1});
    auto kv = std::find_if(v.begin(), v.end(), [](const Slice& s) { return s.name == "KV transfer"; });
    ASSERT_NE(kv, v.end()) << "request " << q.id;
    EXPECT_NEAR(kv->dur, q.kv_transfer_s * 1e6, 1e-6);
    EXPECT_NEAR(kv->ts + kv->dur, q.first_token_s * 1e6, 1e-6);
  }
  expect_no_overlap(t);
}

TEST(ServeTraceEvents, ManyRequestsAreSampledEvenlyAndSaySo) {
  EXPECT_EQ(sampled_request_indices(5, 200), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sampled_request_indices(10, 4), (std::vector<size_t>{0, 3, 6, 9}));
  EXPECT_EQ(sampled_request_indices(10, 1), (std::vector<size_t>{0}));
  LinearCost cost;
  ServeResult r = simulate_serving(poisson(300, 60, "uniform:16:300", "uniform:1:40"), unified(&cost));
  Json trace = serve_trace_json(r, 50);
  EXPECT_EQ(trace["otherData"]["request_tracks"], 50);
  EXPECT_EQ(trace["otherData"]["requests"], 300);
  EXPECT_NE(trace["otherData"]["request_sample"].get<std::string>().find("50 of 300"), std::string::npos);
  Tracks t = tracks_of(trace);
  int pid = pid_named(t, "requests");
  std::set<int> tids;
  for (const auto& [track, v] : t.slices)
    if (track.first == pid) tids.insert(track.second);
  EXPECT_EQ(tids.size(), 50u);
  EXPECT_EQ(t.thread.at({pid, 50}), "request " + std::to_string(r.requests.back().id));
  EXPECT_EQ(serve_trace_json(r, 50).dump(), trace.dump());  // deterministic
}

TEST(ServeTraceEvents, ATruncatedRunEndsItsOpenPhasesWhereItStopped) {
  LinearCost cost;
  ClusterConfig c = unified(&cost);
  c.watchdog.max_steps = 40;
  ServeResult r = simulate_serving(poisson(100, 200, "uniform:16:600", "uniform:10:80"), c);
  ASSERT_TRUE(r.truncated);
  Json trace = serve_trace_json(r);
  EXPECT_EQ(trace["otherData"]["truncated"], true);
  Tracks t = tracks_of(trace);
  size_t unfinished = 0;
  for (const auto& [track, v] : t.slices)
    for (const Slice& s : v) unfinished += s.name.find("(unfinished)") != std::string::npos;
  EXPECT_EQ(static_cast<int64_t>(unfinished), r.summary.requests - r.summary.completed);
  expect_no_overlap(t);
}

// The serve JSON the report tests read (`lpu serve --json` shape: result_json plus the keys the
// CLI adds). LPU_REGEN_SERVE_FIXTURES=1 rewrites them; otherwise they must still read as one.
TEST(ServeTraceEvents, ReportFixtures) {
  bool regen = std::getenv("LPU_REGEN_SERVE_FIXTURES") != nullptr;
  // A 7B-class model on one device per replica: ~8 ms a decode step, 20 us a prefill token.
  LinearCost prefill(8e-3, 2e-5, 2e-8, 0.04), decode(8e-3, 2e-5, 2e-8, 0.04);
  struct Case {
    std::string file;
    ClusterConfig config;
    RequestList requests;
  };
  std::vector<Case> cases = {
      {"unified.json", unified(&prefill), poisson(200, 16, "lognormal:300:0.8:16:1500", "lognormal:60:0.9:1:300")},
      {"disaggregated.json", disaggregated(&prefill, &decode),
       poisson(30, 8, "lognormal:300:0.8:16:1500", "lognormal:60:0.9:1:300")}};
  cases[0].config.pool.scheduler.kv_capacity_blocks = 400;  // pressure at the peak only: a few preemptions
  for (Case& c : cases) c.config.slo = Slo{80, 10};         // tight enough that a few requests miss
  for (Case& c : cases) {
    ServeResult r = simulate_serving(c.requests, c.config);
    nlohmann::ordered_json j;  // the CLI's keys first, then result_json's in its order
    j["kind"] = "serve";
    j["workload"] = "formula-7b";
    j["arch"] = "test (LinearCost)";
    j["cost_model"] = {{"kind", "formula"}, {"time_s", "8e-3 + 2e-5 x tokens + 2e-8 x contexts"}};
    j["step_cost_error"] = {{"p50", 0.0012}, {"max", 0.0071}, {"samples", 64}};
    j["cluster"] = cluster_json(c.config);
    nlohmann::ordered_json result = result_json(r);
    for (const auto& [key, value] : result.items()) j[key] = value;
    std::string path = std::string(LPU_SOURCE_DIR) + "/tests/fixtures/serve/" + c.file;
    if (regen) std::ofstream(path) << j.dump() << "\n";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path << ": run with LPU_REGEN_SERVE_FIXTURES=1 to write it";
    Json disk = Json::parse(in);
    EXPECT_EQ(disk["kind"], "serve");
    EXPECT_EQ(disk["requests"].size(), c.requests.size()) << path;
    EXPECT_EQ(disk["replicas"].size(), r.replicas.size()) << path;
  }
}
