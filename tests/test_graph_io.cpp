// Graph interchange: the text form and the JSON form round-trip exactly, and malformed input
// is a one-line InputError naming the node.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "graph/graph.h"
#include "graph/ops.h"
#include "io/graph_file.h"
#include "passes/passes.h"
#include "support/error.h"
#include "workload/workload.h"

using namespace lpu;

namespace {
TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

// Every attribute kind, both node kinds with attrs, awkward floats and strings.
Graph awkward_graph() {
  Graph g("awkward.graph_1");
  NodeId x = g.add_placeholder("x", f32({2, 8}));
  NodeId idx = g.add_placeholder("tokens", {DType::i64, {2}});
  NodeId w = g.add_parameter("layers.0.weight", f32({8}));
  NodeId m = g.add_parameter("mask", {DType::boolean, {2, 8}});
  g.node(m).attrs = {{"constant", true}, {"splat", 0.0}};
  NodeId e = g.add_parameter("emb", f32({5, 8}));
  NodeId ln = g.add_call("layer_norm", {x, w}, {{"eps", 1e-5}}, "ln");
  NodeId c = g.add_call("full", {}, {{"value", -INFINITY}, {"shape", std::vector<int64_t>{}}});
  NodeId wh = g.add_call("where", {m, c, ln});
  NodeId gl = g.add_call("gelu", {wh}, {{"approximate", std::string("tanh")}});
  NodeId big = g.add_call("mul", {gl, g.add_call("full", {}, {{"value", 1.0e300}})});
  NodeId tiny = g.add_call("mul", {big, g.add_call("full", {}, {{"value", 0.1 + 0.2}})});
  NodeId sl = g.add_call("slice", {tiny}, {{"dim", int64_t{-1}}, {"start", int64_t{1}}, {"end", INT64_MAX}, {"step", int64_t{2}}});
  NodeId emb = g.add_call("embedding", {e, idx});
  NodeId r = g.add_call("reshape", {emb}, {{"shape", std::vector<int64_t>{2, 2, 4}}});
  g.set_output({sl, r, sl});
  return g;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(TextForm, RoundTripsExactly) {
  Graph g = awkward_graph();
  std::string text = print_graph(g);
  Graph back = parse_graph(text);
  EXPECT_EQ(print_graph(back), text);
  // Attribute types survive (an integer stays an integer, 0.0 stays a float).
  EXPECT_TRUE(std::holds_alternative<double>(back.node(back.find("mask")).attrs.at("splat")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(back.node(back.find("slice")).attrs.at("step")));
  EXPECT_EQ(back.node(back.find("full_2")).attrs.at("value"), AttrValue(0.1 + 0.2));
}

TEST(TextForm, RoundTripsBuiltinWorkloadsAndTheirCoreGraphs) {
  for (const auto& b : model_builders()) {
    WorkloadSpec w;
    w.name = b.name;
    w.model = b.name;
    w.seq_len = 3;
    Graph g = build_graph(w);
    for (const Graph& h : {g, run_passes(g, default_passes())}) {
      std::string text = print_graph(h);
      EXPECT_EQ(print_graph(parse_graph(text)), text) << b.name;
    }
  }
}

TEST(TextForm, StringsWithQuotesAndNewlinesAreEscaped) {
  Graph g;
  NodeId x = g.add_placeholder("x", f32({2}));
  g.node(x).attrs = {{"note", std::string("say \"hi\"\\\n\tnow")}};
  g.set_output({g.add_call("neg", {x})});
  std::string text = print_graph(g);
  EXPECT_NE(text.find(R"(note = "say \"hi\"\\\n\tnow")"), std::string::npos) << text;
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(TextForm, AcceptsCommentsAndBlankLines) {
  Graph g = parse_graph(
      "# a hand-written graph\n"
      "graph tiny {\n"
      "\n"
      "  %x: f32[4] = placeholder\n"
      "  # the only op\n"
      "  %y: f32[4] = exp(%x)\n"
      "  output(%y)\n"
      "}\n");
  EXPECT_EQ(g.size(), 3u);
  EXPECT_EQ(g.node(g.outputs()[0]).op, "exp");
}

TEST(TextForm, MalformedInputNamesLineAndNode) {
  auto parse = [](const std::string& body) {
    return error_of([&] { parse_graph("graph g {\n  %x: f32[4] = placeholder\n" + body + "}\n", "g.txt"); });
  };
  EXPECT_NE(parse("  %y: f32[4] = frob(%x)\n  output(%y)\n").find("node %y: unknown op 'frob'"), std::string::npos);
  EXPECT_NE(parse("  %y: f32[5] = exp(%x)\n  output(%y)\n").find("node %y (exp): declared type f32[5]"),
            std::string::npos);
  std::string dangling = parse("  %y: f32[4] = exp(%z)\n  output(%y)\n");
  EXPECT_NE(dangling.find("g.txt:3: node %y: input %z is not defined"), std::string::npos) << dangling;
  std::string cycle = parse("  %y: f32[4] = add(%x, %z)\n  %z: f32[4] = exp(%y)\n  output(%z)\n");
  EXPECT_NE(cycle.find("g.txt:3: node %y: input %z"), std::string::npos) << cycle;
  EXPECT_NE(parse("  %x: f32[4] = exp(%x)\n  output(%x)\n").find("defined twice"), std::string::npos);
  EXPECT_NE(parse("  %y: f32[4] = exp(%x) {a = 1, a = 2}\n  output(%y)\n").find("given twice"), std::string::npos);
  EXPECT_NE(parse("  %y: q8[4] = exp(%x)\n").find("g.txt:3: unknown dtype 'q8'"), std::string::npos);
  EXPECT_NE(parse("  %y: f32[4] = exp(%x)\n").find("has no output node"), std::string::npos);
  EXPECT_NE(error_of([] { parse_graph("graph g {\n"); }).find("missing closing"), std::string::npos);
  // Every message is one line.
  EXPECT_EQ(cycle.find('\n'), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// JSON form and sidecar

namespace {
namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("lpu_test_graph_io_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

GraphFile awkward_file() {
  GraphFile f;
  f.graph = awkward_graph();
  f.meta = nlohmann::ordered_json::parse(R"({"producer": "test", "torch": "1.13", "nested": {"b": [1, 2.5], "a": null}})");
  f.tensors.push_back({"x", "input", f32({2, 8}), "awkward.bin", 0});
  f.tensors.push_back({"layers.0.weight", "parameter", f32({8}), "weights/awkward.bin", 4096});
  f.tensors.push_back({"output1", "expected", f32({2, 2, 4}), "/abs/awkward.bin", 64});
  return f;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string json_error(const std::string& text) {
  return error_of([&] { parse_graph_json(text, "bad.json"); });
}

// A hand-made graph in the JSON form with one node replaced.
std::string hand_json(const std::string& y_node, const std::string& extra_nodes = "") {
  return R"({"format": "lpu-graph", "version": 1, "name": "hand", "nodes": [
    {"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [2, 4]},
    {"name": "w", "kind": "parameter", "dtype": "f32", "shape": [4, 3]},)" +
         extra_nodes + y_node + R"(], "outputs": ["y"]})";
}
}  // namespace

TEST(JsonForm, RoundTripsExactly) {
  GraphFile f = awkward_file();
  std::string text = print_graph_json(f);
  GraphFile back = parse_graph_json(text);
  EXPECT_EQ(print_graph_json(back), text);
  EXPECT_EQ(print_graph(back.graph), print_graph(f.graph));
  EXPECT_EQ(back.tensors, f.tensors);
  // -inf travels as {"float": "-inf"}; an integral double keeps its ".0".
  EXPECT_NE(text.find(R"("value": {"float": "-inf"})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("splat": 0.0)"), std::string::npos) << text;
  // One node per line.
  EXPECT_NE(text.find("\n    {\"name\": \"ln\", \"kind\": \"call\", \"op\": \"layer_norm\", \"inputs\": [\"x\", "
                      "\"layers.0.weight\"], \"attrs\": {\"eps\": 1e-05}, \"dtype\": \"f32\", \"shape\": [2, 8]},\n"),
            std::string::npos)
      << text;
}

TEST(JsonForm, AcceptsAnyLayoutAndNodeOrderThenPrintsCanonically) {
  // Reformatted (nlohmann's indented dump) and with the nodes reversed: same graph.
  std::string canonical = print_graph_json(awkward_file());
  auto doc = nlohmann::ordered_json::parse(canonical);
  std::reverse(doc["nodes"].begin(), doc["nodes"].end());
  GraphFile back = parse_graph_json(doc.dump(4));
  EXPECT_EQ(print_graph(back.graph).size(), print_graph(awkward_file().graph).size());
  EXPECT_EQ(print_graph_json(parse_graph_json(print_graph_json(back))), print_graph_json(back));
}

TEST(JsonForm, SidecarRoundTripsEveryDtype) {
  fs::path dir = temp_dir("dtypes");
  Graph g("dtypes");
  NodeId a = g.add_placeholder("a", f32({3}));
  NodeId h = g.add_parameter("h", {DType::f16, {3}});
  NodeId b = g.add_parameter("b", {DType::bf16, {3}});
  NodeId i = g.add_placeholder("i", {DType::i64, {2}});
  NodeId j = g.add_placeholder("j", {DType::i32, {2}});
  NodeId m = g.add_parameter("m", {DType::boolean, {5}});
  NodeId e = g.add_parameter("e", f32({4, 3}));
  NodeId y = g.add_call("add", {g.add_call("to_dtype", {h}, {{"dtype", std::string("f32")}}), a});
  g.set_output({y, g.add_call("embedding", {e, i}), g.add_call("to_dtype", {b}, {{"dtype", std::string("f32")}}),
                g.add_call("to_dtype", {j}, {{"dtype", std::string("f32")}}),
                g.add_call("to_dtype", {m}, {{"dtype", std::string("f32")}})});
  TensorMap data;
  auto tensor = [](TensorType t, std::vector<float> v) {
    Tensor x(std::move(t));
    x.data = std::move(v);
    return x;
  };
  data["a"] = tensor(f32({3}), {1.5f, -2.25f, 1e-8f});
  data["h"] = tensor({DType::f16, {3}}, {0.1f, 65504.0f, -3.0f});
  data["b"] = tensor({DType::bf16, {3}}, {3.14159f, -1e20f, 0.0f});
  data["i"] = tensor({DType::i64, {2}}, {3, 0});
  data["j"] = tensor({DType::i32, {2}}, {-7, 123456});
  data["m"] = tensor({DType::boolean, {5}}, {1, 0, 0, 1, 1});
  data["e"] = tensor(f32({4, 3}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor out0 = tensor(f32({3}), {1.6f, 65502.0f, -3.0f});
  GraphFile saved = save_graph_file((dir / "dtypes.json").string(), g, data, {out0});
  for (const auto& t : saved.tensors) EXPECT_EQ(t.offset % 64, 0) << t.name;
  EXPECT_EQ(fs::file_size(dir / "dtypes.bin"), static_cast<uintmax_t>(saved.tensors.back().offset + 12));

  GraphFile f = load_graph_file((dir / "dtypes.json").string());
  EXPECT_EQ(print_graph_json(f), print_graph_json(saved));
  TensorMap in = load_graph_inputs(f, f.graph);
  EXPECT_EQ(in["a"].data, data["a"].data);
  EXPECT_EQ(in["h"].data, (std::vector<float>{round_to_dtype(0.1f, DType::f16), 65504.0f, -3.0f}));
  EXPECT_EQ(in["b"].data, (std::vector<float>{3.140625f, round_to_dtype(-1e20f, DType::bf16), 0.0f}));
  EXPECT_EQ(in["i"].data, data["i"].data);
  EXPECT_EQ(in["j"].data, data["j"].data);
  EXPECT_EQ(in["m"].data, data["m"].data);
  ASSERT_NE(f.find("expected", "output0"), nullptr);
  EXPECT_EQ(read_tensor(f, *f.find("expected", "output0")).data, out0.data);
  // Only output0 was recorded: asking for all expected outputs names the missing one.
  EXPECT_NE(error_of([&] { load_expected_outputs(f); }).find("no expected output1"), std::string::npos);
  fs::remove_all(dir);
}

TEST(JsonForm, LoadingReadsNoArrayData) {
  fs::path dir = temp_dir("lazy");
  Graph g("lazy");
  NodeId x = g.add_placeholder("x", f32({2, 4}));
  NodeId w = g.add_parameter("w", f32({4, 3}));
  g.set_output({g.add_call("matmul", {x, w})});
  save_graph_file((dir / "lazy.json").string(), g, {{"x", Tensor(f32({2, 4}))}, {"w", Tensor(f32({4, 3}))}}, {});
  fs::remove(dir / "lazy.bin");
  GraphFile f = load_graph_file((dir / "lazy.json").string());  // no sidecar needed
  EXPECT_EQ(f.tensors.size(), 2u);
  std::string err = error_of([&] { load_graph_inputs(f, f.graph); });
  EXPECT_NE(err.find("lazy.bin"), std::string::npos) << err;
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
  // A truncated sidecar names the byte range it needed.
  write_text(dir / "lazy.bin", "short");
  err = error_of([&] { load_graph_inputs(f, f.graph); });
  EXPECT_NE(err.find("needs bytes [0, 32) but the file has 5"), std::string::npos) << err;
  fs::remove_all(dir);
}

// An OPT-66B-shaped graph (64 layers, d_model 9216, ffn 36864, vocab 50272: 65.7e9 parameters,
// 263 GB of fp32) loads and normalises from its JSON alone; its sidecar does not exist.
TEST(JsonForm, A66BParameterGraphLoadsWithoutItsWeights) {
  const int64_t layers = 64, d = 9216, ffn = 36864, vocab = 50272;
  GraphFile f;
  Graph& g = f.graph;
  g.set_name("opt66b_decode");
  NodeId tok = g.add_placeholder("tokens", {DType::i64, {1}});
  NodeId x = g.add_call("embedding", {g.add_parameter("embed_tokens.weight", f32({vocab, d})), tok}, {}, "embed");
  for (int64_t l = 0; l < layers; ++l) {
    std::string p = strcat("layers.", l, ".");
    auto param = [&](const std::string& n, Shape s) { return g.add_parameter(p + n, f32(std::move(s))); };
    NodeId h = g.add_call("layer_norm", {x, param("ln1.weight", {d}), param("ln1.bias", {d})});
    NodeId v = g.add_call("matmul", {h, param("v_proj.weight", {d, d})});
    NodeId q = g.add_call("matmul", {h, param("q_proj.weight", {d, d})});
    NodeId k = g.add_call("matmul", {h, param("k_proj.weight", {d, d})});
    NodeId a = g.add_call("mul", {g.add_call("mul", {q, k}), v});
    x = g.add_call("add", {x, g.add_call("matmul", {a, param("out_proj.weight", {d, d})})});
    h = g.add_call("layer_norm", {x, param("ln2.weight", {d}), param("ln2.bias", {d})});
    h = g.add_call("relu", {g.add_call("matmul", {h, param("fc1.weight", {d, ffn})})});
    x = g.add_call("add", {x, g.add_call("matmul", {h, param("fc2.weight", {ffn, d})})});
  }
  g.set_output({x});
  int64_t offset = 0, params = 0;
  for (NodeId id : g.parameters()) {
    f.tensors.push_back({g.node(id).name, "parameter", g.node(id).type, "opt66b_decode.bin", offset});
    offset += g.node(id).type.bytes();
    params += g.node(id).type.numel();
  }
  EXPECT_GT(params, 65'000'000'000);
  fs::path dir = temp_dir("opt66b");
  write_text(dir / "opt66b_decode.json", print_graph_json(f));
  ASSERT_FALSE(fs::exists(dir / "opt66b_decode.bin"));

  GraphFile loaded = load_graph_file((dir / "opt66b_decode.json").string());
  EXPECT_EQ(loaded.tensors.size(), g.parameters().size());
  EXPECT_EQ(print_graph_json(loaded), print_graph_json(f));
  Graph core = run_passes(loaded.graph, default_passes());
  EXPECT_EQ(core.parameters().size(), g.parameters().size());
  fs::remove_all(dir);
}

TEST(JsonForm, MalformedGraphsGetOneLineErrorsNamingTheNode) {
  const std::string ok_y = R"({"name": "y", "kind": "call", "op": "matmul", "inputs": ["x", "w"], "dtype": "f32", "shape": [2, 3]})";
  ASSERT_NO_THROW(parse_graph_json(hand_json(ok_y)));
  std::vector<std::pair<std::string, std::string>> cases = {
      // unknown op
      {hand_json(R"({"name": "y", "kind": "call", "op": "aten.frobnicate", "inputs": ["x"], "dtype": "f32", "shape": [2, 3]})"),
       "bad.json: node %y: unknown op 'aten.frobnicate'"},
      // shape mismatch (declared vs inferred) and an inconsistent op
      {hand_json(R"({"name": "y", "kind": "call", "op": "matmul", "inputs": ["x", "w"], "dtype": "f32", "shape": [2, 4]})"),
       "node %y (matmul): declared type f32[2, 4] but inputs give f32[2, 3]"},
      {hand_json(R"({"name": "y", "kind": "call", "op": "add", "inputs": ["x", "w"], "dtype": "f32", "shape": [2, 4]})"),
       "node %y (add): shapes [2, 4] and [4, 3] do not broadcast"},
      // dangling input
      {hand_json(R"({"name": "y", "kind": "call", "op": "matmul", "inputs": ["x", "nope"], "dtype": "f32", "shape": [2, 3]})"),
       "node %y: input %nope is not defined (dangling input)"},
      // cycle y -> z -> y
      {hand_json(R"({"name": "y", "kind": "call", "op": "add", "inputs": ["x", "z"], "dtype": "f32", "shape": [2, 4]})",
                 R"({"name": "z", "kind": "call", "op": "exp", "inputs": ["y"], "dtype": "f32", "shape": [2, 4]},)"),
       "cycle %"},
      // structure
      {hand_json(ok_y, R"({"name": "x", "kind": "placeholder", "dtype": "f32", "shape": [1]},)"), "node %x: defined twice"},
      {hand_json(R"({"name": "y", "kind": "call", "op": "exp", "inputs": ["x"], "dtype": "f32", "shape": [2, 4], "shp": 1})"),
       "node %y: unknown key 'shp'"},
      {hand_json(R"({"name": "y", "kind": "call", "op": "exp", "inputs": ["x"], "dtype": "f64", "shape": [2, 4]})"),
       "node %y: unknown dtype 'f64'"},
      {hand_json(R"({"name": "y z", "kind": "call", "op": "exp", "inputs": ["x"], "dtype": "f32", "shape": [2, 4]})"),
       "must be [A-Za-z0-9_.-]+"},
      {R"({"format": "lpu-graph", "version": 2, "name": "g", "nodes": [], "outputs": []})", "format version 2"},
      {"{\"format\": ", "invalid JSON"},
  };
  for (const auto& [text, want] : cases) {
    std::string err = json_error(text);
    EXPECT_NE(err.find(want), std::string::npos) << "want '" << want << "', got: " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
  // The cycle message walks the cycle.
  std::string cyc = json_error(cases[4].first);
  EXPECT_TRUE(cyc.find("cycle %y -> %z -> %y") != std::string::npos || cyc.find("cycle %z -> %y -> %z") != std::string::npos)
      << cyc;
}

TEST(JsonForm, TensorIndexMustMatchTheGraph) {
  std::string base = print_graph_json(awkward_file());
  auto with_entry = [&](const std::string& entry) {
    auto doc = nlohmann::ordered_json::parse(base);
    doc["tensors"] = nlohmann::ordered_json::array({nlohmann::ordered_json::parse(entry)});
    return json_error(doc.dump());
  };
  EXPECT_NE(with_entry(R"({"name": "x", "role": "input", "dtype": "f32", "shape": [2, 9], "file": "a.bin", "offset": 0})")
                .find("type f32[2, 9] does not match the graph's f32[2, 8]"),
            std::string::npos);
  EXPECT_NE(with_entry(R"({"name": "x", "role": "parameter", "dtype": "f32", "shape": [2, 8], "file": "a.bin", "offset": 0})")
                .find("no parameter node %x"),
            std::string::npos);
  EXPECT_NE(with_entry(R"({"name": "output7", "role": "expected", "dtype": "f32", "shape": [2], "file": "a.bin", "offset": 0})")
                .find("output0..output2"),
            std::string::npos);
  EXPECT_NE(with_entry(R"({"name": "x", "role": "input", "dtype": "f32", "shape": [2, 8], "file": "a.bin", "offset": -64})")
                .find("'offset' is negative"),
            std::string::npos);
}

TEST(JsonForm, LoadsTheTextFormToo) {
  fs::path dir = temp_dir("text");
  std::string text = print_graph(awkward_graph());
  write_text(dir / "g.txt", text);
  EXPECT_EQ(print_graph(load_graph_file((dir / "g.txt").string()).graph), text);
  fs::remove_all(dir);
}
