#include "generate/front_end_steps.h"

#include <algorithm>

#include "workload/transformer.h"

namespace lpu {

namespace {
constexpr size_t kRecentFrontEnds = 4;
constexpr size_t kTemplatesKept = 16;
}  // namespace

const FrontEnd& FrontEndSteps::full(const std::string& key, const WorkloadSpec& s, int64_t x,
                                    const CompileOptions& opts, KernelCostMemo& memo) {
  for (const Full& f : recent_)
    if (f.x == x && f.key == key) return f.fe;
  WorkloadSpec at = s;
  at.context = x;
  ++n_.compiled;
  if (recent_.size() == kRecentFrontEnds) recent_.pop_front();
  recent_.push_back({key, x, front_end_with_memo(build_graph(at), opts, memo)});
  return recent_.back().fe;
}

FrontEndSteps::Held* FrontEndSteps::holding(const std::string& key, int64_t x) {
  for (Held& h : templates_)
    if (h.key == key && h.t.holds(x)) return &h;
  return nullptr;
}

Compilation FrontEndSteps::instantiate(Held& h, int64_t x) {
  ++n_.instantiated;
  if (h.code.reusable.empty()) h.code.reusable = h.t.fixed_kernels();
  Compilation c = compile_back_end(h.t.instantiate(x), h.tilings.empty() ? nullptr : &h.tilings, &h.code);
  if (h.tilings.empty()) {
    const std::vector<bool>& fixed = h.t.fixed_kernels();
    for (size_t k = 0; k < c.schedule.kernels.size(); ++k)
      h.tilings.push_back(k < fixed.size() && fixed[k] ? c.schedule.kernels[k].tiling : std::nullopt);
  }
  return c;
}

Compilation FrontEndSteps::compile(const std::string& key, const WorkloadSpec& s, const CompileOptions& opts,
                                   KernelCostMemo& memo) {
  const int64_t x = s.context;
  if (Held* h = holding(key, x)) return instantiate(*h, x);
  // The template whose guard ends nearest below x: extend it by a probe, doubling its interval.
  auto below = templates_.end();
  for (auto it = templates_.begin(); it != templates_.end(); ++it)
    if (it->key == key && it->t.hi() < x && (below == templates_.end() || it->t.hi() > below->t.hi())) below = it;
  if (below != templates_.end()) {
    const FrontEndTemplate& t = below->t;
    const int64_t p = std::max(x, std::min(max_context_, t.hi() + (t.hi() - t.lo() + 1)));
    std::string why;
    if (below->t.verify(full(key, s, p, opts, memo), p, why)) {
      ++n_.extensions;
      return instantiate(*below, x);
    }
    ++n_.failures;
    templates_.erase(below);
  }
  // Compiled in full; with the front end at x - 1 still at hand, a template of the two.
  FrontEnd here = full(key, s, x, opts, memo);
  for (const Full& f : recent_) {
    if (f.key != key || f.x != x - 1) continue;
    std::string why;
    if (auto t = FrontEndTemplate::make(f.fe, x - 1, here, x, why)) {
      ++n_.templates;
      if (templates_.size() == kTemplatesKept) templates_.erase(templates_.begin());
      templates_.push_back({key, std::move(*t), {}, {}});
    }
    break;
  }
  return compile_back_end(std::move(here));
}

}  // namespace lpu
