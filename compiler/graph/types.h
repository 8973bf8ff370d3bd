// Element types and tensor types of the graph IR.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lpu {

enum class DType { f32, f16, bf16, i64, i32, boolean };

const char* dtype_name(DType t);            // "f32", "f16", "bf16", "i64", "i32", "bool"
bool parse_dtype(const std::string& s, DType& out);
int dtype_bytes(DType t);
bool is_floating(DType t);

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);  // an InputError when the count does not fit int64
// Tensors the workbench handles: at most 2^48 elements (256 T elements; far beyond any HBM) so
// that byte counts and address arithmetic never overflow.
constexpr int64_t kMaxElements = int64_t{1} << 48;
// Why a shape read from a file is unusable ("" when it is fine): a negative dimension, more
// than kMaxElements elements, or a zero-size dimension unless `allow_empty`. Inputs must not be
// empty; a call may be (exporters leave empty slices, e.g. the pass-through part of a rotary
// embedding that covers the whole head), since normalisation drops empty cat operands and
// rejects any empty tensor that is left (passes.h, drop_empty_tensors).
std::string shape_problem(const Shape& s, bool allow_empty = false);
std::string shape_str(const Shape& s);      // "[128, 1024]"

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  int64_t numel() const { return lpu::numel(shape); }
  int64_t bytes() const { return numel() * dtype_bytes(dtype); }
  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType&) const = default;
};

std::string type_str(const TensorType& t);  // "f32[128, 1024]"

// What a tensor is to a compiled program: a buffer of the loop IR (loopir/loop_ir.h) and of
// the LPU program (isa/program.h) has one of these roles.
enum class BufferRole { Input, Weight, Intermediate, Output };
const char* buffer_role_name(BufferRole r);  // "input", "weight", "intermediate", "output"

// Shortest text that parses back to exactly the same double.
std::string format_double(double v);
// Shortest %g text (6 to 9 digits) that strtof reads back as exactly `f`, finite f only;
// generated sources (C++, Triton) print their fp32 literals with it.
std::string format_float_digits(float f);

}  // namespace lpu
