// Test harness for the C++ source handler: compiles generated source with the system compiler
// into a shared library in a fresh temporary directory, loads it with dlopen, fills its buffer
// table from tensors by name, runs lpu_run and returns every buffer of the table.
#pragma once
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "loopir/loop_ir.h"
#include "ref/tensor.h"
#include "support/error.h"

#ifndef LPU_HOST_CXX
#define LPU_HOST_CXX "c++"
#endif

namespace lpu::cppharness {

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "lpu_cpp_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw InternalError("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Compiles `source` (warnings are errors: generated code must be clean) and runs it.
// Throws CheckFailed with the compiler's output when the source does not compile.
inline TensorMap compile_and_run(const std::string& source, const LoopProgram& p, const TensorMap& inputs) {
  TempDir dir;
  auto src = dir.path() / "kernels.cpp";
  auto lib = dir.path() / "kernels.so";
  auto log = dir.path() / "cc.log";
  std::ofstream(src) << source;
  // -ffp-contract=off: no fused multiply-add, so the arithmetic is what the text says.
  std::string cmd = strcat(LPU_HOST_CXX, " -std=c++17 -O1 -shared -fPIC -Wall -Wextra -Werror -ffp-contract=off -o ",
                           lib.string(), " ", src.string(), " > ", log.string(), " 2>&1");
  if (std::system(cmd.c_str()) != 0) {
    std::stringstream ss;
    ss << std::ifstream(log).rdbuf();
    throw CheckFailed("generated C++ does not compile:\n" + ss.str());
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw CheckFailed(std::string("dlopen: ") + dlerror());
  auto sym = [&](const char* name) {
    void* f = dlsym(h, name);
    if (!f) throw CheckFailed(std::string("generated code lacks ") + name);
    return f;
  };
  auto count = reinterpret_cast<int (*)()>(sym("lpu_buffer_count"));
  auto name_of = reinterpret_cast<const char* (*)(int)>(sym("lpu_buffer_name"));
  auto numel_of = reinterpret_cast<long long (*)(int)>(sym("lpu_buffer_numel"));
  auto run = reinterpret_cast<void (*)(float* const*)>(sym("lpu_run"));
  std::vector<std::vector<float>> storage(static_cast<size_t>(count()));
  std::vector<float*> ptrs;
  std::vector<std::string> names;
  for (int i = 0; i < count(); ++i) {
    names.push_back(name_of(i));
    auto& s = storage[static_cast<size_t>(i)];
    s.assign(static_cast<size_t>(numel_of(i)), NAN);  // outputs a kernel forgets to write stay NaN
    if (auto it = inputs.find(names.back()); it != inputs.end()) {
      if (it->second.data.size() != s.size()) throw CheckFailed("input " + names.back() + " has the wrong size");
      s = it->second.data;
    }
    ptrs.push_back(s.data());
  }
  run(ptrs.data());
  TensorMap out;
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor t(p.buffers.at(names[i]).type);
    t.data = storage[i];
    out[names[i]] = std::move(t);
  }
  dlclose(h);
  return out;
}

}  // namespace lpu::cppharness
