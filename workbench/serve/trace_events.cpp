#include "serve/trace_events.h"

#include <algorithm>
#include <string>

#include "support/error.h"

namespace lpu::serve {
namespace {

using Json = nlohmann::json;

double us(double s) { return s * 1e6; }

Json meta(int pid, int tid, const std::string& what, Json args) {
  Json e{{"ph", "M"}, {"pid", pid}, {"name", what}, {"args", std::move(args)}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

// A complete slice from `from_s` to `to_s`; its duration is the difference of the two ends in
// microseconds, so a slice that starts where another ends never overlaps it after rounding.
Json slice(int pid, int tid, const std::string& name, double from_s, double to_s, Json args) {
  double ts = us(from_s);
  return Json{{"ph", "X"},   {"pid", pid}, {"tid", tid},           {"name", name},
              {"cat", name}, {"ts", ts},   {"dur", us(to_s) - ts}, {"args", std::move(args)}};
}

Json counter(int pid, const std::string& name, double at_s, Json args) {
  return Json{{"ph", "C"}, {"pid", pid}, {"name", name}, {"ts", us(at_s)}, {"args", std::move(args)}};
}

std::string pool_title(const std::string& pool) { return pool + " pool"; }

// One replica's track: a slice per step, and counters of the batch (0 while idle) and KV blocks.
void add_replica(Json& events, int pid, const ReplicaSeries& s) {
  int tid = s.index + 1;
  std::string name = strcat("replica ", s.index);
  events.push_back(meta(pid, tid, "thread_name", {{"name", name}}));
  events.push_back(meta(pid, tid, "thread_sort_index", {{"sort_index", tid}}));
  for (size_t i = 0; i < s.samples.size(); ++i) {
    const StepSample& m = s.samples[i];
    double end = m.start_s + m.duration_s;
    double use = s.kv_capacity_blocks > 0 ? static_cast<double>(m.kv_blocks_used) / s.kv_capacity_blocks : 0;
    events.push_back(slice(pid, tid, strcat("step ", i), m.start_s, end,
                           {{"seqs", m.seqs},
                            {"tokens", m.tokens},
                            {"prefill_tokens", m.prefill_tokens},
                            {"decode_tokens", m.tokens - m.prefill_tokens},
                            {"kv_blocks_used", m.kv_blocks_used},
                            {"kv_use", use},
                            {"waiting", m.waiting}}));
    events.push_back(counter(pid, name + " batch", m.start_s, {{"seqs", m.seqs}, {"tokens", m.tokens}}));
    events.push_back(counter(pid, name + " KV blocks", m.start_s, {{"used", m.kv_blocks_used}}));
    bool idle_after = i + 1 == s.samples.size() || s.samples[i + 1].start_s > end;
    if (idle_after) events.push_back(counter(pid, name + " batch", end, {{"seqs", 0}, {"tokens", 0}}));
  }
}

// A request's phases, back to back: queueing, prefill, the KV transfer (disaggregated), decode.
// A phase the run stopped in (truncated) ends at `end_s` and says so.
void add_request(Json& events, int pid, int tid, const RequestRecord& q, double end_s) {
  events.push_back(meta(pid, tid, "thread_name", {{"name", strcat("request ", q.id)}}));
  events.push_back(meta(pid, tid, "thread_sort_index", {{"sort_index", tid}}));
  Json args{{"id", q.id},
            {"prompt_tokens", q.prompt_tokens},
            {"output_tokens", q.output_tokens},
            {"prefill_replica", q.prefill_replica},
            {"decode_replica", q.decode_replica},
            {"tokens_generated", q.tokens_generated},
            {"preemptions", q.preemptions}};
  auto phase = [&](const std::string& name, double from, double to, bool reached) {
    if (!reached) to = std::max(end_s, from);
    if (to > from || !reached)
      events.push_back(slice(pid, tid, reached ? name : name + " (unfinished)", from, to, args));
    return reached;
  };
  if (!phase("queueing", q.arrival_s, q.first_scheduled_s, q.first_scheduled_s >= 0)) return;
  bool handed_off = q.decode_replica >= 0;
  double prefill_end = handed_off ? q.first_token_s - q.kv_transfer_s : q.first_token_s;
  if (!phase("prefill", q.first_scheduled_s, prefill_end, q.first_token_s >= 0)) return;
  if (handed_off) phase("KV transfer", prefill_end, q.first_token_s, true);
  phase("decode", q.first_token_s, q.last_token_s, q.completed());
}

}  // namespace

std::vector<size_t> sampled_request_indices(size_t requests, size_t cap) {
  std::vector<size_t> out;
  if (requests <= cap) {
    for (size_t i = 0; i < requests; ++i) out.push_back(i);
    return out;
  }
  if (cap == 1) return {0};
  for (size_t i = 0; i < cap; ++i) out.push_back(i * (requests - 1) / (cap - 1));  // distinct: cap <= requests
  return out;
}

Json serve_trace_json(const ServeResult& r, size_t max_request_tracks) {
  Json events = Json::array();
  std::vector<std::string> pools;  // in the order of r.replicas: unified, or prefill then decode
  for (const ReplicaSeries& s : r.replicas)
    if (std::find(pools.begin(), pools.end(), s.pool) == pools.end()) pools.push_back(s.pool);
  for (size_t p = 0; p < pools.size(); ++p) {
    int pid = static_cast<int>(p) + 1;
    events.push_back(meta(pid, -1, "process_name", {{"name", pool_title(pools[p])}}));
    events.push_back(meta(pid, -1, "process_sort_index", {{"sort_index", pid}}));
    for (const ReplicaSeries& s : r.replicas)
      if (s.pool == pools[p]) add_replica(events, pid, s);
  }
  int req_pid = static_cast<int>(pools.size()) + 1;
  events.push_back(meta(req_pid, -1, "process_name", {{"name", "requests"}}));
  events.push_back(meta(req_pid, -1, "process_sort_index", {{"sort_index", req_pid}}));
  double first = r.requests.empty() ? 0 : r.requests.front().arrival_s;
  for (const RequestRecord& q : r.requests) first = std::min(first, q.arrival_s);
  double end_s = first + r.summary.duration_s;
  std::vector<size_t> shown = sampled_request_indices(r.requests.size(), max_request_tracks);
  for (size_t k = 0; k < shown.size(); ++k)
    add_request(events, req_pid, static_cast<int>(k) + 1, r.requests[shown[k]], end_s);
  bool all = shown.size() == r.requests.size();
  Json other{{"kind", "serve"},
             {"requests", r.requests.size()},
             {"request_tracks", shown.size()},
             {"request_sample", all ? "every request"
                                    : strcat(shown.size(), " of ", r.requests.size(),
                                             " requests, evenly spaced in arrival order (first and last included)")},
             {"truncated", r.truncated}};
  bool steps_missing = std::any_of(r.replicas.begin(), r.replicas.end(),
                                   [](const ReplicaSeries& s) { return s.steps > 0 && s.samples.empty(); });
  if (steps_missing) other["steps"] = "not recorded (ClusterConfig::record_steps off): replica tracks are empty";
  return Json{{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"otherData", other}};
}

}  // namespace lpu::serve
