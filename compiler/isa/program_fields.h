// The numeric fields of an instruction as one indexed set, and the comparisons
// that the program templates (program_template.h: symbolic in the context; layer_template.h:
// periodic in the layer count) share. Internal to the ISA layer's templates.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"

namespace lpu::fields {

// Every integer an instruction carries, by index. Source-operand fields (SrcAddr, SrcRs, SrcCs)
// take the operand's index; the others ignore it.
enum Field : uint8_t {
  Rows,
  Cols,
  Depth,
  HostOp,
  HbmAddr,
  HbmRs,
  HbmCs,
  LmAddr,
  Token,
  HbmStep,
  LmStep,
  Peer,
  LmRs,
  AccAddr,  // a vxe.<op> chain's row reduction column (an LM address, stepped like lm_addr)
  SrcAddr,
  SrcRs,
  SrcCs
};
constexpr int kInstructionFields = 14;  // Rows .. AccAddr: the fields with no source operand
const char* field_name(int f);

// Field f of `in` as an integer (addresses wrap to int64: differences are what matter).
int64_t get(const Instruction& in, int f, size_t src);
void set(Instruction& in, int f, size_t src, int64_t v);

// "instruction I (OPCODE, kernel NAME)" for messages.
std::string where(const Program& p, size_t i);
// Whether two instructions have the same structure: opcode, operation (a chain's post op and
// row reduction included), dtype, operand count and immediate operands (what a template never
// varies).
bool same_structure(const Instruction& a, const Instruction& b);

// "" when `compiled` equals `derived` (every buffer, kernel, host op and instruction, source
// lines aside); else the first difference, naming both values.
std::string program_difference(const Program& compiled, const Program& derived);

}  // namespace lpu::fields
