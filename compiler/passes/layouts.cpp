// Layout normalisation of small tensors, so that they are computed in the iteration space of
// the kernels that use them (see passes.h): matmuls with K = 1 become broadcast products,
// size-1 dims stop deciding where a pointwise op runs, and pointwise ops move into the
// operands of a cat.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "graph/ops.h"
#include "passes/passes.h"
#include "support/error.h"

namespace lpu {
namespace {

bool is_pointwise(const Node& n) {
  return n.kind == NodeKind::Call && find_op(n.op)->category == OpCategory::Pointwise;
}

Shape non_unit(const Shape& s) {
  Shape out;
  for (int64_t d : s)
    if (d != 1) out.push_back(d);
  return out;
}

// `s` padded with leading 1s to rank r (numpy broadcasting alignment).
Shape aligned(const Shape& s, size_t r) {
  Shape out(r - std::min(r, s.size()), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// A view that only rearranges size-1 dims: a reshape inserting or removing them, a permute
// moving only them (the other dims keep their order).
bool unit_view(const Graph& g, const Node& v) {
  if (v.kind != NodeKind::Call || (v.op != "reshape" && v.op != "permute")) return false;
  const Shape& s = g.node(v.inputs[0]).type.shape;
  if (v.op == "reshape") return non_unit(s) == non_unit(v.type.shape);
  int64_t last = -1;
  for (int64_t d : v.attr_ints("dims")) {
    int64_t k = normalize_dim(d, static_cast<int>(s.size()), v);
    if (s[static_cast<size_t>(k)] == 1) continue;
    if (k < last) return false;
    last = k;
  }
  return true;
}

// One element per row: the innermost dim has size 1 and there is more than one row.
bool column_layout(const Shape& s) { return !s.empty() && s.back() == 1 && numel(s) > 1; }

// An operand `x` of a pointwise op of shape `from`, broadcast the same way in shape `to`
// (the same non-1 dims in the same order): the k-th non-1 dim of `from` becomes the k-th of `to`.
Shape operand_shape(const Shape& x, const Shape& from, const Shape& to) {
  Shape xa = aligned(x, from.size());
  Shape out(to.size(), 1);
  size_t j = 0;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == 1) continue;
    while (to[j] == 1) ++j;
    out[j++] = xa[i];
  }
  return out;
}

}  // namespace

namespace {

// Rebuilds `g`, each matmul offered to `rewrite` (its node, its inputs in `out`): the node it
// returns stands for the matmul (checked to have its type), or nullopt copies the matmul.
Graph rewrite_matmuls(const Graph& g, const char* pass,
                      const std::function<std::optional<NodeId>(const Node&, const std::vector<NodeId>&, Graph&)>& rewrite) {
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    if (n.kind == NodeKind::Call && n.op == "matmul")
      if (std::optional<NodeId> r = rewrite(n, in, out)) {
        if (out.node(*r).type != n.type) throw InternalError(strcat(pass, ": %", n.name, " changed type"));
        map[static_cast<size_t>(n.id)] = *r;
        continue;
      }
    map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
  }
  return out;
}

// Whether `id` is, through reshapes, an embedding (a gather of whole rows) of a graph input.
bool gathered_weight(const Graph& g, NodeId id) {
  const Node* n = &g.node(id);
  while (n->kind == NodeKind::Call && n->op == "reshape") n = &g.node(n->inputs[0]);
  if (n->kind != NodeKind::Call || n->op != "embedding") return false;
  const Node* t = &g.node(n->inputs[0]);
  while (t->kind == NodeKind::Call && t->op == "reshape") t = &g.node(t->inputs[0]);
  return t->kind == NodeKind::Parameter || t->kind == NodeKind::Placeholder;
}

}  // namespace

Graph outer_product_matmuls(const Graph& g) {
  return rewrite_matmuls(g, "outer_product_matmuls",
                         [&](const Node& n, const std::vector<NodeId>& in, Graph& out) -> std::optional<NodeId> {
                           const TensorType& a = g.node(n.inputs[0]).type;
                           const TensorType& b = g.node(n.inputs[1]).type;
                           if (a.rank() < 2 || b.rank() < 2 || a.shape.back() != 1) return std::nullopt;
                           // [..., M, 1] x [..., 1, N]: one product per element, broadcast like the batch.
                           return out.add_call("mul", in, {}, n.name);
                         });
}

Graph dot_product_matmuls(const Graph& g) {
  return rewrite_matmuls(
      g, "dot_product_matmuls", [&](const Node& n, const std::vector<NodeId>& in, Graph& out) -> std::optional<NodeId> {
        const TensorType& a = g.node(n.inputs[0]).type;
        const TensorType& b = g.node(n.inputs[1]).type;
        if (a.rank() < 2 || b.rank() < 2 || a.shape[a.rank() - 2] != 1 || b.shape.back() != 1 || a.shape.back() < 2 ||
            gathered_weight(g, n.inputs[0]) || gathered_weight(g, n.inputs[1]))
          return std::nullopt;
        // [..., 1, K] x [..., K, 1]: B's column as a row, broadcast like the batch.
        std::vector<int64_t> swap(b.rank());
        std::iota(swap.begin(), swap.end(), int64_t{0});
        std::swap(swap[b.rank() - 2], swap[b.rank() - 1]);
        NodeId bt = out.add_call("permute", {in[1]}, {{"dims", swap}}, n.name + "_bT");
        NodeId prod = out.add_call("mul", {in[0], bt}, {}, n.name + "_products");
        return out.add_call("sum", {prod}, {{"dims", std::vector<int64_t>{-1}}, {"keepdim", true}}, n.name);
      });
}

Graph gathered_weights_as_b(const Graph& g) {
  return rewrite_matmuls(g, "gathered_weights_as_b",
                         [&](const Node& n, const std::vector<NodeId>& in, Graph& out) -> std::optional<NodeId> {
                           const TensorType& a = g.node(n.inputs[0]).type;
                           const TensorType& b = g.node(n.inputs[1]).type;
                           if (a.rank() != 3 || b.rank() != 3 || b.shape[2] != 1 || a.shape[1] < 2 ||
                               a.shape[0] != b.shape[0] || !gathered_weight(g, n.inputs[0]) ||
                               gathered_weight(g, n.inputs[1]))
                             return std::nullopt;
                           const int64_t R = a.shape[0], M = a.shape[1], K = a.shape[2];
                           NodeId xt = out.add_call("reshape", {in[1]}, {{"shape", Shape{R, 1, K}}}, n.name + "_xT");
                           NodeId wt = out.add_call("permute", {in[0]}, {{"dims", std::vector<int64_t>{0, 2, 1}}},
                                                    n.name + "_wT");
                           NodeId yt = out.add_call("matmul", {xt, wt}, {}, n.name + "_T");
                           return out.add_call("reshape", {yt}, {{"shape", Shape{R, M, 1}}}, n.name);
                         });
}

namespace {

// One round of simplify_unit_dims; sets `changed` when it rewrote anything.
Graph unit_dims_round(const Graph& g, bool& changed) {
  auto users = g.users();
  auto outs = g.outputs();
  // The shape a pointwise op is computed in instead of its own: that of the unit views that
  // are all its users, when its own layout is a column and theirs is not.
  std::vector<Shape> target(g.size());
  for (const Node& n : g.nodes()) {
    if (!is_pointwise(n) || !column_layout(n.type.shape) || users[static_cast<size_t>(n.id)].empty() ||
        std::find(outs.begin(), outs.end(), n.id) != outs.end())
      continue;
    Shape t;
    bool ok = true;
    for (NodeId u : users[static_cast<size_t>(n.id)]) {
      const Node& un = g.node(u);
      ok = ok && unit_view(g, un) && (t.empty() || t == un.type.shape);
      if (ok) t = un.type.shape;
    }
    if (ok && !column_layout(t)) target[static_cast<size_t>(n.id)] = t;
  }
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    // The users of a moved op read it in their shape already: the reshape is the op itself.
    if (unit_view(g, n) && !target[static_cast<size_t>(n.inputs[0])].empty()) {
      map[static_cast<size_t>(n.id)] = in[0];
      continue;
    }
    const Shape& t = target[static_cast<size_t>(n.id)];
    if (t.empty()) {
      map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
      continue;
    }
    for (size_t j = 0; j < in.size(); ++j) {
      const Shape& xs = g.node(n.inputs[j]).type.shape;
      if (numel(xs) == 1 && xs.size() <= t.size()) continue;  // a scalar broadcasts as it is
      in[j] = out.add_call("reshape", {in[j]}, {{"shape", operand_shape(xs, n.type.shape, t)}}, strcat(n.name, "_in", j));
    }
    map[static_cast<size_t>(n.id)] = out.add_call(n.op, in, n.attrs, n.name);
    if (out.node(map[static_cast<size_t>(n.id)]).type.shape != t)
      throw InternalError(strcat("simplify_unit_dims: %", n.name, " has shape ",
                                 shape_str(out.node(map[static_cast<size_t>(n.id)]).type.shape)));
    changed = true;
  }
  return out;
}

}  // namespace

Graph simplify_unit_dims(const Graph& g) {
  Graph cur = g;
  for (int round = 0; round < 16; ++round) {  // each round moves ops one producer further
    bool changed = false;
    Graph next = eliminate_dead_code(unit_dims_round(cur, changed));
    cur = std::move(next);
    if (!changed) break;
  }
  return cur;
}

namespace {

// The rows of the kernel node `n` would run in (docs/scheduling.md, "Legality"): the flattened
// output dims except the innermost; a reduction's kept dims.
int64_t kernel_rows(const Node& n) {
  if (find_op(n.op)->category == OpCategory::Reduction) return numel(n.type.shape);
  return n.type.shape.empty() ? 1 : numel(n.type.shape) / n.type.shape.back();
}

// Whether `n` may run in the kernel of one of its users: a pointwise op, reduction or matmul
// with as many rows, seen through views.
bool may_join_a_user(const Graph& g, const std::vector<std::vector<NodeId>>& users, const Node& n) {
  std::vector<NodeId> todo = users[static_cast<size_t>(n.id)];
  while (!todo.empty()) {
    const Node& u = g.node(todo.back());
    todo.pop_back();
    if (u.kind != NodeKind::Call) continue;
    if (is_view_op(u)) {
      todo.insert(todo.end(), users[static_cast<size_t>(u.id)].begin(), users[static_cast<size_t>(u.id)].end());
      continue;
    }
    auto c = find_op(u.op)->category;
    if ((c == OpCategory::Pointwise || c == OpCategory::Reduction || c == OpCategory::Matmul) &&
        kernel_rows(u) == kernel_rows(n))
      return true;
  }
  return false;
}

}  // namespace

Graph pointwise_into_cat(const Graph& g) {
  auto users = g.users();
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    // f(cat(a, b)) = cat(f(a), f(b)) for a unary f that would otherwise run in a kernel of its
    // own, between the cat (which goes through HBM) and users of other iteration spaces.
    if (is_pointwise(n) && n.inputs.size() == 1 && g.node(n.inputs[0]).kind == NodeKind::Call &&
        g.node(n.inputs[0]).op == "cat" && !may_join_a_user(g, users, n)) {
      const Node& c = g.node(n.inputs[0]);
      std::vector<NodeId> parts;
      for (size_t p = 0; p < c.inputs.size(); ++p)
        parts.push_back(out.add_call(n.op, {map[static_cast<size_t>(c.inputs[p])]}, n.attrs, strcat(n.name, "_cat", p)));
      map[static_cast<size_t>(n.id)] = out.add_call("cat", parts, c.attrs, n.name);
      if (out.node(map[static_cast<size_t>(n.id)]).type != n.type)
        throw InternalError(strcat("pointwise_into_cat: %", n.name, " changed type"));
      continue;
    }
    map[static_cast<size_t>(n.id)] = copy_node(out, n, in);
  }
  return out;
}

}  // namespace lpu
