#include <gtest/gtest.h>

#include "driver/compile.h"
#include "isa/encoding.h"
#include "isa/hbm_layout.h"
#include "isa/program.h"
#include "isa/program_fields.h"
#include "isa/program_template.h"
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

// ---------------------------------------------------------------------------------------
// Encoded (binary) form.

namespace {
std::vector<Program> generated_programs() {
  std::vector<Program> out;
  for (const auto& b : model_builders())
    for (const std::string policy : {"none", "greedy"}) {
      if (find_transformer(b.name)) continue;  // microbenchmarks; transformer programs are large
      WorkloadSpec w;
      w.name = w.model = b.name;
      w.seq_len = 20;
      for (const auto& [k, v] : b.params) w.params[k] = 96;
      CompileOptions o;
      o.fusion = policy;
      o.codegen.lmu_bytes = 64 * 1024;
      out.push_back(compile_graph(build_graph(w), o).code.program);
    }
  return out;
}

void expect_same_program(const Program& p, const Program& q) {
  EXPECT_EQ(p.name, q.name);
  ASSERT_EQ(p.buffers.size(), q.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    EXPECT_EQ(p.buffers[i].name, q.buffers[i].name);
    EXPECT_EQ(p.buffers[i].hbm_addr, q.buffers[i].hbm_addr);
    EXPECT_EQ(p.buffers[i].type, q.buffers[i].type);
    EXPECT_EQ(p.buffers[i].role, q.buffers[i].role);
  }
  EXPECT_EQ(p.kernels, q.kernels);
  ASSERT_EQ(p.code.size(), q.code.size());
  for (size_t i = 0; i < p.code.size(); ++i) ASSERT_TRUE(p.code[i].same_as(q.code[i])) << i << ": " << print_instruction(p.code[i]);
}

// A small program using every opcode, an immediate, a new reduction and an f16 buffer.
Program small_program() {
  return parse_program(
      ".program small\n"
      ".buffer x hbm:0x0 f16[4, 8] input\n"
      ".buffer y hbm:0x100 f32[4] output\n"
      ".kernel 0 k0\n"
      "  dma.load f16 [4, 8] lm:0x0 <- hbm:0x0 [8, 1]\n"
      "  vxe.mul [4, 8] lm:0x80 <- lm:0x0 [8, 1], #-2.5\n"
      "  vxe.rargmax [4, 8] lm:0x100 <- lm:0x80 [8, 1]\n"
      "  vxe.mov [4, 1] lm:0x140 <- lm:0x100 [1, 0]\n"
      "  dma.store f32 [4, 1] hbm:0x100 [1, 0] <- lm:0x140\n"
      "halt\n");
}

std::string decode_error(const std::vector<uint8_t>& bytes) {
  try {
    decode_program(bytes, "t.lpubin");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Encoding, RoundTripsEveryGeneratedProgram) {
  for (const Program& p : generated_programs()) {
    std::vector<uint8_t> bin = encode_program(p);
    Program q = decode_program(bin, "gen.lpubin");
    expect_same_program(p, q);
    EXPECT_EQ(encode_program(q), bin);  // stable
  }
  Program s = small_program();
  expect_same_program(s, decode_program(encode_program(s)));
}

// Every truncation and every single corrupted byte is an InputError naming a byte offset;
// none decodes to a (wrong) program.
TEST(Encoding, TruncatedOrCorruptInputIsAnErrorWithAnOffset) {
  std::vector<uint8_t> bin = encode_program(small_program());
  for (size_t n = 0; n < bin.size(); ++n) {
    std::vector<uint8_t> cut(bin.begin(), bin.begin() + static_cast<long>(n));
    std::string m = decode_error(cut);
    ASSERT_NE(m.find("t.lpubin: byte "), std::string::npos) << "prefix of " << n << " bytes: '" << m << "'";
  }
  for (size_t i = 0; i < bin.size(); ++i) {
    std::vector<uint8_t> bad = bin;
    bad[i] ^= 0x5A;
    std::string m = decode_error(bad);
    ASSERT_NE(m.find("t.lpubin: byte "), std::string::npos) << "byte " << i << " corrupted: '" << m << "'";
  }
}

TEST(Encoding, ErrorsSayWhatAndWhere) {
  Program p = small_program();
  std::vector<uint8_t> bin = encode_program(p);
  EXPECT_NE(decode_error({'E', 'L', 'F', 0}).find("byte 0: truncated: the header: 48 bytes needed, 4 left"), std::string::npos)
      << decode_error({'E', 'L', 'F', 0});
  std::vector<uint8_t> magic = bin;
  magic[0] = 'X';
  EXPECT_NE(decode_error(magic).find("byte 0: not an LPU program"), std::string::npos) << decode_error(magic);
  // The instruction records sit before the operand pool (2 + 1 + 1 operands, 16 bytes each).
  constexpr size_t kRec = 64;  // instruction record bytes (format version 5)
  size_t code_at = bin.size() - 4 * 16 - p.code.size() * kRec;
  std::vector<uint8_t> opcode = bin;
  opcode[code_at + 2 * kRec] = 99;  // instruction 2's opcode
  EXPECT_NE(decode_error(opcode).find(strcat("byte ", code_at + 2 * kRec, ": instruction 2: unknown opcode code 99")),
            std::string::npos)
      << decode_error(opcode);
  std::vector<uint8_t> nsrc = bin;
  nsrc[code_at + 1 * kRec + 3] = 1;  // vxe.mul with one operand
  EXPECT_NE(decode_error(nsrc).find(strcat("byte ", code_at + kRec + 3, ": instruction 1: 1 source operands, vxe.op takes 2")),
            std::string::npos)
      << decode_error(nsrc);
  std::vector<uint8_t> longer = bin;
  longer.push_back(0);
  EXPECT_NE(decode_error(longer).find("byte 32: header says the program is"), std::string::npos) << decode_error(longer);
}

TEST(Encoding, FieldsThatDoNotFitAreRejected) {
  Program p = small_program();
  p.code[1].rows = int64_t{1} << 33;
  EXPECT_THROW(encode_program(p), InputError);
  p = small_program();
  p.code[0].hbm_rs = -(int64_t{1} << 40);
  EXPECT_THROW(encode_program(p), InputError);
}

namespace {
std::string parse_error(const std::string& text) {
  try {
    parse_program(text, "t.s");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kLooped =
    ".program l\n"
    ".kernel 0 k\n"
    "  loop 3\n"
    "  vxe.relu [1, 8] lm:0x100 <- lm:0x0 [8, 1] step lm:+0x20\n"
    "  endloop\n"
    "  halt\n";
}  // namespace

TEST(Isa, BufferShapesAreCheckedWhereTheyAreDeclared) {
  std::string m = parse_error(".program b\n.buffer x hbm:0x0 f32[4294967296, 4294967296] input\nhalt\n");
  EXPECT_NE(m.find("t.s:2: buffer x: shape [4294967296, 4294967296] has too many elements"), std::string::npos) << m;
  m = parse_error(".program b\n.buffer x hbm:0x0 f32[-4, 8] input\nhalt\n");
  EXPECT_NE(m.find("t.s:2: buffer x: shape [-4, 8] has a negative dimension"), std::string::npos) << m;
}

TEST(Isa, LoopRulesNameTheLine) {
  EXPECT_NE(parse_error(".program l\n  loop 0\n  endloop\n").find("t.s:2: a loop runs at least once"), std::string::npos);
  EXPECT_NE(parse_error(".program l\n  endloop\n").find("t.s:2: endloop without loop"), std::string::npos);
  // The innermost loop left open is named.
  EXPECT_NE(parse_error(".program l\n  loop 2\n  loop 3\n  halt\n").find("t.s:3: 2 loop(s) without endloop"),
            std::string::npos);
  EXPECT_NE(parse_error(".program l\n  vxe.relu [1, 8] lm:0x0 <- lm:0x0 [8, 1] step lm:+0x20\n")
                .find("t.s:2: address steps are only meaningful inside a loop"),
            std::string::npos);
  EXPECT_NE(parse_error(".program l\n  vxe.relu [4294967296, 4294967296] lm:0x0 <- lm:0x0 [0, 0]\n")
                .find("t.s:2: tile [4294967296, 4294967296] has more than 2^48 elements"),
            std::string::npos);
  EXPECT_EQ(parse_error(kLooped), "");
}

// The decoder applies the parser's rules (StructureCheck), naming the record's byte offset.
TEST(Encoding, LoopRulesAreTheParsersRules) {
  Program p = parse_program(kLooped);
  std::vector<uint8_t> bin = encode_program(p);
  constexpr size_t kRec = 64;
  size_t code_at = bin.size() - 1 * 16 - p.code.size() * kRec;
  std::vector<uint8_t> zero = bin;
  for (size_t b = 0; b < 4; ++b) zero[code_at + 8 + b] = 0;  // the loop count (rows field)
  std::string m = decode_error(zero);
  EXPECT_NE(m.find(strcat("byte ", code_at, ": instruction 0: a loop runs at least once")), std::string::npos) << m;
  std::vector<uint8_t> unbalanced = bin;
  unbalanced[code_at + 2 * kRec] = 5;  // endloop -> halt
  m = decode_error(unbalanced);
  EXPECT_NE(m.find(strcat("byte ", code_at, ": instruction 0: 1 loop(s) without endloop")), std::string::npos) << m;
}

// ---------------------------------------------------------------------------------------
// A destination row stride (Instruction::lm_rs): vxe.<op> and vxe.mov fill a column window of a
// wider local-memory register.

namespace {
const char* kWindows =
    ".program w\n"
    ".kernel 0 k\n"
    "  vxe.mov [16, 64] lm:0x400 [128, 1] <- lm:0x2000 [64, 1]\n"
    "  vxe.add [16, 64] lm:0x500 [128, 1] <- lm:0x2000 [64, 1], #1.5\n"
    "  vxe.neg [16, 64] lm:0x8000 <- lm:0x2000 [64, 1]\n"
    "  halt\n";
}  // namespace

// Printed only when set (dense destinations print as they always did); text and binary carry it.
TEST(Isa, DestinationRowStrideRoundTrips) {
  Program p = parse_program(kWindows, "w.s");
  ASSERT_EQ(p.code.size(), 4u);
  EXPECT_EQ(p.code[0].lm_rs, 128);
  EXPECT_EQ(p.code[1].lm_rs, 128);
  EXPECT_EQ(p.code[2].lm_rs, 0);
  EXPECT_EQ(print_instruction(p.code[0]), "vxe.mov [16, 64] lm:0x400 [128, 1] <- lm:0x2000 [64, 1]");
  EXPECT_EQ(print_instruction(p.code[1]), "vxe.add [16, 64] lm:0x500 [128, 1] <- lm:0x2000 [64, 1], #1.5");
  EXPECT_EQ(print_instruction(p.code[2]), "vxe.neg [16, 64] lm:0x8000 <- lm:0x2000 [64, 1]");
  Instruction dense = p.code[0];
  dense.lm_rs = 0;
  EXPECT_FALSE(dense.same_as(p.code[0]));
  const std::string text = print_program(p);
  Program q = parse_program(text, "w2.s");
  EXPECT_EQ(print_program(q), text);
  expect_same_program(p, q);
  std::vector<uint8_t> bin = encode_program(p);
  Program r = decode_program(bin, "w.lpubin");
  expect_same_program(p, r);
  EXPECT_EQ(r.code[0].lm_rs, 128);
  EXPECT_EQ(r.code[0].depth, 0);
  EXPECT_EQ(encode_program(r), bin);
  // An explicit dense stride of 0 is the dense destination.
  Program z = parse_program(".program z\n  vxe.mov [2, 4] lm:0x0 [0, 1] <- lm:0x100 [4, 1]\n");
  EXPECT_EQ(z.code[0].lm_rs, 0);
  EXPECT_EQ(print_instruction(z.code[0]), "vxe.mov [2, 4] lm:0x0 <- lm:0x100 [4, 1]");
}

// The record's depth slot holds lm_rs for vxe.<op> and vxe.mov; a record with a depth there
// decodes to a destination row stride, checked like the parser's.
TEST(Encoding, DestinationRowStrideIsInTheDepthSlot) {
  Program p = small_program();  // instruction 1: vxe.mul [4, 8]
  std::vector<uint8_t> bin = encode_program(p);
  constexpr size_t kRec = 64, kDepth = 40;  // the depth field's offset in a record
  const size_t code_at = bin.size() - 4 * 16 - p.code.size() * kRec;
  for (size_t i = 0; i < p.code.size(); ++i) EXPECT_EQ(bin[code_at + i * kRec + kDepth], 0) << i;
  std::vector<uint8_t> wide = bin;
  wide[code_at + kRec + kDepth] = 16;
  Program q = decode_program(wide.data(), wide.size(), "t.lpubin", Checksum::Skip);
  EXPECT_EQ(q.code[1].lm_rs, 16);
  EXPECT_EQ(q.code[1].depth, 0);
  p.code[1].lm_rs = 16;
  EXPECT_EQ(encode_program(p, Checksum::Skip), encode_program(q, Checksum::Skip));
  std::vector<uint8_t> narrow = bin;
  narrow[code_at + kRec + kDepth] = 4;
  std::string m;
  try {
    decode_program(narrow.data(), narrow.size(), "t.lpubin", Checksum::Skip);
  } catch (const InputError& e) {
    m = e.what();
  }
  EXPECT_NE(m.find(strcat("byte ", code_at + kRec,
                          ": instruction 1: vxe.mul: destination row stride 4 is less than the tile's 8 columns")),
            std::string::npos)
      << m;
  // A form without the field cannot carry one: the encoder refuses rather than drop it.
  Program load = small_program();
  load.code[0].lm_rs = 8;
  EXPECT_THROW(encode_program(load), InputError);
}

TEST(Isa, DestinationRowStrideRulesNameTheLine) {
  EXPECT_NE(parse_error(".program w\n  vxe.mov [16, 64] lm:0x400 [32, 1] <- lm:0x2000 [64, 1]\n")
                .find("t.s:2: vxe.mov: destination row stride 32 is less than the tile's 64 columns"),
            std::string::npos);
  EXPECT_NE(parse_error(".program w\n  vxe.exp [16, 64] lm:0x400 [-128, 1] <- lm:0x2000 [64, 1]\n")
                .find("t.s:2: vxe.exp: destination row stride -128 is less than the tile's 64 columns"),
            std::string::npos);
  std::string m = parse_error(".program w\n  vxe.mov [16, 64] lm:0x400 [128, 2] <- lm:0x2000 [64, 1]\n");
  EXPECT_NE(m.find("t.s:2: vxe.mov: the destination's column stride must be 1, got 2"), std::string::npos) << m;
  m = parse_error(".program w\n  vxe.rsum [16, 64] lm:0x400 [128, 1] <- lm:0x2000 [64, 1]\n");
  EXPECT_NE(m.find("t.s:2: vxe.rsum: only vxe.<op> and vxe.mov take a destination row stride (lm_rs 128)"),
            std::string::npos)
      << m;
  m = parse_error(".program w\n  vxe.mov [65536, 64] lm:0x0 [8589934592, 1] <- lm:0x0 [64, 1]\n");
  EXPECT_NE(m.find("t.s:2: vxe.mov: destination row stride 8589934592 over 65536 rows spans more than 2^48 elements"),
            std::string::npos)
      << m;
  // A program built in memory: the same rule, naming the instruction.
  Program p = small_program();
  p.code[0].lm_rs = 8;  // dma.load
  StructureCheck check;
  EXPECT_EQ(check.next(p.code[0]), "dma.load: only vxe.<op> and vxe.mov take a destination row stride (lm_rs 8)");
}

// Program templates (generate) compare lm_rs like every other field.
TEST(Isa, TemplatesSeeTheDestinationRowStride) {
  Program a = parse_program(kWindows), b = parse_program(kWindows);
  b.code[0].lm_rs = 256;
  EXPECT_NE(fields::program_difference(a, b).find("lm_rs compiled 128, derived 256"), std::string::npos)
      << fields::program_difference(a, b);
  std::string why;
  auto t = ProgramTemplate::make(a, 1, b, 2, 64, why);
  ASSERT_TRUE(t) << why;
  EXPECT_EQ(t->symbolic_fields(), 1u);
  EXPECT_EQ(t->instantiate(3).code[0].lm_rs, 384);
}

// The HBM layout rule (isa/hbm_layout.h): regions in order of their leaders, each as large as its
// largest member; members at their region's base; the regions found again from the addresses.
TEST(HbmLayout, RegionsTakeTheirLargestMember) {
  auto buf = [](const char* name, int64_t elems) {
    BufferDecl b;
    b.name = name;
    b.type = {DType::f32, {elems}};
    return b;
  };
  // w (1000 B), a (400 B) and c (800 B) share a region, b (4 B) and z (0 B) have their own.
  std::vector<BufferDecl> bufs = {buf("w", 250), buf("a", 100), buf("b", 1), buf("c", 200), buf("z", 0), buf("d", 8)};
  const std::vector<size_t> leader = {0, 1, 2, 1, 4, 5};
  const std::vector<uint64_t> base = region_layout(bufs, leader, 256);
  EXPECT_EQ(base, (std::vector<uint64_t>{0, 1024, 2048, 1024, 2304, 2304}));
  for (size_t i = 0; i < bufs.size(); ++i) bufs[i].hbm_addr = base[i];
  // From the addresses: the zero-byte z joins d's region, which lays out the same bytes.
  const std::vector<size_t> found = region_leaders(bufs);
  EXPECT_EQ(found, (std::vector<size_t>{0, 1, 2, 1, 4, 4}));
  EXPECT_EQ(region_layout(bufs, found, 256), base);
  const RegionLookup at(base, found);
  EXPECT_EQ(at.leader_at(0), 0u);
  EXPECT_EQ(at.leader_at(1023), 0u);
  EXPECT_EQ(at.leader_at(1024 + 700), 1u);  // inside c, in a's region
  EXPECT_EQ(at.leader_at(2048), 2u);
  EXPECT_EQ(at.leader_at(2310), 4u);
  EXPECT_THROW(region_layout(bufs, {0, 1, 2, 1, 4, 3}, 256), InternalError);  // d's "leader" c leads no region
  EXPECT_THROW(region_layout(bufs, {0, 1, 2, 1, 5, 5}, 256), InternalError);  // z's leader comes after it
}
