// Steps compiled through programs symbolic in one integer, with guards (CompileCache::Symbolic,
// isa/program_template.h): the dynamic dimension of a generation's decode steps is the
// context; that of a serving step is the shift of its cached sequences' contexts (between two
// changes of the batch, every decode moves its context by one token per step). Whoever calls
// names the symbol's value, the key of every value (the step's exact key with the symbol left
// out) and how to compile the step at a value; this class decides between instantiating a
// template whose guard holds, extending a guard by a verifying compile, and recompiling, and
// explains each recompile (`--explain-recompiles`).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "driver/compile_cache.h"

namespace lpu {

struct SymbolicCounters {
  // Steps instantiated from a template, guards extended by a verifying compile, guard failures
  // (recompiles), templates made.
  size_t instantiated = 0, guard_extensions = 0, guard_failures = 0, templates = 0;
};

// RankTemplates::make, and whether the other devices run device 0's programs rotated (that
// check is the simulator's, sim/device_symmetry.h, which the compiler's cache cannot make).
std::optional<RankTemplates> make_rank_templates(const CompiledStep& a, int64_t sa, const CompiledStep& b, int64_t sb,
                                                 int64_t hbm_alignment, std::string& why);

class SymbolicSteps {
 public:
  using Entry = std::shared_ptr<const CompiledStep>;
  using Compile = std::function<Entry(int64_t)>;  // the step compiled at a value of the symbol
  using Explain = std::function<void(const std::string&)>;
  // How a new key gets its template. Eager (a generation: the next step is known to come at
  // x + 1): the step is compiled at x and at x + 1. Lazy (serving: the batch may change at the
  // next step): the step is compiled at x alone and kept; a template is made when the same key
  // comes next at x + 1, from the two compiles the steps needed anyway.
  enum class Make { Eager, Lazy };
  SymbolicSteps(CompileCache& cache, int64_t hbm_alignment, Make make, Explain explain)
      : cache_(cache), alignment_(hbm_alignment), make_(make), explain_(std::move(explain)) {}

  // The program of the step at symbol value `x` whose key is `key`. `max_x` bounds the values
  // probed beyond x; `where` names the step in explanations; `instantiated` is set when the
  // program came from a template.
  Entry program(const std::string& key, int64_t x, int64_t max_x, const std::string& where, const Compile& compile_at,
                bool& instantiated);
  const SymbolicCounters& counters() const { return n_; }
  // Instantiated one-device steps carry their template, encoded (CompiledStep::source): for a
  // generation whose steps are simulated in forked processes. Without `programs` such a step's
  // CompiledStep::program is left empty (the workers instantiate it; nothing here reads it).
  void set_encode_templates(bool on, bool programs) {
    encode_templates_ = on;
    source_programs_ = programs;
  }

 private:
  Entry instantiate(CompileCache::Symbolic& t, int64_t x, bool& inst);
  Entry new_template(const std::string& key, int64_t x, int64_t max_x, const std::string& where,
                     const Compile& compile_at, Entry failed_probe, int64_t failed_at);
  void explain(const std::string& line) const {
    if (explain_) explain_(line);
  }

  CompileCache& cache_;
  int64_t alignment_;
  Make make_;
  Explain explain_;
  bool encode_templates_ = false, source_programs_ = true;
  SymbolicCounters n_;
  uint64_t clock_ = 0;  // steps asked for (CompileCache::Symbolic::last_used)
  // The last compiles, by key and value (program()).
  struct Recent {
    std::string key;
    int64_t x;
    Entry e;
  };
  static constexpr size_t kRecentCompiles = 4;
  std::deque<Recent> recent_;
  // Lazy: the last key compiled without a template, its value and its program.
  std::string last_key_;
  int64_t last_x_ = 0;
  Entry last_;
};

}  // namespace lpu
