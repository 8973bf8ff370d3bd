// Graph breaks: a core op removed from the supported set (--unsupported-ops) runs on the host
// with --on-unsupported=break, is priced by the host engine and gives the reference's numbers;
// without it the same switch is an error naming the op and the node.
#include <gtest/gtest.h>

#include "handlers/cpp_source.h"
#include "isa/encoding.h"
#include "jobs/jobs.h"
#include "test_util.h"
#include "ref/reference.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
using testutil::builtin;
using testutil::small_arch;

BreakOptions unsupported(std::set<std::string> ops, bool brk) {
  BreakOptions b;
  b.unsupported_ops = std::move(ops);
  b.on_unsupported_break = brk;
  return b;
}
}  // namespace

// ln_gelu_add with erf (gelu's core op) unsupported: one break, outputs equal the reference
// executor's, and the latency grows by at least the host round trip.
TEST(GraphBreaks, ErfOnTheHostMatchesReferenceAndCostsTime) {
  ArchConfig arch = small_arch();
  WorkloadSpec w = builtin("ln_gelu_add", 37, 200);
  for (const std::string policy : {"none", "greedy"}) {
    RunOutcome plain = run_job(w, arch, policy, true);
    RunOutcome brk = run_job(w, arch, policy, true, false, unsupported({"erf"}, true));
    ASSERT_EQ(brk.sim.stats.graph_breaks.size(), 1u) << policy;
    const GraphBreakStats& b = brk.sim.stats.graph_breaks[0];
    EXPECT_EQ(b.op, "erf");
    EXPECT_EQ(b.node, "gelu_erf");
    EXPECT_EQ(b.bytes, 2 * 37 * 200 * 4);  // one f32 input, one f32 output
    EXPECT_NEAR(b.host_us, arch.host.latency_us + b.bytes / (arch.host.link_gbps * 1e3) + arch.host.op_us, 1e-9);
    EXPECT_GE(brk.sim.stats.latency_us, plain.sim.stats.latency_us + arch.host.latency_us) << policy;
    // Independent of run_job's own check: the simulated output against the reference executor.
    TensorMap inputs = make_random_inputs(brk.comp.core, w.seed);
    SimOptions so;
    so.functional = true;
    SimResult r = simulate(brk.comp.code.program, arch, so, &inputs);
    std::vector<Tensor> ref = run_reference(brk.comp.core, inputs);
    ASSERT_EQ(brk.comp.loop_ir.outputs.size(), ref.size());
    Comparison c = compare_tensors(r.outputs.at(brk.comp.loop_ir.outputs[0]), ref[0]);
    EXPECT_LE(c.max_abs_error, 1e-4) << policy;
    ASSERT_TRUE(brk.check.has_value());
    EXPECT_TRUE(brk.check->ok) << brk.check->worst;
    // Nothing fuses with the host node, and the scheduler says why.
    for (const auto& k : brk.comp.schedule.kernels)
      for (int n : k.nodes) {
        if (brk.comp.loop_ir.nodes[static_cast<size_t>(n)].kind == LoopKind::Host) {
          EXPECT_EQ(k.nodes.size(), 1u);
        }
      }
    if (policy == "greedy") {
      bool said = false;
      for (const auto& d : brk.comp.schedule.decisions)
        said |= d.reason.find("graph break: gelu_erf runs on the host") != std::string::npos;
      EXPECT_TRUE(said);
    }
    nlohmann::json j = brk.to_json();
    ASSERT_EQ(j["graph_breaks"].size(), 1u);
    EXPECT_EQ(j["graph_breaks"][0]["node"], "gelu_erf");
    EXPECT_EQ(j["graph_breaks"][0]["op"], "erf");
  }
}

// A break in the middle of a reduction chain (softmax's exp): the host reads a buffer the LPU
// wrote and the LPU reduces what the host wrote; the scoreboard orders both through HBM.
TEST(GraphBreaks, ExpInSoftmaxMatchesReference) {
  RunOutcome o = run_job(builtin("softmax", 19, 96), small_arch(), "greedy", true, false, unsupported({"exp"}, true));
  ASSERT_EQ(o.sim.stats.graph_breaks.size(), 1u);
  ASSERT_TRUE(o.check.has_value());
  EXPECT_TRUE(o.check->ok) << o.check->worst;
}

TEST(GraphBreaks, WithoutBreakTheSwitchIsAnErrorNamingOpAndNode) {
  try {
    run_job(builtin("ln_gelu_add", 8, 64), small_arch(), "greedy", false, false, unsupported({"erf"}, false));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("op 'erf'"), std::string::npos) << m;
    EXPECT_NE(m.find("%gelu_erf"), std::string::npos) << m;
  }
  // A composite op never reaches the back end: naming one is an error that says so.
  EXPECT_THROW(run_job(builtin("ln_gelu_add", 8, 64), small_arch(), "greedy", false, false, unsupported({"gelu"}, true)),
               InputError);
  EXPECT_THROW(run_job(builtin("ln_gelu_add", 8, 64), small_arch(), "greedy", false, false, unsupported({"nope"}, true)),
               InputError);
}

// host.call and .hostop survive print -> parse -> print and encode -> decode exactly, including
// attributes with a ';' (the assembly comment character) in a string.
TEST(GraphBreaks, HostOpRoundTripsThroughTextAndBinary) {
  Compilation c = compile_graph(build_graph(builtin("ln_gelu_add", 8, 64)),
                                compile_options_for(small_arch(), "greedy", unsupported({"erf"}, true)));
  Program p = c.code.program;
  ASSERT_EQ(p.host_ops.size(), 1u);
  p.host_ops.push_back({"sum", "extra", {"x", "gelu_erf"}, "gelu_erf", R"({"dims":[-1,0],"note":"a;b","eps":1.5})"});
  std::string text = print_program(p);
  EXPECT_NE(text.find(".hostop 1 sum extra x,gelu_erf -> gelu_erf "), std::string::npos) << text;
  EXPECT_NE(text.find("host.call 0"), std::string::npos);
  Program q = parse_program(text);
  EXPECT_EQ(print_program(q), text);
  EXPECT_EQ(q.host_ops, p.host_ops);
  Program d = decode_program(encode_program(p), "t.lpubin");
  EXPECT_EQ(d.host_ops, p.host_ops);
  ASSERT_EQ(d.code.size(), p.code.size());
  for (size_t i = 0; i < p.code.size(); ++i) EXPECT_TRUE(d.code[i].same_as(p.code[i])) << print_instruction(p.code[i]);
  EXPECT_THROW(parse_program(".program t\n  host.call 0\n"), InputError);  // no such host op
  // Handlers without host code say so instead of guessing.
  try {
    emit_cpp_source(c.loop_ir, c.schedule);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("graph break"), std::string::npos) << e.what();
  }
}

// A host op whose operand is a view (a permute: copied into a contiguous buffer first) and
// whose attributes matter (a sum over one dim, attributes through the .hostop JSON), feeding
// LPU work and also being a graph output itself.
TEST(GraphBreaks, ViewOperandAndAttributesOnTheHost) {
  Graph g("host_view");
  NodeId x = g.add_placeholder("x", TensorType{DType::f32, {4, 6}});
  NodeId t = g.add_call("permute", {x}, {{"dims", std::vector<int64_t>{1, 0}}}, "t");
  NodeId s = g.add_call("sum", {t}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}}, "s");
  NodeId y = g.add_call("mul", {s, t}, {}, "y");
  g.set_output({y, s});
  ArchConfig arch = small_arch();
  for (const std::string policy : {"none", "greedy"}) {
    Compilation c = compile_graph(g, compile_options_for(arch, policy, unsupported({"sum"}, true)));
    ASSERT_EQ(c.code.program.host_ops.size(), 1u);
    const HostOp& h = c.code.program.host_ops[0];
    EXPECT_EQ(h.node, "s");
    EXPECT_EQ(h.inputs, std::vector<std::string>{"s_arg0"});  // the permuted view, materialised
    EXPECT_NE(h.attrs_json.find("\"dims\":[1]"), std::string::npos) << h.attrs_json;
    TensorMap inputs = make_random_inputs(c.core, 5);
    SimOptions so;
    so.functional = true;
    SimResult r = simulate(c.code.program, arch, so, &inputs);
    std::vector<Tensor> ref = run_reference(c.core, inputs);
    ASSERT_EQ(c.loop_ir.outputs.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_LE(compare_tensors(r.outputs.at(c.loop_ir.outputs[i]), ref[i]).max_abs_error, 1e-5) << policy << " output " << i;
    ASSERT_EQ(r.stats.graph_breaks.size(), 1u);
    EXPECT_EQ(r.stats.graph_breaks[0].bytes, (24 + 6) * 4);
  }
}
