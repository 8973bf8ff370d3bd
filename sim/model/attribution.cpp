#include "model/attribution.h"

#include <algorithm>

namespace lpu::sim {

const char* span_name(Span s) {
  switch (s) {
    case Span::Bandwidth: return "bandwidth";
    case Span::Compute: return "compute";
    case Span::Latency: return "latency";
    case Span::Sync: return "sync";
    case Span::Dependency: return "dependency";
    case Span::Issue: return "issue";
    case Span::Other: return "other";
  }
  return "other";
}

namespace {
struct Edge {
  double t;
  Span what;
};
bool earlier(const Edge& x, const Edge& y) { return x.t < y.t; }

// Sorts v[lo, hi) by time: an insertion sort, which takes about one pass over a range that
// is nearly in order; past a budget of moves it hands over to std::sort.
void sort_nearly_sorted(std::vector<Edge>& v, size_t lo, size_t hi) {
  size_t budget = 4 * (hi - lo) + 64;
  for (size_t i = lo + 1; i < hi; ++i) {
    if (!(v[i].t < v[i - 1].t)) continue;
    const Edge x = v[i];
    size_t j = i;
    for (; j > lo && x.t < v[j - 1].t; --j) v[j] = v[j - 1];
    v[j] = x;
    if (i - j > budget) {
      std::sort(v.begin() + static_cast<std::ptrdiff_t>(lo), v.begin() + static_cast<std::ptrdiff_t>(hi), earlier);
      return;
    }
    budget -= i - j;
  }
}

// Sorts edges by time (ties in any order). Each category's edges come nearly in time order
// (its intervals are logged by one engine or the ISU as they start or end), the categories
// interleaved: a counting sort by category, an adaptive sort of each, and a merge of the
// sorted categories. `by_kind` is scratch.
void sort_by_time(std::vector<Edge>& v, std::vector<Edge>& by_kind) {
  std::array<size_t, kSpanKinds + 1> first{};
  for (const Edge& e : v) ++first[static_cast<size_t>(e.what) + 1];
  for (size_t k = 1; k <= kSpanKinds; ++k) first[k] += first[k - 1];
  by_kind.resize(v.size());
  std::array<size_t, kSpanKinds> next{};
  std::copy(first.begin(), first.end() - 1, next.begin());
  for (const Edge& e : v) by_kind[next[static_cast<size_t>(e.what)]++] = e;
  for (size_t k = 0; k < kSpanKinds; ++k) sort_nearly_sorted(by_kind, first[k], first[k + 1]);
  // Merge the sorted categories pairwise, by_kind -> v -> by_kind ..., until one run is left.
  std::vector<size_t> runs(first.begin(), first.end());
  runs.erase(std::unique(runs.begin(), runs.end()), runs.end());
  std::vector<Edge>* src = &by_kind;
  std::vector<Edge>* dst = &v;
  while (runs.size() > 2) {
    std::vector<size_t> merged{runs[0]};
    for (size_t r = 0; r + 1 < runs.size(); r += 2) {
      const size_t a = runs[r], m = runs[r + 1], b = r + 2 < runs.size() ? runs[r + 2] : runs[r + 1];
      auto it = [&](std::vector<Edge>* w, size_t i) { return w->begin() + static_cast<std::ptrdiff_t>(i); };
      std::merge(it(src, a), it(src, m), it(src, m), it(src, b), it(dst, a), earlier);
      merged.push_back(b);
    }
    runs = std::move(merged);
    std::swap(src, dst);
  }
  if (src != &v) v.swap(*src);
}
}  // namespace

// A sweep over the interval ends: between two consecutive ends the set of active categories is
// fixed, and the time goes to the first of them in priority order. Starts and ends are sorted
// apart and merged by the sweep. Ties: the order among edges at one instant does not matter
// (no time passes between them).
std::array<double, kSpanKinds> attribute_span(const std::vector<SpanInterval>& log, double lo, double hi) {
  std::array<double, kSpanKinds> out{};
  thread_local std::vector<Edge> starts, ends, scratch;  // reused: one call per kernel
  starts.clear();
  ends.clear();
  for (const auto& iv : log) {
    double a = std::max(iv.lo, lo), b = std::min(iv.hi, hi);
    if (b <= a) continue;
    starts.push_back({a, iv.what});
    ends.push_back({b, iv.what});
  }
  sort_by_time(starts, scratch);
  sort_by_time(ends, scratch);
  std::array<int, kSpanKinds> active{};
  double t = lo;
  size_t s = 0, e = 0;
  while (s < starts.size() || e < ends.size()) {
    const bool start = s < starts.size() && (e == ends.size() || starts[s].t <= ends[e].t);
    const Edge& x = start ? starts[s++] : ends[e++];
    if (x.t > t) {
      int k = 0;
      while (k < kSpanKinds - 1 && active[static_cast<size_t>(k)] == 0) ++k;
      out[static_cast<size_t>(k)] += x.t - t;
      t = x.t;
    }
    active[static_cast<size_t>(x.what)] += start ? 1 : -1;
  }
  if (hi > t) out[static_cast<size_t>(Span::Other)] += hi - t;
  return out;
}

void append_union(std::vector<std::pair<double, double>>& windows, Span what, std::vector<SpanInterval>& log) {
  if (windows.empty()) return;
  std::sort(windows.begin(), windows.end());
  SpanInterval cur{windows[0].first, windows[0].second, what};
  for (size_t i = 1; i < windows.size(); ++i) {
    if (windows[i].first <= cur.hi) {
      cur.hi = std::max(cur.hi, windows[i].second);
    } else {
      log.push_back(cur);
      cur = {windows[i].first, windows[i].second, what};
    }
  }
  log.push_back(cur);
}

}  // namespace lpu::sim
