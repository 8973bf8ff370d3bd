#include "graph/collective.h"

#include "graph/ops.h"
#include "support/error.h"

namespace lpu {

bool is_collective_op(const std::string& op) { return op == "all_reduce" || op == "all_gather"; }

int64_t CollectiveAttrs::offset(int64_t r) const {
  int64_t o = 0;
  for (int64_t i = 0; i < r; ++i) o += sizes[static_cast<size_t>(i)];
  return o;
}

CollectiveAttrs collective_attrs(const Node& n, const Shape& input) {
  auto bad = [&](const std::string& why) { return InputError(strcat("node %", n.name, " (", n.op, "): ", why)); };
  CollectiveAttrs a;
  a.rank = n.attr_int("rank");
  if (n.op == "all_gather") {
    a.sizes = n.attr_ints("sizes");
    a.group = static_cast<int64_t>(a.sizes.size());
    if (input.empty()) throw bad("all_gather needs an operand of rank >= 1");
    a.dim = normalize_dim(n.attr_int("dim"), static_cast<int>(input.size()), n);
    for (int64_t s : a.sizes)
      if (s < 1) throw bad(strcat("sizes must be positive, got ", s));
  } else {
    a.group = n.attr_int("group");
  }
  if (a.group < 1) throw bad(strcat("group must be >= 1, got ", a.group));
  if (a.rank < 0 || a.rank >= a.group) throw bad(strcat("rank ", a.rank, " outside the group of ", a.group));
  if (n.op == "all_gather" && input[static_cast<size_t>(a.dim)] != a.sizes[static_cast<size_t>(a.rank)])
    throw bad(strcat("the operand's dim ", a.dim, " is ", input[static_cast<size_t>(a.dim)], " but sizes[", a.rank,
                     "] = ", a.sizes[static_cast<size_t>(a.rank)]));
  return a;
}

std::vector<OpInfo> collective_op_registry() {
  auto all_reduce = [](const Graph& g, const Node& n) {
    TensorType t = g.node(n.inputs[0]).type;
    collective_attrs(n, t.shape);
    return t;
  };
  auto all_gather = [](const Graph& g, const Node& n) {
    TensorType t = g.node(n.inputs[0]).type;
    CollectiveAttrs a = collective_attrs(n, t.shape);
    t.shape[static_cast<size_t>(a.dim)] = a.offset(a.group);
    return t;
  };
  return {
      {"all_reduce", OpCategory::Collective, 1, 1, all_reduce,
       "sum of every rank's operand over the ESL {group, rank} (tensor parallelism)"},
      {"all_gather", OpCategory::Collective, 1, 1, all_gather,
       "every rank's operand concatenated along {dim} over the ESL {rank, sizes} (tensor parallelism)"},
  };
}

Tensor collective_evaluate(const Node& n, const std::vector<const Tensor*>& inputs) {
  if (inputs.empty()) throw InternalError(strcat("collective %", n.name, ": no ranks"));
  const Shape& shape = inputs[0]->type.shape;
  CollectiveAttrs a = collective_attrs(n, inputs[0]->type.shape);
  if (static_cast<int64_t>(inputs.size()) != a.group)
    throw InputError(strcat("node %", n.name, " (", n.op, "): a group of ", a.group, " ranks evaluated with ",
                            inputs.size(), " operands"));
  if (n.op == "all_reduce") {
    Tensor out = *inputs[0];
    for (size_t r = 1; r < inputs.size(); ++r) {
      if (inputs[r]->numel() != out.numel())
        throw InputError(strcat("node %", n.name, " (all_reduce): rank ", r, " has ", inputs[r]->numel(),
                                " elements, rank 0 has ", out.numel()));
      for (size_t k = 0; k < out.data.size(); ++k) out.data[k] += inputs[r]->data[k];
    }
    if (out.type.dtype != DType::f32)
      for (auto& v : out.data) v = round_to_dtype(v, out.type.dtype);
    return out;
  }
  TensorType t = inputs[0]->type;
  t.shape[static_cast<size_t>(a.dim)] = a.offset(a.group);
  Tensor out(t);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a.dim; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(a.dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t full = t.shape[static_cast<size_t>(a.dim)];
  for (int64_t r = 0; r < a.group; ++r) {
    const Tensor& x = *inputs[static_cast<size_t>(r)];
    const int64_t w = a.sizes[static_cast<size_t>(r)], off = a.offset(r);
    if (x.numel() != outer * w * inner)
      throw InputError(strcat("node %", n.name, " (all_gather): rank ", r, " has ", x.numel(), " elements, expected ",
                              outer * w * inner));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < w * inner; ++j)
        out.data[static_cast<size_t>((o * full + off) * inner + j)] = x.data[static_cast<size_t>(o * w * inner + j)];
  }
  return out;
}

}  // namespace lpu
