#include "handlers/cpp_source.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "handlers/ops_handler.h"
#include "support/error.h"

namespace lpu {
namespace {

// C++ identifier from a buffer or kernel name (graph names may hold '.', '-', ...).
std::string ident(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

// A string literal (names are graph names: escape what C++ would read as syntax).
std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A float literal that reads back as exactly static_cast<float>(v), the value every other
// handler computes with.
std::string float_literal(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "NAN";
  if (std::isinf(f)) return f > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s = format_float_digits(f);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  s += "f";
  return std::signbit(f) ? "(" + s + ")" : s;
}

std::string index_cpp(const Index& idx);

std::string atom_cpp(const IndexAtom& a) {
  switch (a.kind) {
    case IndexAtom::Var: return a.var.name();
    case IndexAtom::FloorDiv: return strcat("lpu_floordiv(", index_cpp(*a.arg), ", ", a.divisor, ")");
    case IndexAtom::Mod: return strcat("lpu_mod(", index_cpp(*a.arg), ", ", a.divisor, ")");
  }
  throw InternalError("cpp handler: unknown index atom kind");
}

// Same layout as Index::str(), with div/mod as calls: "1024*i0 + r0", "-i0 + 3".
std::string index_cpp(const Index& idx) {
  std::string s;
  for (const auto& [coef, atom] : idx.terms()) {
    if (s.empty())
      s += coef < 0 ? "-" : "";
    else
      s += coef < 0 ? " - " : " + ";
    int64_t ac = coef < 0 ? -coef : coef;
    if (ac != 1) s += std::to_string(ac) + "*";
    s += atom_cpp(atom);
  }
  int64_t c = idx.constant_part();
  if (s.empty()) return std::to_string(c);
  if (c > 0) s += " + " + std::to_string(c);
  if (c < 0) s += " - " + std::to_string(-c);
  return s;
}

// One scalar op as a C++ expression: the op table's EXPR (ops/scalar_ops.h), the very text
// eval_scalar_op is compiled from, with the operand tokens spliced in for a0, a1, a2.
std::string op_cpp(ScalarOp op, const std::vector<std::string>& a) {
  std::string text = scalar_op_expr(op);
  // The table parenthesises each EXPR (for the macro); the statement needs no outer pair.
  int depth = 0;
  size_t close = 0;
  for (size_t i = 0; i < text.size() && !close; ++i) {
    depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
    if (depth == 0) close = i;
  }
  if (text.front() == '(' && close == text.size() - 1) text = text.substr(1, text.size() - 2);
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    bool operand = text[i] == 'a' && i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '2' &&
                   (i == 0 || !is_ident(text[i - 1])) && (i + 2 >= text.size() || !is_ident(text[i + 2]));
    if (!operand) {
      out += text[i];
      continue;
    }
    auto k = static_cast<size_t>(text[i + 1] - '0');
    if (k >= a.size()) throw InternalError(strcat("C++ handler: op ", scalar_op_name(op), " uses operand a", k));
    out += a[k];
    ++i;
  }
  return out;
}

// Indented lines; open() / close() bracket a block.
class Writer {
 public:
  void line(const std::string& s) { out_ << std::string(static_cast<size_t>(2 * depth_), ' ') << s << "\n"; }
  void open(const std::string& head) {
    line(head.empty() ? "{" : head + " {");
    ++depth_;
  }
  void close(const std::string& tail = "") {
    --depth_;
    line("}" + tail);
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int depth_ = 0;
};

// `for (int64_t i0 = 0; i0 < 8; ++i0)`: the loop over one variable.
std::string loop_head(const LoopVar& v, int64_t range) {
  const std::string n = v.name();
  return strcat("for (int64_t ", n, " = 0; ", n, " < ", range, "; ++", n, ")");
}

// Emits one node: a block with its loop nest. Values are C++ expressions: an operand token
// (a temporary's name or a literal), so every op can splice its arguments without parentheses.
class CppSourceHandler final : public OpsHandler<std::string> {
 public:
  CppSourceHandler(const LoopNode& n, const std::map<std::string, std::string>& buf_vars, Writer& w)
      : n_(n), buf_vars_(buf_vars), w_(w) {
    for (const auto& [v, range] : n.var_ranges()) vars_.insert(v);
  }

  void emit() {
    if (n_.kind == LoopKind::Gather) return emit_gather();
    bool reduces = node_reduces(n_);
    std::istringstream text(print_loop_node(n_));
    for (std::string l; std::getline(text, l);) w_.line("// " + l);
    w_.open("");
    for (size_t i = 0; i < n_.ranges.size(); ++i)
      w_.open(loop_head(LoopVar::output(i), n_.ranges[i]));
    if (reduces) {
      declare_accumulator();
      for (size_t i = 0; i < n_.reduction_ranges.size(); ++i)
        w_.open(loop_head(LoopVar::reduction(i), n_.reduction_ranges[i]));
    }
    std::string v = evaluate_node<std::string>(n_, *this);  // a reduction closes its own loops
    w_.line(buffer(n_.out()) + "[" + checked_index(n_.store_index, "store") + "] = " + v + ";");
    for (size_t i = 0; i < n_.ranges.size(); ++i) w_.close();
    w_.close();
  }

  // out[row..., c] = table[index(row...) * cols + c]: the index is a loaded value.
  void emit_gather() {
    std::istringstream text(print_loop_node(n_));
    for (std::string l; std::getline(text, l);) w_.line("// " + l);
    w_.open("");
    for (size_t i = 0; i < n_.ranges.size(); ++i)
      w_.open(loop_head(LoopVar::output(i), n_.ranges[i]));
    std::unordered_map<const ExprNode*, std::string> memo;
    std::string idx = evaluate(n_.gather_index, *this, memo);
    std::string col = n_.column_var().name();
    w_.line(buffer(n_.out()) + "[" + checked_index(n_.store_index, "store") + "] = " + buffer(n_.gather_table) +
            "[static_cast<int64_t>(" + idx + ") * " + std::to_string(n_.ranges.back()) + " + " + col + "];");
    for (size_t i = 0; i < n_.ranges.size(); ++i) w_.close();
    w_.close();
  }

  std::string load(const ExprNode& e) override {
    return temp(buffer(e.buffer) + "[" + checked_index(e.index, "load of " + e.buffer) + "]");
  }
  std::string constant(double value, DType) override { return float_literal(value); }
  std::string index_expr(const Index& index) override {
    return temp("static_cast<float>(" + checked_index(index, "index expression") + ")");
  }
  std::string to_dtype(std::string x, DType) override { return x; }  // host storage is fp32
  std::string call(ScalarOp op, const std::vector<std::string>& args, DType) override {
    return temp(op_cpp(op, args));
  }

  // Called inside the reduction loops: combine, close the loops, finalise (ops/reduction.h).
  std::string reduction(ReductionType t, std::string v) override {
    switch (t) {
      case ReductionType::sum:
      case ReductionType::mean: w_.line("acc += " + v + ";"); break;
      case ReductionType::prod: w_.line("acc *= " + v + ";"); break;
      case ReductionType::max: w_.line("acc = std::max(acc, static_cast<double>(" + v + "));"); break;
      case ReductionType::min: w_.line("acc = std::min(acc, static_cast<double>(" + v + "));"); break;
      case ReductionType::argmax:
        // The first maximum wins; a NaN beats any number (then nothing beats it).
        w_.line("if (" + v + " > acc || (std::isnan(" + v + ") && !std::isnan(acc))) {");
        w_.line("  acc = " + v + ";");
        w_.line("  arg = " + index_cpp(flat_reduction_index()) + ";");
        w_.line("}");
        break;
      case ReductionType::var:  // Welford: running mean and M2
        w_.open("");
        w_.line("const double d = " + v + " - mean;");
        w_.line("mean += d / static_cast<double>(++count);");
        w_.line("m2 += d * (" + v + " - mean);");
        w_.close();
        break;
    }
    for (size_t i = 0; i < n_.reduction_ranges.size(); ++i) w_.close();
    cse_.clear();  // the temporaries above are out of scope now
    std::string n = strcat(numel(n_.reduction_ranges), ".0");
    switch (t) {
      case ReductionType::sum:
      case ReductionType::prod:
      case ReductionType::max:
      case ReductionType::min: return temp("static_cast<float>(acc)");
      case ReductionType::mean: return temp("static_cast<float>(acc / " + n + ")");
      case ReductionType::argmax: return temp("static_cast<float>(arg)");
      case ReductionType::var: return temp("static_cast<float>(m2 / " + n + ")");
    }
    throw InputError(strcat("node ", n_.name, ": C++ handler does not know reduction ", static_cast<int>(t)));
  }

 private:
  void declare_accumulator() {
    switch (n_.reduction) {
      case ReductionType::sum:
      case ReductionType::mean: w_.line("double acc = 0.0;"); return;
      case ReductionType::prod: w_.line("double acc = 1.0;"); return;
      case ReductionType::max: w_.line("double acc = -INFINITY;"); return;
      case ReductionType::min: w_.line("double acc = INFINITY;"); return;
      case ReductionType::argmax:
        w_.line("double acc = -INFINITY;");
        w_.line("int64_t arg = 0;");
        return;
      case ReductionType::var:
        w_.line("double mean = 0.0, m2 = 0.0;");
        w_.line("int64_t count = 0;");
        return;
    }
    throw InputError(strcat("node ", n_.name, ": C++ handler does not know reduction ", static_cast<int>(n_.reduction)));
  }

  // Row-major position in the reduction domain (what argmax returns).
  Index flat_reduction_index() const {
    Index flat;
    int64_t weight = 1;
    for (size_t k = n_.reduction_ranges.size(); k-- > 0;) {
      flat = flat + Index::var(LoopVar::reduction(k)) * weight;
      weight *= n_.reduction_ranges[k];
    }
    return flat;
  }

  std::string buffer(const std::string& name) const {
    auto it = buf_vars_.find(name);
    if (it == buf_vars_.end()) throw InternalError("cpp handler: no variable for buffer " + name);
    return it->second;
  }

  std::string checked_index(const Index& idx, const std::string& what) const {
    for (const auto& v : idx.variables())
      if (!vars_.count(v))
        throw InputError(strcat("node ", n_.name, ": ", what, " index ", idx.str(), " uses ", v.name(),
                                ", which is not a loop variable of the node"));
    return index_cpp(idx);
  }

  // CSE: one temporary per distinct expression text in the current scope.
  std::string temp(const std::string& expr) {
    if (auto it = cse_.find(expr); it != cse_.end()) return it->second;
    std::string name = "tmp" + std::to_string(next_tmp_++);
    w_.line("const float " + name + " = " + expr + ";");
    cse_.emplace(expr, name);
    return name;
  }

  const LoopNode& n_;
  const std::map<std::string, std::string>& buf_vars_;
  Writer& w_;
  std::set<LoopVar> vars_;
  std::map<std::string, std::string> cse_;
  int next_tmp_ = 0;
};

const char* kPrelude = R"(#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {
// Floor division and non-negative modulo for a divisor d > 0 (loopir/index.h semantics;
// C++'s / and % truncate toward zero).
[[maybe_unused]] inline int64_t lpu_floordiv(int64_t a, int64_t d) { return a / d - (a % d < 0); }
[[maybe_unused]] inline int64_t lpu_mod(int64_t a, int64_t d) { return (a % d + d) % d; }
}  // namespace
)";

}  // namespace

std::vector<std::string> cpp_buffer_table(const LoopProgram& p, const Schedule& s) {
  std::vector<std::string> t = p.inputs;
  std::set<std::string> seen(t.begin(), t.end());
  for (const auto& k : s.kernels)
    for (const auto& o : k.hbm_outputs)
      if (seen.insert(o).second) t.push_back(o);
  return t;
}

namespace {

// One kernel as an extern "C" function over the buffer table; `available` (the buffers in HBM
// before it runs) grows by its HBM outputs.
void emit_cpp_kernel(const LoopProgram& p, const Kernel& k, const std::map<std::string, size_t>& slot,
                     std::set<std::string>& available, const std::string& fn, Writer& w) {
  std::set<std::string> in_kernel, hbm_out(k.hbm_outputs.begin(), k.hbm_outputs.end());
  std::vector<std::string> used;  // first-use order: declarations read top-down
  auto use = [&](const std::string& b) {
    if (std::find(used.begin(), used.end(), b) == used.end()) used.push_back(b);
  };
  for (int idx : k.nodes) {
    const LoopNode& n = p.nodes.at(static_cast<size_t>(idx));
    for (const auto& l : n.loads()) {
      if (!available.count(l->buffer) && !in_kernel.count(l->buffer))
        throw InputError(strcat("kernel ", k.name, ", node ", n.name, ": reads ", l->buffer,
                                ", which no input or earlier kernel provides"));
      use(l->buffer);
    }
    in_kernel.insert(n.out());
    use(n.out());
  }
  w.line("");
  std::string outs;
  for (const auto& b : k.hbm_outputs) outs += (outs.empty() ? "" : ", ") + b;
  w.line(strcat("// kernel ", k.name, ": ", k.nodes.size(), " node(s), HBM outputs: ", outs.empty() ? "none" : outs));
  w.open("extern \"C\" void " + fn + "(float* const* buffers)");
  std::map<std::string, std::string> vars;
  for (const auto& b : used) {
    std::string v = "buf_" + ident(b);
    for (int dup = 1; std::any_of(vars.begin(), vars.end(), [&](auto& kv) { return kv.second == v; }); ++dup)
      v = "buf_" + ident(b) + "_" + std::to_string(dup);
    vars[b] = v;
    const Buffer& buf = p.buffers.at(b);
    if (in_kernel.count(b) && !hbm_out.count(b)) {
      w.line(strcat("std::vector<float> local_", v.substr(4), "(", buf.type.numel(), ");  // ", type_str(buf.type),
                    ", kept in the kernel"));
      w.line("float* const " + v + " = local_" + v.substr(4) + ".data();");
    } else {
      bool written = in_kernel.count(b) > 0;
      w.line(strcat(written ? "float* const " : "const float* const ", v, " = buffers[", slot.at(b), "];  // ",
                    type_str(buf.type), " ", buffer_role_name(buf.role)));
    }
  }
  for (int idx : k.nodes) {
    const LoopNode& n = p.nodes.at(static_cast<size_t>(idx));
    CppSourceHandler h(n, vars, w);
    h.emit();
  }
  w.close();
  available.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
}

// The registry: the buffer table and the kernels, for a driver that knows nothing else.
void emit_cpp_registry(const LoopProgram& p, const Schedule& s, const std::vector<std::string>& table,
                       const std::vector<std::string>& fn_names, Writer& w) {
  w.line("");
  w.open("namespace");
  w.line("struct LpuBuffer { const char* name; long long numel; const char* role; };");
  w.open("const LpuBuffer lpu_buffers[] =");
  for (const auto& b : table) {
    const Buffer& buf = p.buffers.at(b);
    w.line(strcat("{", c_string(b), ", ", buf.type.numel(), ", \"", buffer_role_name(buf.role), "\"},"));
  }
  w.close(";");
  w.line("struct LpuKernel { const char* name; void (*fn)(float* const*); };");
  w.open("const LpuKernel lpu_kernels[] =");
  for (size_t i = 0; i < s.kernels.size(); ++i) w.line("{" + c_string(s.kernels[i].name) + ", " + fn_names[i] + "},");
  w.close(";");
  w.line("constexpr int kBuffers = " + std::to_string(table.size()) + ";");
  w.line("constexpr int kKernels = " + std::to_string(s.kernels.size()) + ";");
  w.close("  // namespace");
  w.line("");
  w.line("extern \"C\" int lpu_buffer_count(void) { return kBuffers; }");
  w.line("extern \"C\" const char* lpu_buffer_name(int i) { return i >= 0 && i < kBuffers ? lpu_buffers[i].name : nullptr; }");
  w.line("extern \"C\" long long lpu_buffer_numel(int i) { return i >= 0 && i < kBuffers ? lpu_buffers[i].numel : -1; }");
  w.line("extern \"C\" const char* lpu_buffer_role(int i) { return i >= 0 && i < kBuffers ? lpu_buffers[i].role : nullptr; }");
  w.line("extern \"C\" int lpu_kernel_count(void) { return kKernels; }");
  w.line("extern \"C\" const char* lpu_kernel_name(int i) { return i >= 0 && i < kKernels ? lpu_kernels[i].name : nullptr; }");
  w.open("extern \"C\" int lpu_run_kernel(int i, float* const* buffers)");
  w.line("if (i < 0 || i >= kKernels) return -1;");
  w.line("lpu_kernels[i].fn(buffers);");
  w.line("return 0;");
  w.close();
  w.open("extern \"C\" void lpu_run(float* const* buffers)");
  w.line("for (const LpuKernel& k : lpu_kernels) k.fn(buffers);");
  w.close();
}

}  // namespace

std::string emit_cpp_source(const LoopProgram& p, const Schedule& s) {
  if (s.kernels.empty()) throw InputError("C++ handler: program " + p.name + " has no kernels");
  std::vector<std::string> table = cpp_buffer_table(p, s);
  std::map<std::string, size_t> slot;
  for (size_t i = 0; i < table.size(); ++i) slot[table[i]] = i;

  Writer w;
  w.line("// Generated by lpu from program " + p.name + " (schedule: " + s.policy + ", " +
         std::to_string(s.kernels.size()) + " kernel(s)) by the C++ source handler, compiler/handlers/cpp_source.cpp.");
  w.line("// Buffer ABI: buffers[i] is a dense row-major float array for entry i of the buffer table");
  w.line("// (lpu_buffer_name / lpu_buffer_numel / lpu_buffer_role); lpu_run(buffers) runs every kernel.");
  w.line("// Build: c++ -std=c++17 -O2 -shared -fPIC kernels.cpp -o kernels.so");
  std::istringstream prelude(kPrelude);
  for (std::string l; std::getline(prelude, l);) w.line(l);

  std::set<std::string> available(p.inputs.begin(), p.inputs.end());  // in HBM before the kernel runs
  std::vector<std::string> fn_names;
  for (const auto& k : s.kernels) {
    fn_names.push_back("kernel_" + ident(k.name));
    emit_cpp_kernel(p, k, slot, available, fn_names.back(), w);
  }
  emit_cpp_registry(p, s, table, fn_names, w);
  return w.str();
}

}  // namespace lpu
