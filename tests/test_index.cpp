#include <gtest/gtest.h>

#include "loopir/index.h"
#include "support/error.h"

using namespace lpu;

namespace {
const LoopVar I0 = LoopVar::output(0), I1 = LoopVar::output(1), I2 = LoopVar::output(2), R0 = LoopVar::reduction(0);
Index var(const LoopVar& v) { return Index::var(v); }
}  // namespace

TEST(Index, CanonicalFormAndEquality) {
  Index i = var(I0) * 4 + var(I1) + Index::constant(2);
  Index j = var(I1) + Index::constant(2) + var(I0) * 4;
  EXPECT_EQ(i, j);
  EXPECT_EQ(i.str(), "4*i0 + i1 + 2");
  EXPECT_EQ((i - i).str(), "0");
}

// Terms print sorted by their text, not by LoopVar order: i10 before i2, r0 after (i2)%3. The
// loop IR's printed form and its goldens are spelled in this order.
TEST(Index, TermsSortByAtomText) {
  Index i = var(LoopVar::output(2)) + var(LoopVar::output(10)) * 3 + var(R0) + var(I2).mod(3) * 2;
  EXPECT_EQ(i.str(), "2*(i2)%3 + 3*i10 + i2 + r0");
  EXPECT_EQ(i.variables(), (std::vector<LoopVar>{I2, LoopVar::output(10), R0}));
  EXPECT_EQ(i.terms().at(1).second.var, LoopVar::output(10));
}

TEST(Index, FloorDivAndModSimplify) {
  Index i = var(I0) * 8 + var(I1) * 4;
  EXPECT_EQ(i.floordiv(4).str(), "2*i0 + i1");
  EXPECT_EQ((var(I0) * 8 + Index::constant(5)).floordiv(4).str(), "2*i0 + 1");
  EXPECT_EQ((var(I0) * 8).mod(4).str(), "0");
  EXPECT_EQ((var(I0) * 8 + var(I1)).mod(4).str(), "(i1)%4");
  EXPECT_EQ(Index::constant(-7).floordiv(2).str(), "-4");
  EXPECT_EQ(Index::constant(-7).mod(2).str(), "1");
}

TEST(Index, EvaluateAndSubstitute) {
  Index i = (var(I1) * 3 + Index::constant(1)).floordiv(2) + var(R0).mod(5);
  EXPECT_EQ(i.evaluate({{I1, 3}, {R0, 12}}), 5 + 2);
  EXPECT_THROW(i.evaluate({{I1, 3}}), InternalError);
  Index s = i.substitute({{I1, Index::constant(3)}, {R0, Index::constant(12)}});
  EXPECT_TRUE(s.is_constant());
  EXPECT_EQ(s.constant_part(), 7);
  EXPECT_FALSE(i.is_affine());
  EXPECT_TRUE(i.depends_on(R0));
  EXPECT_FALSE(i.depends_on(I0));
  EXPECT_EQ(i.variables(), (std::vector<LoopVar>{I1, R0}));
}

TEST(Index, Coefficients) {
  Index i = var(I0) * 1024 + var(R0);
  EXPECT_EQ(i.coefficient(I0), 1024);
  EXPECT_EQ(i.coefficient(R0), 1);
  EXPECT_EQ(i.coefficient(I1), 0);
  EXPECT_TRUE(i.is_affine());
}

TEST(Index, SimplifyWithRanges) {
  std::map<LoopVar, int64_t> r = {{I0, 4}, {I1, 8}, {I2, 1}};
  // Splitting a flat index back into (row, col) of an [4, 8] view: exact with ranges.
  Index flat = var(I0) * 8 + var(I1);
  EXPECT_EQ(flat.floordiv(8).simplify(r).str(), "i0");
  EXPECT_EQ(flat.mod(8).simplify(r).str(), "i1");
  // Size-1 variables are zero.
  EXPECT_EQ((var(I2) * 5 + var(I1)).simplify(r).str(), "i1");
  // x//d*d + x%d == x, for any x.
  Index x = var(I0) * 3 + var(I1);
  Index recombined = x.floordiv(4) * 4 + x.mod(4);
  EXPECT_EQ(recombined.simplify(r).str(), x.str());
  int64_t lo, hi;
  ASSERT_TRUE(flat.bounds(r, lo, hi));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 31);
  EXPECT_FALSE((flat + var(R0)).bounds(r, lo, hi));  // r0 has no range here
}
