#include "graph/types.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "support/error.h"

namespace lpu {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::boolean: return "bool";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType& out) {
  static const std::pair<const char*, DType> table[] = {
      {"f32", DType::f32},   {"fp32", DType::f32},      {"float32", DType::f32},
      {"f16", DType::f16},   {"fp16", DType::f16},      {"float16", DType::f16},
      {"bf16", DType::bf16}, {"bfloat16", DType::bf16}, {"i64", DType::i64},
      {"int64", DType::i64}, {"i32", DType::i32},       {"int32", DType::i32},
      {"bool", DType::boolean}};
  for (const auto& [name, t] : table)
    if (s == name) {
      out = t;
      return true;
    }
  return false;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i64: return 8;
    case DType::i32: return 4;
    case DType::boolean: return 1;
  }
  return 0;
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

const char* quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::none: return "none";
    case QuantFormat::int8: return "int8";
    case QuantFormat::int4: return "int4";
    case QuantFormat::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

bool parse_quant_format(const std::string& s, QuantFormat& out) {
  for (QuantFormat f : {QuantFormat::none, QuantFormat::int8, QuantFormat::int4, QuantFormat::fp8_e4m3})
    if (s == quant_format_name(f)) {
      out = f;
      return true;
    }
  return false;
}

std::string quant_str(const Quant& q) {
  return q.on() ? std::string(quant_format_name(q.format)) + "/g" + std::to_string(q.group) : "";
}

bool parse_quant(const std::string& s, Quant& out) {
  const size_t slash = s.find("/g");
  Quant q;
  if (slash == std::string::npos || !parse_quant_format(s.substr(0, slash), q.format) || !q.on()) return false;
  const std::string g = s.substr(slash + 2);
  auto [end, ec] = std::from_chars(g.data(), g.data() + g.size(), q.group);
  if (ec != std::errc() || end != g.data() + g.size() || q.group < 2 || q.group % 2 || q.group > kMaxQuantGroup)
    return false;
  out = q;
  return true;
}

int64_t storage_bytes(const TensorType& t, const Quant& q) { return q.on() ? q.bytes(t.numel()) : t.bytes(); }

bool packable(const TensorType& t, const Quant& q) {
  return q.group > 0 && is_floating(t.dtype) && t.rank() >= 1 && t.shape.back() % q.group == 0;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s)
    if (__builtin_mul_overflow(n, d, &n)) throw InputError("shape " + shape_str(s) + ": element count overflows int64");
  return n;
}

std::string shape_problem(const Shape& s, bool allow_empty) {
  int64_t n = 1;
  for (auto d : s) {
    if (d < 0) return "shape " + shape_str(s) + " has a negative dimension";
    if (d == 0 && !allow_empty) return "shape " + shape_str(s) + " has a zero-size dimension (empty tensors are not supported)";
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)
      return "shape " + shape_str(s) + " has too many elements (at most 2^48)";
  }
  return "";
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::string type_str(const TensorType& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

const char* buffer_role_name(BufferRole r) {
  switch (r) {
    case BufferRole::Input: return "input";
    case BufferRole::Weight: return "weight";
    case BufferRole::Intermediate: return "intermediate";
    case BufferRole::Output: return "output";
  }
  return "?";
}

std::string format_double(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // Keep a visible decimal point or exponent so the text reads as a float.
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string format_float_digits(float f) {
  char buf[40];
  for (int digits = 6; digits <= 9; ++digits) {  // 9 significant digits always suffice for fp32
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  return buf;
}

}  // namespace lpu
