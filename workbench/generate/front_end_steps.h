// A generation's compiles through front-end templates (driver/front_end_template.h): where a
// decode step's program changes with the context in ways no program template follows (on a
// small local memory the rows per tile and the register layout of attention move every few
// contexts), the step still has to be compiled, but its front half (normalisation, lowering,
// fusion), which does not change, comes from a template and only tiling and code generation
// run. A template is made from the front ends compiled at two consecutive contexts; a context
// past its guard extends it by compiling the front end at a further context and verifying it
// there (doubling the interval, as program templates do); a failed verification drops it.
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "driver/compile_cache.h"
#include "driver/front_end_template.h"
#include "workload/workload.h"

namespace lpu {

struct FrontEndCounters {
  // Compiles whose front end was instantiated; front ends compiled in full (probes included);
  // templates made; guards extended; verifications that failed.
  size_t instantiated = 0, compiled = 0, templates = 0, extensions = 0, failures = 0;
};

class FrontEndSteps {
 public:
  // `max_context`: probes go no further.
  explicit FrontEndSteps(int64_t max_context) : max_context_(max_context) {}
  // The compile of `s` (a decode step at some depth; its context is the symbol) with `opts`
  // and `memo` as compile_with_memo would, under `key` (everything but the context that the
  // compile reads).
  Compilation compile(const std::string& key, const WorkloadSpec& s, const CompileOptions& opts, KernelCostMemo& memo);
  const FrontEndCounters& counters() const { return n_; }

 private:
  struct Held {
    std::string key;
    FrontEndTemplate t;
    // The tilings and code of the template's fixed kernels, from its first instantiation's
    // compile.
    std::vector<std::optional<KernelTiling>> tilings;
    KernelCodeReuse code;
  };
  Compilation instantiate(Held& h, int64_t x);
  struct Full {
    std::string key;
    int64_t x;
    FrontEnd fe;
  };
  const FrontEnd& full(const std::string& key, const WorkloadSpec& s, int64_t x, const CompileOptions& opts,
                       KernelCostMemo& memo);
  Held* holding(const std::string& key, int64_t x);
  int64_t max_context_;
  std::vector<Held> templates_;
  std::deque<Full> recent_;  // the last front ends compiled in full, by key and context
  FrontEndCounters n_;
};

}  // namespace lpu
