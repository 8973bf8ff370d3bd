// Serving request traces (serve/trace_reader.h): CSV and JSON Lines, both read from the same
// bytes (the reader picks one by the file's extension or first character; both must cope).
#include "fuzz_util.h"
#include "serve/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] { lpu::serve::parse_trace_csv(text, "fuzz.csv"); });
  lpu::fuzz::expect_input_error_only([&] { lpu::serve::parse_trace_jsonl(text, "fuzz.jsonl"); });
  lpu::fuzz::expect_input_error_only([&] { lpu::serve::parse_trace_csv(text, "lengths.csv", false); });
  return 0;
}
