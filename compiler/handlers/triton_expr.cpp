// The Triton ops handler: values are Triton-language expressions (triton_internal.h).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "handlers/triton_internal.h"
#include "ref/tensor.h"
#include "support/error.h"

namespace lpu::triton {

std::string py_ident(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string py_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string py_float(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "float(\"nan\")";
  if (std::isinf(f)) return f > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  std::string s = format_float_digits(f);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return std::signbit(f) ? "(" + s + ")" : s;
}

const char* tl_dtype(DType t) {
  switch (t) {
    case DType::f32: return "tl.float32";
    case DType::f16: return "tl.float16";
    case DType::bf16: return "tl.bfloat16";
    case DType::i64: return "tl.int64";
    case DType::i32: return "tl.int32";
    case DType::boolean: return "tl.int1";
  }
  throw InternalError("triton handler: unknown dtype");
}

const char* torch_dtype(DType t) {
  switch (t) {
    case DType::f32: return "torch.float32";
    case DType::f16: return "torch.float16";
    case DType::bf16: return "torch.bfloat16";
    case DType::i64: return "torch.int64";
    case DType::i32: return "torch.int32";
    case DType::boolean: return "torch.bool";
  }
  throw InternalError("triton handler: unknown dtype");
}

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

namespace {

std::string atom_py(const IndexAtom& a, const Scope& sc, const std::string& node, const std::string& what) {
  switch (a.kind) {
    case IndexAtom::Var: {
      auto it = sc.var.find(a.var);
      if (it == sc.var.end())
        throw InputError(
            strcat("node ", node, ": ", what, " uses ", a.var.name(), ", which is not a loop variable of the node"));
      return it->second;
    }
    case IndexAtom::FloorDiv:
    case IndexAtom::Mod: {
      std::string arg = index_py(*a.arg, sc, node, what);
      // Python // and % floor; Triton's integer // and % truncate like C. They agree when the
      // operand is non-negative (the divisor always is): print them plainly when the ranges prove
      // it, the exact floor helpers otherwise.
      int64_t lo = 0, hi = 0;
      bool nonneg = a.arg->bounds(sc.range, lo, hi) && lo >= 0;
      bool div = a.kind == IndexAtom::FloorDiv;
      if (nonneg) return strcat("((", arg, ") ", div ? "//" : "%", " ", a.divisor, ")");
      return strcat(div ? "_lpu_floordiv(" : "_lpu_mod(", arg, ", ", a.divisor, ")");
    }
  }
  throw InternalError("triton handler: unknown index atom kind");
}

}  // namespace

std::string index_py(const Index& idx, const Scope& sc, const std::string& node, const std::string& what) {
  std::string s;
  for (const auto& [coef, atom] : idx.terms()) {
    if (s.empty())
      s += coef < 0 ? "-" : "";
    else
      s += coef < 0 ? " - " : " + ";
    int64_t ac = coef < 0 ? -coef : coef;
    if (ac != 1) s += std::to_string(ac) + "*";
    s += atom_py(atom, sc, node, what);
  }
  int64_t c = idx.constant_part();
  if (s.empty()) return std::to_string(c);
  if (c > 0) s += " + " + std::to_string(c);
  if (c < 0) s += " - " + std::to_string(-c);
  return s;
}

std::string mask_for(const Index& idx, const Scope& sc) {
  std::set<std::string> masks;
  for (const auto& v : idx.variables())
    if (auto it = sc.mask.find(v); it != sc.mask.end() && !it->second.empty()) masks.insert(it->second);
  std::string m;
  for (const auto& x : masks) m += (m.empty() ? "" : " & ") + x;
  return m;
}

std::string TritonExprHandler::ptr(const std::string& buffer) const {
  auto it = ptrs_.find(buffer);
  if (it == ptrs_.end()) throw InternalError("triton handler: no pointer for buffer " + buffer);
  return it->second;
}

std::string TritonExprHandler::temp(const std::string& expr) {
  if (auto it = cse_.find(expr); it != cse_.end()) return it->second;
  std::string name = "t" + std::to_string(next_tmp_++);
  w_.line(name + " = " + expr);
  cse_.emplace(expr, name);
  return name;
}

std::string TritonExprHandler::raw_load(const std::string& ptr_expr, const std::string& mask) {
  std::string m = mask.empty() ? "" : ", mask=" + mask + ", other=0";
  return temp("tl.load(" + ptr_expr + m + ").to(tl.float32)");
}

// Every value is fp32 in registers (the reference executor's host storage, and the VXE's
// arithmetic); loads widen, stores narrow to the buffer's dtype.
std::string TritonExprHandler::load(const ExprNode& e) {
  std::string idx = index_py(e.index, scope, n_.name, "load of " + e.buffer);
  return raw_load(ptr(e.buffer) + " + (" + idx + ")", mask_for(e.index, scope));
}

std::string TritonExprHandler::constant(double value, DType) {
  std::string lit = py_float(value);
  literals_[lit] = static_cast<double>(static_cast<float>(value));
  return lit;
}

std::string TritonExprHandler::index_expr(const Index& index) {
  if (index.is_constant()) return constant(static_cast<double>(index.constant_part()), DType::f32);
  return temp("(" + index_py(index, scope, n_.name, "index expression") + ").to(tl.float32)");
}

// A cast rounds to the target type and widens back (values stay fp32): what the reference's
// conversion does. Literals are converted here.
std::string TritonExprHandler::to_dtype(std::string x, DType t) {
  if (auto it = literals_.find(x); it != literals_.end()) {
    double v = it->second;
    switch (t) {
      case DType::f32: return x;
      case DType::f16:
      case DType::bf16: return constant(round_to_dtype(static_cast<float>(v), t), DType::f32);
      case DType::i64:
      case DType::i32: return constant(std::trunc(v), DType::f32);
      case DType::boolean: return constant(v != 0 ? 1.0 : 0.0, DType::f32);
    }
  }
  switch (t) {
    case DType::f32: return x;
    case DType::f16:
    case DType::bf16: return temp(strcat(x, ".to(", tl_dtype(t), ").to(tl.float32)"));
    case DType::i64:
    case DType::i32: return temp(x + ".to(tl.int64).to(tl.float32)");
    case DType::boolean: return temp("tl.where(" + x + " != 0, 1.0, 0.0)");
  }
  throw InputError(strcat("node ", n_.name, ": Triton handler does not know dtype ", static_cast<int>(t)));
}

// Every scalar op of LPU_SCALAR_OPS, spelled in Triton: an exhaustive switch (-Wswitch names a
// new op here), and an InputError for anything past it.
std::string TritonExprHandler::call(ScalarOp op, const std::vector<std::string>& a, DType) {
  auto need = [&](size_t n) {
    if (a.size() != n)
      throw InternalError(strcat("triton handler: op ", scalar_op_name(op), " got ", a.size(), " operands"));
  };
  auto infix = [&](const std::string& o) {
    need(2);
    return temp(a[0] + " " + o + " " + a[1]);
  };
  auto cmp = [&](const std::string& o) {
    need(2);
    return temp("tl.where(" + a[0] + " " + o + " " + a[1] + ", 1.0, 0.0)");
  };
  // Literal operands of tl functions become fp32 tensors first (tl.* wants tensors, and a
  // Python float has no .to(): `1.0.to(tl.int64)` is a CompilationError).
  auto tens = [&](size_t i) { return is_literal(a[i]) ? temp("tl.full([], " + a[i] + ", tl.float32)") : a[i]; };
  auto bits = [&](const std::string& o) {
    need(2);
    return temp("(" + tens(0) + ".to(tl.int64) " + o + " " + tens(1) + ".to(tl.int64)).to(tl.float32)");
  };
  auto tfn1 = [&](const std::string& f) {
    need(1);
    return temp(f + "(" + tens(0) + ")");
  };
  auto tfn2 = [&](const std::string& f) {
    need(2);
    return temp(f + "(" + tens(0) + ", " + tens(1) + ")");
  };
  switch (op) {
    case ScalarOp::neg: need(1); return temp("-" + a[0]);
    case ScalarOp::abs: return tfn1("tl.abs");
    case ScalarOp::relu: need(1); return temp("tl.where(" + a[0] + " > 0, " + a[0] + ", 0.0)");
    case ScalarOp::sign:
      need(1);
      return temp("tl.where(" + a[0] + " > 0, 1.0, tl.where(" + a[0] + " < 0, -1.0, " + a[0] + "))");
    case ScalarOp::floor: return tfn1("tl.floor");
    case ScalarOp::ceil: return tfn1("tl.ceil");
    case ScalarOp::round: return tfn1("libdevice.nearbyint");  // half to even
    case ScalarOp::trunc: return tfn1("libdevice.trunc");
    case ScalarOp::exp: return tfn1("tl.exp");
    case ScalarOp::expm1: return tfn1("libdevice.expm1");
    case ScalarOp::log: return tfn1("tl.log");
    case ScalarOp::log1p: return tfn1("libdevice.log1p");
    case ScalarOp::log2: return tfn1("tl.log2");
    case ScalarOp::log10: return tfn1("libdevice.log10");
    case ScalarOp::sin: return tfn1("tl.sin");
    case ScalarOp::cos: return tfn1("tl.cos");
    case ScalarOp::tan: return tfn1("libdevice.tan");
    case ScalarOp::asin: return tfn1("libdevice.asin");
    case ScalarOp::acos: return tfn1("libdevice.acos");
    case ScalarOp::atan: return tfn1("libdevice.atan");
    case ScalarOp::sinh: return tfn1("libdevice.sinh");
    case ScalarOp::cosh: return tfn1("libdevice.cosh");
    case ScalarOp::tanh: return tfn1("libdevice.tanh");
    case ScalarOp::asinh: return tfn1("libdevice.asinh");
    case ScalarOp::acosh: return tfn1("libdevice.acosh");
    case ScalarOp::atanh: return tfn1("libdevice.atanh");
    case ScalarOp::erf: return tfn1("libdevice.erf");
    case ScalarOp::sigmoid: need(1); return temp("1.0 / (1.0 + tl.exp(-" + tens(0) + "))");
    case ScalarOp::rsqrt: need(1); return temp("1.0 / tl.sqrt_rn(" + tens(0) + ")");
    case ScalarOp::sqrt: return tfn1("tl.sqrt_rn");
    case ScalarOp::reciprocal: need(1); return temp("1.0 / " + a[0]);
    case ScalarOp::is_nan: need(1); return temp("tl.where(" + a[0] + " != " + a[0] + ", 1.0, 0.0)");
    case ScalarOp::is_inf: need(1); return temp("tl.where(tl.abs(" + tens(0) + ") == float(\"inf\"), 1.0, 0.0)");
    case ScalarOp::add: return infix("+");
    case ScalarOp::sub: return infix("-");
    case ScalarOp::mul: return infix("*");
    case ScalarOp::div: return infix("/");
    case ScalarOp::maximum: return tfn2("tl.maximum");
    case ScalarOp::minimum: return tfn2("tl.minimum");
    case ScalarOp::pow: return tfn2("libdevice.pow");
    case ScalarOp::atan2: return tfn2("libdevice.atan2");
    case ScalarOp::fmod: return tfn2("libdevice.fmod");
    case ScalarOp::remainder: {  // Python %: the sign of the divisor (ops/scalar_ops.h)
      std::string m = tfn2("libdevice.fmod");
      return temp("tl.where((" + m + " != 0) & ((" + m + " < 0) != (" + a[1] + " < 0)), " + m + " + " + a[1] + ", " +
                  m + ")");
    }
    case ScalarOp::bitwise_and: return bits("&");
    case ScalarOp::bitwise_or: return bits("|");
    case ScalarOp::bitwise_xor: return bits("^");
    case ScalarOp::lt: return cmp("<");
    case ScalarOp::le: return cmp("<=");
    case ScalarOp::gt: return cmp(">");
    case ScalarOp::ge: return cmp(">=");
    case ScalarOp::eq: return cmp("==");
    case ScalarOp::ne: return cmp("!=");
    case ScalarOp::where: need(3); return temp("tl.where(" + a[0] + " != 0, " + a[1] + ", " + a[2] + ")");
  }
  throw InputError(strcat("node ", n_.name, ": the Triton handler has no spelling for op #", static_cast<int>(op)));
}

}  // namespace lpu::triton
