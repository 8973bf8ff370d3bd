// Where a kernel's time went: every engine and the ISU log intervals of what they did for a
// kernel (moving its bytes, computing, waiting on a hazard, ...); after the run, each instant
// of the kernel's span goes to the highest-priority category active then, so the categories
// partition the span exactly (docs/sim-model.md, "Per-kernel attribution"). Logging is an
// append per instruction and per HBM transaction: no per-cycle work.
#pragma once
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace lpu::sim {

// Highest priority first: an instant in which the kernel both moves bytes and computes is a
// bandwidth instant. `Other` is what no logged interval covers (zero when the log is complete).
enum class Span : uint8_t { Bandwidth, Compute, Latency, Sync, Dependency, Issue, Other };
constexpr int kSpanKinds = 7;
const char* span_name(Span s);  // "bandwidth", "compute", ...

struct SpanInterval {
  double lo, hi;  // ps
  Span what;
};

// The span [lo, hi) split by category, in ps (sums to hi - lo).
std::array<double, kSpanKinds> attribute_span(const std::vector<SpanInterval>& log, double lo, double hi);

// Merges [lo, hi) windows (sorted in place) into their union, appended to `log` as `what`;
// an instruction's HBM channel windows overlap heavily, so the log keeps only their union.
void append_union(std::vector<std::pair<double, double>>& windows, Span what, std::vector<SpanInterval>& log);

}  // namespace lpu::sim
