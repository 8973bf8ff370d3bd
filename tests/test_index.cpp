#include <gtest/gtest.h>

#include "loopir/index.h"

using namespace lpu;

TEST(Index, CanonicalFormAndEquality) {
  Index i = Index::var("i0") * 4 + Index::var("i1") + Index::constant(2);
  Index j = Index::var("i1") + Index::constant(2) + Index::var("i0") * 4;
  EXPECT_EQ(i, j);
  EXPECT_EQ(i.str(), "4*i0 + i1 + 2");
  EXPECT_EQ((i - i).str(), "0");
}

TEST(Index, FloorDivAndModSimplify) {
  Index i = Index::var("i0") * 8 + Index::var("i1") * 4;
  EXPECT_EQ(i.floordiv(4).str(), "2*i0 + i1");
  EXPECT_EQ((Index::var("i0") * 8 + Index::constant(5)).floordiv(4).str(), "2*i0 + 1");
  EXPECT_EQ((Index::var("i0") * 8).mod(4).str(), "0");
  EXPECT_EQ((Index::var("i0") * 8 + Index::var("i1")).mod(4).str(), "(i1)%4");
  EXPECT_EQ(Index::constant(-7).floordiv(2).str(), "-4");
  EXPECT_EQ(Index::constant(-7).mod(2).str(), "1");
}

TEST(Index, EvaluateAndSubstitute) {
  Index i = (Index::var("x") * 3 + Index::constant(1)).floordiv(2) + Index::var("y").mod(5);
  EXPECT_EQ(i.evaluate({{"x", 3}, {"y", 12}}), 5 + 2);
  Index s = i.substitute({{"x", Index::constant(3)}, {"y", Index::constant(12)}});
  EXPECT_TRUE(s.is_constant());
  EXPECT_EQ(s.constant_part(), 7);
  EXPECT_FALSE(i.is_affine());
  EXPECT_TRUE(i.depends_on("y"));
  EXPECT_EQ(i.variables(), (std::vector<std::string>{"x", "y"}));
}

TEST(Index, Coefficients) {
  Index i = Index::var("i0") * 1024 + Index::var("r0");
  EXPECT_EQ(i.coefficient("i0"), 1024);
  EXPECT_EQ(i.coefficient("r0"), 1);
  EXPECT_EQ(i.coefficient("i1"), 0);
  EXPECT_TRUE(i.is_affine());
}

TEST(Index, SimplifyWithRanges) {
  std::map<std::string, int64_t> r = {{"i0", 4}, {"i1", 8}, {"i2", 1}};
  // Splitting a flat index back into (row, col) of an [4, 8] view: exact with ranges.
  Index flat = Index::var("i0") * 8 + Index::var("i1");
  EXPECT_EQ(flat.floordiv(8).simplify(r).str(), "i0");
  EXPECT_EQ(flat.mod(8).simplify(r).str(), "i1");
  // Size-1 variables are zero.
  EXPECT_EQ((Index::var("i2") * 5 + Index::var("i1")).simplify(r).str(), "i1");
  // x//d*d + x%d == x, for any x.
  Index x = Index::var("i0") * 3 + Index::var("i1");
  Index recombined = x.floordiv(4) * 4 + x.mod(4);
  EXPECT_EQ(recombined.simplify(r).str(), x.str());
  int64_t lo, hi;
  ASSERT_TRUE(flat.bounds(r, lo, hi));
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 31);
}
