// THE opcode table of the LPU instruction set: one row per opcode (an X-macro, like the
// scalar-op table in ops/scalar_ops.h), and the Opcode and Unit enums made from it. What an
// opcode means is written here once; everything else reads it (docs/isa.md, "The opcode
// table"):
//   isa/program.cpp       printer and parser      by FORM (the fields and their text)
//   isa/encoding.cpp      encoder and decoder     by CODE and FORM (which record field holds what)
//   isa/opcodes.cpp       instruction_work        by WORK (and ARITH: a kernel's FLOPs, VXE ops)
//                         operand_roles           by ROLES (what it reads and writes, where)
//   sim/model/isu.cpp     routing by UNIT; the scoreboard's footprint by ROLES
//   sim/program_check     memory bounds by ROLES
//   sim/model/engine.cpp  useful work (EngineStats), a kernel's FLOPs by WORK and ARITH
//   sim/model/vxe.cpp     energy by ENERGY
// Adding an opcode (docs/adding-an-engine.md): a row here, or in an extension's row list
// (LPU_ISA_EXTENSION below), and the engine module of its unit.
//
// X(ENUM, MNEMONIC, UNIT, CODE, FORM, ROLES, WORK, ARITH, ENERGY)
//   MNEMONIC  the assembly name (vxe.op and vxe.reduce stand for the families vxe.<scalar op>
//             and vxe.r<reduction>, which carry their op by name)
//   UNIT      the unit the ISU routes it to: an engine, or the ISU itself (control: loops,
//             barriers, halt)
//   CODE      its code in the binary format: stable, never reused, independent of the row order
//   FORM      how its fields are written (Form below)
//   ROLES     what it reads and writes, in message order (Role below, joined by |)
//   WORK      the useful work it does, in its engine's unit (Work below)
//   ARITH     what that work counts as in a kernel's roofline: SXE FLOPs (2 per MAC), VXE
//             element operations, or nothing
//   ENERGY    which energy event it is charged to (Energy below)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

// clang-format off
#define LPU_BUILTIN_UNITS(X) X(Dma, "dma") X(Vxe, "vxe") X(Sxe, "sxe") X(Host, "host") X(Esl, "esl")

#define LPU_BUILTIN_OPCODES(X)                                                                                           \
  X(DmaLoad,    "dma.load",    Dma,  0, TileLoad,  LmDestTile | HbmTileRead,                Bytes,    None,     None)     \
  X(DmaStore,   "dma.store",   Dma,  1, TileStore, LmSrcTile | HbmTileWrite,                Bytes,    None,     None)     \
  X(VxeOp,      "vxe.op",      Vxe,  2, VectorOp,  LmDestTile | LmSources,                  Elements, VxeOps,   VxeOpClass) \
  X(VxeReduce,  "vxe.reduce",  Vxe,  3, Reduce,    LmDestColumn | LmSources,                Elements, VxeOps,   VxeReduce) \
  X(VxeMov,     "vxe.mov",     Vxe,  4, Unary,     LmDestTile | LmSources,                  Elements, None,     VxeMov)   \
  X(SxeGemm,    "sxe.gemm",    Sxe,  6, Gemm,      LmDestTile | LmActivation | HbmWeights,  Macs,     SxeFlops, SxeMacs)  \
  X(DmaGather,  "dma.gather",  Dma,  7, Gather,    LmDestTile | LmIndices | HbmTableRow,    Bytes,    None,     None)     \
  X(SxeGemmGather, "sxe.gemm_gather", Sxe, 14, GemmGather, LmDestTile | LmActivation | LmRowIndex | HbmWeights, Macs, SxeFlops, SxeMacs) \
  X(HostCall,   "host.call",   Host, 8, HostCall,  HostBuffers,                             None,     None,     None)     \
  X(SyncSignal, "sync.signal", Isu,  9, Signal,    None,                                    None,     None,     None)     \
  X(SyncWait,   "sync.wait",   Isu, 10, Wait,      None,                                    None,     None,     None)     \
  X(LoopBegin,  "loop",        Isu, 11, Loop,      None,                                    None,     None,     None)     \
  X(LoopEnd,    "endloop",     Isu, 12, EndLoop,     None,                                    None,     None,     None)     \
  X(EslSend,    "esl.send",    Esl, 13, Send,      LmSource | RemoteLmDest,                 None,     None,     None)     \
  X(Halt,       "halt",        Isu,  5, Bare,      None,                                    None,     None,     None)
// clang-format on

// An extension (a test's toy engine, docs/adding-an-engine.md) adds rows without editing this
// file: a build that defines LPU_ISA_EXTENSION="header.h" gets that header's
// LPU_EXTENSION_UNITS(X) and LPU_EXTENSION_OPCODES(X) rows after the built-in ones.
#ifdef LPU_ISA_EXTENSION
#include LPU_ISA_EXTENSION
#endif
#ifndef LPU_EXTENSION_UNITS
#define LPU_EXTENSION_UNITS(X)
#endif
#ifndef LPU_EXTENSION_OPCODES
#define LPU_EXTENSION_OPCODES(X)
#endif

#define LPU_UNITS(X) LPU_BUILTIN_UNITS(X) LPU_EXTENSION_UNITS(X) X(Isu, "isu")
#define LPU_OPCODES(X) LPU_BUILTIN_OPCODES(X) LPU_EXTENSION_OPCODES(X)

namespace lpu {

#define LPU_UNIT_ENUM(name, text) name,
#define LPU_OPCODE_ENUM(name, ...) name,
// The unit that executes an opcode: an engine behind the ISU, or the ISU itself.
enum class Unit : uint8_t { LPU_UNITS(LPU_UNIT_ENUM) };
enum class Opcode : uint8_t { LPU_OPCODES(LPU_OPCODE_ENUM) };
#undef LPU_UNIT_ENUM
#undef LPU_OPCODE_ENUM

#define LPU_COUNT_ROW(...) +1
constexpr size_t kUnits = 0 LPU_UNITS(LPU_COUNT_ROW);
constexpr size_t kOpcodeCount = 0 LPU_OPCODES(LPU_COUNT_ROW);
#undef LPU_COUNT_ROW

// How an instruction's fields are written, in assembly and in the binary record
// (docs/isa.md). Opcodes of one form differ only in their mnemonic.
enum class Form : uint8_t {
  TileLoad,    // MN DTYPE [R, C] lm:D <- hbm:A [rs, cs]
  TileStore,   // MN DTYPE [R, C] hbm:A [rs, cs] <- lm:S
  VectorOp,    // vxe.<scalar op> [R, C] lm:D [rs, 1] <- SRC, ...   (as many sources as the op's arity;
               // the destination row stride optional, in the depth field)
  Reduce,      // vxe.r<reduction> [R, C] lm:D <- SRC          (result [R, 1])
  Unary,       // MN [R, C] lm:D [rs, 1] <- SRC                (the destination row stride as VectorOp's)
  Gemm,        // MN DTYPE [M, K, N] lm:D <- lm:A [rs, ks], hbm:B [ks, ns]
  GemmGather,  // MN DTYPE [M, K, N] lm:D <- lm:A [rs, ks], hbm:B [ks, ns], lm:I [irs, ics], #S (row m: hbm:B + I[m]*S)
  Gather,      // MN DTYPE [R, C] lm:D <- hbm:T [rs, cs], lm:I [irs, ics]
  HostCall,    // MN ID                                  (the host-op index in the depth field)
  Signal,      // MN TOKEN [dev:D]                       (token in rows, device + 1 in cols)
  Wait,        // MN TOKEN
  Loop,        // MN COUNT                               (count in rows; no address steps of its own)
  EndLoop,     // MN                                     (no address steps)
  Send,        // MN [R, C] dev:D lm:DST <- SRC token:T  (token in depth, device in the hbm row stride)
  Bare,        // MN
};

// One operand an instruction reads or writes, with the memory, the shape and the address
// fields it is made of. Elements of local-memory tiles are fp32; HBM operands are in the
// instruction's dtype. An instruction's roles are a set (bits), listed in this order.
using Role = uint16_t;
namespace role {
enum : Role {
  None = 0,
  LmDestTile = 1 << 0,     // writes lm_addr, [R, C] rows lm_row_stride() apart (dense unless lm_rs)  "destination"
  LmDestColumn = 1 << 1,   // writes lm_addr, dense [R, 1] (a row reduction)   "destination"
  LmSrcTile = 1 << 2,      // reads lm_addr, dense [R, C]                      "source"
  LmSources = 1 << 3,      // reads every source not immediate, [R, C] by its strides  "source [k]"
  LmSource = 1 << 4,       // reads source 0, [R, C] by its strides            "source"
  LmActivation = 1 << 5,   // reads source 0, [R, K] by its strides            "activation A"
  LmIndices = 1 << 6,      // reads source 0, [R, 1] by its row stride         "indices"
  HbmTileRead = 1 << 7,    // reads hbm_addr, [R, C] by hbm_rs, hbm_cs         "source"
  HbmTileWrite = 1 << 8,   // writes hbm_addr, [R, C] by hbm_rs, hbm_cs        "destination"
  HbmWeights = 1 << 9,     // reads hbm_addr, [K, C] by hbm_rs, hbm_cs         "weights B"
                           // (sxe.gemm_gather: slab 0's, standing for the slabs rows pick)
  HbmTableRow = 1 << 10,   // reads hbm_addr, [1, C] by hbm_cs: a gather's table, its first row
                           // standing for the rows that index values pick at run time  "table"
  RemoteLmDest = 1 << 11,  // writes lm_addr, dense [R, C], in another device's local memory
  HostBuffers = 1 << 12,   // reads its host op's input buffers and writes its output, whole
  LmRowIndex = 1 << 13,    // reads source 1, [R, 1] by its row stride: each row's slab index  "row indices"
};
}  // namespace role

// The useful work of one instruction, in its engine's unit (sim EngineStats::work).
enum class Work : uint8_t {
  None,
  Elements,  // R x C element operations
  Macs,      // M x K x N multiply-accumulates
  Bytes,     // R x C x dtype bytes moved
};
// What that work is in a kernel's roofline (sim KernelStats): 2 SXE FLOPs per MAC, one VXE
// operation per element, or none (moves are not arithmetic).
enum class Arith : uint8_t { None, SxeFlops, VxeOps };
// The energy event an instruction's work is charged to (sim/energy.h): the SXE's MACs, or VXE
// element operations of a class (the scalar op's cost class, reduce or mov). Data movement is
// charged by the memories (HBM, LMU, ESL bytes), not per instruction.
enum class Energy : uint8_t { None, SxeMacs, VxeOpClass, VxeReduce, VxeMov };

struct OpcodeInfo {
  Opcode op;
  const char* name;
  Unit unit;
  uint8_t code;
  Form form;
  Role roles;
  Work work;
  Arith arith;
  Energy energy;
};

// clang-format off
#define LPU_OPCODE_ROW(e, mn, u, c, f, r, w, a, en) \
  OpcodeInfo{Opcode::e, mn, Unit::u, c, Form::f, [] { using namespace role; return Role(r); }(), Work::w, Arith::a, \
             Energy::en},
// clang-format on
// Indexed by the enum value (the rows make both, in one order).
inline constexpr OpcodeInfo kOpcodeTable[kOpcodeCount] = {LPU_OPCODES(LPU_OPCODE_ROW)};
#undef LPU_OPCODE_ROW

#define LPU_UNIT_NAME(name, text) text,
inline constexpr const char* kUnitNames[kUnits] = {LPU_UNITS(LPU_UNIT_NAME)};
#undef LPU_UNIT_NAME

constexpr const OpcodeInfo& opcode_info(Opcode op) { return kOpcodeTable[static_cast<size_t>(op)]; }
const OpcodeInfo* opcode_by_code(uint8_t code);             // null when no opcode has it
const OpcodeInfo* opcode_by_name(const std::string& name);  // exact mnemonics only (not the vxe families)
constexpr const char* opcode_name(Opcode op) { return opcode_info(op).name; }
constexpr Unit opcode_unit(Opcode op) { return opcode_info(op).unit; }
constexpr const char* unit_name(Unit u) { return kUnitNames[static_cast<size_t>(u)]; }
constexpr bool has_role(Opcode op, Role r) { return (opcode_info(op).roles & r) != 0; }
// The mnemonic names a family (vxe.<op>, vxe.r<reduction>) rather than one instruction.
constexpr bool is_family(Form f) { return f == Form::VectorOp || f == Form::Reduce; }
// Instructions that move or compute a tile: all but control flow, tokens and host calls.
constexpr bool has_tile(Form f) {
  return f != Form::HostCall && f != Form::Signal && f != Form::Wait && f != Form::Loop && f != Form::EndLoop &&
         f != Form::Bare;
}

}  // namespace lpu
