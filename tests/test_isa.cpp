#include <gtest/gtest.h>

#include "driver/compile.h"
#include "isa/program.h"
#include "support/error.h"
#include "workload/transformer.h"
#include "workload/workload.h"

using namespace lpu;

// parse(print(p)) == p and print is stable, for the programs of every built-in workload and
// both policies.
TEST(Isa, RoundTripsEveryGeneratedProgram) {
  for (const auto& b : model_builders())
    for (const std::string policy : {"none", "greedy"}) {
      const TransformerShape* ts = find_transformer(b.name);
      if (ts && ts->name.rfind("tiny", 0) != 0) continue;  // full-size LLMs are timing-only
      WorkloadSpec w;
      w.name = b.name;
      w.model = b.name;
      w.seq_len = 20;
      for (const auto& [k, v] : b.params) w.params[k] = 96;
      CompileOptions o;
      o.fusion = policy;
      o.codegen.lmu_bytes = 64 * 1024;
      Program p = compile_graph(build_graph(w), o).code.program;
      std::string text = print_program(p);
      Program q = parse_program(text, "gen.s");
      ASSERT_EQ(p.code.size(), q.code.size()) << b.name;
      for (size_t i = 0; i < p.code.size(); ++i) ASSERT_TRUE(p.code[i].same_as(q.code[i])) << print_instruction(p.code[i]);
      EXPECT_EQ(print_program(q), text);
      ASSERT_EQ(p.buffers.size(), q.buffers.size());
      EXPECT_EQ(p.kernels, q.kernels);
    }
}

TEST(Isa, MalformedAssemblyNamesTheLine) {
  const std::string text =
      ".program t\n"
      ".kernel 0 k\n"
      "  vxe.add [2, 2] lm:0x0 <- lm:0x10 [2, 1], #1.0\n"
      "  vxe.bogus [2, 2] lm:0x0 <- lm:0x10 [2, 1]\n";
  try {
    parse_program(text, "bad.s");
    FAIL();
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.s:4:"), std::string::npos) << m;
    EXPECT_NE(m.find("bogus"), std::string::npos) << m;
  }
}

TEST(Isa, WrongOperandCountIsRejected) {
  EXPECT_THROW(parse_program(".program t\nvxe.add [1, 1] lm:0x0 <- #1.0\n"), InputError);
  EXPECT_THROW(parse_program(".program t\ndma.load f32 [0, 4] lm:0x0 <- hbm:0x0 [4, 1]\n"), InputError);
  EXPECT_THROW(parse_program("vxe.add [1, 1] lm:0x0 <- #1.0, #2.0\n"), InputError);  // no .program
}
