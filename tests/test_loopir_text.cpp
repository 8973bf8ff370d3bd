// The loop IR's exact text form and its verifier: print -> parse rebuilds every field of every
// program the compiler lowers (workload files, built-in models, exported fixtures), and broken
// text or broken programs fail with FILE:LINE or the node and the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "driver/compile.h"
#include "io/graph_file.h"
#include "loopir/loop_ir.h"
#include "support/error.h"
#include "workload/transformer.h"
#include "workload/workload.h"

using namespace lpu;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

namespace {

// Field-by-field equality, expressions structurally, including which subexpressions are
// shared (the ops handlers evaluate a shared node once, so sharing changes generated code).
class Same {
 public:
  std::string why;

  bool programs(const LoopProgram& a, const LoopProgram& b) {
    if (a.name != b.name) return no("name " + a.name + " vs " + b.name);
    if (a.inputs != b.inputs) return no("inputs");
    if (a.outputs != b.outputs) return no("outputs");
    if (a.constants.size() != b.constants.size()) return no("constants");
    for (const auto& [k, v] : a.constants) {
      auto it = b.constants.find(k);
      if (it == b.constants.end() || !bits_equal(v, it->second)) return no("constant " + k);
    }
    if (a.buffers.size() != b.buffers.size()) return no("buffer count");
    for (const auto& [k, x] : a.buffers) {
      auto it = b.buffers.find(k);
      if (it == b.buffers.end()) return no("buffer " + k + " missing");
      const Buffer& y = it->second;
      if (x.name != y.name || !(x.type == y.type) || x.role != y.role || x.strides != y.strides || x.offset != y.offset)
        return no("buffer " + k);
    }
    if (a.nodes.size() != b.nodes.size()) return no("node count");
    for (size_t i = 0; i < a.nodes.size(); ++i)
      if (!nodes(a.nodes[i], b.nodes[i])) return no("node " + a.nodes[i].name + ": " + why);
    return true;
  }

 private:
  bool no(const std::string& w) {
    why = w;
    return false;
  }
  static bool bits_equal(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

  bool nodes(const LoopNode& x, const LoopNode& y) {
    if (x.name != y.name || x.out() != y.out() || x.origin != y.origin || x.kind != y.kind) return no("header");
    if (x.ranges != y.ranges || x.reduction_ranges != y.reduction_ranges || x.reduction != y.reduction)
      return no("ranges");
    if (x.dtype != y.dtype || !(x.store_index == y.store_index)) return no("dtype or store index");
    if (x.gather_table != y.gather_table || x.host_op != y.host_op || x.host_inputs != y.host_inputs)
      return no("gather/host");
    if (x.host_attrs != y.host_attrs) return no("host attributes");
    pair_.clear();
    if (!exprs(x.body, y.body)) return no("body: " + why);
    if (!exprs(x.gather_index, y.gather_index)) return no("gather index: " + why);
    return true;
  }

  // Equal trees, and a node of one side always maps to the same node of the other.
  bool exprs(const Expr& x, const Expr& y) {
    if (!x || !y) return !x && !y ? true : no("one expression is missing");
    auto [it, fresh] = pair_.emplace(x.get(), y.get());
    if (!fresh) return it->second == y.get() ? true : no("sharing differs at " + expr_str(x));
    if (!back_.emplace(y.get(), x.get()).second && back_[y.get()] != x.get())
      return no("sharing differs at " + expr_str(x));
    if (x->kind != y->kind || x->dtype != y->dtype) return no("kind or dtype at " + expr_str(x));
    if (x->buffer != y->buffer || !(x->index == y->index) || !bits_equal(x->value, y->value) || x->op != y->op)
      return no("operands at " + expr_str(x));
    if (x->args.size() != y->args.size()) return no("arity at " + expr_str(x));
    for (size_t i = 0; i < x->args.size(); ++i)
      if (!exprs(x->args[i], y->args[i])) return false;
    return true;
  }

  std::map<const ExprNode*, const ExprNode*> pair_, back_;
};

void expect_round_trip(const LoopProgram& p, const std::string& what) {
  std::string text = print_loop_ir(p);
  LoopProgram q;
  try {
    q = parse_loop_ir(text, what);
  } catch (const InputError& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  Same same;
  EXPECT_TRUE(same.programs(p, q)) << what << ": " << same.why;
  EXPECT_EQ(print_loop_ir(q), text) << what;
}

LoopProgram lower(const Graph& g) { return lower_to_loop_ir(normalize_graph(g)); }

const char* kSmall =
    "loop_ir t\n"
    "buffers:\n"
    "  x: f32[4, 8] input\n"
    "  w: f16[8] weight\n"
    "  y: f32[4, 8] output\n"
    "inputs: [x, w]\n"
    "outputs: [y]\n"
    "nodes:\n"
    "y = pointwise [i0 < 4, i1 < 8] f32\n"
    "  y[8*i0 + i1] = mul(load(x, 8*i0 + i1), to_f32(load(w, i1)))\n";

std::string parse_error(const std::string& text) {
  try {
    parse_loop_ir(text, "t.loopir");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(parsed)";
}

}  // namespace

TEST(LoopIrText, RoundTripsEveryWorkloadFile) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(std::string(LPU_SOURCE_DIR) + "/workloads")) {
    if (e.path().extension() != ".yaml") continue;
    expect_round_trip(lower(build_graph(resolve_workload(e.path().string()))), e.path().filename().string());
    ++n;
  }
  EXPECT_GE(n, 10u);
}

TEST(LoopIrText, RoundTripsEveryBuiltInModel) {
  for (const auto& b : model_builders()) {
    const TransformerShape* ts = find_transformer(b.name);
    if (ts && ts->name.rfind("tiny", 0) != 0 && ts->name != "gpt2") continue;  // the big ones: workload files
    for (const char* phase : {"decode", "prefill"}) {
      WorkloadSpec w = resolve_workload(b.name);
      if (ts && std::string(phase) == "prefill") {
        w.phase = phase;
        w.seq_len = 8;
        w.context = 0;
      }
      expect_round_trip(lower(build_graph(w)), b.name + " " + phase);
      if (!ts) break;
    }
  }
}

TEST(LoopIrText, RoundTripsEveryExportedFixture) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(std::string(LPU_SOURCE_DIR) + "/tests/fixtures")) {
    if (e.path().extension() != ".json" || !is_graph_file_path(e.path().string())) continue;
    GraphFile f;
    try {
      f = load_graph_file(e.path().string());
    } catch (const InputError&) {
      continue;  // not a graph (an export log, a manifest)
    }
    expect_round_trip(lower(f.graph), e.path().filename().string());
    ++n;
  }
  EXPECT_GE(n, 30u);
}

TEST(LoopIrText, PrintsDtypesOnlyWhereTheTextDoesNotImplyThem) {
  LoopProgram p = parse_loop_ir(kSmall, "small");
  EXPECT_EQ(print_loop_ir(p), kSmall);
  EXPECT_EQ(p.nodes[0].body->args[1]->dtype, DType::f32);           // the cast
  EXPECT_EQ(p.nodes[0].body->args[1]->args[0]->dtype, DType::f16);  // the buffer's dtype
  // A constant other than f32, and a compare's bool, round-trip through their suffix / rule.
  std::string t = std::string(kSmall);
  t.replace(t.find("to_f32(load(w, i1))"), 19, "where(lt(load(x, 8*i0 + i1), 0.5), 2.0, to_f32(1.5:f16))");
  LoopProgram q = parse_loop_ir(t, "small2");
  EXPECT_EQ(q.nodes[0].body->args[1]->args[0]->dtype, DType::boolean);
  EXPECT_EQ(q.nodes[0].body->args[1]->args[2]->args[0]->dtype, DType::f16);
  EXPECT_EQ(print_loop_ir(q), t);
}

TEST(LoopIrText, ParseErrorsNameTheLine) {
  std::string t = kSmall;
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("mul("), 4, "mull(")),
              HasSubstr("t.loopir:10: unknown scalar op 'mull'"));
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("load(x, 8*i0"), 6, "load(z")),
              HasSubstr("t.loopir:10: load of unknown buffer 'z'"));
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("[i0 < 4, i1"), 8, "[i0 < 4, j1")),
              HasSubstr("t.loopir:9: expected loop variable i1, got 'j1'"));
  // An index names loop variables only (LoopVar): anything else stops the parse at the name.
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("load(w, i1)"), 11, "load(w, x1)")),
              HasSubstr("t.loopir:10: 'x1' is not a loop variable (i0, i1, ... or r0, r1, ...) (at column 57)"));
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("+ i1] ="), 7, "+ i01] =")),
              HasSubstr("t.loopir:10: 'i01' is not a loop variable (i0, i1, ... or r0, r1, ...) (at column 12)"));
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("f32[4, 8] input"), 3, "f33")),
              HasSubstr("t.loopir:3: unknown dtype 'f33'"));
  EXPECT_THAT(parse_error(std::string(t).replace(t.find(" weight"), 7, " wieght")),
              HasSubstr("t.loopir:4: unknown buffer role 'wieght'"));
  EXPECT_THAT(parse_error(t.substr(0, t.rfind("  y[8"))), HasSubstr("t.loopir:9: node y has no body line below it"));
  EXPECT_THAT(parse_error("loop_ir t\nbuffers:\n"), HasSubstr("expected 'inputs:' before the end of the text"));
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("mul("), 4, "add(neg(")),
              HasSubstr("t.loopir:10: neg takes 1 operand(s), got 2"));
  // Hostile nesting fails cleanly (found while writing the fuzzer: recursion has a bound).
  std::string deep = std::string(100000, '(');
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("8*i0 + i1]"), 4, deep)),
              HasSubstr("expressions nested deeper than 200"));
  std::string neg;
  for (int k = 0; k < 1000; ++k) neg += "neg(";
  EXPECT_THAT(parse_error(std::string(t).replace(t.find("mul("), 4, neg)), HasSubstr("nested deeper than 200"));
}

// The verifier, rule by rule, on text that parses but breaks one (the parser runs it).
TEST(LoopIrText, VerifierNamesTheNodeAndTheRule) {
  std::string t = kSmall;
  auto broken = [&](const char* from, const char* to) {
    std::string s = t;
    s.replace(s.find(from), std::strlen(from), to);
    return parse_error(s);
  };
  EXPECT_THAT(broken("load(x, 8*i0 + i1)", "load(x, 8*i0 + i1 + 1)"),
              HasSubstr("node y: loads x[8*i0 + i1 + 1], elements 1..32 of a buffer of 32"));
  EXPECT_THAT(broken("y[8*i0 + i1]", "y[8*i0 + r0]"), HasSubstr("node y: stores y index 8*i0 + r0 uses r0"));
  EXPECT_THAT(broken("load(w, i1)", "load(w, i2)"), HasSubstr("node y: loads w index i2 uses i2, not a loop variable"));
  EXPECT_THAT(broken("  y: f32[4, 8] output", "  y: f16[4, 8] output"),
              HasSubstr("node y: computes f32 into y, a f16 buffer"));
  EXPECT_THAT(broken("outputs: [y]", "outputs: [x]"), HasSubstr("loop IR t: output x is a buffer of role input"));
  EXPECT_THAT(broken("  y[8*i0 + i1] =", "  x[8*i0 + i1] ="), HasSubstr("node y: writes x, a buffer of role input"));
  EXPECT_THAT(broken("load(w, i1)", "load(w, i1):f32"), HasSubstr("node y: loads w as f32, a f16 buffer"));
  // A reader before its writer, and the same nodes in order.
  const std::string head =
      "loop_ir t\nbuffers:\n  x: f32[4, 8] input\n  y: f32[4, 8] intermediate\n  z: f32[4] output\n"
      "inputs: [x]\noutputs: [z]\nnodes:\n";
  const std::string y = "y = pointwise [i0 < 4, i1 < 8] f32\n  y[8*i0 + i1] = neg(load(x, 8*i0 + i1))\n";
  const std::string z = "z = pointwise [i0 < 4] f32\n  z[i0] = load(y, 8*i0)\n";
  EXPECT_EQ(parse_error(head + y + z), "(parsed)");
  EXPECT_THAT(parse_error(head + z + y), HasSubstr("node z: reads buffer y before (or while) node y writes it"));
}

// Loop variables are a typed value (loopir/index.h LoopVar): the one place their names are
// spelled and read back.
TEST(LoopVar, NamesRoundTripAndNothingElseParses) {
  for (size_t d : {0u, 1u, 7u, 12u}) {
    for (LoopVar v : {LoopVar::output(d), LoopVar::reduction(d)}) {
      LoopVar back;
      ASSERT_TRUE(LoopVar::parse(v.name(), back)) << v.name();
      EXPECT_EQ(back, v) << v.name();
    }
  }
  EXPECT_EQ(LoopVar::output(3).name(), "i3");
  EXPECT_EQ(LoopVar::reduction(0).name(), "r0");
  LoopVar v;
  for (const char* bad : {"", "i", "r", "x0", "i01", "i-1", "r0x", "ii0", "i99999999999"})
    EXPECT_FALSE(LoopVar::parse(bad, v)) << bad;
  EXPECT_EQ(loop_vars(LoopVar::Kind::Reduction, 3),
            (std::vector<LoopVar>{LoopVar::reduction(0), LoopVar::reduction(1), LoopVar::reduction(2)}));
  // Maps key by variable: outputs before reductions, each kind by dim (i2 before i10).
  EXPECT_LT(LoopVar::output(2), LoopVar::output(10));
  EXPECT_LT(LoopVar::output(10), LoopVar::reduction(0));
  LoopNode n;
  n.ranges = {4, 8};
  n.reduction_ranges = {16};
  EXPECT_EQ(n.column_var(), LoopVar::output(1));
  EXPECT_EQ(n.var_ranges(), (std::map<LoopVar, int64_t>{
                                {LoopVar::output(0), 4}, {LoopVar::output(1), 8}, {LoopVar::reduction(0), 16}}));
}
