// The encoded (binary) form of an LPU program: what a loader would DMA to the device instead
// of parsing assembly. `lpu compile --emit bin` writes it as program.lpubin; docs/isa.md has
// the byte layout. Little-endian, fixed-size records:
//
//   header (48 B)     magic "LPUB", version, record sizes, table counts, total size, checksum
//                     (FNV-1a 64 over the whole file except the checksum field)
//   strings           program name; per buffer: name, HBM address, dtype, role, shape;
//                     kernel names; the vector-op name table
//   instructions      one 64-byte record each (operands by index into the pool)
//   operand pool      one 16-byte record per VXE source operand
//
// Vector ops are stored as indices into a name table carried in the file ("add", "rsum", ...)
// rather than as enum values, so inserting an op into LPU_SCALAR_OPS or LPU_REDUCTION_TYPES
// does not change what old files mean.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"

namespace lpu {

inline constexpr uint16_t kLpuBinVersion =
    5;  // 5: packed weights (64-byte records, quantised buffers); 4: loops, 56-byte records with address steps;  // 2:
        // 44-byte records with sxe.gemm depth; 3: host-op table

// The checksum guards files. Between two processes of one run (a generation's forked
// simulations, process/forked_work.h) nothing can corrupt the bytes, and summing them costs as
// much as the rest of the encoding: Skip writes 0 and reads without checking it.
enum class Checksum { Check, Skip };

// Throws InputError when a field does not fit its record (e.g. a tile dimension >= 2^32),
// naming the instruction.
std::vector<uint8_t> encode_program(const Program& p, Checksum checksum = Checksum::Check);
// The same into `out` (replacing what it held), whose memory a caller encoding many programs
// reuses: a fresh buffer of a few hundred KB is mapped and unmapped by malloc each time, and
// every first touch of its pages is a page fault.
void encode_program_into(const Program& p, std::vector<uint8_t>& out, Checksum checksum = Checksum::Check);

// Validates everything it reads (sizes, enum codes, operand counts and ranges, padding, the
// checksum) and throws InputError "SOURCE: byte OFFSET: message" on corrupt or truncated input.
Program decode_program(const uint8_t* data, size_t size, const std::string& source = "<lpubin>",
                       Checksum checksum = Checksum::Check);
inline Program decode_program(const std::vector<uint8_t>& bytes, const std::string& source = "<lpubin>") {
  return decode_program(bytes.data(), bytes.size(), source);
}

}  // namespace lpu
