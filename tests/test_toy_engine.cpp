// Adding an engine touches only the files docs/adding-an-engine.md names: this test adds a toy
// engine with its opcode rows (toy/toy_isa.h, through LPU_ISA_EXTENSION), its module and its
// config section (toy/toy_engine.cpp), builds the ISA and the simulator with them
// (tests/CMakeLists.txt) and runs a program that uses it through every layer: assembly, the
// binary form, the memory check, the ISU and the statistics.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/arch_config.h"
#include "isa/encoding.h"
#include "isa/program.h"
#include "simulator.h"
#include "support/error.h"

namespace lpu {
namespace {

const char* const kProgram = R"(.program toy
.buffer x hbm:0x0 f32[2, 8] input
.buffer y hbm:0x40 f32[2, 8] output
.kernel 0 double
  dma.load f32 [2, 8] lm:0x0 <- hbm:0x0 [8, 1]
  toy.double [2, 8] lm:0x40 <- lm:0x0 [8, 1]
  dma.store f32 [2, 8] hbm:0x40 [8, 1] <- lm:0x40
  halt
)";

ArchConfig toy_arch(const std::string& toy_section) {
  std::ifstream f(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml");
  std::stringstream yaml;
  yaml << f.rdbuf() << "\n" << toy_section;
  return load_arch_config_string(yaml.str(), "lpu-small-toy");
}

TEST(ToyEngine, TheTableDescribesItsOpcode) {
  const OpcodeInfo* info = opcode_by_name("toy.double");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->op, Opcode::ToyDouble);
  EXPECT_EQ(opcode_unit(Opcode::ToyDouble), Unit::Toy);
  EXPECT_STREQ(unit_name(Unit::Toy), "toy");
  EXPECT_EQ(opcode_by_code(200), info);
  EXPECT_EQ(kOpcodeCount, 16u);  // the 15 built-in rows and the toy's
}

TEST(ToyEngine, AssemblyAndBinaryRoundTrip) {
  Program p = parse_program(kProgram, "toy.s");
  Program q = parse_program(print_program(p), "printed.s");
  Program r = decode_program(encode_program(p));
  ASSERT_EQ(q.code.size(), p.code.size());
  ASSERT_EQ(r.code.size(), p.code.size());
  for (size_t i = 0; i < p.code.size(); ++i) {
    EXPECT_TRUE(q.code[i].same_as(p.code[i])) << print_instruction(q.code[i]);
    EXPECT_TRUE(r.code[i].same_as(p.code[i])) << print_instruction(r.code[i]);
  }
  EXPECT_EQ(print_instruction(p.code[1]), "toy.double [2, 8] lm:0x40 <- lm:0x0 [8, 1]");
}

TEST(ToyEngine, ItsConfigSectionIsReadFromTheYaml) {
  ArchConfig a = toy_arch("toy:\n  lanes: 8\n");
  EXPECT_EQ(a.extension("toy", "lanes"), 8);
  EXPECT_EQ(a.extension("toy", "latency_cycles"), 2);  // its default
  EXPECT_THROW(toy_arch("toy:\n  speed: 8\n"), InputError);
  EXPECT_THROW(toy_arch("toy:\n  lanes: 0\n"), InputError);
}

TEST(ToyEngine, SimulatesAProgramThatUsesIt) {
  Program p = parse_program(kProgram, "toy.s");
  ArchConfig a = toy_arch("toy:\n  lanes: 4\n  latency_cycles: 3\n");
  Tensor x(TensorType{DType::f32, {2, 8}});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i) - 5;
  TensorMap inputs{{"x", x}};
  SimOptions opts;
  opts.functional = true;
  SimResult res = simulate(p, a, opts, &inputs);
  const Tensor& y = res.outputs.at("y");
  for (size_t i = 0; i < x.data.size(); ++i) EXPECT_EQ(y.data[i], 2 * x.data[i]);
  const EngineStats* toy = nullptr;
  for (const auto& e : res.stats.engines)
    if (e.name == "toy") toy = &e;
  ASSERT_NE(toy, nullptr);
  EXPECT_EQ(toy->instructions, 1u);
  EXPECT_EQ(toy->work, 16);
  EXPECT_EQ(toy->work_unit, "element_ops");
  EXPECT_EQ(toy->busy_cycles, 3u + 16 / 4);  // latency_cycles + ceil(elements / lanes)
  EXPECT_EQ(res.stats.instructions, 3u);
  // The memory check knows its operands from the table's roles: a tile past the LMU fails.
  Program big = parse_program(".program big\n  toy.double [1, 8] lm:0x7ffffff0 <- lm:0x0 [8, 1]\n  halt\n", "big.s");
  EXPECT_THROW(simulate(big, a, {}), InputError);
}

// Its form (Unary) carries a destination row stride, which the engine honours: two
// toy.double fill the halves of a [2, 16] register.
TEST(ToyEngine, ItsFormCarriesADestinationRowStride) {
  Program p = parse_program(R"(.program toy
.buffer x hbm:0x0 f32[2, 8] input
.buffer y hbm:0x40 f32[2, 16] output
.kernel 0 double
  dma.load f32 [2, 8] lm:0x0 <- hbm:0x0 [8, 1]
  toy.double [2, 8] lm:0x40 [16, 1] <- lm:0x0 [8, 1]
  toy.double [2, 8] lm:0x60 [16, 1] <- lm:0x0 [8, 1]
  dma.store f32 [2, 16] hbm:0x40 [16, 1] <- lm:0x40
  halt
)",
                            "toy.s");
  EXPECT_EQ(print_instruction(p.code[1]), "toy.double [2, 8] lm:0x40 [16, 1] <- lm:0x0 [8, 1]");
  EXPECT_TRUE(decode_program(encode_program(p)).code[2].same_as(p.code[2]));
  Tensor x(TensorType{DType::f32, {2, 8}});
  for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(i) - 5;
  TensorMap inputs{{"x", x}};
  SimOptions opts;
  opts.functional = true;
  const Tensor y = simulate(p, toy_arch(""), opts, &inputs).outputs.at("y");
  for (size_t i = 0; i < y.data.size(); ++i) EXPECT_EQ(y.data[i], 2 * x.data[i / 16 * 8 + i % 8]) << i;
}

}  // namespace
}  // namespace lpu
