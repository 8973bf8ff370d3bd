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
// an integer sum of terms [C*]ATOM and a constant, ATOM a loop variable (a LoopVar's name: any
// other identifier fails here, at its column) or (INDEX)//D or (INDEX)%D.
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
      if (LoopVar want{kind, out.size()}, got; !LoopVar::parse(v, got) || got != want)
        fail(strcat("expected loop variable ", want.name(), ", got '", v, "'"));
      expect('<');
      int64_t n = integer();
      if (n < 0) fail(strcat("the range of ", v, " must not be negative, got ", n));
      out.push_back(n);
    } while (accept(','));
    expect(']');
    return out;
  }

  // A loop variable (i0, r1, ...): an error points at the name.
  LoopVar loop_var() {
    skip_ws();
    size_t at = pos_;
    std::string v = ident();
    LoopVar out;
    if (!LoopVar::parse(v, out)) {
      pos_ = at;
      fail(strcat("'", v, "' is not a loop variable (i0, i1, ... or r0, r1, ...)"));
    }
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
    return Index::var(loop_var());
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

// A packed weight's storage after its role: "int4/g128" (graph/types.h, Quant).
Quant parse_buffer_quant(LoopLine& l, const Buffer& b) {
  const std::string f = l.word();
  l.expect('/');
  l.expect('g');
  Quant q;
  if (!parse_quant(strcat(f, "/g", l.integer()), q))
    l.fail(strcat("buffer ", b.name, ": '", f,
                  "' with that group is not a packed weight format (int8, int4 or fp8_e4m3, "
                  "an even group from 2 to ",
                  kMaxQuantGroup, ")"));
  if (b.role != BufferRole::Weight || !packable(b.type, q))
    l.fail(
        strcat("buffer ", b.name, ": only a floating weight whose last dimension the group divides is stored packed"));
  return q;
}

BufferRole parse_role(LoopLine& l) {
  std::string r = l.word();
  for (BufferRole role : {BufferRole::Input, BufferRole::Weight, BufferRole::Intermediate, BufferRole::Output})
    if (r == buffer_role_name(role)) return role;
  l.fail(strcat("unknown buffer role '", r, "' (expected input, weight, intermediate or output)"));
}

// The sections of the text in order, one line cursor per line; p.buffers fills first, so the
// node lines can type their loads.
class ProgramParser {
 public:
  ProgramParser(const std::string& text, std::string source) : source_(std::move(source)) {
    std::istringstream in(text);
    for (std::string s; std::getline(in, s);) lines_.push_back(s);
  }

  LoopProgram parse() {
    name_line();
    buffers();
    for (auto [key, list] : {std::pair{"inputs:", &p_.inputs}, std::pair{"outputs:", &p_.outputs}}) {
      LoopLine l = header(key);
      *list = l.name_list();
      if (!l.at_end()) l.fail("expected the end of the line after the list");
      ++i_;
    }
    constants();
    bare_header("nodes:");
    while (true) {
      skip_blank();
      if (i_ >= lines_.size()) break;
      if (indented()) throw InputError(strcat(where(i_), ": a node body without a node header above it"));
      p_.nodes.push_back(node());
    }
    try {
      verify_loop_ir(p_);
    } catch (const InputError& e) {
      throw InputError(strcat(source_, ": ", e.what()));
    }
    return std::move(p_);
  }

 private:
  std::string source_;
  std::vector<std::string> lines_;
  LoopProgram p_;
  size_t i_ = 0;

  std::string where(size_t k) const { return strcat(source_, ":", k + 1); }
  LoopLine line(size_t k) const { return LoopLine(lines_[k], where(k), p_.buffers); }
  void skip_blank() {
    while (i_ < lines_.size() && lines_[i_].find_first_not_of(" \t\r") == std::string::npos) ++i_;
  }
  LoopLine header(const char* word) {
    skip_blank();
    if (i_ >= lines_.size()) throw InputError(strcat(source_, ": expected '", word, "' before the end of the text"));
    LoopLine l = line(i_);
    l.expect(word);
    return l;
  }
  // A section header alone on its line.
  void bare_header(const char* word) {
    LoopLine l = header(word);
    if (!l.at_end()) l.fail("expected the end of the line");
    ++i_;
  }
  bool indented() const {
    return i_ < lines_.size() && !lines_[i_].empty() && (lines_[i_][0] == ' ' || lines_[i_][0] == '\t');
  }

  void name_line() {
    LoopLine l = header("loop_ir");
    p_.name = l.word();
    if (!l.at_end()) l.fail("expected the end of the line after the program name");
    ++i_;
  }

  void buffers() {
    bare_header("buffers:");
    for (; indented(); ++i_) {
      LoopLine l = line(i_);
      Buffer b = buffer(l);
      if (p_.buffers.count(b.name)) l.fail(strcat("buffer '", b.name, "' listed twice"));
      p_.buffers[b.name] = b;
    }
  }

  // NAME: DTYPE[SHAPE] ROLE [QUANT]
  static Buffer buffer(LoopLine& l) {
    Buffer b;
    b.name = l.word();
    l.expect(':');
    b.type.dtype = l.dtype();
    b.type.shape = l.int_list();
    if (std::string why = shape_problem(b.type.shape, /*allow_empty=*/true); !why.empty()) l.fail(why);
    b.role = parse_role(l);
    if (!l.at_end()) b.quant = parse_buffer_quant(l, b);
    if (!l.at_end()) l.fail("expected the end of the line after the role");
    b.strides = contiguous_strides(b.type.shape);
    return b;
  }

 public:
  // `base` with the buffer and node lines marked in `changed` parsed again (the text's other
  // lines print `base`'s buffers and nodes: the same line layout, line for line). False when
  // a line outside the buffers and nodes changed: then parse() is the way.
  bool patch(const LoopProgram& base, const std::vector<bool>& changed, LoopProgram& out) {
    if (lines_.empty() || changed.size() != lines_.size()) return false;
    p_ = base;
    if (changed[i_]) return false;
    ++i_;  // the name line
    if (i_ >= lines_.size() || changed[i_]) return false;
    ++i_;  // buffers:
    for (; indented(); ++i_) {
      if (!changed[i_]) continue;
      LoopLine l = line(i_);
      Buffer b = buffer(l);
      auto it = p_.buffers.find(b.name);
      if (it == p_.buffers.end()) return false;
      it->second = std::move(b);
    }
    // inputs, outputs, constants and the nodes header: none may change
    const size_t nodes_at = [&] {
      size_t k = i_;
      while (k < lines_.size() && lines_[k] != "nodes:") ++k;
      return k;
    }();
    for (size_t k = i_; k <= nodes_at && k < lines_.size(); ++k)
      if (changed[k]) return false;
    if (nodes_at >= lines_.size()) return false;
    i_ = nodes_at + 1;
    for (size_t k = 0; k < p_.nodes.size(); ++k) {
      if (i_ + 1 >= lines_.size() || indented()) return false;
      if (changed[i_] || changed[i_ + 1])
        p_.nodes[k] = node();
      else
        i_ += 2;
    }
    if (i_ != lines_.size()) return false;
    out = std::move(p_);
    return true;
  }

 private:
  void constants() {
    skip_blank();
    if (i_ >= lines_.size() || lines_[i_].rfind("constants:", 0) != 0) return;
    for (++i_; indented(); ++i_) {
      LoopLine l = line(i_);
      std::string k = l.word();
      l.expect('=');
      Expr c = l.expr();
      if (c->kind != ExprKind::Constant || !l.at_end()) l.fail("expected NAME = NUMBER");
      if (!p_.constants.emplace(k, c->value).second) l.fail(strcat("constant '", k, "' given twice"));
    }
  }

  // NAME = KIND [ranges] [over [ranges]] DTYPE [from ORIGIN] [; comment], then its body line.
  LoopNode node() {
    LoopLine h = line(i_);
    LoopNode n;
    n.name = h.word();
    h.expect('=');
    node_kind(h, n);
    n.ranges = h.ranges(LoopVar::Kind::Output);
    if (n.kind == LoopKind::Reduction || n.kind == LoopKind::Matmul) {
      h.expect("over");
      n.reduction_ranges = h.ranges(LoopVar::Kind::Reduction);
    }
    n.dtype = h.dtype();
    n.origin = n.name;
    if (h.accept("from")) n.origin = h.word();
    if (!h.at_end() && !h.accept(';')) h.fail("expected the end of the line, 'from ORIGIN' or a '; comment'");
    ++i_;
    if (!indented()) throw InputError(strcat(where(i_ - 1), ": node ", n.name, " has no body line below it"));
    node_body(n);
    ++i_;
    return n;
  }

  static void node_kind(LoopLine& h, LoopNode& n) {
    std::string kind = h.word();
    if (kind == "pointwise") {
      n.kind = LoopKind::Pointwise;
    } else if (kind == "matmul") {
      n.kind = LoopKind::Matmul;
    } else if (kind == "gather") {
      n.kind = LoopKind::Gather;
    } else if (kind == "host") {
      n.kind = LoopKind::Host;
    } else if (kind == "collective") {
      n.kind = LoopKind::Collective;
    } else if (kind.rfind("reduction.", 0) == 0) {
      n.kind = LoopKind::Reduction;
      if (!parse_reduction_type(kind.substr(10), n.reduction))
        h.fail(strcat("unknown reduction '", kind.substr(10), "'"));
    } else {
      h.fail(strcat("unknown node kind '", kind,
                    "' (expected pointwise, reduction.TYPE, matmul, gather, host or collective)"));
    }
  }

  // TARGET[INDEX] = BODY, BODY by kind.
  void node_body(LoopNode& n) {
    LoopLine b = line(i_);
    n.output = b.word();
    b.expect('[');
    n.store_index = b.index();
    b.expect(']');
    b.expect('=');
    if (is_opaque(n.kind)) {
      n.host_op = b.word();
      n.host_inputs = b.name_list_in_parens();
      if (!b.at_end()) {
        size_t at = lines_[i_].find('{');
        if (at == std::string::npos) b.fail("expected attributes as a JSON object");
        n.host_attrs = attrs_from_json(lines_[i_].substr(at));
      }
      return;
    }
    if (n.kind == LoopKind::Gather) {
      gather_body(b, n);
    } else {
      if (n.kind == LoopKind::Matmul) b.expect("sum_r");
      if (n.kind == LoopKind::Reduction) b.expect(strcat(reduction_type_name(n.reduction), "_r").c_str());
      n.body = b.expr();
    }
    if (!b.at_end()) b.fail("expected the end of the line after the body");
  }

  // TABLE[EXPR, iLAST]
  void gather_body(LoopLine& b, LoopNode& n) const {
    n.gather_table = b.word();
    auto it = p_.buffers.find(n.gather_table);
    if (it == p_.buffers.end()) b.fail(strcat("gather from unknown buffer '", n.gather_table, "'"));
    b.expect('[');
    n.gather_index = b.expr();
    b.expect(',');
    if (LoopVar last; !LoopVar::parse(b.ident(), last) || n.ranges.empty() || last != n.column_var())
      b.fail(strcat("expected the last loop variable ", n.column_var().name()));
    b.expect(']');
    n.body = make_load(n.gather_table, Index::var(n.column_var()), it->second.type.dtype);
  }
};

}  // namespace

LoopProgram parse_loop_ir(const std::string& text, const std::string& source) {
  return ProgramParser(text, source).parse();
}

LoopProgram reparse_loop_ir(const LoopProgram& base, const std::string& text, const std::vector<bool>& changed_lines,
                            const std::string& source) {
  LoopProgram out;
  if (ProgramParser(text, source).patch(base, changed_lines, out)) return out;
  return parse_loop_ir(text, source);  // verified
}

}  // namespace lpu
