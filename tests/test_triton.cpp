// The Triton source handler (handlers/triton_*.cpp). CI has no GPU: the emitted modules are
// checked as text (golden files for a few kernels, tests/golden/triton/), their BUFFER_PLAN
// against the Schedule it came from, and the op table and index printing directly.
// tests/triton_emit_test.py byte-compiles every emitted module (ctest triton_py_compile).
// LPU_UPDATE_GOLDEN=1 rewrites the golden files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "driver/compile.h"
#include "handlers/torch_graph.h"
#include "handlers/torch_python.h"
#include "handlers/triton_internal.h"
#include "handlers/triton_source.h"
#include "test_programs.h"
#include "workload/transformer.h"
#include "workload/workload.h"

using namespace lpu;

namespace {

Compilation compile_model(const std::string& model, const std::string& policy, int64_t seq_len, int64_t dim,
                          const std::set<std::string>& unsupported = {}) {
  WorkloadSpec w;
  w.name = model;
  w.model = model;
  w.seq_len = seq_len;
  if (dim > 0)
    for (const auto& [k, v] : find_model_builder(model)->params) w.params[k] = dim;
  CompileOptions o;
  o.fusion = policy;
  o.unsupported_ops = unsupported;
  o.break_on_unsupported = !unsupported.empty();
  return compile_graph(build_graph(w), o);
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void check_golden(const std::string& name, const std::string& text) {
  std::string path = std::string(LPU_SOURCE_DIR) + "/tests/golden/triton/" + name;
  if (std::getenv("LPU_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    return;
  }
  std::string want = read(path);
  ASSERT_FALSE(want.empty()) << path << " is missing (LPU_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(text, want) << "emitted Triton module differs from " << path << " (LPU_UPDATE_GOLDEN=1 rewrites it)";
}

// The plan's claims, each against the Schedule and the LoopProgram it was made from.
void check_plan(const Compilation& c, const std::string& what) {
  SCOPED_TRACE(what);
  const LoopProgram& p = c.loop_ir;
  const Schedule& s = c.schedule;
  nlohmann::json plan = nlohmann::json::parse(triton_buffer_plan_json(p, s));
  EXPECT_EQ(plan["policy"], s.policy);
  EXPECT_EQ(plan["inputs"].get<std::vector<std::string>>(), p.inputs);
  EXPECT_EQ(plan["outputs"].get<std::vector<std::string>>(), p.outputs);
  ASSERT_EQ(plan["kernels"].size(), s.kernels.size());
  std::set<std::string> hbm, written;
  for (size_t i = 0; i < s.kernels.size(); ++i) {
    const Kernel& k = s.kernels[i];
    const auto& e = plan["kernels"][i];
    EXPECT_EQ(e["name"], k.name);
    std::vector<std::string> nodes;
    for (int idx : k.nodes) {
      nodes.push_back(p.nodes.at(static_cast<size_t>(idx)).name);
      written.insert(p.nodes.at(static_cast<size_t>(idx)).out());
    }
    EXPECT_EQ(e["nodes"].get<std::vector<std::string>>(), nodes) << k.name;
    EXPECT_EQ(e["hbm_outputs"].get<std::vector<std::string>>(), k.hbm_outputs) << k.name;
    hbm.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
    std::string mode = e["mode"];
    EXPECT_TRUE(mode == "rows" || mode == "grid" || mode == "dot" || mode == "host") << mode;
    EXPECT_EQ(mode == "host", e["triton"].get<std::string>().empty()) << k.name;
  }
  std::set<std::string> inputs(p.inputs.begin(), p.inputs.end()), seen;
  for (const auto& b : plan["buffers"]) {
    std::string name = b["name"];
    EXPECT_TRUE(seen.insert(name).second) << "buffer " << name << " listed twice";
    ASSERT_TRUE(p.buffers.count(name)) << name;
    const Buffer& buf = p.buffers.at(name);
    EXPECT_EQ(b["shape"].get<Shape>(), buf.type.shape) << name;
    EXPECT_EQ(b["dtype"], dtype_name(buf.type.dtype)) << name;
    EXPECT_EQ(b["role"], buffer_role_name(buf.role)) << name;
    std::string storage = b["storage"];
    std::string want = inputs.count(name) ? "input" : hbm.count(name) ? "hbm" : "scratch";
    EXPECT_EQ(storage, want) << name;
  }
  for (const auto& b : written) EXPECT_TRUE(seen.count(b)) << "written buffer " << b << " is not in the plan";
  for (const auto& o : p.outputs)
    EXPECT_TRUE(inputs.count(o) || hbm.count(o)) << "output " << o << " never reaches HBM";
}

std::vector<std::string> tiny_models() {
  std::vector<std::string> out;
  for (const auto& b : model_builders()) {
    if (const TransformerShape* ts = find_transformer(b.name); ts && ts->name.rfind("tiny", 0) != 0) continue;
    out.push_back(b.name);
  }
  return out;
}

}  // namespace

TEST(TritonSource, BufferPlanMatchesTheSchedule) {
  for (const auto& model : tiny_models())
    for (const std::string policy : {"none", "greedy"})
      check_plan(compile_model(model, policy, 7, 48), model + "/" + policy);
  check_plan(compile_model("ln_gelu_add", "greedy", 8, 64, {"erf"}), "ln_gelu_add with a graph break");
}

// Every kernel is launched in schedule order, each with a function defined before.
TEST(TritonSource, EveryKernelIsDefinedAndLaunchedInOrder) {
  for (const auto& model : tiny_models())
    for (const std::string policy : {"none", "greedy"}) {
      SCOPED_TRACE(model + "/" + policy);
      Compilation c = compile_model(model, policy, 7, 48);
      std::string text = emit_triton_module(c.loop_ir, c.schedule);
      nlohmann::json plan = nlohmann::json::parse(triton_buffer_plan_json(c.loop_ir, c.schedule));
      size_t launch = text.find("\ndef launch(bufs):");
      ASSERT_NE(launch, std::string::npos);
      size_t pos = launch;
      for (const auto& k : plan["kernels"]) {
        if (k["mode"] == "host") continue;
        std::string fn = k["triton"];
        size_t def = text.find("\ndef " + fn + "(p0");
        ASSERT_NE(def, std::string::npos) << fn;
        EXPECT_LT(def, launch);
        EXPECT_EQ(text.substr(def - 11, 11), "@triton.jit") << fn;
        size_t call = text.find("    " + fn + "[(", pos);
        ASSERT_NE(call, std::string::npos) << fn << " is not launched after the previous kernel";
        pos = call + 1;
      }
      EXPECT_NE(text.find("def run(inputs, device=\"cuda\"):"), std::string::npos);
      EXPECT_NE(text.find("BUFFER_PLAN = json.loads(r\"\"\""), std::string::npos);
    }
}

// Kernels of identical code share one function: a transformer's layers compile once.
TEST(TritonSource, IdenticalKernelsShareOneFunction) {
  Compilation c = compile_model("tiny-opt", "none", 7, 0);
  nlohmann::json plan = nlohmann::json::parse(triton_buffer_plan_json(c.loop_ir, c.schedule));
  std::set<std::string> fns;
  for (const auto& k : plan["kernels"]) fns.insert(k["triton"].get<std::string>());
  EXPECT_LT(fns.size() * 3, plan["kernels"].size() * 2) << fns.size() << " functions for " << plan["kernels"].size();
}

TEST(TritonSource, GraphBreakCallsTorchOnTheHost) {
  Compilation c = compile_model("ln_gelu_add", "greedy", 8, 64, {"erf"});
  std::string text = emit_triton_module(c.loop_ir, c.schedule);
  EXPECT_NE(text.find("_host_op(\"erf\", [bufs[\"gelu_scaled\"]], {}, bufs[\"gelu_erf\"])"), std::string::npos) << text;
  nlohmann::json plan = nlohmann::json::parse(triton_buffer_plan_json(c.loop_ir, c.schedule));
  int hosts = 0;
  for (const auto& k : plan["kernels"]) hosts += k["mode"] == "host" ? 1 : 0;
  EXPECT_EQ(hosts, 1);
}

TEST(TritonSource, MatmulWithRowsUsesTlDot) {
  Compilation c = compile_model("gemv", "none", 16, 64);
  std::string text = emit_triton_module(c.loop_ir, c.schedule);
  EXPECT_NE(text.find("acc += tl.dot(a, b"), std::string::npos) << text;
  EXPECT_NE(text.find("\"mode\": \"dot\""), std::string::npos);
}

// Floor division and modulo: plain // and % only where the operand is provably non-negative.
TEST(TritonSource, IndexPrintingKeepsFloorSemantics) {
  triton::Scope sc;
  const LoopVar v0 = LoopVar::output(0), v1 = LoopVar::output(1);
  sc.var = {{v0, "i0"}, {v1, "i1"}};
  sc.range = {{v0, 12}, {v1, 4}};
  Index i0 = Index::var(v0), i1 = Index::var(v1);
  EXPECT_EQ(triton::index_py(i0 * 4 + i1, sc, "n", "t"), "4*i0 + i1");
  EXPECT_EQ(triton::index_py((i0 + Index::constant(3)).floordiv(4), sc, "n", "t"), "((i0 + 3) // 4)");
  EXPECT_EQ(triton::index_py((i1 * 2 - i0).floordiv(4), sc, "n", "t"), "_lpu_floordiv(-i0 + 2*i1, 4)");
  EXPECT_EQ(triton::index_py((Index::constant(0) - i0).mod(4) * 3, sc, "n", "t"), "3*_lpu_mod(-i0, 4)");
  EXPECT_EQ(triton::index_py(i1.mod(3), sc, "n", "t"), "((i1) % 3)");
  EXPECT_THROW(triton::index_py(Index::var(LoopVar::reduction(0)), sc, "n", "t"), InputError);
}

// Every scalar op of LPU_SCALAR_OPS has a Triton spelling (the handler's switch is exhaustive;
// this proves none of its cases throws), and a literal operand of a tl function is a tensor.
TEST(TritonSource, EveryScalarOpHasASpelling) {
  LoopNode n;
  n.name = "n";
  std::map<std::string, std::string> ptrs;
  triton::PyWriter w;
  int tmp = 0;
  triton::TritonExprHandler h(n, ptrs, w, tmp);
  int ops = 0;
#define LPU_TRY_OP(name, arity, ...)                                         \
  {                                                                          \
    std::vector<std::string> args;                                           \
    for (int i = 0; i < arity; ++i) args.push_back("x" + std::to_string(i)); \
    std::string v = h.call(ScalarOp::name, args, DType::f32);                \
    EXPECT_EQ(v.rfind("t", 0), 0u) << #name;                                 \
    ++ops;                                                                   \
  }
  LPU_SCALAR_OPS(LPU_TRY_OP)
#undef LPU_TRY_OP
  EXPECT_GT(ops, 50);
  std::string text = w.str();
  for (const char* s :
       {"tl.exp(x0)", "libdevice.erf(x0)", "tl.where(x0 != 0, x1, x2)", "1.0 / tl.sqrt_rn(x0)", "tl.maximum(x0, x1)"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  EXPECT_EQ(text.find("x0 // x1"), std::string::npos) << "float division must not floor";
  std::string lit = h.constant(0.5, DType::f32);
  h.call(ScalarOp::exp, {lit}, DType::f32);
  EXPECT_NE(w.str().find("tl.full([], 0.5, tl.float32)"), std::string::npos) << w.str();
}

TEST(TritonSource, GoldenKernels) {
  Compilation ln = compile_model("ln_gelu_add", "greedy", 4, 64);
  check_golden("ln_gelu_add_greedy.py", emit_triton_module(ln.loop_ir, ln.schedule));
  Compilation sm = compile_model("softmax", "greedy", 4, 32);
  check_golden("softmax_greedy.py", emit_triton_module(sm.loop_ir, sm.schedule));
  Compilation mm = compile_model("gemv", "none", 16, 64);
  check_golden("matmul_none.py", emit_triton_module(mm.loop_ir, mm.schedule));
  Compilation gv = compile_model("gemv", "greedy", 1, 64);
  check_golden("gemv_greedy.py", emit_triton_module(gv.loop_ir, gv.schedule));
}

// The eager torch spelling of a core graph (--emit torch): golden text, and the table it shares with
// the Triton launcher knows every element-wise op. ctest torch_graph_eager runs the modules on CPU.
TEST(TorchGraph, GoldenModule) {
  Compilation ln = compile_model("ln_gelu_add", "none", 4, 64);
  check_golden("ln_gelu_add_torch.py", emit_torch_graph_module(ln.core, ln.loop_ir.outputs));
}

TEST(TorchGraph, EveryScalarOpIsInTheTorchTable) {
  std::string table = torch_host_ops_py();
  int ops = 0;
#define LPU_FIND_OP(name, ...)                                                                                    \
  EXPECT_NE(table.find(std::string("\"") + #name + "\": "), std::string::npos) << #name " has no torch spelling"; \
  ++ops;
  LPU_SCALAR_OPS(LPU_FIND_OP)
#undef LPU_FIND_OP
  EXPECT_GT(ops, 50);
}

TEST(TorchGraph, ZeroDimConstantsBecomeNumbersAndNamesMustMatchTheOutputs) {
  Graph g("g");
  NodeId x = g.add_placeholder("x", TensorType{DType::f16, {2, 3}});
  Attrs half{{"value", 0.5}, {"shape", std::vector<int64_t>{}}, {"dtype", std::string("f16")}};
  NodeId c = g.add_call("full", {}, half);
  NodeId m = g.add_call("mul", {x, c});  // only operator users: a Python number
  Attrs two = half;
  two["value"] = 2.0;
  NodeId c2 = g.add_call("full", {}, two);
  NodeId mx = g.add_call("maximum", {m, c2});  // no operator spelling: this constant stays a tensor
  g.set_output({mx});
  std::string text = emit_torch_graph_module(g, {"out"});
  EXPECT_EQ(text.find("v1 ="), std::string::npos) << text;
  EXPECT_NE(text.find("v2 = _cast(v0 * 0.5, torch.float16)"), std::string::npos) << text;
  EXPECT_NE(text.find("v3 = torch.full([], 2, dtype=torch.float16, device=dev)"), std::string::npos) << text;
  EXPECT_NE(text.find("_HOST_SCALAR[\"maximum\"](v2, v3)"), std::string::npos) << text;
  EXPECT_NE(text.find("OUTPUTS = [\"out\"]"), std::string::npos) << text;
  EXPECT_THROW(emit_torch_graph_module(g, {}), InputError);
}
