// GPU configs (serve/gpu_model.h: the GPU prefill pool), validated strictly from YAML text.
#include "fuzz_util.h"
#include "serve/gpu_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] { lpu::serve::load_gpu_config_string(text, "fuzz.yaml"); });
  return 0;
}
