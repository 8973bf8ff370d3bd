// The LPU instruction set and its program container.
//
// Memory spaces: HBM (byte addresses, tensors in their dtype) and the LMU (local memory; byte
// addresses; vector elements are fp32 there, DMA converts from/to the HBM dtype).
// Tiles are 2-D: an instruction has a shape [rows, cols]; every operand walks its memory as
//   element(r, c) = addr + (r * rs + c * cs) * element_bytes
// so broadcasts are strides of 0. Destinations in the LMU are dense ([rows, cols] row-major),
// except that vxe.<op> and vxe.mov may name a destination row stride (lm_rs) to fill a column
// window of a wider register.
//
// Text form (docs/isa.md):
//   .program NAME
//   .buffer NAME hbm:0xADDR f32[4, 8] input|weight|intermediate|output
//   .kernel ID NAME
//   dma.load  f32 [R, C] lm:0xA <- hbm:0xB [rs, cs]
//   dma.store f32 [R, C] hbm:0xB [rs, cs] <- lm:0xA
//   vxe.add   [R, C] lm:0xD <- lm:0xA [rs, cs], #0.5
//   vxe.rsum  [R, C] lm:0xD <- lm:0xA [rs, cs]        ; result [R, 1]
//   vxe.mov   [R, C] lm:0xD <- lm:0xA [rs, cs]
//   vxe.mov   [R, C] lm:0xD [drs, 1] <- lm:0xA [rs, cs]   ; destination rows drs elements apart
//             (also vxe.<op>; printed only when drs != 0, the dense default)
//   vxe.sub.exp [R, C] lm:0xD <- lm:0xA [rs, cs], lm:0xB [rs, cs] => rsum lm:0xS
//             a fused chain: exp(a - b) written to D, and each row of it summed into the
//             [R, 1] column at S (post op and row reduction each optional, vxe.<op> only)
//   sxe.gemm  f16 [M, K, N] lm:0xD <- lm:0xA [rs, ks], hbm:0xB [ks, ns]
//             D[m, n] = sum_k A[m, k] * B[k, n]; B streams from HBM into the MAC trees
//   sxe.gemm  f16 [M, K, N] lm:0xD <- lm:0xA [rs, ks], hbm:0xB [ks, ns] int4/g128
//             B stored packed (graph/types.h, Quant): element e (in memory order from B's
//             address, which starts a block) is code x scale of block e / 128; the SXE
//             dequantises on its input path (docs/quantisation.md)
//   dma.gather f16 [R, C] lm:0xD <- hbm:0xT [rs, cs], lm:0xI [irs, ics]
//             row r of D = row LMU[I + r] of the table at T (embedding lookup)
//   sync.signal T [dev:D]  once every earlier instruction has retired, add one to token T of
//                          device D (default: this one; another device gets it after the ESL latency)
//   sync.wait T            issue nothing further until token T is positive, then take one
//   host.call 0                                       ; run host op 0 (a graph break)
//   esl.send [R, C] dev:D lm:0xDST <- lm:0xSRC [rs, cs] token:T
//                          copy a tile into device D's local memory over the ESL, then add
//                          one to D's token T (the receiver waits on it: sync.wait T)
//   loop N ... endloop    repeat the body N times; instructions inside may carry
//                         "step hbm:+S lm:+T": per-iteration address increments
//   halt
// and the host-op table (graph breaks: ops the LPU does not run, executed by the host):
//   .hostop ID OP NODE IN1,IN2 -> OUT ATTRS_JSON
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/types.h"
#include "isa/opcodes.h"
#include "ops/reduction.h"
#include "ops/scalar_ops.h"

namespace lpu {

struct Operand {
  bool immediate = false;
  double value = 0;   // immediate
  uint64_t addr = 0;  // LMU byte address
  int64_t rs = 0, cs = 0;
  bool operator==(const Operand&) const = default;
};

struct Instruction {
  Opcode opcode = Opcode::Halt;
  ScalarOp vop = ScalarOp::add;            // VxeOp
  ReductionType rop = ReductionType::sum;  // VxeReduce
  DType dtype = DType::f32;                // DMA: HBM element type
  int64_t rows = 0, cols = 0;
  int64_t depth = 0;               // SxeGemm: K
  int64_t host_op = 0;             // HostCall: index into Program::host_ops
  uint64_t hbm_addr = 0;           // DMA; SxeGemm: B
  int64_t hbm_rs = 0, hbm_cs = 0;  // DMA, elements; SxeGemm: B's k and n strides
  uint64_t lm_addr = 0;            // DMA: LMU side; VXE/SXE: destination
  int64_t lm_rs = 0;               // vxe.op / vxe.mov: elements between destination rows (0: dense,
                                   // = cols), so that one instruction fills a column window of a
                                   // wider register (a concatenation in local memory)
  // A fused chain (vxe.op only; docs/isa.md): decode attention's softmax subtracts the row
  // maximum, exponentiates and sums each row, three passes over the same tile as separate
  // instructions; with these, one pass does all three and the tile is read once.
  std::optional<ScalarOp> post;      // vxe.op: a unary op applied to the result before it is written
  std::optional<ReductionType> acc;  // vxe.op: also reduce each row of the written result ...
  uint64_t acc_addr = 0;             // ... into the [R, 1] column at this LM byte address
  std::vector<Operand> srcs;         // VXE sources; SxeGemm: A (rs, cs = row and k strides)
  int64_t token = 0;                 // SyncSignal / SyncWait; LoopBegin: iteration count
  // Inside a loop: added per iteration of the innermost enclosing loop to the HBM address
  // (DMA, gather, SXE B) and to the LMU destination and every LMU source operand.
  int64_t hbm_step = 0, lm_step = 0;
  int64_t peer = -1;  // SyncSignal: target device (-1 = this one)
  Quant quant;        // SxeGemm, SxeGemmGather: B stored packed (off: in `dtype`)
  int kernel = -1;    // index into Program::kernels
  int line = 0;       // source line when parsed (diagnostics)

  bool same_as(const Instruction& o) const;  // equality ignoring `line`
  // Equality ignoring `line`, the HBM address and the kernel: the same work elsewhere in HBM
  // for another kernel (sim/model/repeat_blocks.h: a decoder's layers).
  bool same_but_placement(const Instruction& o) const;
  // Elements between the rows of a tile destination in local memory: lm_rs, or cols when dense.
  int64_t lm_row_stride() const { return lm_rs != 0 ? lm_rs : cols; }
};

struct BufferDecl {
  std::string name;
  uint64_t hbm_addr = 0;
  TensorType type;
  BufferRole role = BufferRole::Intermediate;
  Quant quant;  // a weight stored packed: storage_bytes(type, quant) bytes at hbm_addr
  int64_t bytes() const { return storage_bytes(type, quant); }
};

// A graph break: one core-graph node the host computes (reference semantics) from HBM
// buffers into an HBM buffer; `host.call ID` runs entry ID of Program::host_ops.
struct HostOp {
  std::string op;                   // core op name (erf, softmax's exp, ...)
  std::string node;                 // graph node it came from
  std::vector<std::string> inputs;  // HBM buffers read, in the op's operand order
  std::string output;               // HBM buffer written
  std::string attrs_json;           // the node's attributes as compact JSON ({} when none)
  bool operator==(const HostOp&) const = default;
};

struct Program {
  std::string name;
  std::string source;  // the file it was read from, for diagnostics ("" when built in memory)
  std::vector<BufferDecl> buffers;
  std::vector<std::string> kernels;
  std::vector<HostOp> host_ops;
  std::vector<Instruction> code;

  const BufferDecl* find_buffer(const std::string& name) const;
  uint64_t hbm_bytes_allocated() const;
};

// Where instruction `i` of `p` came from, for diagnostics: "FILE:LINE" for assembly,
// "FILE: instruction I" for a binary program, "program NAME: instruction I" for one built in memory.
std::string instruction_location(const Program& p, size_t i);

// Why a buffer's packed storage does not fit it ("" when it does or it has none): only a
// floating weight whose last dimension the group divides is stored packed.
std::string quant_problem(const BufferDecl& b);

// The rules every program keeps however it was read (assembly or binary), one place for each:
// tiles have a positive shape of at most kMaxElements elements per operand, sxe.gemm has K >= 1,
// a destination row stride (lm_rs) only on vxe.<op> and vxe.mov and there at least the tile's
// columns, a post op (unary) and a row reduction (sum, max, min or mean, its column clear of the
// destination and the sources) only on vxe.<op>, a loop runs at least once, loop and endloop pair
// up, and address steps appear only inside a loop. Fed the instructions in order, so a reader
// reports a broken rule where it reads it.
class StructureCheck {
 public:
  // "" when `in`, the next instruction, keeps the rules; else why it does not.
  std::string next(const Instruction& in);
  // At the end of the code: "" when every loop is closed; else why not, with `open_loop` set to
  // the index of the innermost loop left open.
  std::string finish(size_t& open_loop) const;

 private:
  std::vector<size_t> open_;  // indices of the loops not yet closed, innermost last
  size_t index_ = 0;          // index of the next instruction
};

std::string print_instruction(const Instruction& in);
std::string print_host_op(size_t id, const HostOp& h);  // the .hostop directive
std::string print_program(const Program& p);
// Parses the text form; throws InputError "FILE:LINE: message" on malformed input.
Program parse_program(const std::string& text, const std::string& filename = "<asm>");

}  // namespace lpu
