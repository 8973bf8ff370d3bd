// LPU assembly text; a parsed program must print, parse and encode/decode again.
#include "fuzz_util.h"
#include "isa/encoding.h"
#include "isa/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] {
    lpu::Program p = lpu::parse_program(text, "fuzz.s");
    std::string printed = lpu::print_program(p);
    lpu::Program q = lpu::parse_program(printed, "reprinted.s");
    if (lpu::print_program(lpu::decode_program(lpu::encode_program(q), "reencoded.lpubin")) != printed)
      throw lpu::InternalError("assembly does not round-trip through text and binary");
  });
  return 0;
}
