// The binary program form (.lpubin); a decoded program must encode to a decodable program.
#include "fuzz_util.h"
#include "isa/encoding.h"
#include "isa/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lpu::fuzz::expect_input_error_only([&] {
    lpu::Program p = lpu::decode_program(data, size, "fuzz.lpubin");
    std::string printed = lpu::print_program(p);
    if (lpu::print_program(lpu::decode_program(lpu::encode_program(p), "reencoded.lpubin")) != printed)
      throw lpu::InternalError("binary program does not round-trip");
  });
  return 0;
}
