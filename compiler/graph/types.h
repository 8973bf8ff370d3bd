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

// Packed weight storage (workload key weight_dtype, docs/quantisation.md): a weight tensor of a
// floating dtype kept in HBM as narrow codes with one f16 scale per `group` consecutive
// elements in memory order (the input width of a [out, in] linear weight, as GPTQ/AWQ group
// along the input features). The storage is a run of blocks, one per group:
//   [f16 scale][group codes: int8 one byte each, int4 two per byte (low nibble first),
//    fp8_e4m3 one byte each]
// and an element's value is code x scale. The graph keeps the logical dtype: quantisation is
// how the bytes are stored, so HBM traffic, DMA and capacity count the packed size.
enum class QuantFormat : uint8_t { none, int8, int4, fp8_e4m3 };
const char* quant_format_name(QuantFormat f);  // "none", "int8", "int4", "fp8_e4m3"
bool parse_quant_format(const std::string& s, QuantFormat& out);

struct Quant {
  QuantFormat format = QuantFormat::none;
  int64_t group = 0;  // elements per scale (even, >= 2) when format is not none
  bool on() const { return format != QuantFormat::none; }
  int bits() const { return format == QuantFormat::int4 ? 4 : 8; }
  int64_t code_bytes() const { return group * bits() / 8; }
  int64_t block_bytes() const { return 2 + code_bytes(); }  // the f16 scale, then the codes
  // Byte offset of the block holding element `e` (elements counted in memory order from a
  // block boundary).
  int64_t block_offset(int64_t e) const { return e / group * block_bytes(); }
  // Bytes of `elems` elements starting at a block boundary (whole blocks).
  int64_t bytes(int64_t elems) const { return (elems + group - 1) / group * block_bytes(); }
  bool operator==(const Quant&) const = default;
};
// "int4/g128"; "" when off. parse_quant reads that form back (false on anything else).
std::string quant_str(const Quant& q);
bool parse_quant(const std::string& s, Quant& out);
// The largest group the workbench accepts (a block's codes must fit one HBM burst run).
constexpr int64_t kMaxQuantGroup = int64_t{1} << 16;
// HBM bytes of a tensor of type `t` stored as `q` (its dtype's bytes when q is off).
int64_t storage_bytes(const TensorType& t, const Quant& q);
// Whether a tensor of type `t` can be stored packed in `q`'s groups: a floating tensor whose last
// dimension the group divides (the groups run along it). The one rule for every reader: graph
// parameters, loop-IR buffers, program buffers (each adds that only weights are packed).
bool packable(const TensorType& t, const Quant& q);

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
