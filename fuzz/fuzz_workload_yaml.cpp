// Workload YAML (validation only: building a graph of any valid shape is not a parser's job).
#include "fuzz_util.h"
#include "workload/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = lpu::fuzz::scratch_file(".yaml", data, size);
  lpu::fuzz::expect_input_error_only([&] { lpu::load_workload_file(path); });
  std::remove(path.c_str());
  return 0;
}
