// Constant folding limited to splat values (one value repeated over a shape), so folding
// never materialises a tensor and never needs a parameter's data: see passes.h.
#include <optional>
#include <set>

#include "graph/ops.h"
#include "passes/passes.h"
#include "ref/reference.h"

namespace lpu {
namespace {

// The value of a pointwise op on zero-dim constants, computed by the reference executor so
// folding and execution can never disagree.
float eval_pointwise(const Graph& g, const Node& n, const std::vector<double>& args) {
  Graph tmp;
  std::vector<NodeId> ins;
  for (size_t i = 0; i < args.size(); ++i)
    ins.push_back(tmp.add_call("full", {}, {{"value", args[i]}, {"dtype", std::string(dtype_name(g.node(n.inputs[i]).type.dtype))}}));
  tmp.set_output({tmp.add_call(n.op, ins, n.attrs)});
  return run_reference(tmp, {})[0].data.at(0);
}

// The folded value of call `n` whose inputs all hold splat values `args`, if it is a splat.
std::optional<double> fold(const Graph& g, const Node& n, const std::vector<double>& args) {
  const OpInfo* info = find_op(n.op);
  switch (info->category) {
    case OpCategory::Pointwise: return eval_pointwise(g, n, args);
    case OpCategory::Movement:
      if (info->movement == MovementKind::Gather) return std::nullopt;  // keep index checking at run time
      for (double a : args)
        if (!(a == args[0])) return std::nullopt;  // cat of different values is no splat
      return args[0];
    case OpCategory::Reduction: {
      if (n.op == "argmax") return 0.0;   // the first of equal elements
      if (n.op != "sum") return args[0];  // mean / amax / amin of a splat
      double count = static_cast<double>(g.node(n.inputs[0]).type.numel()) / static_cast<double>(n.type.numel());
      return static_cast<float>(args[0] * count);
    }
    default: return std::nullopt;
  }
}

NodeId add_full(Graph& out, const std::string& name, const TensorType& t, double v) {
  return out.add_call("full", {}, {{"value", v}, {"shape", t.shape}, {"dtype", std::string(dtype_name(t.dtype))}}, name);
}

}  // namespace

Graph fold_constants(const Graph& g) {
  auto outs = g.outputs();
  std::set<NodeId> is_output(outs.begin(), outs.end());
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  std::vector<std::optional<double>> value;  // by node of `out`: the splat value of a `full`
  auto record = [&](NodeId id, std::optional<double> v) {
    value.resize(out.size());
    value[static_cast<size_t>(id)] = v;
    return id;
  };
  auto const_of = [&](NodeId id) -> std::optional<double> {
    return static_cast<size_t>(id) < value.size() ? value[static_cast<size_t>(id)] : std::nullopt;
  };
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    std::vector<double> args;
    for (NodeId i : n.inputs) {
      in.push_back(map[static_cast<size_t>(i)]);
      if (auto v = const_of(in.back())) args.push_back(*v);
    }
    NodeId id = -1;
    bool keep = is_output.count(n.id) > 0;  // outputs stay computed
    if (n.kind == NodeKind::Output) {
      id = out.set_output(in);
    } else if (n.kind == NodeKind::Parameter && n.has_attr("splat") && !keep) {
      id = record(add_full(out, n.name, n.type, n.attr_float("splat", 0)), n.attr_float("splat", 0));
    } else if (n.kind != NodeKind::Call) {
      id = copy_input_node(out, n);
    } else if (n.op == "full") {
      id = record(out.add_call_typed(n.op, in, n.attrs, n.name, n.type), n.attr_float("value", 0));
    } else if (!keep && !in.empty() && args.size() == in.size()) {
      if (auto v = fold(g, n, args)) id = record(add_full(out, n.name, n.type, *v), *v);
    }
    if (id < 0 && n.kind == NodeKind::Call) {
      // Exact identities: x * 1, 1 * x, x / 1, and where() on a constant condition.
      auto is_one = [&](size_t i) { return const_of(in[i]) == 1.0; };
      auto pass_through = [&](size_t i) {
        return out.node(in[i]).type == n.type && !(keep && const_of(in[i])) ? in[i] : -1;
      };
      if (n.op == "mul" && is_one(1)) id = pass_through(0);
      else if (n.op == "mul" && is_one(0)) id = pass_through(1);
      else if (n.op == "div" && is_one(1)) id = pass_through(0);
      else if (n.op == "where" && const_of(in[0])) id = pass_through(*const_of(in[0]) != 0 ? 1 : 2);
      if (id < 0) id = out.add_call_typed(n.op, in, n.attrs, n.name, n.type);
    }
    map[static_cast<size_t>(n.id)] = id;
  }
  return out;
}

}  // namespace lpu
