// A compile's front half (driver/compile.h: FrontEnd, the lowered loop IR and the kernels the
// scheduler chose) symbolic in one integer, the decode step's context: built from the front
// ends at two contexts, it instantiates the front end at any context of its guard, so that a
// step whose program cannot come from a program template (isa/program_template.h: its tiling
// or local-memory layout moves with the context) is compiled by the back half alone (tiling
// and code generation) instead of by the whole pipeline.
//
// It works on the loop IR's text (print_loop_ir; parse_loop_ir rebuilds it exactly): the two
// texts must be the same but for integers, each of which must be affine in the symbol with an
// integer slope (a digit of a non-integer constant must not change), and the two schedules
// the same kernels (names, nodes, outputs) with affine row counts and the same code generator
// options. The guard is an interval [lo, hi] of the symbol; verify() extends it to a further
// context by comparing the front end compiled there. Between two verified points the template
// is taken to hold: lowering does not decide on the context, and the scheduler's fusion
// decisions on it are thresholds, monotone in the context, as for program templates
// (docs/generate.md). The instantiated schedule has no fusion decisions (reports read those
// from a whole compile).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "driver/compile.h"

namespace lpu {

class FrontEndTemplate {
 public:
  // Nullopt, with `why` set, when `a` (at sa) and `b` (at sb > sa) do not make a template.
  static std::optional<FrontEndTemplate> make(const FrontEnd& a, int64_t sa, const FrontEnd& b, int64_t sb,
                                              std::string& why);
  // The front end at `s` (any value of the guard; InternalError where an integer would be
  // negative).
  FrontEnd instantiate(int64_t s) const;
  // True when `f`, compiled at `s`, is what instantiate(s) gives; then the guard covers s.
  // Else false with `why`: the first difference.
  bool verify(const FrontEnd& f, int64_t s, std::string& why);
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  bool holds(int64_t s) const { return s >= lo_ && s <= hi_; }
  // Per kernel of the schedule: whether it is the same at every value of the symbol (no node
  // of it, and no buffer such a node touches, has an integer that varies), so that its tiling
  // is too.
  const std::vector<bool>& fixed_kernels() const { return fixed_kernels_; }

 private:
  struct Number {       // an integer of the text: value + slope * (s - s0)
    std::string text;   // as written at s0 (kept where the slope is 0)
    int64_t value = 0;  // at s0
    int64_t slope = 0;
  };
  std::vector<std::string> between_;  // the text around the integers: between_.size() = numbers_.size() + 1
  std::vector<Number> numbers_;
  LoopProgram base_;                 // at s0
  std::vector<bool> varying_lines_;  // per line of the text: holds an integer that varies
  std::vector<bool> fixed_kernels_;
  void find_fixed_kernels();
  Schedule schedule_;  // at s0, no decisions
  std::vector<int64_t> row_slopes_;
  CodegenOptions codegen_;
  int64_t s0_ = 0, lo_ = 0, hi_ = 0;
  std::string text_at(int64_t s) const;
};

}  // namespace lpu
