// Architecture config YAML, validated on load.
#include "config/arch_config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] { lpu::load_arch_config_string(text, "fuzz.yaml", {}); });
  return 0;
}
