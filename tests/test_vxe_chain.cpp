// A fused VXE chain (docs/isa.md): vxe.OP.POST applies a unary post op to OP's result before
// it is written, and " => rRED lm:0xA" also reduces each row of the written result into an
// [R, 1] column, so softmax's sub, exp and row sum take one pass. The ISA side (assembly,
// binary, rules, templates, operands) and the simulator's (values, timing, energy, scoreboard).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "config/arch_config.h"
#include "isa/encoding.h"
#include "isa/operands.h"
#include "isa/program.h"
#include "isa/program_fields.h"
#include "isa/program_template.h"
#include "model/vxe_timing.h"
#include "simulator.h"
#include "support/error.h"

using namespace lpu;

namespace {

constexpr size_t kRec = 64;  // an instruction record's bytes (docs/isa.md, "Encoded form")

const char* kChains =
    ".program chains\n"
    ".kernel 0 softmax\n"
    "  vxe.sub.exp [8, 1040] lm:0x4040 <- lm:0x14440 [1040, 1], lm:0x80 [1, 0] => rsum lm:0x0\n"
    "  vxe.sub.exp [8, 1040] lm:0x4040 <- lm:0x14440 [1040, 1], lm:0x80 [1, 0]\n"
    "  vxe.mul [8, 16] lm:0x200 [32, 1] <- lm:0x1000 [16, 1], #2 => rmax lm:0x100\n"
    "  vxe.neg.reciprocal [4, 4] lm:0x0 <- lm:0x40 [4, 1]\n"
    "  loop 2\n"
    "  vxe.add.relu [2, 8] lm:0x200 <- lm:0x300 [8, 1], lm:0x400 [8, 1] => rmean lm:0x500 step lm:+0x1000\n"
    "  endloop\n"
    "  vxe.sub [8, 1040] lm:0x4040 <- lm:0x14440 [1040, 1], lm:0x80 [1, 0]\n"
    "  halt\n";

std::string parse_error(const std::string& text) {
  try {
    parse_program(text, "t.s");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string decode_error(const std::vector<uint8_t>& bin) {
  try {
    decode_program(bin.data(), bin.size(), "t.lpubin", Checksum::Skip);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

size_t code_at(const std::vector<uint8_t>& bin, const Program& p) {
  size_t operands = 0;
  for (const auto& in : p.code) operands += in.srcs.size();
  return bin.size() - operands * 16 - p.code.size() * kRec;
}

void expect_same_program(const Program& a, const Program& b) {
  ASSERT_EQ(a.code.size(), b.code.size());
  for (size_t i = 0; i < a.code.size(); ++i)
    EXPECT_TRUE(a.code[i].same_as(b.code[i])) << print_instruction(a.code[i]) << " vs " << print_instruction(b.code[i]);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Assembly and binary

TEST(VxeChain, AssemblyRoundTrips) {
  Program p = parse_program(kChains, "c.s");
  ASSERT_EQ(p.code.size(), 9u);
  const Instruction& c = p.code[0];
  EXPECT_EQ(c.opcode, Opcode::VxeOp);
  EXPECT_EQ(c.vop, ScalarOp::sub);
  EXPECT_EQ(c.post, ScalarOp::exp);
  EXPECT_EQ(c.acc, ReductionType::sum);
  EXPECT_EQ(c.acc_addr, 0u);
  EXPECT_EQ(p.code[1].post, ScalarOp::exp);
  EXPECT_FALSE(p.code[1].acc);
  EXPECT_FALSE(p.code[2].post);
  EXPECT_EQ(p.code[2].acc, ReductionType::max);
  EXPECT_EQ(p.code[2].acc_addr, 0x100u);
  EXPECT_EQ(p.code[2].lm_rs, 32);
  EXPECT_EQ(p.code[5].lm_step, 0x1000);
  EXPECT_FALSE(p.code[7].post || p.code[7].acc);
  EXPECT_EQ(print_instruction(c),
            "vxe.sub.exp [8, 1040] lm:0x4040 <- lm:0x14440 [1040, 1], lm:0x80 [1, 0] => rsum lm:0x0");
  EXPECT_EQ(print_instruction(p.code[2]),
            "vxe.mul [8, 16] lm:0x200 [32, 1] <- lm:0x1000 [16, 1], #2.0 => rmax lm:0x100");
  EXPECT_EQ(print_instruction(p.code[3]), "vxe.neg.reciprocal [4, 4] lm:0x0 <- lm:0x40 [4, 1]");
  EXPECT_EQ(print_instruction(p.code[5]),
            "vxe.add.relu [2, 8] lm:0x200 <- lm:0x300 [8, 1], lm:0x400 [8, 1] => rmean lm:0x500 step lm:+0x1000");
  EXPECT_EQ(print_instruction(p.code[7]), "vxe.sub [8, 1040] lm:0x4040 <- lm:0x14440 [1040, 1], lm:0x80 [1, 0]");
  const std::string text = print_program(p);
  Program q = parse_program(text, "c2.s");
  EXPECT_EQ(print_program(q), text);
  expect_same_program(p, q);
  // Each field tells instructions apart.
  for (auto change :
       {+[](Instruction& in) { in.post.reset(); }, +[](Instruction& in) { in.post = ScalarOp::log; },
        +[](Instruction& in) { in.acc = ReductionType::min; }, +[](Instruction& in) { in.acc_addr = 4; }}) {
    Instruction other = c;
    change(other);
    EXPECT_FALSE(other.same_as(c));
  }
}

// The chain lives in the record's tail: byte 57 the post op's op-table index + 1, byte 58 the
// row reduction's code + 1, the group slot (60) the column's address; an instruction without a
// chain has zeros there, as before.
TEST(VxeChain, BinaryRoundTripsInTheRecordsTail) {
  Program p = parse_program(kChains, "c.s");
  std::vector<uint8_t> bin = encode_program(p);
  Program q = decode_program(bin, "c.lpubin");
  expect_same_program(p, q);
  EXPECT_EQ(encode_program(q), bin);
  const size_t at = code_at(bin, p);
  // The op table in first-use order: sub, exp (the post op), mul, neg, reciprocal, add, relu.
  EXPECT_EQ(bin[at + 2], 0);       // sub
  EXPECT_EQ(bin[at + 57], 1 + 1);  // exp
  EXPECT_EQ(bin[at + 58], 0 + 1);  // rsum
  EXPECT_EQ(bin[at + 59], 0);
  for (size_t b = 60; b < 64; ++b) EXPECT_EQ(bin[at + b], 0) << b;  // lm:0x0
  EXPECT_EQ(bin[at + 2 * kRec + 58], 1 + 1);                        // rmax
  EXPECT_EQ(bin[at + 2 * kRec + 60], 0x00);
  EXPECT_EQ(bin[at + 2 * kRec + 61], 0x01);                                    // lm:0x100
  EXPECT_EQ(bin[at + 3 * kRec + 57], 4 + 1);                                   // reciprocal
  EXPECT_EQ(bin[at + 5 * kRec + 58], 3 + 1);                                   // rmean
  for (size_t b = 56; b < 64; ++b) EXPECT_EQ(bin[at + 7 * kRec + b], 0) << b;  // the plain vxe.sub
  // A program without chains encodes as it always did: its records' tails are zero.
  Program plain = parse_program(".program z\n  vxe.sub [2, 2] lm:0x0 <- lm:0x10 [2, 1], #1\n  halt\n");
  std::vector<uint8_t> zb = encode_program(plain);
  for (size_t b = 56; b < 64; ++b) EXPECT_EQ(zb[code_at(zb, plain) + b], 0) << b;
}

// A post op that is also a vxe.<op> of the program shares its op-table entry.
TEST(VxeChain, APostOpSharesTheOpTableEntry) {
  Program p = parse_program(
      ".program s\n  vxe.exp [2, 2] lm:0x0 <- lm:0x10 [2, 1]\n"
      "  vxe.sub.exp [2, 2] lm:0x20 <- lm:0x10 [2, 1], #1\n  halt\n");
  std::vector<uint8_t> bin = encode_program(p);
  const size_t at = code_at(bin, p);
  EXPECT_EQ(bin[at + kRec + 57], 0 + 1);  // exp: entry 0, vxe.exp's
  EXPECT_EQ(bin[at + kRec + 2], 1);       // sub: entry 1
  expect_same_program(p, decode_program(bin, "s.lpubin"));
}

// ---------------------------------------------------------------------------------------
// The rules (StructureCheck), where each reader finds them broken

TEST(VxeChain, AssemblyMistakesNameTheLine) {
  const std::string head = ".program w\n";
  auto error = [&](const std::string& line) { return parse_error(head + "  " + line + "\n  halt\n"); };
  const std::pair<std::string, std::string> cases[] = {
      {"vxe.sub.foo [2, 4] lm:0x0 <- lm:0x100 [4, 1], #1", "t.s:2: vxe.sub.foo: unknown post op 'foo'"},
      {"vxe.sub.add [2, 4] lm:0x0 <- lm:0x100 [4, 1], #1",
       "t.s:2: vxe.sub.add: post op add takes 2 operands; a post op is unary"},
      {"vxe.mov.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1]", "t.s:2: vxe.mov.exp: only vxe.<op> takes a post op (.exp)"},
      {"vxe.rsum.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1]", "t.s:2: vxe.rsum.exp: only vxe.<op> takes a post op (.exp)"},
      {"vxe.mov [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum lm:0x200",
       "t.s:2: vxe.mov: only vxe.<op> takes a row reduction (=> rsum)"},
      {"vxe.rmax [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum lm:0x200",
       "t.s:2: vxe.rmax: only vxe.<op> takes a row reduction (=> rsum)"},
      {"dma.load f32 [2, 4] lm:0x0 <- hbm:0x0 [4, 1] => rsum lm:0x200",
       "t.s:2: dma.load: only vxe.<op> takes a row reduction (=> rsum)"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rprod lm:0x200",
       "t.s:2: vxe.exp: row reduction => rprod is not one a chain does (rsum, rmax, rmin or rmean)"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rvar lm:0x200", "row reduction => rvar is not one a chain does"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rargmax lm:0x200", "=> rargmax is not one a chain does"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rfoo lm:0x200",
       "t.s:2: vxe.exp: '=>' takes a row reduction (rsum, rmax, rmin or rmean), got 'rfoo'"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] =>", "t.s:2: vxe.exp: '=>' takes a row reduction"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum",
       "t.s:2: vxe.exp: '=> rsum' takes the column's address, lm:0xA"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum hbm:0x0", "'=> rsum' takes the column's address"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum lm:0xZZ", "t.s:2: expected an integer"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum lm:0x200 junk", "t.s:2: unexpected trailing text"},
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum lm:0x1c",
       "t.s:2: vxe.exp: the row reduction's column (=> rsum lm:0x1c, [2, 1]) overlaps the destination at lm:0x0"},
      {"vxe.exp [2, 4] lm:0x0 [16, 1] <- lm:0x100 [4, 1] => rsum lm:0x40",
       "overlaps the destination at lm:0x0"},  // between the strided rows: the range first to last
      {"vxe.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1] => rsum lm:0x11c",
       "t.s:2: vxe.exp: the row reduction's column (=> rsum lm:0x11c, [2, 1]) overlaps the source at lm:0x100"},
      {"vxe.sub.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1], lm:0x200 [1, 0] => rsum lm:0x204",
       "t.s:2: vxe.sub.exp: the row reduction's column (=> rsum lm:0x204, [2, 1]) overlaps source 2 at lm:0x200"},
      {"sxe.gemm f16 [1, 4, 4] lm:0x0 <- lm:0x100 [4, 1], hbm:0x0 [4, 1] => rsum lm:0x200",
       "t.s:2: sxe.gemm: only vxe.<op> takes a row reduction (=> rsum)"},
  };
  for (const auto& [line, want] : cases) {
    const std::string m = error(line);
    EXPECT_NE(m.find(want), std::string::npos) << line << "\n  gave: " << m;
  }
  // Just clear of the destination and the sources: fine.
  EXPECT_EQ(error("vxe.sub.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1], lm:0x200 [1, 0] => rsum lm:0x20"), "");
  EXPECT_EQ(error("vxe.sub.exp [2, 4] lm:0x0 <- lm:0x100 [4, 1], lm:0x200 [1, 0] => rsum lm:0x208"), "");
  EXPECT_EQ(error("vxe.sub.exp [2, 4] lm:0x8 <- lm:0x100 [4, 1], lm:0x200 [1, 0] => rsum lm:0x0"), "");
  EXPECT_EQ(error("vxe.sub.is_nan [2, 4] lm:0x0 <- lm:0x100 [4, 1], #1"), "");
}

// A program built in memory meets the same rules (simulate() and the encoder run them).
TEST(VxeChain, InMemoryProgramsMeetTheSameRules) {
  Program p = parse_program(
      ".program m\n  dma.load f32 [2, 4] lm:0x0 <- hbm:0x0 [4, 1]\n"
      "  vxe.exp [2, 4] lm:0x40 <- lm:0x0 [4, 1]\n  halt\n");
  StructureCheck check;
  Instruction load = p.code[0];
  load.post = ScalarOp::exp;
  EXPECT_EQ(check.next(load), "dma.load.exp: only vxe.<op> takes a post op (.exp)");
  Instruction address_alone = p.code[1];
  address_alone.acc_addr = 0x100;
  EXPECT_EQ(StructureCheck().next(address_alone), "vxe.exp: a row reduction's address (256) without one");
  // The encoder has no field for them on other opcodes and refuses them rather than drop them.
  Program bad = p;
  bad.code[0].acc = ReductionType::sum;
  EXPECT_THROW(encode_program(bad), InputError);
  bad = p;
  bad.code[1].acc = ReductionType::prod;
  bad.code[1].acc_addr = 0x100;
  try {
    encode_program(bad);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has row reduction rprod, which no chain does"), std::string::npos)
        << e.what();
  }
}

// The decoder validates the tail: codes, the op they name, fields on other opcodes, the rules.
TEST(VxeChain, CorruptChainBytesNameTheByte) {
  Program p = parse_program(
      ".program b\n  dma.load f32 [2, 4] lm:0x0 <- hbm:0x0 [4, 1]\n"
      "  vxe.sub.exp [2, 4] lm:0x40 <- lm:0x0 [4, 1], #1 => rsum lm:0x100\n"
      "  vxe.rsum [2, 4] lm:0x200 <- lm:0x0 [4, 1]\n  halt\n");
  const std::vector<uint8_t> bin = encode_program(p);
  const size_t at = code_at(bin, p), chain = at + kRec;
  auto patched = [&](size_t offset, uint8_t v) {
    std::vector<uint8_t> b = bin;
    b[offset] = v;
    return decode_error(b);
  };
  auto expect = [](const std::string& m, const std::string& want) {
    EXPECT_NE(m.find(want), std::string::npos) << "want: " << want << "\n  gave: " << m;
  };
  // Op table: sub 0, exp 1, rsum 2.
  expect(patched(chain + 57, 9), strcat("byte ", chain + 57, ": instruction 1: post op index 8 outside the op table"));
  expect(patched(chain + 57, 3), strcat("byte ", chain + 57, ": instruction 1: the post op names a reduction"));
  expect(patched(chain + 57, 1), strcat("byte ", chain, ": instruction 1: vxe.sub.sub: post op sub takes 2 operands"));
  expect(patched(chain + 58, 5), strcat("byte ", chain + 58, ": instruction 1: unknown row reduction code 5"));
  expect(patched(chain + 59, 1), strcat("byte ", chain + 59, ": instruction 1: padding is not zero"));
  std::vector<uint8_t> onto = bin;  // the column at lm:0x44, inside the destination
  onto[chain + 60] = 0x44;
  onto[chain + 61] = 0;
  expect(decode_error(onto), strcat("byte ", chain,
                                    ": instruction 1: vxe.sub.exp: the row reduction's column (=> rsum "
                                    "lm:0x44, [2, 1]) overlaps the destination"));
  expect(patched(at + 57, 2),
         strcat("byte ", at + 57, ": instruction 0: dma.load carries a post op or a row reduction"));
  expect(patched(at + 2 * kRec + 58, 1),
         strcat("byte ", at + 2 * kRec + 58, ": instruction 2: vxe.reduce carries a post op or a row reduction"));
  std::vector<uint8_t> no_acc = bin;
  no_acc[chain + 58] = 0;  // the address stays: an address without a reduction
  expect(decode_error(no_acc), strcat("byte ", chain, ": instruction 1: vxe.sub.exp: a row reduction's address (256)"));
  EXPECT_EQ(patched(chain + 58, 2), "");  // rmax: a valid chain
}

// ---------------------------------------------------------------------------------------
// Templates and operands

// acc_addr is an LM address field like lm_addr (affine in a template); the post op and the
// reduction belong to the structure two instructions must share.
TEST(VxeChain, TemplatesSeeTheChain) {
  Program a = parse_program(kChains), b = parse_program(kChains);
  b.code[2].acc_addr = 0x180;
  EXPECT_NE(fields::program_difference(a, b).find("acc_addr compiled 256, derived 384"), std::string::npos)
      << fields::program_difference(a, b);
  std::string why;
  auto t = ProgramTemplate::make(a, 1, b, 2, 64, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->symbolic_fields(), 1u);
  EXPECT_EQ(t->instantiate(3).code[2].acc_addr, 0x200u);
  for (auto change : {+[](Instruction& in) { in.post = ScalarOp::log; }, +[](Instruction& in) { in.post.reset(); },
                      +[](Instruction& in) { in.acc = ReductionType::max; }}) {
    Program c = parse_program(kChains);
    change(c.code[0]);
    EXPECT_NE(fields::program_difference(a, c).find("a chain's post op or row reduction"), std::string::npos)
        << fields::program_difference(a, c);
    EXPECT_FALSE(ProgramTemplate::make(a, 1, c, 2, 64, why));
  }
}

// The column is a second destination of every consumer of the operands (scoreboard, bounds,
// statistics), stepped in a loop like the others.
TEST(VxeChain, TheColumnIsADestinationOperand) {
  Program p = parse_program(kChains);
  std::vector<std::string> roles;
  OperandAccess column{};
  for_each_operand(p.code[5], [&](const OperandAccess& a) {
    roles.push_back(a.role);
    if (std::string(a.role) == "row reduction") column = a;
  });
  EXPECT_EQ(roles, (std::vector<std::string>{"destination", "row reduction", "source 1", "source 2"}));
  EXPECT_TRUE(column.write);
  EXPECT_EQ(column.memory, OperandAccess::Memory::Lmu);
  EXPECT_EQ(column.addr, 0x500u);
  EXPECT_EQ(column.rows, 2);
  EXPECT_EQ(column.cols, 1);
  EXPECT_EQ(column.step, 0x1000);
  // A chain is one instruction's work: one element operation per element (one pass).
  EXPECT_EQ(instruction_work(p.code[0]), 8 * 1040);
  EXPECT_EQ(instruction_arith(p.code[0]).vxe_ops, 8u * 1040u);
}

// ---------------------------------------------------------------------------------------
// The simulator

namespace {

std::string hx(uint64_t v) {  // hex digits, for "0x..." in assembly
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

ArchConfig arch(const std::vector<std::string>& sets = {}) {
  return load_arch_config(std::string(LPU_SOURCE_DIR) + "/configs/lpu-small.yaml", sets);
}

// Loads x [R, C] and the row maxima m [R, 1], computes exp(x - m) and its row reduction RED
// either as a chain or as three instructions, stores both. `window`: the result goes to the
// right half of an [R, 2C] register (lm_rs = 2C). `loop`: two row groups of R rows, in a loop
// stepping every address.
Program softmax_part(bool chained, const std::string& red, bool window, bool loop) {
  const int R = 4, C = 40, G = loop ? 2 : 1;
  const int drs = window ? 2 * C : C;
  const uint64_t x = 0x0, m = 0x1000, y = 0x2000, s = 0x4000, t = 0x5000;  // LM addresses
  const uint64_t yd = window ? y + 4 * C : y;                              // the result's columns
  const uint64_t lstep = 0x8000, hbm_x = 4 * R * C, hbm_m = 4 * R;         // per row group
  std::string text =
      strcat(".program sm\n.buffer x hbm:0x0 f32[", G * R, ", ", C, "] input\n.buffer m hbm:0x10000 f32[", G * R,
             ", 1] input\n.buffer y hbm:0x20000 f32[", G * R, ", ", drs, "] output\n.buffer s hbm:0x30000 f32[", G * R,
             ", 1] output\n.kernel 0 k\n");
  auto step = [&](uint64_t hbm) {
    if (!loop) return std::string();
    return hbm ? strcat(" step hbm:+0x", hx(hbm), " lm:+0x", hx(lstep)) : strcat(" step lm:+0x", hx(lstep));
  };
  if (loop) text += "loop 2\n";
  text += strcat("dma.load f32 [", R, ", ", C, "] lm:0x", hx(x), " <- hbm:0x0 [", C, ", 1]", step(hbm_x), "\n");
  text += strcat("dma.load f32 [", R, ", 1] lm:0x", hx(m), " <- hbm:0x10000 [1, 1]", step(hbm_m), "\n");
  if (window)  // the register's left half: zeros from m's broadcast, so the whole register is defined
    text += strcat("vxe.mul [", R, ", ", C, "] lm:0x", hx(y), " [", drs, ", 1] <- lm:0x", hx(m), " [1, 0], #0", step(0),
                   "\n");
  const std::string dst = strcat("lm:0x", hx(yd), window ? strcat(" [", drs, ", 1]") : std::string());
  const std::string srcs = strcat("lm:0x", hx(x), " [", C, ", 1], lm:0x", hx(m), " [1, 0]");
  if (chained) {
    text += strcat("vxe.sub.exp [", R, ", ", C, "] ", dst, " <- ", srcs, " => r", red, " lm:0x", hx(s), step(0), "\n");
  } else {
    text += strcat("vxe.sub [", R, ", ", C, "] lm:0x", hx(t), " <- ", srcs, step(0), "\n");
    text += strcat("vxe.exp [", R, ", ", C, "] ", dst, " <- lm:0x", hx(t), " [", C, ", 1]", step(0), "\n");
    text +=
        strcat("vxe.r", red, " [", R, ", ", C, "] lm:0x", hx(s), " <- lm:0x", hx(yd), " [", drs, ", 1]", step(0), "\n");
  }
  text +=
      strcat("dma.store f32 [", R, ", ", drs, "] hbm:0x20000 [", drs, ", 1] <- lm:0x", hx(y), step(4 * R * drs), "\n");
  text += strcat("dma.store f32 [", R, ", 1] hbm:0x30000 [1, 1] <- lm:0x", hx(s), step(hbm_m), "\n");
  if (loop) text += "endloop\n";
  return parse_program(text + "halt\n", chained ? "chain.s" : "separate.s");
}

TensorMap softmax_inputs(const Program& p) {
  TensorMap in;
  in["x"] = Tensor(p.find_buffer("x")->type);
  in["m"] = Tensor(p.find_buffer("m")->type);
  for (size_t k = 0; k < in["x"].data.size(); ++k)
    in["x"].data[k] = static_cast<float>(std::sin(0.37 * static_cast<double>(k)) * 3.0 + 0.01 * static_cast<double>(k));
  for (size_t k = 0; k < in["m"].data.size(); ++k) in["m"].data[k] = 2.5f - 0.3f * static_cast<float>(k);
  return in;
}

SimResult run(const Program& p, const TensorMap* inputs, const std::vector<std::string>& sets = {},
              bool trace = false) {
  SimOptions o;
  o.functional = inputs != nullptr;
  o.record_trace = trace;
  return simulate(p, arch(sets), o, inputs);
}

const EngineStats& engine(const SimStats& s, const std::string& name) {
  for (const auto& e : s.engines)
    if (e.name == name) return e;
  throw std::runtime_error("no engine " + name);
}

}  // namespace

// The chain writes what sub, exp and the separate row reduction write, bit for bit: the tile
// and the column, for every reduction a chain does, dense or into a column window, straight or
// in a loop stepping its addresses, from assembly and from its binary form.
TEST(VxeChain, ValuesEqualTheSeparateInstructionsBitForBit) {
  for (const std::string red : {"sum", "max", "min", "mean"})
    for (bool window : {false, true})
      for (bool loop : {false, true}) {
        const std::string what = strcat("r", red, window ? " window" : " dense", loop ? " loop" : "");
        Program chain = softmax_part(true, red, window, loop), separate = softmax_part(false, red, window, loop);
        const TensorMap in = softmax_inputs(chain);
        SimResult a = run(separate, &in);
        for (const Program& q : {chain, decode_program(encode_program(chain))}) {
          SimResult b = run(q, &in);
          const auto &ya = a.outputs.at("y").data, &yb = b.outputs.at("y").data;
          const auto &sa = a.outputs.at("s").data, &sb = b.outputs.at("s").data;
          ASSERT_EQ(ya.size(), yb.size()) << what;
          EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float))) << what;
          ASSERT_EQ(sa.size(), sb.size()) << what;
          EXPECT_EQ(0, std::memcmp(sa.data(), sb.data(), sa.size() * sizeof(float))) << what;
        }
        // And they are softmax's parts: e^(x - m) summed (spot check of row 0's sum).
        if (red == "sum" && !window && !loop) {
          double sum = 0;
          for (int c = 0; c < 40; ++c) sum += std::exp(static_cast<double>(in.at("x").data[c] - in.at("m").data[0]));
          EXPECT_NEAR(a.outputs.at("s").data[0], sum, 1e-4 * sum);
        }
      }
}

// One pass: the chain's compute time is latency(sub) + latency(exp) + latency(rsum) + a group
// of lanes every max(ii) cycles, less than the three passes; its energy events are the three
// instructions' (fusing saves time, not arithmetic).
TEST(VxeChain, TimingIsOnePassAndEnergyTheSeparateInstructions) {
  const int64_t R = 8, C = 1040;
  const std::string head = ".program t\n.kernel 0 k\n";
  const std::string sub = "vxe.sub [8, 1040] lm:0x14440 <- lm:0x4040 [1040, 1], lm:0x80 [1, 0]\n";
  const std::string exp = "vxe.exp [8, 1040] lm:0x24840 <- lm:0x14440 [1040, 1]\n";
  const std::string rsum = "vxe.rsum [8, 1040] lm:0x0 <- lm:0x24840 [1040, 1]\n";
  const std::string chain = "vxe.sub.exp [8, 1040] lm:0x24840 <- lm:0x4040 [1040, 1], lm:0x80 [1, 0] => rsum lm:0x0\n";
  const ArchConfig a = arch();
  const VxeOpTiming ts = a.vxe.timing("sub"), te = a.vxe.timing("exp"), tr = a.vxe.timing("rsum");
  const double one_pass = sim::vxe_compute_cycles(R * C, a.vxe.lanes, ts.latency + te.latency + tr.latency,
                                                  std::max({ts.ii, te.ii, tr.ii}));
  auto busy = [&](const std::string& body) {
    return engine(run(parse_program(head + body + "halt\n"), nullptr).stats, "vxe").busy_cycles;
  };
  const uint64_t fused = busy(chain), separate = busy(sub + exp + rsum);
  EXPECT_EQ(fused, static_cast<uint64_t>(one_pass));
  EXPECT_EQ(separate, busy(sub) + busy(exp) + busy(rsum));
  EXPECT_LT(fused, separate);
  EXPECT_LT(fused, busy(exp) + busy(rsum));
  // Post op alone, reduction alone: the same rule with the stages it has.
  const double post_only = sim::vxe_compute_cycles(R * C, a.vxe.lanes, ts.latency + te.latency, std::max(ts.ii, te.ii));
  EXPECT_EQ(busy("vxe.sub.exp [8, 1040] lm:0x24840 <- lm:0x4040 [1040, 1], lm:0x80 [1, 0]\n"),
            static_cast<uint64_t>(post_only));
  const double acc_only = sim::vxe_compute_cycles(R * C, a.vxe.lanes, te.latency + tr.latency, std::max(te.ii, tr.ii));
  EXPECT_EQ(busy("vxe.exp [8, 1040] lm:0x24840 <- lm:0x4040 [1040, 1] => rsum lm:0x0\n"),
            static_cast<uint64_t>(acc_only));
  // Energy: every element through each stage, as the three instructions count it.
  const auto fused_ops = run(parse_program(head + chain + "halt\n"), nullptr).stats.energy.events.vxe_ops;
  const auto separate_ops = run(parse_program(head + sub + exp + rsum + "halt\n"), nullptr).stats.energy.events.vxe_ops;
  EXPECT_EQ(fused_ops, separate_ops);
  EXPECT_EQ(fused_ops.at("alu"), R * C);
  EXPECT_EQ(fused_ops.at("transcendental"), R * C);
  EXPECT_EQ(fused_ops.at("reduce"), R * C);
}

// The scoreboard: a DMA storing the column waits for the chain that writes it, one storing
// elsewhere does not; a vxe.mov reading the column runs after it (the VXE is in order); a
// DMA load into the column after the chain waits for it too (write after write).
TEST(VxeChain, ReadersOfTheColumnWaitForTheChain) {
  auto program = [](const std::string& after) {
    return parse_program(
        ".program sb\n.buffer o hbm:0x0 f32[1024, 1] output\n.kernel 0 k\n"
        "vxe.sub.exp [8, 1040] lm:0x24840 <- lm:0x4040 [1040, 1], lm:0x80 [1, 0] => rsum lm:0x0\n" +
        after + "halt\n");
  };
  auto gap = [&](const std::string& after, const std::string& prefix) {
    SimResult r = run(program(after), nullptr, {}, true);
    const TraceRecord *chain = nullptr, *next = nullptr;
    for (const auto& t : r.trace) {
      if (t.text.rfind("vxe.sub.exp", 0) == 0) chain = &t;
      if (t.text.rfind(prefix, 0) == 0) next = &t;
    }
    EXPECT_TRUE(chain && next) << after;
    return chain && next ? next->start_us - (chain->start_us + chain->dur_us) : 0.0;
  };
  EXPECT_GE(gap("dma.store f32 [8, 1] hbm:0x0 [1, 1] <- lm:0x0\n", "dma.store"), 0.0);
  EXPECT_GE(gap("dma.store f32 [1, 1] hbm:0x0 [1, 1] <- lm:0x1c\n", "dma.store"), 0.0);  // its last element
  EXPECT_LT(gap("dma.store f32 [8, 1] hbm:0x0 [1, 1] <- lm:0x20\n", "dma.store"), 0.0);  // just after it
  EXPECT_GE(gap("dma.load f32 [8, 1] lm:0x0 <- hbm:0x0 [1, 1]\n", "dma.load"), 0.0);
  EXPECT_GE(gap("vxe.mov [8, 1] lm:0x100 <- lm:0x0 [1, 1]\n", "vxe.mov"), 0.0);
}

// Bounds: the column is checked against local memory like every operand, over the loop.
TEST(VxeChain, TheColumnIsBoundsChecked) {
  Program p = parse_program(
      ".program bc\n.kernel 0 k\nloop 3\n"
      "vxe.sub.exp [8, 16] lm:0x0 <- lm:0x200 [16, 1], lm:0x400 [1, 0] => rsum lm:0x1f00"
      " step lm:+0x80\nendloop\nhalt\n",
      "bc.s");
  try {
    simulate(p, arch({"lmu.capacity_kib=8"}), {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bc.s:4: vxe.sub.exp row reduction touches local memory (LMU) [0x1f00, "
                                         "0x2020) over 3 loop iterations"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(simulate(p, arch({"lmu.capacity_kib=16"}), {}));
}
