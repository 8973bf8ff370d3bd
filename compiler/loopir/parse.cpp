// Parser for the exact text form printed by print_loop_ir (loopir/loop_ir.h):
//   loop_ir NAME
//   buffers:
//     NAME: DTYPE[SHAPE] ROLE
//   inputs: [NAME, ...]
//   outputs: [NAME, ...]
//   constants:                                    (only when there are some)
//     NAME = NUMBER
//   nodes:
//   NAME = KIND [i0 < N, ...] [over [r0 < K, ...]] DTYPE [from ORIGIN] [; comment]
//     TARGET[INDEX] = BODY
// KIND is pointwise | reduction.TYPE | matmul | gather | host, and BODY is by kind
//   pointwise EXPR          reduction.T  T_r EXPR          matmul  sum_r EXPR
//   gather    TABLE[EXPR, iLAST]                           host    OP(NAME, ...) [ATTRS-JSON]
// EXPR is load(NAME, INDEX) | index(INDEX) | to_DTYPE(EXPR) | OP(EXPR, ...) | NUMBER, each
// optionally followed by :DTYPE where it differs from implied_dtype (loopir/expr.h). INDEX is
// an integer sum of terms [C*]ATOM and a constant, ATOM a variable or (INDEX)//D or (INDEX)%D.
// Every subexpression becomes a node of its own, as the lowering builds them: it shares no
// node between operands (two equal loads are two nodes), which the round-trip test checks.
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "graph/attrs_json.h"
#include "loopir/loop_ir.h"
#include "ref/tensor.h"
#include "support/error.h"
#include "support/line_cursor.h"

namespace lpu {

namespace {

class LoopLine : public LineCursor {
 public:
  LoopLine(const std::string& text, std::string where, const std::map<std::string, Buffer>& buffers)
      : LineCursor(text, std::move(where)), buffers_(buffers) {}

  std::vector<std::string> name_list() {
    expect('[');
    std::vector<std::string> out;
    if (accept(']')) return out;
    do out.push_back(word());
    while (accept(','));
    expect(']');
    return out;
  }
  std::vector<std::string> name_list_in_parens() {
    expect('(');
    std::vector<std::string> out;
    if (accept(')')) return out;
    do out.push_back(word());
    while (accept(','));
    expect(')');
    return out;
  }

  // [i0 < 4, i1 < 8]: the variables must be PREFIX0, PREFIX1, ... in order.
  std::vector<int64_t> ranges(LoopVar::Kind kind) {
    expect('[');
    std::vector<int64_t> out;
    if (accept(']')) return out;
    do {
      std::string v = ident();
      if (LoopVar want{kind, out.size()}; v != want.name())
        fail(strcat("expected loop variable ", want.name(), ", got '", v, "'"));
      expect('<');
      int64_t n = integer();
      if (n < 0) fail(strcat("the range of ", v, " must not be negative, got ", n));
      out.push_back(n);
    } while (accept(','));
    expect(']');
    return out;
  }

  DType dtype() {
    std::string d = word();
    DType t;
    if (!parse_dtype(d, t)) fail(strcat("unknown dtype '", d, "'"));
    return t;
  }

  Index index() {
    bool negate = accept('-');
    Index sum = term();
    if (negate) sum = sum * -1;
    while (true) {
      if (accept('+'))
        sum = sum + term();
      else if (accept('-'))
        sum = sum - term();
      else
        return sum;
    }
  }

  Expr expr() {
    Depth guard(*this);
    skip_ws();
    Expr e;
    if (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_])) && !number_ahead()) {
      std::string f = ident();
      expect('(');
      if (f == "load") {
        std::string b = word();
        expect(',');
        Index i = index();
        expect(')');
        auto it = buffers_.find(b);
        if (it == buffers_.end()) fail(strcat("load of unknown buffer '", b, "'"));
        e = make_load(b, std::move(i), it->second.type.dtype);
      } else if (f == "index") {
        Index i = index();
        expect(')');
        e = make_index_expr(std::move(i));
      } else if (f.rfind("to_", 0) == 0) {
        DType t;
        if (!parse_dtype(f.substr(3), t)) fail(strcat("unknown dtype in '", f, "'"));
        Expr a = expr();
        expect(')');
        e = make_cast(a, t);
      } else {
        ScalarOp op;
        if (!parse_scalar_op(f, op)) fail(strcat("unknown scalar op '", f, "'"));
        std::vector<Expr> args;
        do args.push_back(expr());
        while (accept(','));
        expect(')');
        if (static_cast<int>(args.size()) != scalar_op_arity(op))
          fail(strcat(f, " takes ", scalar_op_arity(op), " operand(s), got ", args.size()));
        ExprNode probe;
        probe.kind = ExprKind::Call;
        probe.op = op;
        probe.args = args;
        e = make_call(op, std::move(args), implied_dtype(probe, DType::f32));
      }
    } else {
      e = make_constant(number(), DType::f32);
    }
    if (accept(':')) e = with_dtype(e, dtype());
    return e;
  }

 private:
  // Nesting is bounded so hostile text fails cleanly instead of overflowing the stack; the
  // lowering nests a few levels (a body is one graph op over its operand views).
  static constexpr int kMaxDepth = 200;
  struct Depth {
    explicit Depth(LoopLine& l) : l_(l) {
      if (++l_.depth_ > kMaxDepth) l_.fail(strcat("expressions nested deeper than ", kMaxDepth));
    }
    ~Depth() { --l_.depth_; }
    LoopLine& l_;
  };
  int depth_ = 0;

  Index term() {
    skip_ws();
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int64_t c = integer();
      if (!accept('*')) return Index::constant(c);
      return atom() * c;
    }
    return atom();
  }

  Index atom() {
    Depth guard(*this);
    if (accept('(')) {
      Index inner = index();
      expect(')');
      bool div = accept("//");
      if (!div && !accept('%')) fail("expected '//' or '%' after a parenthesised index");
      int64_t d = integer();
      if (d < 1) fail(strcat("a divisor must be at least 1, got ", d));
      return div ? inner.floordiv(d) : inner.mod(d);
    }
    return Index::var(ident());
  }

  // inf / nan / -inf are numbers; an op name is followed by '('.
  bool number_ahead() {
    size_t p = pos_;
    while (p < s_.size() && ident_char(s_[p])) ++p;
    std::string w = s_.substr(pos_, p - pos_);
    return w == "inf" || w == "nan";
  }

  double number() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    std::string tok = s_.substr(b, pos_ - b);
    if (tok == "inf") return INFINITY;
    if (tok == "-inf") return -INFINITY;
    if (tok == "nan") return NAN;
    double d = 0;
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    if (tok.empty() || r.ec != std::errc() || r.ptr != tok.data() + tok.size())
      fail(strcat("expected a number, got '", tok, "'"));
    return d;
  }

  static Expr with_dtype(const Expr& e, DType t) {
    auto n = std::make_shared<ExprNode>(*e);
    n->dtype = t;
    return n;
  }

  const std::map<std::string, Buffer>& buffers_;
};

BufferRole parse_role(LoopLine& l) {
  std::string r = l.word();
  for (BufferRole role : {BufferRole::Input, BufferRole::Weight, BufferRole::Intermediate, BufferRole::Output})
    if (r == buffer_role_name(role)) return role;
  l.fail(strcat("unknown buffer role '", r, "' (expected input, weight, intermediate or output)"));
}

}  // namespace

LoopProgram parse_loop_ir(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string s; std::getline(in, s);) lines.push_back(s);
  LoopProgram p;
  size_t i = 0;
  auto where = [&](size_t k) { return strcat(source, ":", k + 1); };
  auto line = [&](size_t k) { return LoopLine(lines[k], where(k), p.buffers); };
  auto skip_blank = [&] {
    while (i < lines.size() && lines[i].find_first_not_of(" \t\r") == std::string::npos) ++i;
  };
  auto header = [&](const char* word) {
    skip_blank();
    if (i >= lines.size()) throw InputError(strcat(source, ": expected '", word, "' before the end of the text"));
    LoopLine l = line(i);
    l.expect(word);
    return l;
  };
  auto indented = [&] { return i < lines.size() && !lines[i].empty() && (lines[i][0] == ' ' || lines[i][0] == '\t'); };

  {
    LoopLine l = header("loop_ir");
    p.name = l.word();
    if (!l.at_end()) l.fail("expected the end of the line after the program name");
    ++i;
  }
  {
    LoopLine l = header("buffers:");
    if (!l.at_end()) l.fail("expected the end of the line");
    ++i;
  }
  for (; indented(); ++i) {
    LoopLine l = line(i);
    Buffer b;
    b.name = l.word();
    l.expect(':');
    if (p.buffers.count(b.name)) l.fail(strcat("buffer '", b.name, "' listed twice"));
    b.type.dtype = l.dtype();
    b.type.shape = l.int_list();
    if (std::string why = shape_problem(b.type.shape, /*allow_empty=*/true); !why.empty()) l.fail(why);
    b.role = parse_role(l);
    if (!l.at_end()) l.fail("expected the end of the line after the role");
    b.strides = contiguous_strides(b.type.shape);
    p.buffers[b.name] = b;
  }
  for (auto [key, list] : {std::pair{"inputs:", &p.inputs}, std::pair{"outputs:", &p.outputs}}) {
    LoopLine l = header(key);
    *list = l.name_list();
    if (!l.at_end()) l.fail("expected the end of the line after the list");
    ++i;
  }
  skip_blank();
  if (i < lines.size() && lines[i].rfind("constants:", 0) == 0) {
    for (++i; indented(); ++i) {
      LoopLine l = line(i);
      std::string k = l.word();
      l.expect('=');
      Expr c = l.expr();
      if (c->kind != ExprKind::Constant || !l.at_end()) l.fail("expected NAME = NUMBER");
      if (!p.constants.emplace(k, c->value).second) l.fail(strcat("constant '", k, "' given twice"));
    }
  }
  {
    LoopLine l = header("nodes:");
    if (!l.at_end()) l.fail("expected the end of the line");
    ++i;
  }
  while (true) {
    skip_blank();
    if (i >= lines.size()) break;
    if (indented()) throw InputError(strcat(where(i), ": a node body without a node header above it"));
    LoopLine h = line(i);
    LoopNode n;
    n.name = h.word();
    h.expect('=');
    std::string kind = h.word();
    if (kind == "pointwise") {
      n.kind = LoopKind::Pointwise;
    } else if (kind == "matmul") {
      n.kind = LoopKind::Matmul;
    } else if (kind == "gather") {
      n.kind = LoopKind::Gather;
    } else if (kind == "host") {
      n.kind = LoopKind::Host;
    } else if (kind.rfind("reduction.", 0) == 0) {
      n.kind = LoopKind::Reduction;
      if (!parse_reduction_type(kind.substr(10), n.reduction))
        h.fail(strcat("unknown reduction '", kind.substr(10), "'"));
    } else {
      h.fail(strcat("unknown node kind '", kind, "' (expected pointwise, reduction.TYPE, matmul, gather or host)"));
    }
    n.ranges = h.ranges(LoopVar::Kind::Output);
    if (n.kind == LoopKind::Reduction || n.kind == LoopKind::Matmul) {
      h.expect("over");
      n.reduction_ranges = h.ranges(LoopVar::Kind::Reduction);
    }
    n.dtype = h.dtype();
    n.origin = n.name;
    if (h.accept("from")) n.origin = h.word();
    if (!h.at_end() && !h.accept(';')) h.fail("expected the end of the line, 'from ORIGIN' or a '; comment'");
    ++i;
    if (!indented()) throw InputError(strcat(where(i - 1), ": node ", n.name, " has no body line below it"));
    LoopLine b = line(i);
    n.output = b.word();
    b.expect('[');
    n.store_index = b.index();
    b.expect(']');
    b.expect('=');
    if (n.kind == LoopKind::Host) {
      n.host_op = b.word();
      n.host_inputs = b.name_list_in_parens();
      if (!b.at_end()) {
        size_t at = lines[i].find('{');
        if (at == std::string::npos) b.fail("expected attributes as a JSON object");
        n.host_attrs = attrs_from_json(lines[i].substr(at));
      }
    } else if (n.kind == LoopKind::Gather) {
      n.gather_table = b.word();
      auto it = p.buffers.find(n.gather_table);
      if (it == p.buffers.end()) b.fail(strcat("gather from unknown buffer '", n.gather_table, "'"));
      b.expect('[');
      n.gather_index = b.expr();
      b.expect(',');
      std::string last = b.ident();
      if (n.ranges.empty() || last != n.column_var().name())
        b.fail(strcat("expected the last loop variable ", n.column_var().name()));
      b.expect(']');
      n.body = make_load(n.gather_table, Index::var(last), it->second.type.dtype);
    } else {
      if (n.kind == LoopKind::Matmul) b.expect("sum_r");
      if (n.kind == LoopKind::Reduction) b.expect(strcat(reduction_type_name(n.reduction), "_r").c_str());
      n.body = b.expr();
    }
    if (!b.at_end() && n.kind != LoopKind::Host) b.fail("expected the end of the line after the body");
    ++i;
    p.nodes.push_back(std::move(n));
  }
  try {
    verify_loop_ir(p);
  } catch (const InputError& e) {
    throw InputError(strcat(source, ": ", e.what()));
  }
  return p;
}

}  // namespace lpu
