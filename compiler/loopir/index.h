// Index expressions of the loop IR: integer affine combinations of atoms plus a constant.
// An atom is a loop variable (a LoopVar: i0, i1, ... for output dims; r0, r1, ... for reduction
// dims), floordiv(index, d) or mod(index, d) with d > 0 (mod is always non-negative, like
// Halide's). That is enough for views, broadcasts, transposes, slices and reshapes. Expressions
// are kept in a canonical form (terms sorted by atom text, so i10 sorts before i2; zero terms
// dropped), so two indices are equal exactly when their canonical texts are equal. The text
// order stays (not LoopVar order) because the loop IR's printed form, and the goldens made
// from it, spell the terms in that order.
#pragma once
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lpu {

class Index;

// A loop variable of a loop-IR node: output dimension `dim` (spelled i0, i1, ...) or reduction
// dimension `dim` (r0, r1, ...). The one place that spells and parses the names: code builds
// and inspects variables through this type (Index atoms hold one), and only printed text, the
// IR's and the handlers', holds the spelling.
struct LoopVar {
  enum class Kind { Output, Reduction };
  Kind kind = Kind::Output;
  size_t dim = 0;
  static LoopVar output(size_t d) { return {Kind::Output, d}; }
  static LoopVar reduction(size_t d) { return {Kind::Reduction, d}; }
  std::string name() const;
  // The variable a name spells; false for anything else ("x", "i", "r01", "i-1").
  static bool parse(const std::string& name, LoopVar& out);
  bool operator==(const LoopVar&) const = default;
  // Output variables before reduction ones, each kind by dim (i2 before i10): lets maps key by
  // variable (Index ranges and environments).
  auto operator<=>(const LoopVar&) const = default;
};
// The first n variables of a kind: i0..i{n-1} or r0..r{n-1}.
std::vector<LoopVar> loop_vars(LoopVar::Kind kind, size_t n);

struct IndexAtom {
  enum Kind { Var, FloorDiv, Mod } kind = Var;
  LoopVar var;                      // Var
  std::shared_ptr<const Index> arg; // FloorDiv / Mod
  int64_t divisor = 1;              // FloorDiv / Mod
  std::string str() const;
};

class Index {
 public:
  Index() = default;
  static Index constant(int64_t c);
  static Index var(const LoopVar& v);

  Index operator+(const Index& o) const;
  Index operator-(const Index& o) const;
  Index operator*(int64_t k) const;
  Index floordiv(int64_t d) const;
  Index mod(int64_t d) const;

  bool is_constant() const { return terms_.empty(); }
  int64_t constant_part() const { return constant_; }
  // Coefficient of a plain variable (0 when absent or only inside div/mod).
  int64_t coefficient(const LoopVar& v) const;
  // True when the expression is constant + sum of coef * var (no div/mod).
  bool is_affine() const;
  // Every variable that occurs, at any depth, in LoopVar order.
  std::vector<LoopVar> variables() const;
  bool depends_on(const LoopVar& v) const;

  // Simplifies using variable ranges (var in [0, range)): floordiv/mod of an expression
  // q*d + r with 0 <= r < d become q and r; and x//d*d + x%d folds back to x.
  Index simplify(const std::map<LoopVar, int64_t>& ranges) const;
  // Smallest and largest value over the ranges (variables not in `ranges` are unbounded:
  // returns false).
  bool bounds(const std::map<LoopVar, int64_t>& ranges, int64_t& lo, int64_t& hi) const;

  // Replace variables by index expressions.
  Index substitute(const std::map<LoopVar, Index>& env) const;
  int64_t evaluate(const std::map<LoopVar, int64_t>& env) const;

  // The terms (coefficient, atom) in canonical order, without the constant: lets a handler
  // print the expression in its own language (handlers/cpp_source.cpp).
  std::vector<std::pair<int64_t, IndexAtom>> terms() const;

  std::string str() const;
  bool operator==(const Index& o) const { return str() == o.str(); }

 private:
  int64_t constant_ = 0;
  std::map<std::string, std::pair<int64_t, IndexAtom>> terms_;  // key: atom text
  void add_term(int64_t coef, const IndexAtom& atom);
};

}  // namespace lpu
