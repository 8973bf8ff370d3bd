// The JSON interchange format (docs/graph-format.md): printer, parser and file loading.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "graph/ops.h"
#include "io/graph_file.h"
#include "support/error.h"
#include "support/input_file.h"
#include "support/json_util.h"

namespace lpu {

using ojson = nlohmann::ordered_json;

const TensorEntry* GraphFile::find(const std::string& role, const std::string& name) const {
  for (const auto& e : tensors)
    if (e.role == role && e.name == name) return &e;
  return nullptr;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Printing

// Compact JSON with ", " and ": " separators (Python's json.dumps(separators=(", ", ": "))).
// Numbers and strings use nlohmann's dump: shortest round-trip doubles, escaped strings.
void emit(std::string& out, const ojson& v) {
  if (v.is_object()) {
    out += "{";
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      out += first ? "" : ", ";
      out += ojson(k).dump() + ": ";
      emit(out, x);
      first = false;
    }
    out += "}";
  } else if (v.is_array()) {
    out += "[";
    for (size_t i = 0; i < v.size(); ++i) {
      out += i ? ", " : "";
      emit(out, v[i]);
    }
    out += "]";
  } else {
    out += v.dump();
  }
}

std::string compact(const ojson& v) {
  std::string s;
  emit(s, v);
  return s;
}

ojson attr_to_json(const AttrValue& a) {
  struct V {
    ojson operator()(int64_t i) const { return i; }
    ojson operator()(double d) const {
      // JSON has no inf/nan; they travel as {"float": "inf" | "-inf" | "nan"}.
      if (std::isfinite(d)) return d;
      return ojson{{"float", format_double(d)}};
    }
    ojson operator()(bool b) const { return b; }
    ojson operator()(const std::string& s) const { return s; }
    ojson operator()(const std::vector<int64_t>& l) const { return l; }
  };
  return std::visit(V{}, a);
}

ojson type_fields(ojson j, const TensorType& t) {
  j["dtype"] = dtype_name(t.dtype);
  j["shape"] = t.shape;
  return j;
}

ojson node_to_json(const Graph& g, const Node& n) {
  ojson j;
  j["name"] = n.name;
  j["kind"] = node_kind_name(n.kind);
  if (n.kind == NodeKind::Call) {
    j["op"] = n.op;
    ojson in = ojson::array();
    for (NodeId i : n.inputs) in.push_back(g.node(i).name);
    j["inputs"] = in;
  }
  if (!n.attrs.empty()) {
    ojson a = ojson::object();
    for (const auto& [k, v] : n.attrs) a[k] = attr_to_json(v);
    j["attrs"] = a;
  }
  return type_fields(j, n.type);
}

ojson entry_to_json(const TensorEntry& e) {
  ojson j;
  j["name"] = e.name;
  j["role"] = e.role;
  j = type_fields(j, e.type);
  j["file"] = e.file;
  j["offset"] = e.offset;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Parsing

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& msg) const {
    throw InputError(strcat(source_, ": ", where, where.empty() ? "" : ": ", msg));
  }
  const ojson& get(const ojson& obj, const std::string& key, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, strcat("missing '", key, "'"));
    return *it;
  }
  std::string str(const ojson& obj, const std::string& key, const std::string& where) const {
    const ojson& v = get(obj, key, where);
    if (!v.is_string()) fail(where, strcat("'", key, "' must be a string"));
    return v.get<std::string>();
  }
  int64_t integer(const ojson& v, const std::string& what, const std::string& where) const {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(where, strcat(what, " is too large"));
    if (!v.is_number_integer()) fail(where, strcat(what, " must be an integer"));
    return v.get<int64_t>();
  }
  void check_keys(const ojson& obj, const std::set<std::string>& allowed, const std::string& where) const {
    if (!obj.is_object()) fail(where, "must be an object");
    for (const auto& [k, v] : obj.items())
      if (!allowed.count(k)) {
        std::string all;
        for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
        fail(where, strcat("unknown key '", k, "' (expected: ", all, ")"));
      }
  }
  TensorType type(const ojson& obj, const std::string& where, bool allow_empty) const {
    TensorType t;
    std::string d = str(obj, "dtype", where);
    if (!parse_dtype(d, t.dtype)) fail(where, strcat("unknown dtype '", d, "' (f32, f16, bf16, i64, i32, bool)"));
    const ojson& s = get(obj, "shape", where);
    if (!s.is_array()) fail(where, "'shape' must be a list of integers");
    for (const auto& d2 : s) {
      int64_t v = integer(d2, "a shape entry", where);
      if (v < 0) fail(where, strcat("negative dimension ", v, " in shape"));
      t.shape.push_back(v);
    }
    if (std::string why = shape_problem(t.shape, allow_empty); !why.empty()) fail(where, why);
    return t;
  }
  AttrValue attr(const ojson& v, const std::string& key, const std::string& where) const {
    std::string what = strcat("attribute '", key, "'");
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_float()) return v.get<double>();
    if (v.is_number()) return integer(v, what, where);
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
      std::vector<int64_t> l;
      for (const auto& x : v) l.push_back(integer(x, strcat("every entry of ", what), where));
      return l;
    }
    if (v.is_object() && v.size() == 1 && v.contains("float") && v["float"].is_string()) {
      std::string s = v["float"].get<std::string>();
      if (s == "inf") return INFINITY;
      if (s == "-inf") return -INFINITY;
      if (s == "nan") return NAN;
    }
    fail(where,
         strcat(what, ": expected a number, bool, string, integer list or {\"float\": \"inf\"|\"-inf\"|\"nan\"}"));
  }

 private:
  std::string source_;
};

struct RawNode {
  std::string name;
  NodeKind kind = NodeKind::Call;
  std::string op;
  std::vector<std::string> inputs;
  Attrs attrs;
  TensorType type;
};

// Orders nodes so every input comes first (stable: already-ordered input is unchanged).
// A dangling input or a cycle is an error naming a node on it.
std::vector<size_t> topological_order(const std::vector<RawNode>& nodes, const std::map<std::string, size_t>& index,
                                      const Reader& r) {
  std::vector<int> state(nodes.size(), 0);  // 0 new, 1 on the stack, 2 done
  std::vector<size_t> order;
  // Iterative DFS keeps deep graphs (thousands of layers) off the call stack.
  for (size_t root = 0; root < nodes.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      if (next < nodes[i].inputs.size()) {
        const std::string& in = nodes[i].inputs[next++];
        auto it = index.find(in);
        if (it == index.end())
          r.fail("", strcat("node %", nodes[i].name, ": input %", in, " is not defined (dangling input)"));
        size_t j = it->second;
        if (state[j] == 1) {
          std::string path = "%" + nodes[j].name;
          bool on = false;
          for (const auto& fr : stack) {
            if (fr.first == j) on = true;
            if (on && fr.first != j) path += " -> %" + nodes[fr.first].name;
          }
          r.fail("", strcat("node %", nodes[j].name, ": cycle ", path, " -> %", nodes[j].name));
        }
        if (state[j] == 0) {
          state[j] = 1;
          stack.push_back({j, 0});
        }
        continue;
      }
      state[i] = 2;
      order.push_back(i);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

std::string print_graph_json(const GraphFile& f) {
  const Graph& g = f.graph;
  std::string out = "{\n";
  out += "  \"format\": \"lpu-graph\",\n";
  out += strcat("  \"version\": ", kGraphFormatVersion, ",\n");
  out += "  \"name\": " + ojson(g.name()).dump() + ",\n";
  if (!f.meta.empty()) out += "  \"meta\": " + compact(f.meta) + ",\n";
  out += "  \"nodes\": [";
  bool first = true;
  for (const Node& n : g.nodes()) {
    if (n.kind == NodeKind::Output) continue;
    out += (first ? "\n    " : ",\n    ") + compact(node_to_json(g, n));
    first = false;
  }
  out += first ? "],\n" : "\n  ],\n";
  ojson outs = ojson::array();
  for (NodeId o : g.outputs()) outs.push_back(g.node(o).name);
  out += "  \"outputs\": " + compact(outs) + ",\n";
  out += "  \"tensors\": [";
  for (size_t i = 0; i < f.tensors.size(); ++i)
    out += (i ? ",\n    " : "\n    ") + compact(entry_to_json(f.tensors[i]));
  out += f.tensors.empty() ? "]\n" : "\n  ]\n";
  return out + "}\n";
}

namespace {

// nodes[i]: one node as written, its inputs still names.
RawNode read_raw_node(const Reader& r, const ojson& o, size_t i, const std::map<std::string, size_t>& index) {
  std::string where = strcat("nodes[", i, "]");
  if (!o.is_object()) r.fail(where, "must be an object");
  RawNode n;
  n.name = r.str(o, "name", where);
  if (!is_valid_name(n.name))
    r.fail(where, strcat("node name '", name_for_message(n.name), "' must be [A-Za-z0-9_.-]+, at most ", kMaxNameLength,
                         " characters"));
  where = "node %" + n.name;
  if (index.count(n.name)) r.fail(where, "defined twice");
  std::string kind = r.str(o, "kind", where);
  if (kind == "placeholder") {
    n.kind = NodeKind::Placeholder;
    r.check_keys(o, {"name", "kind", "attrs", "dtype", "shape"}, where);
  } else if (kind == "parameter") {
    n.kind = NodeKind::Parameter;
    r.check_keys(o, {"name", "kind", "attrs", "dtype", "shape"}, where);
  } else if (kind == "call") {
    r.check_keys(o, {"name", "kind", "op", "inputs", "attrs", "dtype", "shape"}, where);
    n.op = r.str(o, "op", where);
    const ojson& ins = r.get(o, "inputs", where);
    if (!ins.is_array()) r.fail(where, "'inputs' must be a list of node names");
    for (const auto& x : ins) {
      if (!x.is_string()) r.fail(where, "'inputs' must be a list of node names");
      n.inputs.push_back(x.get<std::string>());
    }
  } else {
    r.fail(where, strcat("unknown kind '", kind, "' (placeholder, parameter, call)"));
  }
  if (o.contains("attrs")) {
    if (!o["attrs"].is_object()) r.fail(where, "'attrs' must be an object");
    for (const auto& [k, v] : o["attrs"].items()) n.attrs[k] = r.attr(v, k, where);
  }
  n.type = r.type(o, where, /*allow_empty=*/n.kind == NodeKind::Call);
  return n;
}

// The nodes and outputs of `doc` into f.graph (inputs first), verified.
void read_graph(const Reader& r, const ojson& doc, GraphFile& f) {
  const ojson& jn = r.get(doc, "nodes", "top level");
  if (!jn.is_array()) r.fail("nodes", "must be a list");
  if (jn.size() > kMaxGraphNodes)
    r.fail("nodes", strcat(jn.size(), " nodes; a graph file holds at most ", kMaxGraphNodes));
  std::vector<RawNode> raw;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < jn.size(); ++i) {
    RawNode n = read_raw_node(r, jn[i], i, index);
    index[n.name] = raw.size();
    raw.push_back(std::move(n));
  }
  for (size_t i : topological_order(raw, index, r)) {
    const RawNode& n = raw[i];
    std::vector<NodeId> ins;
    for (const auto& in : n.inputs) ins.push_back(f.graph.find(in));
    NodeId id = -1;
    if (n.kind == NodeKind::Call) {
      id = f.graph.add_call_typed(n.op, ins, n.attrs, n.name, n.type);
    } else {
      id = n.kind == NodeKind::Placeholder ? f.graph.add_placeholder(n.name, n.type)
                                           : f.graph.add_parameter(n.name, n.type);
      f.graph.node(id).attrs = n.attrs;
    }
  }
  const ojson& jo = r.get(doc, "outputs", "top level");
  if (!jo.is_array() || jo.empty()) r.fail("outputs", "must be a non-empty list of node names");
  std::vector<NodeId> outs;
  for (const auto& x : jo) {
    if (!x.is_string()) r.fail("outputs", "must be a list of node names");
    NodeId id = f.graph.find(x.get<std::string>());
    if (id < 0) r.fail("outputs", strcat("output %", x.get<std::string>(), " is not a node (dangling output)"));
    outs.push_back(id);
  }
  f.graph.set_output(outs);
  try {
    f.graph.verify();
  } catch (const InputError& e) {
    r.fail("", e.what());
  }
}

// tensors[i]: an entry that must describe the node it feeds (or the output it checks) exactly.
TensorEntry read_tensor_entry(const Reader& r, const ojson& o, size_t i, const Graph& g,
                              std::set<std::pair<std::string, std::string>>& seen) {
  std::string where = strcat("tensors[", i, "]");
  r.check_keys(o, {"name", "role", "dtype", "shape", "file", "offset"}, where);
  TensorEntry e;
  e.name = r.str(o, "name", where);
  e.role = r.str(o, "role", where);
  where += " (" + e.role + " " + e.name + ")";
  e.type = r.type(o, where, /*allow_empty=*/false);
  e.file = r.str(o, "file", where);
  if (e.file.empty()) r.fail(where, "'file' is empty");
  e.offset = r.integer(r.get(o, "offset", where), "'offset'", where);
  if (e.offset < 0) r.fail(where, "'offset' is negative");
  if (!seen.insert({e.role, e.name}).second) r.fail(where, "listed twice");
  const TensorType* want = nullptr;
  if (e.role == "parameter" || e.role == "input") {
    NodeId id = g.find(e.name);
    NodeKind k = e.role == "input" ? NodeKind::Placeholder : NodeKind::Parameter;
    if (id < 0 || g.node(id).kind != k)
      r.fail(where, strcat("no ", e.role == "input" ? "placeholder" : "parameter", " node %", e.name));
    want = &g.node(id).type;
  } else if (e.role == "expected") {
    auto outs = g.outputs();
    size_t k = 0;
    bool ok = e.name.rfind("output", 0) == 0 && e.name.size() > 6 &&
              e.name.find_first_not_of("0123456789", 6) == std::string::npos;
    if (ok) k = std::stoul(e.name.substr(6));
    if (!ok || k >= outs.size()) r.fail(where, strcat("expected outputs are named output0..output", outs.size() - 1));
    want = &g.node(outs[k]).type;
  } else {
    r.fail(where, "unknown role (parameter, input, expected)");
  }
  if (!(*want == e.type))
    r.fail(where, strcat("type ", type_str(e.type), " does not match the graph's ", type_str(*want)));
  return e;
}

void read_tensors(const Reader& r, const ojson& doc, GraphFile& f) {
  if (!doc.contains("tensors")) return;
  const ojson& jt = doc["tensors"];
  if (!jt.is_array()) r.fail("tensors", "must be a list");
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < jt.size(); ++i) {
    f.tensors.push_back(read_tensor_entry(r, jt[i], i, f.graph, seen));
  }
}

}  // namespace

GraphFile parse_graph_json(const std::string& text, const std::string& source) {
  Reader r(source);
  // Duplicate keys and deep nesting are errors; no list of a graph file (nodes, tensors, a
  // node's inputs or shape) may have more entries than a graph may have nodes.
  ojson doc = parse_json_strict(text, source, kMaxGraphNodes);
  if (doc.is_object() && doc.contains("format") && doc["format"] == "lpu-manifest")
    r.fail("format", "this is a manifest of several graphs (torch.compile), not a graph: `lpu run MANIFEST` runs it");
  r.check_keys(doc, {"format", "version", "name", "meta", "nodes", "outputs", "tensors"}, "top level");
  if (r.str(doc, "format", "top level") != "lpu-graph") r.fail("format", "expected \"lpu-graph\"");
  int64_t version = r.integer(r.get(doc, "version", "top level"), "'version'", "top level");
  if (version != kGraphFormatVersion)
    r.fail("version", strcat("file has format version ", version, "; this build reads version ", kGraphFormatVersion));
  GraphFile f;
  std::string gname = r.str(doc, "name", "top level");
  if (!is_valid_name(gname))
    r.fail("name", strcat("graph name '", name_for_message(gname), "' must be [A-Za-z0-9_.-]+, at most ",
                          kMaxNameLength, " characters"));
  f.graph.set_name(gname);
  if (doc.contains("meta")) {
    if (!doc["meta"].is_object()) r.fail("meta", "must be an object");
    f.meta = doc["meta"];
  }
  read_graph(r, doc, f);
  read_tensors(r, doc, f);
  return f;
}

bool is_graph_file_path(const std::string& path) {
  auto ext = std::filesystem::path(path).extension().string();
  return ext == ".json" || ext == ".txt";
}

GraphFile load_graph_file(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::string text = read_text_input_file(path, "graph file",
                                          ext == ".txt" ? "a graph in the text format" : "a JSON graph, an object");
  GraphFile f;
  size_t first = text.find_first_not_of(" \t\r\n");
  bool json = first != std::string::npos && text[first] == '{';
  // The extension promises a format: a file of the other one (or of neither) is refused in
  // those words, not with an error of the other format's parser.
  if ((ext == ".json" && !json) || (ext == ".txt" && json))
    throw InputError(strcat("graph file ", path, ": expected ",
                            ext == ".json" ? "a JSON graph, an object" : "a graph in the text format",
                            " (the name ends in ", ext, "), found ", describe_contents(text)));
  if (json) {
    f = parse_graph_json(text, path);
  } else {
    f.graph = parse_graph(text, path);
  }
  f.dir = std::filesystem::path(path).parent_path().string();
  return f;
}

}  // namespace lpu
