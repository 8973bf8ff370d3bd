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

// A sweep over the interval ends: between two consecutive ends the set of active categories is
// fixed, and the time goes to the first of them in priority order.
std::array<double, kSpanKinds> attribute_span(const std::vector<SpanInterval>& log, double lo, double hi) {
  std::array<double, kSpanKinds> out{};
  struct Edge {
    double t;
    int delta;
    Span what;
  };
  std::vector<Edge> edges;
  edges.reserve(2 * log.size());
  for (const auto& iv : log) {
    double a = std::max(iv.lo, lo), b = std::min(iv.hi, hi);
    if (b <= a) continue;
    edges.push_back({a, +1, iv.what});
    edges.push_back({b, -1, iv.what});
  }
  // Ties: the order among edges at one instant does not matter (no time passes between them).
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.t < y.t; });
  std::array<int, kSpanKinds> active{};
  double t = lo;
  for (const Edge& e : edges) {
    if (e.t > t) {
      int k = 0;
      while (k < kSpanKinds - 1 && active[static_cast<size_t>(k)] == 0) ++k;
      out[static_cast<size_t>(k)] += e.t - t;
      t = e.t;
    }
    active[static_cast<size_t>(e.what)] += e.delta;
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
