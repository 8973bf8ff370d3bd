// Shared by the libFuzzer targets (docs/robustness.md): every parser must turn any input into
// a result or an InputError. Any other exception, a crash, a sanitizer report, a hang or a
// leak is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "support/error.h"

namespace lpu::fuzz {

// Runs `parse`; an InputError is the expected answer to bad input, anything else escapes to
// libFuzzer (an uncaught exception aborts, which libFuzzer reports as a crash with the input).
template <typename F>
void expect_input_error_only(F&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  }
}

// Parsers that read from a path get the input through a per-process scratch file.
inline std::string scratch_file(const char* suffix, const uint8_t* data, size_t size) {
  std::string path = std::string("/tmp/lpu-fuzz-") + std::to_string(getpid()) + suffix;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace lpu::fuzz
