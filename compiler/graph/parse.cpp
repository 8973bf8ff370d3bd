// Parser for the text form printed by print_graph():
//   graph NAME {
//     %x: f32[2, 8] = placeholder
//     %w: f32[8] = parameter {constant = true}
//     %y: f32[2, 8] = layer_norm(%x, %w) {eps = 1e-05}
//     output(%y)
//   }
// One node per line; blank lines and lines starting with '#' are ignored. Values are typed by
// their spelling, exactly as format_attr() prints them: 12 is an integer, 12.0 / 1e-05 / inf /
// nan a float, true/false a bool, "..." a string, [1, 2] an integer list.
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include "graph/graph.h"
#include "support/error.h"
#include "support/line_cursor.h"

namespace lpu {

bool is_valid_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

std::string name_for_message(const std::string& s) {
  return s.size() <= 64 ? s : s.substr(0, 64) + "...(" + std::to_string(s.size()) + " bytes)";
}

namespace {

// A cursor over one line; every error carries SOURCE:LINE. The graph text's values on top of
// the shared cursor.
class Line : public LineCursor {
 public:
  using LineCursor::LineCursor;
  std::string ref() {  // %name
    expect('%');
    if (pos_ >= s_.size() || !name_char(s_[pos_])) fail("expected a node name after '%'");
    return word();
  }
  TensorType type() {
    TensorType t;
    std::string d = word();
    if (!parse_dtype(d, t.dtype)) fail(strcat("unknown dtype '", d, "'"));
    t.shape = int_list();
    if (std::string why = shape_problem(t.shape, /*allow_empty=*/true); !why.empty()) fail(why);
    return t;
  }
  std::string string_literal() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '"':
        case '\\': out += e; break;
        default: fail(strcat("unknown escape '\\", e, "' in a string"));
      }
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  AttrValue value() {
    skip_ws();
    if (peek('"')) return string_literal();
    if (peek('[')) return int_list();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == '-' || s_[pos_] == '+'))
      ++pos_;
    std::string tok = s_.substr(b, pos_ - b);
    if (tok == "true") return true;
    if (tok == "false") return false;
    if (tok == "inf") return INFINITY;
    if (tok == "-inf") return -INFINITY;
    if (tok == "nan") return NAN;
    if (tok.empty()) fail("expected a value");
    if (tok.find_first_of(".eE") == std::string::npos) {
      int64_t v = 0;
      auto r = std::from_chars(tok.data() + (tok[0] == '+'), tok.data() + tok.size(), v);
      if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) fail(strcat("bad integer '", tok, "'"));
      return v;
    }
    double d = 0;
    auto r = std::from_chars(tok.data() + (tok[0] == '+'), tok.data() + tok.size(), d);
    if (r.ec != std::errc() || r.ptr != tok.data() + tok.size()) fail(strcat("bad number '", tok, "'"));
    return d;
  }
  Attrs attrs() {
    Attrs a;
    if (!accept('{')) return a;
    if (accept('}')) return a;
    do {
      std::string k = word();
      expect('=');
      if (a.count(k)) fail(strcat("attribute '", k, "' given twice"));
      a[k] = value();
    } while (accept(','));
    expect('}');
    return a;
  }
  std::vector<std::string> refs_in_parens() {
    expect('(');
    std::vector<std::string> out;
    if (accept(')')) return out;
    do out.push_back(ref());
    while (accept(','));
    expect(')');
    return out;
  }
};

}  // namespace

Graph parse_graph(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  Graph g;
  enum { Header, Body, Done } state = Header;
  auto resolve = [&](Line& l, const std::string& node, const std::vector<std::string>& names) {
    std::vector<NodeId> ids;
    for (const auto& nm : names) {
      NodeId id = g.find(nm);
      if (id < 0)
        l.fail(strcat("node %", node, ": input %", nm,
                      " is not defined before this line (dangling input, or a cycle)"));
      ids.push_back(id);
    }
    return ids;
  };
  while (std::getline(in, raw)) {
    ++lineno;
    Line l(raw, strcat(source, ":", lineno));
    if (l.at_end() || l.peek('#')) continue;
    if (state == Done) l.fail("text after the closing '}'");
    if (state == Header) {
      if (l.word() != "graph") l.fail("expected 'graph NAME {'");
      g.set_name(l.word());
      if (g.name().size() > kMaxNameLength)
        l.fail(strcat("graph name '", name_for_message(g.name()), "' is longer than ", kMaxNameLength, " characters"));
      l.expect('{');
      if (!l.at_end()) l.fail("unexpected text after '{'");
      state = Body;
      continue;
    }
    if (l.accept('}')) {
      if (!l.at_end()) l.fail("unexpected text after '}'");
      state = Done;
      continue;
    }
    if (!l.peek('%')) {
      if (l.word() != "output") l.fail("expected '%name: type = ...' or 'output(...)'");
      auto ids = resolve(l, "output", l.refs_in_parens());
      if (!l.at_end()) l.fail("unexpected text after output(...)");
      if (g.size() && g.nodes().back().kind == NodeKind::Output) l.fail("second output line");
      g.set_output(ids);
      continue;
    }
    std::string name = l.ref();
    if (name.size() > kMaxNameLength)
      l.fail(strcat("node name '%", name_for_message(name), "' is longer than ", kMaxNameLength, " characters"));
    if (g.size() >= kMaxGraphNodes) l.fail(strcat("more than ", kMaxGraphNodes, " nodes (the limit of a graph file)"));
    if (g.find(name) >= 0) l.fail(strcat("node %", name, " is defined twice"));
    if (g.size() && g.nodes().back().kind == NodeKind::Output) l.fail(strcat("node %", name, " after output(...)"));
    l.expect(':');
    TensorType t = l.type();
    l.expect('=');
    std::string op = l.word();
    NodeId id;
    if (l.peek('(')) {
      auto ids = resolve(l, name, l.refs_in_parens());
      id = g.add_call_typed(op, ids, l.attrs(), name, t);
    } else if (std::string why = shape_problem(t.shape); !why.empty()) {
      l.fail(strcat("node %", name, ": ", why));
    } else if (op == "placeholder") {
      id = g.add_placeholder(name, t);
      g.node(id).attrs = l.attrs();
    } else if (op == "parameter") {
      id = g.add_parameter(name, t);
      g.node(id).attrs = l.attrs();
    } else {
      l.fail(strcat("node %", name, ": expected 'placeholder', 'parameter' or OP(%inputs...)"));
    }
    if (!l.at_end()) l.fail(strcat("node %", name, ": unexpected text at the end of the line"));
  }
  if (state != Done)
    throw InputError(strcat(source, ":", lineno, ": ", state == Header ? "no 'graph NAME {' line" : "missing closing '}'"));
  try {
    g.verify();
  } catch (const InputError& e) {
    throw InputError(strcat(source, ": ", e.what()));
  }
  return g;
}

}  // namespace lpu
