// ATen-level ops (`aten.*`), as the PyTorch frontend (python/lpu_frontend) writes them. They
// are Composite ops: type inference here (graph/aten_ops.cpp), one decomposition each into the
// core op set (passes/aten_decompositions.cpp). Conventions shared by both:
//   name    "aten." + the overload packet (aten.add covers add.Tensor and add.Scalar)
//   inputs  the tensor arguments in schema order, tensor lists flattened in place; an absent
//           optional tensor is skipped (only trailing ones may be absent)
//   attrs   every other argument by its schema name (None omitted, dtypes as "f32"...); a
//           Python number where the schema takes a Tensor (x * 0.5) is an attr of that name
//   result  for ops returning several tensors (split, native_layer_norm...): which one
// Type promotion follows ATen's result_type: dimensioned tensors outrank zero-dim tensors,
// which outrank Python numbers, and a lower-ranked operand only matters when it is of a
// higher category (bool < integer < floating).
#pragma once
#include <initializer_list>
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace lpu {

struct OpInfo;

namespace aten {

// A tensor-or-number argument: the node's input number `input`, or the attr `scalar`.
struct Operand {
  int input = -1;
  AttrValue scalar;
  bool is_tensor() const { return input >= 0; }
  double value() const;  // the number (bool as 0/1); only for !is_tensor()
};

// Binds argument `names` (schema order) to the node's inputs in order or to its attrs.
// Throws InputError naming the node when an argument is neither, or inputs are left over.
std::vector<Operand> bind(const Node& n, std::initializer_list<const char*> names);

// The dtype of each operand for promotion: tensors as they are, numbers as ATen wraps them
// (bool, i64, float -> f32).
struct OperandType {
  bool tensor = false;
  TensorType type;  // for a number: dtype only, shape []
};
std::vector<OperandType> operand_types(const Graph& g, const std::vector<NodeId>& inputs,
                                       const std::vector<Operand>& ops);

DType promote_types(DType a, DType b);
DType result_type(const std::vector<OperandType>& ops);
// The numpy broadcast of the tensor operands' shapes.
Shape broadcast_operands(const std::vector<OperandType>& ops, const Node& n);

// Reduction dims from attr `key` (int, list, or absent / empty = every dim), normalised.
std::vector<int64_t> reduce_dims(const Node& n, const std::string& key, int rank);
Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim);
// A torch size list with at most one -1, resolved against `numel`.
Shape infer_size(const Node& n, const std::vector<int64_t>& size, int64_t numel);
// attr "dtype" if present (InputError on an unknown name).
std::optional<DType> dtype_attr(const Node& n);
// attr "result" for multi-result ops, checked against `count`.
int64_t result_index(const Node& n, int64_t count);

// clamp / clamp_min / clamp_max / hardtanh: (self, min, max); an absent bound has input -2.
std::vector<Operand> clamp_operands(const Node& n);

std::vector<OpInfo> registry();  // the aten.* entries of the op registry

}  // namespace aten
}  // namespace lpu
