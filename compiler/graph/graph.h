// The graph IR, modelled on torch.fx: a list of nodes in topological order.
//   placeholder  a runtime input (activations, KV cache)
//   parameter    a constant input (weights); its data may be absent (timing-only runs)
//   call         an op from the op registry (graph/ops.h) applied to earlier nodes
//   output       the single last node; its inputs are the graph's results
// Every node carries its result type (dtype + shape), inferred by the op registry.
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "graph/types.h"

namespace lpu {

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
using Attrs = std::map<std::string, AttrValue>;  // ordered: deterministic printing

enum class NodeKind { Placeholder, Parameter, Call, Output };
const char* node_kind_name(NodeKind k);

using NodeId = int;

struct Node {
  NodeId id = -1;
  std::string name;  // unique within the graph; printed as %name
  NodeKind kind = NodeKind::Call;
  std::string op;    // registry name for calls, empty otherwise
  std::vector<NodeId> inputs;
  Attrs attrs;
  TensorType type;

  // Typed attribute access; throws InputError naming the node when missing/mistyped.
  int64_t attr_int(const std::string& key) const;
  int64_t attr_int(const std::string& key, int64_t dflt) const;
  double attr_float(const std::string& key, double dflt) const;
  bool attr_bool(const std::string& key, bool dflt) const;
  std::string attr_str(const std::string& key, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& key) const;
  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
};

// A parameter's packed storage (graph/types.h, Quant), from its attributes
// {quant = "int4", group = 128}; off when it has none. The groups run along the last
// (contiguous) dimension, which they must divide. Throws InputError naming the node when the
// attributes are malformed or do not fit its type.
Quant parameter_quant(const Node& n);
// The HBM bytes a placeholder or parameter occupies: packed when it is stored quantised.
inline int64_t stored_bytes(const Node& n) { return storage_bytes(n.type, parameter_quant(n)); }

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // Room for `nodes` nodes and their names: a pass that rebuilds a graph of that size then
  // appends without reallocating or rehashing.
  void reserve(size_t nodes) {
    nodes_.reserve(nodes);
    by_name_.reserve(nodes);
  }

  NodeId add_placeholder(const std::string& name, TensorType type);
  NodeId add_parameter(const std::string& name, TensorType type);
  // Adds a call; its type is inferred by the op registry (throws InputError on misuse).
  NodeId add_call(const std::string& op, std::vector<NodeId> inputs, Attrs attrs = {},
                  const std::string& name = "");
  // Adds a call with a given type (used by parsers that carry the type; checked by verify()).
  NodeId add_call_typed(const std::string& op, std::vector<NodeId> inputs, Attrs attrs,
                        const std::string& name, TensorType type);
  NodeId set_output(std::vector<NodeId> results);

  const Node& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  Node& node(NodeId id) { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }

  // The output node's inputs (empty before set_output).
  std::vector<NodeId> outputs() const;
  std::vector<NodeId> placeholders() const;
  std::vector<NodeId> parameters() const;
  // Users of each node, in node order.
  std::vector<std::vector<NodeId>> users() const;

  NodeId find(const std::string& name) const;  // -1 when absent

  // Structural checks: names unique, inputs earlier than users, known ops, types consistent.
  // Throws InputError naming the first offending node.
  void verify() const;

 private:
  std::string unique_name(const std::string& base);
  NodeId push(Node n);

  std::string name_;
  std::vector<Node> nodes_;
  // Hashed: every node a pass copies asks for its name twice (unique_name, push), and a
  // compile's passes rebuild a decoder's graph about fifteen times. Neither map is ever iterated.
  std::unordered_map<std::string, NodeId> by_name_;
  std::unordered_map<std::string, int> name_counts_;
};

// Text form:  %name: f32[4, 8] = op(%a, %b) {key = value}
// (grammar and examples: docs/graph-format.md). parse_graph(print_graph(g)) rebuilds g
// exactly, so print -> parse -> print is the identity.
std::string print_graph(const Graph& g);
std::string format_attr(const AttrValue& v);
std::string quote_string(const std::string& s);  // "..." with \" \\ \n \t \r escapes

// Parses the text form and verifies the graph. Errors are InputErrors "SOURCE:LINE: ..."
// naming the node. `source` names the text in messages (a file name).
Graph parse_graph(const std::string& text, const std::string& source = "<text>");

// Node names (and op names) are [A-Za-z0-9_.-]+ (at most kMaxNameLength), so the text form needs no quoting.
// Graph files hold at most this many nodes (the largest built-in decoder, OPT-66B prefill,
// has about 6,300); beyond it a file is rejected before any pass runs.
constexpr size_t kMaxGraphNodes = 65536;
constexpr size_t kMaxNameLength = 256;  // graph and node names; a longer one is bad input
bool is_valid_name(const std::string& s);
// A name for an error message: at most 64 characters ("...(N bytes)" after a longer one).
std::string name_for_message(const std::string& s);

}  // namespace lpu
