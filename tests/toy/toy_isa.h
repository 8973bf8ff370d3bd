// The toy engine's rows of the opcode table (docs/adding-an-engine.md): test_toy_engine builds
// the ISA and the simulator with LPU_ISA_EXTENSION="toy_isa.h", which appends these rows to
// the built-in ones (compiler/isa/opcodes.h).
#pragma once

// X(NAME, UNIT NAME)
#define LPU_EXTENSION_UNITS(X) X(Toy, "toy")
// X(ENUM, MNEMONIC, UNIT, CODE, FORM, ROLES, WORK, ARITH, ENERGY): toy.double doubles a tile.
#define LPU_EXTENSION_OPCODES(X) \
  X(ToyDouble, "toy.double", Toy, 200, Unary, LmDestTile | LmSources, Elements, None, None)
