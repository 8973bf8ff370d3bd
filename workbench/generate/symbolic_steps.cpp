#include "generate/symbolic_steps.h"

#include <algorithm>

#include "device_symmetry.h"
#include "support/error.h"

namespace lpu {

std::optional<RankTemplates> make_rank_templates(const CompiledStep& a, int64_t sa, const CompiledStep& b, int64_t sb,
                                                 int64_t hbm_alignment, std::string& why) {
  auto t = RankTemplates::make(a, sa, b, sb, hbm_alignment, why);
  if (t && t->devices() > 1) {
    std::vector<const Program*> bases;
    for (size_t r = 1; r < t->devices(); ++r) bases.push_back(&t->base(r));
    t->set_rotations(t->same_symbolic_part_everywhere() &&
                     rotation_asymmetry(t->base(0), bases, static_cast<int>(t->devices())).empty());
  }
  return t;
}

namespace {
// Skips making templates for a while: 1, 2, 4 ... 64 steps (CompileCache::symbolic_backoff).
void back_off(CompileCache::Backoff& b, int64_t x) {
  b.length = b.length ? std::min<int64_t>(2 * b.length, 64) : 1;
  b.from = x;
  b.until = x + b.length;
}
}  // namespace

SymbolicSteps::Entry SymbolicSteps::instantiate(CompileCache::Symbolic& t, int64_t x, bool& inst) {
  auto p = std::make_shared<CompiledStep>();
  if (encode_templates_ && t.program.devices() == 1) {
    try {
      if (!t.encoded) t.encoded = std::make_shared<const std::string>(t.program.rank(0).encode());
      p->source = CompiledStep::Source{t.id, t.encoded, x};
    } catch (const InputError&) {
      // A field beyond the binary records (a dimension >= 2^32): the step goes whole, as any other.
    }
  }
  if (!p->source || source_programs_) p->program = t.program.instantiate(x);
  p->rotations = t.program.rotations();
  if (!p->rotations) p->others = t.program.instantiate_others(x);
  p->kernels = t.kernels;
  p->compulsory_hbm_bytes = t.compulsory_hbm_bytes;
  inst = true;
  ++n_.instantiated;
  return Entry(p);
}

SymbolicSteps::Entry SymbolicSteps::program(const std::string& key, int64_t x, int64_t max_x, const std::string& where,
                                            const Compile& compile_step_at, bool& inst) {
  ++clock_;
  // A probe that failed at x + 1 is the second program of the template made next: each
  // compile of the last few is kept by (key, value), and exact (the step compiled again would
  // be the same program).
  const Compile compile_at = [&](int64_t c) {
    for (const auto& r : recent_)
      if (r.x == c && r.key == key) return r.e;
    Entry e = compile_step_at(c);
    if (recent_.size() == kRecentCompiles) recent_.pop_front();
    recent_.push_back({key, c, e});
    return e;
  };
  CompileCache::Symbolic* below = nullptr;  // the template whose guard ends nearest below x
  size_t outside = 0;
  for (auto& t : cache_.symbolic) {
    if (t.key != key) continue;
    if (t.program.holds(x)) {
      t.last_used = clock_;
      return instantiate(t, x, inst);
    }
    ++outside;
    if (t.program.hi() < x && (!below || t.program.hi() > below->program.hi())) below = &t;
  }
  // The guard nearest below x (the one a growing context just left) names the failure.
  std::string failed;
  if (below)
    failed = strcat("context ", x, " outside [", below->program.lo(), ", ", below->program.hi(), "]");
  else if (outside)
    failed = strcat("context ", x, " below every guard");
  if (outside > 1) failed += strcat(" (and outside ", outside - 1, " more cached programs' guards)");
  // A template costs two compiles and pays only if its guard grows: after one that never
  // grew, the next steps are compiled alone, 1, 2, 4 ... 64 of them (reset by one that grew).
  auto& backoff = cache_.symbolic_backoff[key];
  if (backoff.covers(x)) {
    explain(strcat(where, ": compiled alone, no template (the last template's guard never grew)"));
    return compile_at(x);
  }
  Entry failed_probe;
  int64_t failed_at = -1;
  if (below && below->program.hi() == x - 1) {
    // The context just left this guard: extend it by verifying the template at a further
    // context, doubling the interval.
    const RankTemplates& tp = below->program;
    int64_t p = std::min(max_x, tp.hi() + (tp.hi() - tp.lo() + 1));
    Entry probe = compile_at(p);
    std::string why;
    if (below->program.verify(*probe, p, why)) {
      below->last_used = clock_;
      ++n_.guard_extensions;
      backoff.length = 0;
      if (p == x) return probe;
      return instantiate(*below, x, inst);
    }
    ++n_.guard_failures;
    explain(strcat(where, ": guard failed: ", failed, "; extending [", tp.lo(), ", ", tp.hi(), "] to context ", p,
                   " does not hold: ", why, "; recompiling"));
    if (tp.hi() - tp.lo() <= 1) back_off(backoff, x);
    failed_probe = probe;  // at x: the new template starts from it; beyond: it may extend the new one
    failed_at = p;
  } else if (!failed.empty()) {
    ++n_.guard_failures;
    explain(strcat(where, ": guard failed: ", failed, "; recompiling"));
  } else if (make_ == Make::Lazy && !(last_ && last_key_ == key && last_x_ == x - 1)) {
    // Serving: a batch whose shape (sequences, their tokens, their contexts relative to the
    // smallest) has no program yet; its next step, if the batch stays, makes the template.
    explain(strcat(where, ": a new batch, no program for its shape yet; compiled"));
  }
  return new_template(key, x, max_x, where, compile_at, failed_probe, failed_at);
}

// Eager: compiles the step at x and, room and back-off permitting, at x + 1, and makes a
// template of the two. Lazy: the template is made from the previous step's program when it
// had the same key at x - 1; else the step is compiled alone and kept for the next one.
SymbolicSteps::Entry SymbolicSteps::new_template(const std::string& key, int64_t x, int64_t max_x,
                                                 const std::string& where, const Compile& compile_at,
                                                 Entry failed_probe, int64_t failed_at) {
  auto& backoff = cache_.symbolic_backoff[key];
  Entry here = failed_at == x ? failed_probe : compile_at(x);
  Entry first = here, second;
  int64_t x0 = x;
  if (make_ == Make::Lazy) {
    const bool follows = last_ && last_key_ == key && last_x_ == x - 1;
    if (!follows) {
      last_key_ = key, last_x_ = x, last_ = here;
      return here;
    }
    first = last_, second = here, x0 = x - 1;
    last_.reset();
  } else {
    if (x + 1 > max_x || backoff.covers(x)) return here;
    second = compile_at(x + 1);
  }
  std::string why;
  auto t = make_rank_templates(*first, x0, *second, x0 + 1, alignment_, why);
  if (!t) {
    explain(strcat(where, ": the programs at contexts ", x0, " and ", x0 + 1, " make no template: ", why));
    back_off(backoff, x);
    return here;
  }
  ++n_.templates;
  // The probe that failed the old guard, compiled anyway, may lie in the new one's: free to check.
  if (failed_at > x0 + 1 && t->verify(*failed_probe, failed_at, why)) ++n_.guard_extensions;
  CompileCache::Symbolic made{key, std::move(*t), here->kernels, here->compulsory_hbm_bytes, clock_,
                              cache_.next_symbolic_id++, nullptr};
  if (cache_.symbolic.size() < cache_.symbolic_capacity()) {
    cache_.symbolic.push_back(std::move(made));
  } else if (make_ == Make::Lazy) {
    // A serving run's batches come and go: the template used least recently gives way (a
    // generation's templates are kept, as they always were: its contexts only grow).
    auto oldest = std::min_element(cache_.symbolic.begin(), cache_.symbolic.end(),
                                   [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
    *oldest = std::move(made);
  }
  return here;
}

}  // namespace lpu
