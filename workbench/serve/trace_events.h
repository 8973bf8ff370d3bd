// A serving run as a Chrome/Perfetto trace (ui.perfetto.dev, chrome://tracing): a process per
// pool with a track per replica (a slice per step, counters of batch size and KV use), and a
// process of requests with a track per request (queueing, prefill, KV transfer, decode).
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "serve/result.h"

namespace lpu::serve {

// Times in microseconds of simulated time, as every trace of the project (docs/reports.md).
// More requests than `max_request_tracks` get tracks for an evenly spaced sample in arrival
// order (the first and the last included); otherData says how many and which. The output is a
// pure function of `r`.
nlohmann::json serve_trace_json(const ServeResult& r, size_t max_request_tracks = 200);

// The indices into r.requests that get a track: all of them up to `cap`, else `cap` evenly
// spaced ones, ascending.
std::vector<size_t> sampled_request_indices(size_t requests, size_t cap);

}  // namespace lpu::serve
