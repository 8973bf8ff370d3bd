// The shared ATen argument conventions of graph/aten.h: operand binding, ATen type
// promotion, reduction dims, torch size lists.
#include <algorithm>

#include "graph/aten.h"
#include "graph/ops.h"
#include "support/error.h"

namespace lpu::aten {

double Operand::value() const {
  if (auto* d = std::get_if<double>(&scalar)) return *d;
  if (auto* i = std::get_if<int64_t>(&scalar)) return static_cast<double>(*i);
  if (auto* b = std::get_if<bool>(&scalar)) return *b ? 1.0 : 0.0;
  return 0;
}

std::vector<Operand> bind(const Node& n, std::initializer_list<const char*> names) {
  std::vector<Operand> out;
  int next = 0;
  for (const char* name : names) {
    Operand o;
    auto it = n.attrs.find(name);
    if (it != n.attrs.end()) {
      if (std::holds_alternative<std::string>(it->second) || std::holds_alternative<std::vector<int64_t>>(it->second))
        throw InputError(strcat("node %", n.name, " (", n.op, "): argument '", name, "' must be a tensor or a number"));
      o.scalar = it->second;
    } else if (next < static_cast<int>(n.inputs.size())) {
      o.input = next++;
    } else {
      throw InputError(strcat("node %", n.name, " (", n.op, "): argument '", name, "' is neither an input nor an attribute"));
    }
    out.push_back(o);
  }
  if (next != static_cast<int>(n.inputs.size()))
    throw InputError(strcat("node %", n.name, " (", n.op, "): ", n.inputs.size(), " inputs, but only ", next,
                            " tensor arguments"));
  return out;
}

std::vector<OperandType> operand_types(const Graph& g, const std::vector<NodeId>& inputs,
                                       const std::vector<Operand>& ops) {
  std::vector<OperandType> out;
  for (const auto& o : ops) {
    OperandType t;
    if (o.is_tensor()) {
      t.tensor = true;
      t.type = g.node(inputs.at(static_cast<size_t>(o.input))).type;
    } else {
      t.type.dtype = std::holds_alternative<bool>(o.scalar)      ? DType::boolean
                     : std::holds_alternative<int64_t>(o.scalar) ? DType::i64
                                                                  : DType::f32;
    }
    out.push_back(t);
  }
  return out;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa != fb) return fa ? a : b;
  if (!fa) return DType::i64;  // i32 with i64
  return DType::f32;           // f16 with bf16, or either with f32
}

namespace {
std::optional<DType> promote_opt(std::optional<DType> a, DType b) { return a ? promote_types(*a, b) : b; }

std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || is_floating(*higher)) return higher;
  if (*higher == DType::boolean || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}
}  // namespace

DType result_type(const std::vector<OperandType>& ops) {
  std::optional<DType> dim, zero, wrapped;
  for (const auto& o : ops) {
    if (!o.tensor) wrapped = promote_opt(wrapped, o.type.dtype);
    else if (o.type.rank() == 0) zero = promote_opt(zero, o.type.dtype);
    else dim = promote_opt(dim, o.type.dtype);
  }
  return combine_categories(dim, combine_categories(zero, wrapped)).value_or(DType::f32);
}

Shape broadcast_operands(const std::vector<OperandType>& ops, const Node& n) {
  Shape s;
  for (const auto& o : ops)
    if (o.tensor) s = broadcast_shapes(s, o.type.shape, n);
  return s;
}

std::vector<int64_t> reduce_dims(const Node& n, const std::string& key, int rank) {
  std::vector<int64_t> dims = n.has_attr(key) ? n.attr_ints(key) : std::vector<int64_t>{};
  if (dims.empty()) {
    for (int i = 0; i < rank; ++i) dims.push_back(i);
    return dims;
  }
  return normalize_dims(dims, rank, n);
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    bool red = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!red) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Shape infer_size(const Node& n, const std::vector<int64_t>& size, int64_t count) {
  Shape s = size;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1 && infer < 0) infer = static_cast<int>(i);
    else if (s[i] < 0)
      throw InputError(strcat("node %", n.name, " (", n.op, "): bad size ", format_attr(size)));
    else known *= s[i];
  }
  if (infer >= 0 && known > 0 && count % known == 0) s[static_cast<size_t>(infer)] = count / known;
  if (numel(s) != count || (infer >= 0 && known == 0))
    throw InputError(strcat("node %", n.name, " (", n.op, "): size ", format_attr(size), " is invalid for ", count,
                            " elements"));
  return s;
}

std::optional<DType> dtype_attr(const Node& n) {
  if (!n.has_attr("dtype")) return std::nullopt;
  std::string s = n.attr_str("dtype", "");
  DType t;
  if (!parse_dtype(s, t)) throw InputError(strcat("node %", n.name, " (", n.op, "): unknown dtype '", s, "'"));
  return t;
}

int64_t result_index(const Node& n, int64_t count) {
  int64_t r = n.attr_int("result", 0);
  if (r < 0 || r >= count)
    throw InputError(strcat("node %", n.name, " (", n.op, "): result ", r, " out of range (the op has ", count, ")"));
  return r;
}

}  // namespace lpu::aten
