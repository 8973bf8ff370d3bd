#include "isa/program.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <tuple>

#include "support/error.h"

namespace lpu {

namespace {
constexpr bool codes_unique() {
  for (size_t i = 0; i < kOpcodeCount; ++i)
    for (size_t j = 0; j < i; ++j)
      if (kOpcodeTable[i].code == kOpcodeTable[j].code) return false;
  return true;
}
static_assert(codes_unique(), "two rows of the opcode table share a binary code");
}  // namespace

const OpcodeInfo* opcode_by_code(uint8_t code) {
  for (const auto& o : kOpcodeTable)
    if (o.code == code) return &o;
  return nullptr;
}

const OpcodeInfo* opcode_by_name(const std::string& name) {
  for (const auto& o : kOpcodeTable)
    if (name == o.name && !is_family(o.form)) return &o;
  return nullptr;
}

bool Instruction::same_as(const Instruction& o) const {
  return hbm_addr == o.hbm_addr && kernel == o.kernel && same_but_placement(o);
}

bool Instruction::same_but_placement(const Instruction& o) const {
  return opcode == o.opcode && vop == o.vop && rop == o.rop && dtype == o.dtype && rows == o.rows && cols == o.cols &&
         depth == o.depth && hbm_rs == o.hbm_rs && hbm_cs == o.hbm_cs && lm_addr == o.lm_addr && lm_rs == o.lm_rs &&
         srcs == o.srcs && host_op == o.host_op && token == o.token && peer == o.peer && hbm_step == o.hbm_step &&
         lm_step == o.lm_step && quant == o.quant && post == o.post && acc == o.acc && acc_addr == o.acc_addr;
}

const BufferDecl* Program::find_buffer(const std::string& n) const {
  for (const auto& b : buffers)
    if (b.name == n) return &b;
  return nullptr;
}

uint64_t Program::hbm_bytes_allocated() const {
  uint64_t end = 0;
  for (const auto& b : buffers) {
    // A binary program may place a buffer anywhere in 64 bits: saturate rather than wrap, so
    // the capacity check sees it.
    uint64_t buffer_end;
    if (__builtin_add_overflow(b.hbm_addr, static_cast<uint64_t>(b.bytes()), &buffer_end))
      buffer_end = std::numeric_limits<uint64_t>::max();
    end = std::max(end, buffer_end);
  }
  return end;
}

std::string instruction_location(const Program& p, size_t i) {
  if (p.source.empty()) return strcat("program ", p.name, ": instruction ", i);
  int line = i < p.code.size() ? p.code[i].line : 0;
  return line > 0 ? strcat(p.source, ":", line) : strcat(p.source, ": instruction ", i);
}

namespace {
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// An operand of [a, b] elements is too large when the count leaves kMaxElements (the bound
// that keeps every byte count and address offset the engines compute inside int64).
bool too_many_elements(int64_t a, int64_t b) {
  int64_t n;
  return __builtin_mul_overflow(a, b, &n) || n > kMaxElements;
}

std::string tile_problem(const Instruction& in) {
  if (in.rows <= 0 || in.cols <= 0) return "tile shape must be positive";
  const Form form = opcode_info(in.opcode).form;
  if (form != Form::Gemm && form != Form::GemmGather) {
    if (too_many_elements(in.rows, in.cols))
      return strcat("tile [", in.rows, ", ", in.cols, "] has more than 2^48 elements");
    return {};
  }
  const char* mn = opcode_name(in.opcode);
  if (in.depth <= 0) return strcat(mn, ": K must be positive");
  if (too_many_elements(in.rows, in.depth) || too_many_elements(in.depth, in.cols) ||
      too_many_elements(in.rows, in.cols))
    return strcat(mn, " [", in.rows, ", ", in.depth, ", ", in.cols, "] has an operand of more than 2^48 elements");
  return {};
}

// The family prefix of a family row's mnemonic ("vxe." of "vxe.op").
std::string family_prefix(const OpcodeInfo& o) {
  std::string n = o.name;
  return n.substr(0, n.find('.') + 1);
}

// The mnemonic `in` is written with: its family's op for vxe.<op> and vxe.r<reduction>, then
// ".POST" when it has a post op (StructureCheck allows one only on vxe.<op>).
std::string mnemonic(const Instruction& in) {
  const OpcodeInfo& info = opcode_info(in.opcode);
  std::string m;
  switch (info.form) {
    case Form::VectorOp: m = family_prefix(info) + scalar_op_name(in.vop); break;
    case Form::Reduce: m = family_prefix(info) + "r" + reduction_type_name(in.rop); break;
    default: m = info.name;
  }
  return in.post ? m + "." + scalar_op_name(*in.post) : m;
}

// A destination row stride: only where the form writes it (vxe.<op>, vxe.mov), at least the
// tile's columns (rows do not overlap) and, like a tile, spanning at most kMaxElements.
std::string dest_stride_problem(const Instruction& in) {
  if (in.lm_rs == 0) return {};
  const Form form = opcode_info(in.opcode).form;
  if (form != Form::VectorOp && form != Form::Unary)
    return strcat(mnemonic(in), ": only vxe.<op> and vxe.mov take a destination row stride (lm_rs ", in.lm_rs, ")");
  if (in.lm_rs < in.cols)
    return strcat(mnemonic(in), ": destination row stride ", in.lm_rs, " is less than the tile's ", in.cols,
                  " columns (0: dense)");
  if (too_many_elements(in.rows, in.lm_rs))
    return strcat(mnemonic(in), ": destination row stride ", in.lm_rs, " over ", in.rows,
                  " rows spans more than 2^48 elements");
  return {};
}

// The reductions a chain's row reduction may be: sum, max, min and mean, what its reduction
// stage does (an adder and a comparator); prod, argmax and var are refused.
bool chain_reduction(ReductionType t) {
  return t == ReductionType::sum || t == ReductionType::max || t == ReductionType::min || t == ReductionType::mean;
}

// Byte ranges [lo, hi) from an operand's first to its last element (as the scoreboard takes
// them: a strided operand covers the gaps between its rows), in 128 bits: no overflow.
__extension__ typedef __int128 I128;  // GCC's, without -Wpedantic's warning
using Span128 = std::pair<I128, I128>;
Span128 byte_span(uint64_t addr, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const I128 row = static_cast<I128>(rows - 1) * rs, col = static_cast<I128>(cols - 1) * cs;
  const I128 lo = std::min<I128>(row, 0) + std::min<I128>(col, 0);
  const I128 hi = std::max<I128>(row, 0) + std::max<I128>(col, 0) + 1;
  return {static_cast<I128>(addr) + 4 * lo, static_cast<I128>(addr) + 4 * hi};
}
bool overlap(const Span128& a, const Span128& b) { return a.first < b.second && b.first < a.second; }

// A fused chain (Instruction::post, acc): only on vxe.<op>, the post op unary, the row reduction
// one of chain_reduction's, its [R, 1] column apart from every byte the same pass reads or
// writes (the destination tile, the sources): the hardware writes it while they stream.
std::string chain_problem(const Instruction& in) {
  if (!in.acc && in.acc_addr != 0)
    return strcat(mnemonic(in), ": a row reduction's address (", in.acc_addr, ") without one");
  const bool vector_op = opcode_info(in.opcode).form == Form::VectorOp;
  if (in.post && !vector_op)
    return strcat(mnemonic(in), ": only vxe.<op> takes a post op (.", scalar_op_name(*in.post), ")");
  if (in.post && scalar_op_arity(*in.post) != 1)
    return strcat(mnemonic(in), ": post op ", scalar_op_name(*in.post), " takes ", scalar_op_arity(*in.post),
                  " operands; a post op is unary");
  if (!in.acc) return {};
  // Built only for a message: every chained instruction of every simulated program comes here.
  auto red = [&] { return strcat("=> r", reduction_type_name(*in.acc)); };
  if (!vector_op) return strcat(mnemonic(in), ": only vxe.<op> takes a row reduction (", red(), ")");
  if (!chain_reduction(*in.acc))
    return strcat(mnemonic(in), ": row reduction ", red(), " is not one a chain does (rsum, rmax, rmin or rmean)");
  const Span128 column = byte_span(in.acc_addr, in.rows, 1, 1, 1);
  auto clash = [&] {
    return strcat(mnemonic(in), ": the row reduction's column (", red(), " lm:", hex(in.acc_addr), ", [", in.rows,
                  ", 1]) overlaps ");
  };
  if (overlap(column, byte_span(in.lm_addr, in.rows, in.cols, in.lm_row_stride(), 1)))
    return strcat(clash(), "the destination at lm:", hex(in.lm_addr), " (one pass writes both)");
  for (size_t k = 0; k < in.srcs.size(); ++k) {
    const Operand& o = in.srcs[k];
    if (!o.immediate && overlap(column, byte_span(o.addr, in.rows, in.cols, o.rs, o.cs)))
      return strcat(clash(), in.srcs.size() == 1 ? std::string("the source") : strcat("source ", k + 1),
                    " at lm:", hex(o.addr), " (one pass reads it while writing the column)");
  }
  return {};
}
}  // namespace

std::string quant_problem(const BufferDecl& b) {
  if (!b.quant.on()) return "";
  if (b.role != BufferRole::Weight || !packable(b.type, b.quant))
    return strcat("buffer ", b.name,
                  ": only a floating weight whose last dimension the group divides is stored packed (",
                  type_str(b.type), " ", buffer_role_name(b.role), " ", quant_str(b.quant), ")");
  return "";
}

std::string StructureCheck::next(const Instruction& in) {
  size_t i = index_++;
  // A LoopBegin's own steps would belong to the loop around it, hence the check comes first.
  if ((in.hbm_step || in.lm_step) && open_.empty()) return "address steps are only meaningful inside a loop";
  const Form form = opcode_info(in.opcode).form;
  if (has_tile(form))
    if (std::string why = tile_problem(in); !why.empty()) return why;
  if (std::string why = dest_stride_problem(in); !why.empty()) return why;
  if (std::string why = chain_problem(in); !why.empty()) return why;
  if (form == Form::GemmGather) {  // A and the row indices in local memory, the slab size a whole number >= 1
    if (in.srcs.size() != 3 || in.srcs[0].immediate || in.srcs[1].immediate || !in.srcs[2].immediate)
      return "sxe.gemm_gather takes A and the row indices in local memory and the slab size as an immediate";
    const double slab = in.srcs[2].value;
    if (!(slab >= 1) || slab > 9.0e15 || slab != std::floor(slab))
      return strcat("sxe.gemm_gather: slab size ", format_double(slab), " is not a whole number of elements >= 1");
  }
  if (in.quant.on()) {  // packed B: blocks counted forward from B's address
    if (form != Form::Gemm && form != Form::GemmGather) return "only sxe.gemm and sxe.gemm_gather read packed weights";
    if (in.hbm_rs < 0 || in.hbm_cs < 0) return "packed weights B are read with non-negative strides";
    if (form == Form::GemmGather && std::fmod(in.srcs[2].value, static_cast<double>(in.quant.group)) != 0)
      return strcat("sxe.gemm_gather: slab size ", format_double(in.srcs[2].value), " is not a whole number of ",
                    quant_str(in.quant), " groups");
  }
  if (form == Form::Loop) {
    if (in.token < 1) return "a loop runs at least once";
    open_.push_back(i);
  } else if (form == Form::EndLoop) {
    if (open_.empty()) return "endloop without loop";
    open_.pop_back();
  }
  return {};
}

std::string StructureCheck::finish(size_t& open_loop) const {
  if (open_.empty()) return "";
  open_loop = open_.back();
  return strcat(open_.size(), " loop(s) without endloop");
}

namespace {
std::string shape2(int64_t r, int64_t c) { return "[" + std::to_string(r) + ", " + std::to_string(c) + "]"; }
std::string operand_str(const Operand& o) {
  if (o.immediate) return "#" + format_double(o.value);
  return "lm:" + hex(o.addr) + " " + shape2(o.rs, o.cs);
}

std::string print_instruction_body(const Instruction& in) {
  const OpcodeInfo& info = opcode_info(in.opcode);
  const char* mn = info.name;
  std::string s;
  switch (info.form) {
    case Form::TileLoad:
      return strcat(mn, " ", dtype_name(in.dtype), " ", shape2(in.rows, in.cols), " lm:", hex(in.lm_addr),
                    " <- hbm:", hex(in.hbm_addr), " ", shape2(in.hbm_rs, in.hbm_cs));
    case Form::TileStore:
      return strcat(mn, " ", dtype_name(in.dtype), " ", shape2(in.rows, in.cols), " hbm:", hex(in.hbm_addr), " ",
                    shape2(in.hbm_rs, in.hbm_cs), " <- lm:", hex(in.lm_addr));
    case Form::VectorOp:
    case Form::Reduce:
    case Form::Unary: s = mnemonic(in); break;
    case Form::Gemm:
    case Form::GemmGather:
      s = strcat(mn, " ", dtype_name(in.dtype), " [", in.rows, ", ", in.depth, ", ", in.cols, "] lm:", hex(in.lm_addr),
                 " <- ", operand_str(in.srcs.at(0)), ", hbm:", hex(in.hbm_addr), " ", shape2(in.hbm_rs, in.hbm_cs));
      if (info.form == Form::GemmGather)  // row indices, slab elements
        s += strcat(", ", operand_str(in.srcs.at(1)), ", ", operand_str(in.srcs.at(2)));
      if (in.quant.on()) s += " " + quant_str(in.quant);
      return s;
    case Form::Signal: return strcat(mn, " ", in.token, in.peer >= 0 ? strcat(" dev:", in.peer) : "");
    case Form::Wait:
    case Form::Loop: return strcat(mn, " ", in.token);
    case Form::Send:
      return strcat(mn, " ", shape2(in.rows, in.cols), " dev:", in.peer, " lm:", hex(in.lm_addr), " <- ",
                    operand_str(in.srcs.at(0)), " token:", in.token);
    case Form::Gather:
      return strcat(mn, " ", dtype_name(in.dtype), " ", shape2(in.rows, in.cols), " lm:", hex(in.lm_addr),
                    " <- hbm:", hex(in.hbm_addr), " ", shape2(in.hbm_rs, in.hbm_cs), ", ", operand_str(in.srcs.at(0)));
    case Form::HostCall: return strcat(mn, " ", in.host_op);
    case Form::EndLoop:
    case Form::Bare: return mn;
  }
  s += " " + shape2(in.rows, in.cols) + " lm:" + hex(in.lm_addr);
  if (in.lm_rs != 0) s += " " + shape2(in.lm_rs, 1);  // dense destinations print as they always did
  s += " <-";
  for (size_t i = 0; i < in.srcs.size(); ++i) s += (i ? ", " : " ") + operand_str(in.srcs[i]);
  return s;
}
}  // namespace

std::string print_instruction(const Instruction& in) {
  const Form form = opcode_info(in.opcode).form;
  if (form == Form::Loop || form == Form::EndLoop) return print_instruction_body(in);  // steps belong to the body
  std::string s = print_instruction_body(in);
  if (in.acc) s += strcat(" => r", reduction_type_name(*in.acc), " lm:", hex(in.acc_addr));  // a chain's row reduction
  if (in.hbm_step || in.lm_step) {
    s += " step";
    if (in.hbm_step)
      s += strcat(" hbm:", in.hbm_step < 0 ? "-" : "+",
                  hex(static_cast<uint64_t>(in.hbm_step < 0 ? -in.hbm_step : in.hbm_step)));
    if (in.lm_step)
      s += strcat(" lm:", in.lm_step < 0 ? "-" : "+",
                  hex(static_cast<uint64_t>(in.lm_step < 0 ? -in.lm_step : in.lm_step)));
  }
  return s;
}

std::string print_program(const Program& p) {
  std::ostringstream os;
  os << ".program " << p.name << "\n";
  for (const auto& b : p.buffers)
    os << ".buffer " << b.name << " hbm:" << hex(b.hbm_addr) << " " << type_str(b.type) << " "
       << buffer_role_name(b.role) << (b.quant.on() ? " " + quant_str(b.quant) : "") << "\n";
  for (size_t i = 0; i < p.host_ops.size(); ++i) os << print_host_op(i, p.host_ops[i]) << "\n";
  int kernel = -1;
  size_t declared = 0;  // kernels without instructions (an elided gather's) are declared in order too
  auto declare = [&](size_t k) { os << ".kernel " << k << " " << p.kernels.at(k) << "\n"; };
  for (const auto& in : p.code) {
    if (in.kernel != kernel && in.kernel >= 0) {
      kernel = in.kernel;
      for (; declared < static_cast<size_t>(kernel); ++declared) declare(declared);
      declare(static_cast<size_t>(kernel));
      declared = std::max(declared, static_cast<size_t>(kernel) + 1);
    }
    os << "  " << print_instruction(in) << "\n";
  }
  for (; declared < p.kernels.size(); ++declared) declare(declared);
  return os.str();
}

std::string print_host_op(size_t id, const HostOp& h) {
  std::string ins;
  for (size_t i = 0; i < h.inputs.size(); ++i) ins += (i ? "," : "") + h.inputs[i];
  // The attributes go last (JSON may hold spaces); ';' starts a comment in assembly, so it
  // is written as \u003b, which JSON reads back as the same character (only strings hold one).
  std::string attrs;
  for (char c : h.attrs_json.empty() ? std::string("{}") : h.attrs_json)
    attrs += c == ';' ? std::string("\\u003b") : std::string(1, c);
  return strcat(".hostop ", id, " ", h.op, " ", h.node, " ", ins.empty() ? "-" : ins, " -> ", h.output, " ", attrs);
}

// ---------------------------------------------------------------------------------------
// Parser: a small hand-written scanner over one line at a time.
namespace {

class LineParser {
 public:
  LineParser(const std::string& line, const std::string& file, int lineno) : s_(line), file_(file), lineno_(lineno) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw InputError(strcat(file_, ":", lineno_, ": ", msg, " in: ", trimmed()));
  }
  std::string trimmed() const {
    size_t a = s_.find_first_not_of(" \t");
    size_t b = s_.find_last_not_of(" \t\r");
    return a == std::string::npos ? "" : s_.substr(a, b - a + 1);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= s_.size();
  }
  std::string word() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[pos_])) && s_[pos_] != ',' &&
           s_[pos_] != '[' && s_[pos_] != ']')
      ++pos_;
    if (b == pos_) fail("expected a word");
    return s_.substr(b, pos_ - b);
  }
  void expect(const std::string& tok) {
    skip_ws();
    if (s_.compare(pos_, tok.size(), tok) != 0) fail("expected '" + tok + "'");
    pos_ += tok.size();
  }
  bool peek(const std::string& tok) {
    skip_ws();
    return s_.compare(pos_, tok.size(), tok) == 0;
  }
  bool accept(const std::string& tok) {
    skip_ws();
    if (s_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }
  int64_t integer() {
    skip_ws();
    int64_t v = 0;
    const char* b = s_.data() + pos_;
    int base = 10;
    if (s_.compare(pos_, 2, "0x") == 0) {
      b += 2;
      base = 16;
    }
    auto r = std::from_chars(b, s_.data() + s_.size(), v, base);
    if (r.ec != std::errc() || r.ptr == b) fail("expected an integer");
    pos_ = static_cast<size_t>(r.ptr - s_.data());
    return v;
  }
  uint64_t address(const std::string& space) {
    expect(space + ":");
    int64_t v = integer();
    if (v < 0) fail("negative address");
    return static_cast<uint64_t>(v);
  }
  double number() {
    std::string w = word();
    if (w == "inf") return INFINITY;
    if (w == "-inf") return -INFINITY;
    if (w == "nan") return NAN;
    char* end = nullptr;
    double v = std::strtod(w.c_str(), &end);
    if (end != w.c_str() + w.size()) fail("expected a number, got '" + w + "'");
    return v;
  }
  std::pair<int64_t, int64_t> pair() {
    expect("[");
    int64_t a = integer();
    expect(",");
    int64_t b = integer();
    expect("]");
    return {a, b};
  }
  DType dtype() {
    std::string w = word();
    DType t;
    if (!parse_dtype(w, t)) fail("unknown dtype '" + w + "'");
    return t;
  }
  Operand operand() {
    Operand o;
    if (accept("#")) {
      o.immediate = true;
      o.value = number();
      return o;
    }
    o.addr = address("lm");
    auto [rs, cs] = pair();
    o.rs = rs;
    o.cs = cs;
    return o;
  }
  // Everything left on the line, trimmed (consumed).
  std::string rest() {
    skip_ws();
    size_t b = s_.find_last_not_of(" \t\r");
    std::string r = b == std::string::npos || b < pos_ ? "" : s_.substr(pos_, b - pos_ + 1);
    pos_ = s_.size();
    return r;
  }
  TensorType tensor_type() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && s_[pos_] != '[') ++pos_;
    DType t;
    if (!parse_dtype(s_.substr(b, pos_ - b), t)) fail("unknown dtype '" + s_.substr(b, pos_ - b) + "'");
    expect("[");
    TensorType tt{t, {}};
    if (!accept("]")) {
      do tt.shape.push_back(integer());
      while (accept(","));
      expect("]");
    }
    return tt;
  }

 private:
  std::string s_;
  std::string file_;
  int lineno_;
  size_t pos_ = 0;
};

}  // namespace

namespace {

// The line's directives (.program, .buffer, .hostop, .kernel) and instructions, into `p`.
class ProgramReader {
 public:
  ProgramReader(Program& p, const std::string& filename) : p_(p), file_(filename) {}
  void line(LineParser& lp, int lineno);
  void finish() const;

 private:
  void buffer(LineParser& lp);
  void host_op(LineParser& lp);
  Instruction instruction(LineParser& lp, const std::string& w, int lineno);
  void chain(LineParser& lp, std::string& w, Instruction& in);
  void fields(LineParser& lp, const OpcodeInfo& info, Instruction& in);
  void tile_fields(LineParser& lp, const std::string& w, size_t nsrc, Instruction& in);
  bool family(LineParser& lp, const std::string& w, Instruction& in);
  Program& p_;
  std::string file_;
  int kernel_ = -1;
  bool have_program_ = false;
  StructureCheck structure_;
};

void ProgramReader::line(LineParser& lp, int lineno) {
  std::string w = lp.word();
  if (w == ".program") {
    p_.name = lp.word();
    have_program_ = true;
  } else if (w == ".buffer") {
    buffer(lp);
  } else if (w == ".hostop") {
    host_op(lp);
  } else if (w == ".kernel") {
    int64_t id = lp.integer();
    if (id != static_cast<int64_t>(p_.kernels.size())) lp.fail("kernel ids must count up from 0");
    p_.kernels.push_back(lp.word());
    kernel_ = static_cast<int>(id);
  } else {
    Instruction in = instruction(lp, w, lineno);
    if (std::string why = structure_.next(in); !why.empty()) lp.fail(why);
    p_.code.push_back(std::move(in));
  }
  if (!lp.at_end()) lp.fail("unexpected trailing text");
}

void ProgramReader::buffer(LineParser& lp) {
  BufferDecl b;
  b.name = lp.word();
  b.hbm_addr = lp.address("hbm");
  b.type = lp.tensor_type();
  if (std::string why = shape_problem(b.type.shape, /*allow_empty=*/true); !why.empty())
    lp.fail("buffer " + b.name + ": " + why);
  std::string role = lp.word();
  if (role == "input")
    b.role = BufferRole::Input;
  else if (role == "weight")
    b.role = BufferRole::Weight;
  else if (role == "intermediate")
    b.role = BufferRole::Intermediate;
  else if (role == "output")
    b.role = BufferRole::Output;
  else
    lp.fail("unknown buffer role '" + role + "' (input, weight, intermediate, output)");
  if (!lp.at_end()) {
    const std::string q = lp.word();
    if (!parse_quant(q, b.quant))
      lp.fail(strcat("buffer ", b.name, ": '", q,
                     "' is not a packed weight format (int8, int4 or fp8_e4m3 and an even group, e.g. int4/g128)"));
    if (std::string why = quant_problem(b); !why.empty()) lp.fail(why);
  }
  p_.buffers.push_back(b);
}

void ProgramReader::host_op(LineParser& lp) {
  int64_t id = lp.integer();
  if (id != static_cast<int64_t>(p_.host_ops.size())) lp.fail("host-op ids must count up from 0");
  HostOp h;
  h.op = lp.word();
  h.node = lp.word();
  std::string ins = lp.word();
  while (ins != "-" && !ins.empty()) {  // word() stops at ',': read the rest of the list
    h.inputs.push_back(ins);
    ins = lp.accept(",") ? lp.word() : "";
  }
  lp.expect("->");
  h.output = lp.word();
  std::string attrs = lp.rest();
  if (attrs.empty() || attrs.front() != '{' || attrs.back() != '}')
    lp.fail(".hostop: attributes must be a JSON object");
  for (size_t at; (at = attrs.find("\\u003b")) != std::string::npos;) attrs.replace(at, 6, ";");
  h.attrs_json = attrs;
  p_.host_ops.push_back(h);
}

Instruction ProgramReader::instruction(LineParser& lp, const std::string& w, int lineno) {
  Instruction in;
  in.kernel = kernel_;
  in.line = lineno;
  std::string mn = w;
  chain(lp, mn, in);  // a post op off the mnemonic (StructureCheck says where one may be)
  // Mnemonics from the opcode table; the families (vxe.<op>, vxe.r<reduction>) by their op.
  if (const OpcodeInfo* named = opcode_by_name(mn)) {
    in.opcode = named->op;
    fields(lp, *named, in);
  } else if (!family(lp, mn, in)) {
    lp.fail("unknown instruction '" + w + "'");
  }
  if (lp.accept("=>")) {  // a chain's row reduction: " => rRED lm:0xA"
    const std::string red = lp.at_end() ? "" : lp.word();
    ReductionType t;
    if (red.size() < 2 || red[0] != 'r' || !parse_reduction_type(red.substr(1), t))
      lp.fail(strcat(w, ": '=>' takes a row reduction (rsum, rmax, rmin or rmean), got '", red, "'"));
    in.acc = t;
    if (!lp.peek("lm:")) lp.fail(strcat(w, ": '=> ", red, "' takes the column's address, lm:0xA"));
    in.acc_addr = lp.address("lm");
  }
  if (lp.accept("step")) {
    auto signed_step = [&]() -> int64_t {
      bool neg = lp.accept("-");
      if (!neg) lp.expect("+");
      int64_t v = lp.integer();
      return neg ? -v : v;
    };
    if (lp.accept("hbm:")) in.hbm_step = signed_step();
    if (lp.accept("lm:")) in.lm_step = signed_step();
  }
  return in;
}

// A chain's post op, the mnemonic's third part ("vxe.sub.exp"): removed from `w` into in.post.
void ProgramReader::chain(LineParser& lp, std::string& w, Instruction& in) {
  const size_t unit = w.find('.');
  const size_t dot = unit == std::string::npos ? unit : w.find('.', unit + 1);
  if (dot == std::string::npos) return;
  const std::string post = w.substr(dot + 1);
  ScalarOp op;
  if (!parse_scalar_op(post, op)) lp.fail(strcat(w, ": unknown post op '", post, "'"));
  in.post = op;
  w.resize(dot);
}

// "[R, C] lm:D <- SRC, ..." with `nsrc` sources (Form::VectorOp, Reduce, Unary), the destination
// optionally with its row stride, "lm:D [rs, 1]" (StructureCheck: vxe.<op> and vxe.mov take one).
void ProgramReader::tile_fields(LineParser& lp, const std::string& w, size_t nsrc, Instruction& in) {
  std::tie(in.rows, in.cols) = lp.pair();
  in.lm_addr = lp.address("lm");
  if (lp.peek("[")) {
    auto [rs, cs] = lp.pair();
    if (cs != 1) lp.fail(strcat(w, ": the destination's column stride must be 1, got ", cs));
    in.lm_rs = rs;
  }
  lp.expect("<-");
  do in.srcs.push_back(lp.operand());
  while (lp.accept(","));
  if (in.srcs.size() != nsrc) lp.fail(strcat(w, " takes ", nsrc, " source operands, got ", in.srcs.size()));
}

// A family mnemonic: PREFIX r<reduction> (tried first; no scalar op is r + a reduction name)
// or PREFIX <scalar op>. False when `w` starts with no family's prefix.
bool ProgramReader::family(LineParser& lp, const std::string& w, Instruction& in) {
  const OpcodeInfo* reduce = nullptr;
  const OpcodeInfo* elementwise = nullptr;
  for (const auto& o : kOpcodeTable)
    if (is_family(o.form) && w.rfind(family_prefix(o), 0) == 0) (o.form == Form::Reduce ? reduce : elementwise) = &o;
  if (!reduce && !elementwise) return false;
  std::string op = w.substr(family_prefix(reduce ? *reduce : *elementwise).size());
  if (reduce && op.size() > 1 && op[0] == 'r' && parse_reduction_type(op.substr(1), in.rop)) {
    in.opcode = reduce->op;
    tile_fields(lp, w, 1, in);
  } else if (elementwise && parse_scalar_op(op, in.vop)) {
    in.opcode = elementwise->op;
    tile_fields(lp, w, static_cast<size_t>(scalar_op_arity(in.vop)), in);
  } else {
    lp.fail("unknown vector op '" + op + "'");
  }
  return true;
}

// The fields of an instruction named by its exact mnemonic, by its form (isa/opcodes.h).
void ProgramReader::fields(LineParser& lp, const OpcodeInfo& info, Instruction& in) {
  const std::string mn = info.name;
  switch (info.form) {
    case Form::Bare: in.kernel = -1; break;  // halt belongs to no kernel
    case Form::TileLoad:
    case Form::TileStore:
      in.dtype = lp.dtype();
      std::tie(in.rows, in.cols) = lp.pair();
      if (info.form == Form::TileLoad) {
        in.lm_addr = lp.address("lm");
        lp.expect("<-");
        in.hbm_addr = lp.address("hbm");
        std::tie(in.hbm_rs, in.hbm_cs) = lp.pair();
      } else {
        in.hbm_addr = lp.address("hbm");
        std::tie(in.hbm_rs, in.hbm_cs) = lp.pair();
        lp.expect("<-");
        in.lm_addr = lp.address("lm");
      }
      break;
    case Form::Loop: in.token = lp.integer(); break;
    case Form::EndLoop: break;
    case Form::Send:
      std::tie(in.rows, in.cols) = lp.pair();
      lp.expect("dev:");
      in.peer = lp.integer();
      in.lm_addr = lp.address("lm");
      lp.expect("<-");
      in.srcs.push_back(lp.operand());
      if (in.srcs[0].immediate) lp.fail(mn + ": the source must be in local memory");
      lp.expect("token:");
      in.token = lp.integer();
      if (in.peer < 0 || in.token < 0) lp.fail("device and token ids are non-negative");
      break;
    case Form::Signal:
    case Form::Wait:
      in.token = lp.integer();
      if (in.token < 0) lp.fail("token ids are non-negative");
      if (info.form == Form::Signal && lp.accept("dev:")) {
        in.peer = lp.integer();
        if (in.peer < 0) lp.fail("device ids are non-negative");
      }
      break;
    case Form::Gather:
      in.dtype = lp.dtype();
      std::tie(in.rows, in.cols) = lp.pair();
      in.lm_addr = lp.address("lm");
      lp.expect("<-");
      in.hbm_addr = lp.address("hbm");
      std::tie(in.hbm_rs, in.hbm_cs) = lp.pair();
      lp.expect(",");
      in.srcs.push_back(lp.operand());
      if (in.srcs[0].immediate) lp.fail(mn + ": the indices must be in local memory");
      break;
    case Form::HostCall:
      in.host_op = lp.integer();
      if (in.host_op < 0 || in.host_op >= static_cast<int64_t>(p_.host_ops.size()))
        lp.fail(strcat(mn, " ", in.host_op, ": no such .hostop (declare it before its call)"));
      break;
    case Form::Gemm:
    case Form::GemmGather:
      in.dtype = lp.dtype();
      lp.expect("[");
      in.rows = lp.integer();
      lp.expect(",");
      in.depth = lp.integer();
      lp.expect(",");
      in.cols = lp.integer();
      lp.expect("]");
      in.lm_addr = lp.address("lm");
      lp.expect("<-");
      in.srcs.push_back(lp.operand());
      if (in.srcs[0].immediate) lp.fail(mn + ": A must be in local memory");
      lp.expect(",");
      in.hbm_addr = lp.address("hbm");
      std::tie(in.hbm_rs, in.hbm_cs) = lp.pair();
      if (info.form == Form::GemmGather) {
        lp.expect(",");
        in.srcs.push_back(lp.operand());
        if (in.srcs[1].immediate) lp.fail(mn + ": the row indices must be in local memory");
        lp.expect(",");
        in.srcs.push_back(lp.operand());
        if (!in.srcs[2].immediate || !(in.srcs[2].value >= 1) || in.srcs[2].value > 9.0e15 ||
            in.srcs[2].value != std::floor(in.srcs[2].value))
          lp.fail(mn + ": the slab size must be an immediate whole number of elements, at least 1");
      }
      if (!lp.at_end() && !lp.peek("step") && !lp.peek("=>")) {  // the packed format of B, before any address steps
        const std::string q = lp.word();
        if (!parse_quant(q, in.quant))
          lp.fail(strcat(mn, ": '", q,
                         "' is not a packed weight format (int8, int4 or fp8_e4m3 and an even group, e.g. int4/g128)"));
      }
      break;
    case Form::Unary: tile_fields(lp, mn, 1, in); break;
    case Form::VectorOp:
    case Form::Reduce: break;  // families: not named by an exact mnemonic
  }
}

void ProgramReader::finish() const {
  if (!have_program_) throw InputError(file_ + ":1: missing .program directive");
  size_t open_loop = 0;
  if (std::string why = structure_.finish(open_loop); !why.empty())
    throw InputError(strcat(file_, ":", p_.code[open_loop].line, ": ", why));
}

}  // namespace

Program parse_program(const std::string& text, const std::string& filename) {
  Program p;
  p.source = filename;
  ProgramReader reader(p, filename);
  std::istringstream is(text);
  std::string line;
  int lineno = 0;
  while (std::getline(is, line)) {
    ++lineno;
    if (auto c = line.find(';'); c != std::string::npos) line = line.substr(0, c);
    LineParser lp(line, filename, lineno);
    if (lp.at_end()) continue;
    reader.line(lp, lineno);
  }
  reader.finish();
  return p;
}

}  // namespace lpu
