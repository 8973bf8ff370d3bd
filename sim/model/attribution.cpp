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
using Segment = std::pair<double, double>;  // [lo, hi) in ps

// Sorts v by start: an insertion sort, which takes about one pass over a range that is nearly
// in order (each engine logs as it starts an instruction); past a budget of moves it hands
// over to std::sort.
void sort_nearly_sorted(std::vector<Segment>& v) {
  size_t budget = 4 * v.size() + 64;
  for (size_t i = 1; i < v.size(); ++i) {
    if (!(v[i].first < v[i - 1].first)) continue;
    const Segment x = v[i];
    size_t j = i;
    for (; j > 0 && x.first < v[j - 1].first; --j) v[j] = v[j - 1];
    v[j] = x;
    if (i - j > budget) {
      std::sort(v.begin(), v.end());
      return;
    }
    budget -= i - j;
  }
}

// v as the union of its segments: sorted, disjoint, in place.
void make_union(std::vector<Segment>& v) {
  sort_nearly_sorted(v);
  size_t n = 0;
  for (const Segment& s : v) {
    if (n > 0 && s.first <= v[n - 1].second)
      v[n - 1].second = std::max(v[n - 1].second, s.second);
    else
      v[n++] = s;
  }
  v.resize(n);
}

// The union of two sorted disjoint lists into `out` (sorted, disjoint); returns its length.
double merge_unions(const std::vector<Segment>& a, const std::vector<Segment>& b, std::vector<Segment>& out) {
  out.clear();
  double length = 0;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const Segment& s = j == b.size() || (i < a.size() && a[i].first <= b[j].first) ? a[i++] : b[j++];
    if (!out.empty() && s.first <= out.back().second) {
      if (s.second > out.back().second) {
        length += s.second - out.back().second;
        out.back().second = s.second;
      }
    } else {
      out.push_back(s);
      length += s.second - s.first;
    }
  }
  return length;
}
}  // namespace

// Each category's intervals as a union; then, in priority order, a category gets what its
// union adds to the union of the categories before it. Times are whole picoseconds (the
// model rounds every duration up to one), so the lengths are exact sums in any order.
std::array<double, kSpanKinds> attribute_span(const std::vector<SpanInterval>& log, double lo, double hi) {
  std::array<double, kSpanKinds> out{};
  thread_local std::array<std::vector<Segment>, kSpanKinds> by_kind;  // reused: one call per kernel
  thread_local std::vector<Segment> covered, merged;
  for (auto& v : by_kind) v.clear();
  for (const auto& iv : log) {
    const double a = std::max(iv.lo, lo), b = std::min(iv.hi, hi);
    if (b > a) by_kind[static_cast<size_t>(iv.what)].push_back({a, b});
  }
  covered.clear();
  double covered_length = 0;
  constexpr size_t kOther = static_cast<size_t>(Span::Other);
  for (size_t k = 0; k < kOther; ++k) {
    if (by_kind[k].empty()) continue;
    make_union(by_kind[k]);
    const double length = merge_unions(covered, by_kind[k], merged);
    out[k] = length - covered_length;
    covered_length = length;
    covered.swap(merged);
  }
  out[kOther] = std::max(hi - lo - covered_length, 0.0);
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
