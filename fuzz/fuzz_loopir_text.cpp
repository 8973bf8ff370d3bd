// The loop IR's exact text form (print_loop_ir / parse_loop_ir, verified on parse); a parsed
// program must print and parse again to the same text.
#include "fuzz_util.h"
#include "loopir/loop_ir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] {
    lpu::LoopProgram p = lpu::parse_loop_ir(text, "fuzz.loopir");
    std::string printed = lpu::print_loop_ir(p);
    if (lpu::print_loop_ir(lpu::parse_loop_ir(printed, "reprinted.loopir")) != printed)
      throw lpu::InternalError("loop IR text does not round-trip");
  });
  return 0;
}
