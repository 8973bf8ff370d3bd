#include "graph/graph.h"

#include <sstream>

#include "graph/ops.h"
#include "support/error.h"

namespace lpu {

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Placeholder: return "placeholder";
    case NodeKind::Parameter: return "parameter";
    case NodeKind::Call: return "call";
    case NodeKind::Output: return "output";
  }
  return "?";
}

namespace {
template <typename T>
const T* get_attr(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  if (!v) throw InputError(strcat("node %", n.name, " (", n.op, "): attribute '", key, "' has the wrong type"));
  return v;
}
}  // namespace

int64_t Node::attr_int(const std::string& key) const {
  const int64_t* v = get_attr<int64_t>(*this, key);
  if (!v) throw InputError(strcat("node %", name, " (", op, "): missing attribute '", key, "'"));
  return *v;
}
int64_t Node::attr_int(const std::string& key, int64_t dflt) const {
  const int64_t* v = get_attr<int64_t>(*this, key);
  return v ? *v : dflt;
}
double Node::attr_float(const std::string& key, double dflt) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return dflt;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  const double* v = get_attr<double>(*this, key);
  return *v;
}
bool Node::attr_bool(const std::string& key, bool dflt) const {
  const bool* v = get_attr<bool>(*this, key);
  return v ? *v : dflt;
}
std::string Node::attr_str(const std::string& key, const std::string& dflt) const {
  const std::string* v = get_attr<std::string>(*this, key);
  return v ? *v : dflt;
}
std::vector<int64_t> Node::attr_ints(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) throw InputError(strcat("node %", name, " (", op, "): missing attribute '", key, "'"));
  if (auto* i = std::get_if<int64_t>(&it->second)) return {*i};
  return *get_attr<std::vector<int64_t>>(*this, key);
}

std::string Graph::unique_name(const std::string& base) {
  std::string b = base.empty() ? "v" : base;
  if (!by_name_.count(b)) return b;
  int& n = name_counts_[b];
  std::string cand;
  do cand = b + "_" + std::to_string(++n);
  while (by_name_.count(cand));
  return cand;
}

NodeId Graph::push(Node n) {
  if (!nodes_.empty() && nodes_.back().kind == NodeKind::Output)
    throw InputError(strcat("graph ", name_, ": node %", n.name, " added after the output node"));
  n.id = static_cast<NodeId>(nodes_.size());
  for (NodeId in : n.inputs)
    if (in < 0 || in >= n.id)
      throw InputError(strcat("node %", n.name, ": input id ", in, " does not name an earlier node"));
  by_name_[n.name] = n.id;
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

NodeId Graph::add_placeholder(const std::string& name, TensorType type) {
  Node n;
  n.name = unique_name(name);
  n.kind = NodeKind::Placeholder;
  n.type = std::move(type);
  return push(std::move(n));
}

NodeId Graph::add_parameter(const std::string& name, TensorType type) {
  Node n;
  n.name = unique_name(name);
  n.kind = NodeKind::Parameter;
  n.type = std::move(type);
  return push(std::move(n));
}

// An op nobody knows: not lowered, not decomposed, not a host op (docs/core-ops.md).
static std::string unsupported_op_message(const std::string& node, const std::string& op) {
  return strcat("node %", node, ": unknown op '", op, "' (see `lpu list ops`; `lpu list ops --aten` for the core ATen "
                "set): it has neither an LPU lowering nor host semantics for --on-unsupported=break to fall back on");
}

NodeId Graph::add_call(const std::string& op, std::vector<NodeId> inputs, Attrs attrs,
                       const std::string& name) {
  Node n;
  n.name = unique_name(name.empty() ? op : name);
  n.kind = NodeKind::Call;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  const OpInfo* info = find_op(op);
  if (!info) throw InputError(unsupported_op_message(n.name, op));
  for (NodeId in : n.inputs)
    if (in < 0 || in >= static_cast<NodeId>(nodes_.size()))
      throw InputError(strcat("node %", n.name, ": input id ", in, " does not name an earlier node"));
  n.type = info->infer(*this, n);
  return push(std::move(n));
}

NodeId Graph::add_call_typed(const std::string& op, std::vector<NodeId> inputs, Attrs attrs,
                             const std::string& name, TensorType type) {
  Node n;
  n.name = unique_name(name.empty() ? op : name);
  n.kind = NodeKind::Call;
  n.op = op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.type = std::move(type);
  return push(std::move(n));
}

NodeId Graph::set_output(std::vector<NodeId> results) {
  Node n;
  n.name = unique_name("output");
  n.kind = NodeKind::Output;
  n.inputs = std::move(results);
  return push(std::move(n));
}

std::vector<NodeId> Graph::outputs() const {
  if (nodes_.empty() || nodes_.back().kind != NodeKind::Output) return {};
  return nodes_.back().inputs;
}

std::vector<NodeId> Graph::placeholders() const {
  std::vector<NodeId> r;
  for (const auto& n : nodes_)
    if (n.kind == NodeKind::Placeholder) r.push_back(n.id);
  return r;
}

std::vector<NodeId> Graph::parameters() const {
  std::vector<NodeId> r;
  for (const auto& n : nodes_)
    if (n.kind == NodeKind::Parameter) r.push_back(n.id);
  return r;
}

Quant parameter_quant(const Node& n) {
  if (!n.has_attr("quant") && !n.has_attr("group")) return {};
  Quant q;
  const std::string f = n.attr_str("quant", "");
  if (n.kind != NodeKind::Parameter)
    throw InputError(strcat("node %", n.name, ": only a parameter (a weight) can be stored quantised"));
  if (!parse_quant_format(f, q.format) || !q.on())
    throw InputError(strcat("node %", n.name, ": quant '", f, "' is not a packed weight format (int8, int4, fp8_e4m3)"));
  q.group = n.attr_int("group");
  if (q.group < 2 || q.group % 2 || q.group > kMaxQuantGroup)
    throw InputError(strcat("node %", n.name, ": quantisation group ", q.group, " must be an even number from 2 to ",
                            kMaxQuantGroup));
  if (!packable(n.type, q))
    throw InputError(strcat("node %", n.name, ": a ", type_str(n.type), " weight cannot be stored in groups of ",
                            q.group, " (a floating weight whose last dimension the group divides)"));
  return q;
}

std::vector<std::vector<NodeId>> Graph::users() const {
  std::vector<std::vector<NodeId>> u(nodes_.size());
  for (const auto& n : nodes_)
    for (NodeId in : n.inputs) u[static_cast<size_t>(in)].push_back(n.id);
  return u;
}

NodeId Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void Graph::verify() const {
  if (nodes_.empty() || nodes_.back().kind != NodeKind::Output)
    throw InputError(strcat("graph ", name_, ": has no output node"));
  for (const auto& n : nodes_) {
    for (NodeId in : n.inputs)
      if (in < 0 || in >= n.id)
        throw InputError(strcat("node %", n.name, ": input ", in, " is not an earlier node (cycle or dangling input)"));
    if (n.kind == NodeKind::Output && n.id != static_cast<NodeId>(nodes_.size()) - 1)
      throw InputError(strcat("node %", n.name, ": output node must be last"));
    if (n.kind == NodeKind::Output)
      for (NodeId in : n.inputs) {
        const OpInfo* info = find_op(nodes_[static_cast<size_t>(in)].op);
        if (info && info->category == OpCategory::Constant)
          throw InputError(strcat("node %", nodes_[static_cast<size_t>(in)].name,
                                  ": a graph output must be computed, not a constant"));
      }
    if (n.kind != NodeKind::Call) continue;
    const OpInfo* info = find_op(n.op);
    if (!info) throw InputError(unsupported_op_message(n.name, n.op));
    TensorType t = info->infer(*this, n);
    if (!(t == n.type))
      throw InputError(strcat("node %", n.name, " (", n.op, "): declared type ", type_str(n.type),
                              " but inputs give ", type_str(t)));
  }
}

std::string quote_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string format_attr(const AttrValue& v) {
  struct V {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::string& s) const { return quote_string(s); }
    std::string operator()(const std::vector<int64_t>& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + std::to_string(l[i]);
      return s + "]";
    }
  };
  return std::visit(V{}, v);
}

std::string print_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << g.name() << " {\n";
  for (const auto& n : g.nodes()) {
    std::string args;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      args += (i ? ", %" : "%") + g.node(n.inputs[i]).name;
    if (n.kind == NodeKind::Output) {
      os << "  output(" << args << ")\n";
      continue;
    }
    os << "  %" << n.name << ": " << type_str(n.type) << " = ";
    if (n.kind == NodeKind::Call)
      os << n.op << "(" << args << ")";
    else
      os << node_kind_name(n.kind);
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, v] : n.attrs) {
        os << (first ? "" : ", ") << k << " = " << format_attr(v);
        first = false;
      }
      os << "}";
    }
    os << "\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace lpu
