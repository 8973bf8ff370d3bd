// Sweep YAML: loaded, validated against its base config, and expanded into points.
#include "fuzz_util.h"
#include "sweep/sweep_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] {
    lpu::SweepSpec s = lpu::load_sweep_string(text, "fuzz.yaml", ".");
    lpu::expand_points(s);
  });
  return 0;
}
