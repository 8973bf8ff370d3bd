#include "driver/front_end_template.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "loopir/loop_ir.h"
#include "support/error.h"

namespace lpu {

namespace {

// A text cut into its runs of decimal digits and what lies between them.
struct Cut {
  std::vector<std::string> between;  // one more than digits
  std::vector<std::string> digits;
};

Cut cut(const std::string& text) {
  Cut c;
  c.between.emplace_back();
  for (size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      size_t j = i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      c.digits.push_back(text.substr(i, j - i));
      c.between.emplace_back();
      i = j;
    } else {
      c.between.back().push_back(text[i++]);
    }
  }
  return c;
}

// Whether the digits between `before` and `after` belong to a non-integer constant (1.5,
// 1e-05): such digits must not change with the symbol.
bool in_real_constant(const std::string& before, const std::string& after) {
  auto last = [](const std::string& s) { return s.empty() ? '\0' : s.back(); };
  auto first = [](const std::string& s) { return s.empty() ? '\0' : s.front(); };
  const char b = last(before), a = first(after);
  const bool exponent_sign = (b == '-' || b == '+') && before.size() >= 2 &&
                             (before[before.size() - 2] == 'e' || before[before.size() - 2] == 'E');
  return b == '.' || b == 'e' || b == 'E' || exponent_sign || a == '.' || a == 'e' || a == 'E';
}

bool fits_int64(const std::string& digits) { return digits.size() <= 18; }

std::string kernel_difference(const Kernel& a, const Kernel& b) {
  if (a.name != b.name) return strcat("kernel ", a.name, " vs ", b.name);
  if (a.nodes != b.nodes) return strcat("kernel ", a.name, ": its nodes differ");
  if (a.hbm_outputs != b.hbm_outputs) return strcat("kernel ", a.name, ": its HBM outputs differ");
  return "";
}

}  // namespace

std::optional<FrontEndTemplate> FrontEndTemplate::make(const FrontEnd& a, int64_t sa, const FrontEnd& b, int64_t sb,
                                                       std::string& why) {
  if (sb <= sa) throw InternalError("FrontEndTemplate::make: needs sa < sb");
  const int64_t ds = sb - sa;
  if (a.codegen.lmu_bytes != b.codegen.lmu_bytes || a.codegen.collective_lmu_bytes != b.codegen.collective_lmu_bytes) {
    why = "the local memory left to kernels differs";
    return std::nullopt;
  }
  if (a.schedule.policy != b.schedule.policy || a.schedule.kernels.size() != b.schedule.kernels.size()) {
    why = strcat(a.schedule.kernels.size(), " kernels vs ", b.schedule.kernels.size());
    return std::nullopt;
  }
  FrontEndTemplate t;
  t.s0_ = t.lo_ = sa;
  t.hi_ = sb;
  t.codegen_ = a.codegen;
  t.schedule_.policy = a.schedule.policy;
  for (size_t k = 0; k < a.schedule.kernels.size(); ++k) {
    const Kernel &x = a.schedule.kernels[k], &y = b.schedule.kernels[k];
    if (std::string d = kernel_difference(x, y); !d.empty()) {
      why = d;
      return std::nullopt;
    }
    if ((y.rows - x.rows) % ds) {
      why = strcat("kernel ", x.name, ": rows ", x.rows, " -> ", y.rows, " is not affine in the symbol");
      return std::nullopt;
    }
    Kernel plain = x;
    plain.tiling.reset();
    t.schedule_.kernels.push_back(std::move(plain));
    t.row_slopes_.push_back((y.rows - x.rows) / ds);
  }
  Cut ca = cut(print_loop_ir(a.loop_ir)), cb = cut(print_loop_ir(b.loop_ir));
  if (ca.between != cb.between) {
    why = "the loop IR differs in more than its integers";
    return std::nullopt;
  }
  t.between_ = std::move(ca.between);
  for (size_t i = 0; i < ca.digits.size(); ++i) {
    Number n;
    n.text = ca.digits[i];
    if (ca.digits[i] != cb.digits[i]) {
      const std::string &before = t.between_[i], &after = t.between_[i + 1];
      if (in_real_constant(before, after)) {
        why =
            strcat("a non-integer constant of the loop IR changes (",
                   before.substr(before.size() > 20 ? before.size() - 20 : 0), ca.digits[i], " -> ", cb.digits[i], ")");
        return std::nullopt;
      }
      const bool leading_zero =
          (ca.digits[i].size() > 1 && ca.digits[i][0] == '0') || (cb.digits[i].size() > 1 && cb.digits[i][0] == '0');
      if (leading_zero || !fits_int64(ca.digits[i]) || !fits_int64(cb.digits[i])) {
        why = strcat("an integer of the loop IR (", ca.digits[i], " -> ", cb.digits[i],
                     ") is not one the template can vary");
        return std::nullopt;
      }
      const int64_t va = std::stoll(ca.digits[i]), vb = std::stoll(cb.digits[i]);
      if ((vb - va) % ds) {
        why = strcat("an integer of the loop IR (", va, " -> ", vb, ") is not affine in the symbol");
        return std::nullopt;
      }
      n.value = va;
      n.slope = (vb - va) / ds;
    }
    t.numbers_.push_back(std::move(n));
  }
  // Which lines hold a varying integer (lines as the parser splits them: at '\n').
  size_t line = 0;
  for (size_t i = 0; i < t.numbers_.size(); ++i) {
    line += static_cast<size_t>(std::count(t.between_[i].begin(), t.between_[i].end(), '\n'));
    if (t.numbers_[i].slope != 0) {
      if (t.varying_lines_.size() <= line) t.varying_lines_.resize(line + 1, false);
      t.varying_lines_[line] = true;
    }
  }
  line += static_cast<size_t>(std::count(t.between_.back().begin(), t.between_.back().end(), '\n'));
  const bool ends_in_newline = !t.between_.back().empty() && t.between_.back().back() == '\n';
  t.varying_lines_.resize(ends_in_newline ? line : line + 1, false);
  t.base_ = a.loop_ir;
  t.find_fixed_kernels();
  std::string vwhy;
  if (!t.verify(b, sb, vwhy)) throw InternalError("FrontEndTemplate: does not reproduce its own second point: " + vwhy);
  return t;
}

// The text's layout is print_loop_ir's: the name line, "buffers:" and a line per buffer
// ("  NAME: ..."), the inputs, outputs and constants, "nodes:" and two lines per node.
void FrontEndTemplate::find_fixed_kernels() {
  std::vector<std::string> lines;
  {
    std::string text = text_at(s0_);
    size_t at = 0;
    while (at < text.size()) {
      size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      lines.push_back(text.substr(at, nl - at));
      at = nl + 1;
    }
  }
  auto varies = [&](size_t line) { return line < varying_lines_.size() && varying_lines_[line]; };
  std::set<std::string> varying_buffers;
  size_t i = 0;
  while (i < lines.size() && lines[i] != "buffers:") ++i;
  for (++i; i < lines.size() && !lines[i].empty() && lines[i][0] == ' '; ++i)
    if (varies(i)) {
      const size_t b = lines[i].find_first_not_of(' '), colon = lines[i].find(':', b);
      varying_buffers.insert(lines[i].substr(b, colon - b));
    }
  while (i < lines.size() && lines[i] != "nodes:") ++i;
  const size_t first_node_line = i + 1;
  auto node_fixed = [&](size_t n) {
    const size_t header = first_node_line + 2 * n;
    if (header + 1 >= lines.size() || varies(header) || varies(header + 1)) return false;
    const LoopNode& node = base_.nodes[n];
    if (varying_buffers.count(node.output) || varying_buffers.count(node.gather_table)) return false;
    for (const auto& in : node.host_inputs)
      if (varying_buffers.count(in)) return false;
    for (const Expr& l : node.loads())
      if (varying_buffers.count(l->buffer)) return false;
    return true;
  };
  const bool layout_known = first_node_line + 2 * base_.nodes.size() == lines.size();
  fixed_kernels_.clear();
  for (const Kernel& k : schedule_.kernels) {
    bool fixed = layout_known;
    for (int n : k.nodes) fixed = fixed && node_fixed(static_cast<size_t>(n));
    fixed_kernels_.push_back(fixed);
  }
}

std::string FrontEndTemplate::text_at(int64_t s) const {
  std::string out = between_[0];
  for (size_t i = 0; i < numbers_.size(); ++i) {
    const Number& n = numbers_[i];
    if (n.slope == 0) {
      out += n.text;
    } else {
      const int64_t v = n.value + n.slope * (s - s0_);
      if (v < 0) throw InternalError(strcat("FrontEndTemplate: an integer of the loop IR would be ", v, " at ", s));
      out += std::to_string(v);
    }
    out += between_[i + 1];
  }
  return out;
}

FrontEnd FrontEndTemplate::instantiate(int64_t s) const {
  FrontEnd fe;
  fe.loop_ir = reparse_loop_ir(base_, text_at(s), varying_lines_, "front-end template");
  fe.schedule = schedule_;
  for (size_t k = 0; k < row_slopes_.size(); ++k) fe.schedule.kernels[k].rows += row_slopes_[k] * (s - s0_);
  fe.codegen = codegen_;
  return fe;
}

bool FrontEndTemplate::verify(const FrontEnd& f, int64_t s, std::string& why) {
  if (f.codegen.lmu_bytes != codegen_.lmu_bytes || f.codegen.collective_lmu_bytes != codegen_.collective_lmu_bytes) {
    why = "the local memory left to kernels differs";
    return false;
  }
  if (f.schedule.policy != schedule_.policy || f.schedule.kernels.size() != schedule_.kernels.size()) {
    why = strcat(f.schedule.kernels.size(), " kernels vs ", schedule_.kernels.size());
    return false;
  }
  for (size_t k = 0; k < schedule_.kernels.size(); ++k) {
    const Kernel &x = f.schedule.kernels[k], &y = schedule_.kernels[k];
    if (std::string d = kernel_difference(x, y); !d.empty()) {
      why = d;
      return false;
    }
    const int64_t rows = y.rows + row_slopes_[k] * (s - s0_);
    if (x.rows != rows) {
      why = strcat("kernel ", x.name, ": rows compiled ", x.rows, ", derived ", rows);
      return false;
    }
  }
  std::string derived;
  try {
    derived = text_at(s);
  } catch (const InternalError& e) {
    why = e.what();
    return false;
  }
  if (print_loop_ir(f.loop_ir) != derived) {
    why = "the loop IR compiled differs from the one derived";
    return false;
  }
  if (s > hi_) hi_ = s;
  if (s < lo_) lo_ = s;
  return true;
}

}  // namespace lpu
