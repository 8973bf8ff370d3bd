// Every exported PyTorch zoo model through the back half of the compiler, per model and per
// fusion policy (issue 4 acceptance):
//   - the interpreter handler on the loop IR equals the reference executor (1e-5 abs);
//   - the C++ source handler's code, compiled with the system compiler and run, equals the
//     reference executor (1e-4 abs + 1e-4 rel);
//   - the generated LPU program round-trips through its assembly text exactly.
// Usage: test_zoo_backends EXPORT_DIR (written by tests/frontend/export_models.py).
#include <gtest/gtest.h>

#include "zoo_main.h"

#include <filesystem>
#include <iostream>

#include "cpp_harness.h"
#include "driver/compile.h"
#include "handlers/cpp_source.h"
#include "handlers/interpreter.h"
#include "isa/program.h"
#include "jobs/jobs.h"
#include "ref/reference.h"

using namespace lpu;
namespace fs = std::filesystem;

namespace {

class ZooBackends : public testing::Test {
 public:
  explicit ZooBackends(fs::path json) : json_(std::move(json)) {}

  void TestBody() override {
    GraphFile f = load_graph_file(json_.string());
    for (const std::string policy : {"none", "greedy"}) {
      CompileOptions o;
      o.fusion = policy;
      o.codegen.lmu_bytes = 4 << 20;
      Compilation c = compile_graph(f.graph, o);
      TensorMap in = load_graph_inputs(f, c.core);
      std::vector<Tensor> want = run_reference(c.core, in);
      std::vector<Tensor> got = interpret_loop_ir(c.loop_ir, in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_LT(compare_tensors(got[i], want[i]).max_abs_error, 1e-5) << policy << " output " << i;

      TensorMap cpp = cppharness::compile_and_run(emit_cpp_source(c.loop_ir, c.schedule), c.loop_ir, in);
      FunctionalCheck chk = check_outputs(want, c.loop_ir.outputs, cpp, DType::f32);
      EXPECT_TRUE(chk.ok) << policy << ": " << chk.worst;

      std::string text = print_program(c.code.program);
      Program q = parse_program(text, json_.string() + ".s");
      ASSERT_EQ(q.code.size(), c.code.program.code.size());
      for (size_t i = 0; i < q.code.size(); ++i)
        ASSERT_TRUE(q.code[i].same_as(c.code.program.code[i])) << print_instruction(q.code[i]);
      EXPECT_EQ(print_program(q), text);
    }
  }

 private:
  fs::path json_;
};

}  // namespace

int main(int argc, char** argv) {
  return run_per_exported_graph(argc, argv, "ZooBackends", [](fs::path p) -> testing::Test* { return new ZooBackends(p); });
}
