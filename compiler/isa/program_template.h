// A program symbolic in one integer (the decode step's context length): built from compiled
// programs at concrete values of the symbol, it holds every field that changes as an affine
// function of the symbol and instantiates the program at any value of its guard.
//
// It works on the instruction stream only (not on how a kernel was generated): two programs
// at s0 < s1 make a template when they have the same structure (instructions, opcodes,
// kernels, host ops, buffer names, roles and dtypes) and every numeric field f satisfies
// f(s1) - f(s0) = slope * (s1 - s0) with an integer slope. HBM addresses are taken relative to
// the HBM region they point into, and buffer bases follow the layout rule (isa/hbm_layout.h:
// regions in order, each the size of its largest buffer rounded up to the HBM alignment; both
// programs are checked to follow it, with the same regions), so buffers that grow with the
// symbol move the ones after them by an aligned amount, which is not affine but is recomputed
// exactly.
//
// The guard is the interval [lo, hi] of the symbol over which the template is known to give
// the compiled program: lo = s0, hi = s1 at first; verify() extends it to a further point s by
// comparing the instantiation with the program compiled at s. Between two verified points the
// template is taken to hold: the compiler's decisions on the context (fusion fits, rows per
// tile, column tiles, LMU allocation) are thresholds, monotone in it, so a structure that holds
// at both ends of an interval holds inside (docs/generate.md; the tests compare every context
// of ranges with tile-boundary crossings).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "isa/program.h"
#include "isa/program_fields.h"

namespace lpu {

class ProgramTemplate {
 public:
  // Nullopt, with `why` set, when `a` (at sa) and `b` (at sb > sa) do not make a template.
  static std::optional<ProgramTemplate> make(const Program& a, int64_t sa, const Program& b, int64_t sb,
                                             int64_t hbm_alignment, std::string& why);
  // The program at `s` (any value; exact within the guard).
  Program instantiate(int64_t s) const;
  // The same in place: `p` holds base() or an earlier instantiation of this template, and only
  // the symbolic fields are written (every one of them, from base()), so no program is copied.
  void instantiate_into(Program& p, int64_t s) const;
  // The template as bytes (its base as encoding.h's binary form, then the symbolic part), for a
  // process that instantiates it without compiling (a generation's forked simulations); decode
  // checks what it reads against the base and throws InputError naming what is wrong.
  std::string encode() const;
  static ProgramTemplate decode(const std::string& bytes);
  // True when `p`, compiled at `s`, equals instantiate(s); then the guard covers s (it grows
  // to [lo, max(hi, s)] for s > hi). Else false with `why`: the first difference.
  bool verify(const Program& p, int64_t s, std::string& why);
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  bool holds(int64_t s) const { return s >= lo_ && s <= hi_; }
  size_t symbolic_fields() const { return deltas_.size() + buffer_dims_.size(); }
  // The program at the first point it was made from.
  const Program& base() const { return base_; }
  // Whether `o` changes exactly the same fields by the same slopes from the same point, so two
  // instantiations at any s differ only where the bases differ (tensor-parallel ranks).
  bool same_symbolic_part(const ProgramTemplate& o) const;

 private:
  struct Delta {  // field of instruction `instr` (source operand `src`) changes by `slope` per unit
    uint32_t instr;
    fields::Field field;
    uint16_t src;
    int64_t slope;
    bool operator==(const Delta&) const = default;
  };
  struct HbmRef {  // instruction `instr`'s HBM address: buffer `buffer`'s base + off0 + slope * (s - s0)
    uint32_t instr;
    uint32_t buffer;
    int64_t off0, slope;
    bool operator==(const HbmRef&) const = default;
  };
  struct DimDelta {
    uint32_t buffer, dim;
    int64_t slope;
    bool operator==(const DimDelta&) const = default;
  };
  Program base_;                 // at s0
  std::vector<size_t> leaders_;  // per buffer of base_, its HBM region's leader (isa/hbm_layout.h)
  int64_t s0_ = 0, lo_ = 0, hi_ = 0, alignment_ = 1;
  std::vector<Delta> deltas_;
  std::vector<HbmRef> hbm_refs_;
  std::vector<DimDelta> buffer_dims_;
};

// Whether `in` addresses HBM through hbm_addr (DMA, gather, the SXE's B operand).
bool uses_hbm_address(Opcode op);

}  // namespace lpu
