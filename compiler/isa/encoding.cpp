#include "isa/encoding.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>

#include "support/error.h"

namespace lpu {
namespace {

constexpr char kMagic[4] = {'L', 'P', 'U', 'B'};
constexpr size_t kHeaderBytes = 48;
constexpr size_t kInstrBytes = 64;
constexpr size_t kOperandBytes = 16;
constexpr uint8_t kNoOp = 0xFF;  // op-table index of instructions without a vector op

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::boolean};
constexpr BufferRole kRoles[] = {BufferRole::Input, BufferRole::Weight, BufferRole::Intermediate, BufferRole::Output};
constexpr QuantFormat kQuantFormats[] = {QuantFormat::none, QuantFormat::int8, QuantFormat::int4,
                                         QuantFormat::fp8_e4m3};
// A vxe.<op> chain's row reduction (Instruction::acc), stored as its index here + 1 (0: none):
// fixed codes, independent of LPU_REDUCTION_TYPES' order, like every other code of the format.
constexpr ReductionType kAccReductions[] = {ReductionType::sum, ReductionType::max, ReductionType::min,
                                            ReductionType::mean};

template <typename E, size_t N>
uint8_t code_of(const E (&table)[N], E v) {
  for (size_t i = 0; i < N; ++i)
    if (table[i] == v) return static_cast<uint8_t>(i);
  throw InternalError("encoding: value without a code");
}

// FNV-1a over everything but the checksum field itself (bytes 40..47). Each step is a
// bijection of the state, so any single changed byte changes the sum.
uint64_t checksum_of(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i)
    if (i < 40 || i >= 48) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

// The name an instruction's vector op has in the table ("" when it has none).
// A name from a file, quoted, with bytes that are not printable shown as \xNN.
std::string printable(const std::string& s) {
  std::string out = "'";
  for (unsigned char c : s.substr(0, 32)) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (s.size() > 32 ? "'..." : "'");
}

std::string op_name(const Instruction& in) {
  switch (opcode_info(in.opcode).form) {
    case Form::VectorOp: return scalar_op_name(in.vop);
    case Form::Reduce: return std::string("r") + reduction_type_name(in.rop);
    default: return "";
  }
}

// Appends little-endian fields to `out` through a cursor: the vector is grown ahead (doubling)
// and each field is one memcpy, not a vector insert per field (an encode was ~1,500
// instructions per program instruction, most of them in std::vector's range insert).
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>&& buffer, size_t expected) : out_(std::move(buffer)) {
    out_.resize(std::max<size_t>(expected, 64));
  }
  size_t size() const { return n_; }
  const uint8_t* data() const { return out_.data(); }
  std::vector<uint8_t> take() {
    out_.resize(n_);
    return std::move(out_);
  }
  [[gnu::always_inline]] void u8(uint8_t v) { put(&v, 1); }
  [[gnu::always_inline]] void u16(uint16_t v) { le(v, 2); }
  [[gnu::always_inline]] void u32(uint32_t v) { le(v, 4); }
  [[gnu::always_inline]] void u64(uint64_t v) { le(v, 8); }
  [[gnu::always_inline]] void i32(int32_t v) { le(static_cast<uint32_t>(v), 4); }
  [[gnu::always_inline]] void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    le(bits, 8);
  }
  void str(const std::string& s) {
    u32(narrow_u32(s.size(), [] { return std::string("a name's length"); }));
    put(s.data(), s.size());
  }
  void patch_u64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) out_[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
  }
  // `what` builds the field's description, only when the value does not fit.
  template <typename What>
  [[gnu::always_inline]] static uint32_t narrow_u32(uint64_t v, const What& what) {
    if (v > std::numeric_limits<uint32_t>::max())
      throw InputError(strcat("cannot encode: ", what(), " = ", v, " does not fit 32 bits"));
    return static_cast<uint32_t>(v);
  }
  template <typename What>
  [[gnu::always_inline]] static int32_t narrow_i32(int64_t v, const What& what) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw InputError(strcat("cannot encode: ", what(), " = ", v, " does not fit a signed 32-bit field"));
    return static_cast<int32_t>(v);
  }

 private:
  [[gnu::always_inline]] void put(const void* p, size_t k) {
    if (n_ + k > out_.size()) out_.resize(std::max(2 * out_.size(), n_ + k));
    std::memcpy(out_.data() + n_, p, k);
    n_ += k;
  }
  [[gnu::always_inline]] void le(uint64_t v,
                                 int bytes) {  // on a little-endian host the value's own bytes are the encoding
    uint8_t b[8];
    if constexpr (std::endian::native == std::endian::little)
      std::memcpy(b, &v, 8);
    else
      for (int i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    put(b, static_cast<size_t>(bytes));
  }
  std::vector<uint8_t> out_;
  size_t n_ = 0;
};

// Bounds-checked little-endian reads; every failure names the byte offset.
class Reader {
 public:
  Reader(const uint8_t* d, size_t n, const std::string& src) : d_(d), n_(n), src_(src) {}
  [[noreturn]] void fail(size_t at, const std::string& msg) const {
    throw InputError(strcat(src_, ": byte ", at, ": ", msg));
  }
  size_t pos() const { return pos_; }
  void seek(size_t p) { pos_ = p; }
  [[gnu::always_inline]] void need(size_t bytes, const char* what) const {
    if (n_ - pos_ < bytes) [[unlikely]]
      truncated(bytes, what);
  }
  [[noreturn, gnu::noinline]] void truncated(size_t bytes, const char* what) const {
    fail(pos_, strcat("truncated: ", what, ": ", bytes, " bytes needed, ", n_ - pos_, " left"));
  }
  [[gnu::always_inline]] uint64_t le(int bytes, const char* what) {
    need(static_cast<size_t>(bytes), what);
    uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little)
      std::memcpy(&v, d_ + pos_, static_cast<size_t>(bytes));
    else
      for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(d_[pos_ + static_cast<size_t>(i)]) << (8 * i);
    pos_ += static_cast<size_t>(bytes);
    return v;
  }
  [[gnu::always_inline]] uint8_t u8(const char* w) { return static_cast<uint8_t>(le(1, w)); }
  [[gnu::always_inline]] uint16_t u16(const char* w) { return static_cast<uint16_t>(le(2, w)); }
  [[gnu::always_inline]] uint32_t u32(const char* w) { return static_cast<uint32_t>(le(4, w)); }
  [[gnu::always_inline]] uint64_t u64(const char* w) { return le(8, w); }
  [[gnu::always_inline]] int32_t i32(const char* w) { return static_cast<int32_t>(u32(w)); }
  [[gnu::always_inline]] int64_t i64(const char* w) { return static_cast<int64_t>(u64(w)); }
  double f64(const char* w) {
    uint64_t bits = u64(w);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  std::string str(const char* what) {
    uint32_t len = u32(what);
    need(len, what);
    std::string s(reinterpret_cast<const char*>(d_ + pos_), len);
    pos_ += len;
    return s;
  }
  template <typename E, size_t N>
  E code(const E (&table)[N], const char* what) {
    size_t at = pos_;
    uint8_t c = u8(what);
    if (c >= N) fail(at, strcat("unknown ", what, " code ", static_cast<int>(c)));
    return table[c];
  }

 private:
  const uint8_t* d_;
  size_t n_;
  std::string src_;
  size_t pos_ = 0;
};

}  // namespace

namespace {

bool carries_op(Opcode op) { return is_family(opcode_info(op).form); }

// The op-name table: every vector op the program uses, in first-use order, a chain's post op
// (vxe.<op>.POST) right after its op. Indexed by (opcode, enum value) while encoding, so names
// are built once per distinct op; a post op is keyed as the vxe.<op> of the same name, whose
// entry it shares.
struct OpNames {
  std::vector<std::string> names;
  std::map<std::pair<Opcode, int>, uint8_t> index;
  static std::pair<Opcode, int> key(const Instruction& in) {
    return {in.opcode,
            opcode_info(in.opcode).form == Form::VectorOp ? static_cast<int>(in.vop) : static_cast<int>(in.rop)};
  }
  static std::pair<Opcode, int> post_key(ScalarOp post) { return {Opcode::VxeOp, static_cast<int>(post)}; }
  explicit OpNames(const Program& p) {
    for (const auto& in : p.code) {
      if (carries_op(in.opcode)) add(key(in), [&] { return op_name(in); });
      if (in.post) add(post_key(*in.post), [&] { return std::string(scalar_op_name(*in.post)); });
    }
  }
  // `name` is called for a new key only: most instructions repeat an op already in the table.
  template <typename Name>
  void add(const std::pair<Opcode, int>& k, const Name& name) {
    if (index.count(k)) return;
    if (names.size() >= kNoOp) throw InputError("cannot encode: more than 255 distinct vector ops");
    index[k] = static_cast<uint8_t>(names.size());
    names.push_back(name());
  }
};

auto named(const char* what) {
  return [what] { return std::string(what); };
}

// The header (total size and checksum patched at the end) and the string tables.
void write_header_and_tables(Writer& w, const Program& p, const OpNames& ops, size_t n_operands) {
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u16(kLpuBinVersion);
  w.u16(kHeaderBytes);
  w.u16(kInstrBytes);
  w.u16(kOperandBytes);
  w.u32(Writer::narrow_u32(p.buffers.size(), named("buffer count")));
  w.u32(Writer::narrow_u32(p.kernels.size(), named("kernel count")));
  w.u32(static_cast<uint32_t>(ops.names.size()));
  w.u32(Writer::narrow_u32(p.code.size(), named("instruction count")));
  w.u32(Writer::narrow_u32(n_operands, named("operand count")));
  w.u64(0);  // total bytes, patched below
  w.u64(0);  // checksum, patched below

  w.str(p.name);
  for (const auto& b : p.buffers) {
    w.str(b.name);
    w.u64(b.hbm_addr);
    w.u8(code_of(kDTypes, b.type.dtype));
    w.u8(code_of(kRoles, b.role));
    w.u8(code_of(kQuantFormats, b.quant.format));  // version 5: packed storage
    w.u32(Writer::narrow_u32(static_cast<uint64_t>(b.quant.group), named("quantisation group")));
    if (b.type.shape.size() > 0xFFFF) throw InputError("cannot encode: buffer " + b.name + " has rank > 65535");
    w.u16(static_cast<uint16_t>(b.type.shape.size()));
    for (int64_t d : b.type.shape) w.i64(d);
  }
  for (const auto& k : p.kernels) w.str(k);
  for (const auto& o : ops.names) w.str(o);
  // The host-op table (version 2): count, then per op its strings.
  w.u32(Writer::narrow_u32(p.host_ops.size(), named("host-op count")));
  for (const auto& h : p.host_ops) {
    w.str(h.op);
    w.str(h.node);
    w.u32(Writer::narrow_u32(h.inputs.size(), named("host-op input count")));
    for (const auto& in : h.inputs) w.str(in);
    w.str(h.output);
    w.str(h.attrs_json);
  }
}

// Which record field holds what, by form: tokens and loop counts in the rows field (and a
// signal's device + 1 in cols), esl.send's token in depth and its device in the hbm row
// stride, host.call's host-op index in depth, the destination row stride of vxe.<op> and
// vxe.mov (lm_rs; 0 when dense, so older files read as before) in depth, and a vxe.<op>
// chain's post op (op-table index + 1), row reduction (kAccReductions index + 1) and its
// column's address in the first two zero bytes and the group after the packed format (0, 0
// and 0 without a chain, so older files read as before).
bool token_in_rows(Form f) { return f == Form::Signal || f == Form::Wait || f == Form::Loop; }
bool dest_stride_in_depth(Form f) { return f == Form::VectorOp || f == Form::Unary; }
bool chain_in_tail(Form f) { return f == Form::VectorOp; }

void write_instruction(Writer& w, const Instruction& in, size_t i, const OpNames& ops, uint32_t first_operand) {
  auto what = [&](const char* field) {
    return [&, field] { return strcat("instruction ", i, " (", print_instruction(in), ") ", field); };
  };
  const OpcodeInfo& info = opcode_info(in.opcode);
  w.u8(info.code);  // the opcode table's stable code
  w.u8(code_of(kDTypes, in.dtype));
  w.u8(is_family(info.form) ? ops.index.at(OpNames::key(in)) : kNoOp);
  if (in.srcs.size() > 0xFF) throw InputError(what("has more than 255 operands")());
  w.u8(static_cast<uint8_t>(in.srcs.size()));
  w.i32(Writer::narrow_i32(in.kernel, what("kernel")));
  if (in.rows < 0 || in.cols < 0) throw InputError(what("has a negative tile shape")());
  const bool sync = token_in_rows(info.form);
  w.u32(Writer::narrow_u32(static_cast<uint64_t>(sync ? in.token : in.rows), what("rows")));
  w.u32(Writer::narrow_u32(static_cast<uint64_t>(sync ? in.peer + 1 : in.cols), what("cols")));
  w.u64(in.hbm_addr);
  w.i32(Writer::narrow_i32(info.form == Form::Send ? in.peer : in.hbm_rs, what("hbm row stride")));
  w.i32(Writer::narrow_i32(in.hbm_cs, what("hbm column stride")));
  w.u32(Writer::narrow_u32(in.lm_addr, what("lm address")));
  w.u32(first_operand);
  if (in.depth < 0 || in.host_op < 0) throw InputError(what("has a negative depth")());
  if (in.lm_rs < 0) throw InputError(what("has a negative destination row stride")());
  if (in.lm_rs != 0 && !dest_stride_in_depth(info.form))  // no field would carry it
    throw InputError(what("has a destination row stride, which only vxe.<op> and vxe.mov take")());
  int64_t depth = info.form == Form::HostCall       ? in.host_op
                  : info.form == Form::Send         ? in.token
                  : dest_stride_in_depth(info.form) ? in.lm_rs
                                                    : in.depth;
  w.u32(Writer::narrow_u32(static_cast<uint64_t>(depth),
                           what(dest_stride_in_depth(info.form) ? "destination row stride" : "depth")));
  w.i64(in.hbm_step);
  w.i32(Writer::narrow_i32(in.lm_step, what("lm step")));
  w.u8(code_of(kQuantFormats, in.quant.format));  // version 5: packed weights B
  if (!chain_in_tail(info.form)) {
    if (in.post || in.acc || in.acc_addr)  // no field would carry them
      throw InputError(what("has a post op or a row reduction, which only vxe.<op> takes")());
    w.u8(0);
    w.u16(0);
    w.u32(Writer::narrow_u32(static_cast<uint64_t>(in.quant.group), what("quantisation group")));
    return;
  }
  if (in.quant.group != 0) throw InputError(what("has a quantisation group, which only sxe.gemm takes")());
  w.u8(in.post ? static_cast<uint8_t>(ops.index.at(OpNames::post_key(*in.post)) + 1) : 0);
  uint8_t acc = 0;
  if (in.acc) {
    const auto* at = std::find(std::begin(kAccReductions), std::end(kAccReductions), *in.acc);
    if (at == std::end(kAccReductions))
      throw InputError(strcat("instruction ", i, " (", print_instruction(in), ") has row reduction r",
                              reduction_type_name(*in.acc), ", which no chain does (rsum, rmax, rmin or rmean)"));
    acc = static_cast<uint8_t>(at - std::begin(kAccReductions) + 1);
  }
  w.u8(acc);
  w.u8(0);
  w.u32(Writer::narrow_u32(in.acc_addr, what("row reduction's lm address")));
}

void write_operand(Writer& w, const Operand& o, size_t i) {
  auto what = [&](const char* field) { return [i, field] { return strcat("instruction ", i, " operand ", field); }; };
  w.u8(o.immediate ? 1 : 0);
  w.u8(0);
  w.u8(0);
  w.u8(0);
  if (o.immediate) {
    w.u32(0);
    w.f64(o.value);
  } else {
    w.u32(Writer::narrow_u32(o.addr, what("lm address")));
    w.i32(Writer::narrow_i32(o.rs, what("row stride")));
    w.i32(Writer::narrow_i32(o.cs, what("column stride")));
  }
}

}  // namespace

std::vector<uint8_t> encode_program(const Program& p, Checksum checksum) {
  std::vector<uint8_t> out;
  encode_program_into(p, out, checksum);
  return out;
}

void encode_program_into(const Program& p, std::vector<uint8_t>& out, Checksum checksum) {
  const OpNames ops(p);
  size_t n_operands = 0;
  for (const auto& in : p.code) n_operands += in.srcs.size();
  Writer w(std::move(out),
           kHeaderBytes + p.code.size() * kInstrBytes + n_operands * kOperandBytes + 64 * (p.buffers.size() + 1));
  write_header_and_tables(w, p, ops, n_operands);
  uint32_t next_operand = 0;
  for (size_t i = 0; i < p.code.size(); ++i) {
    write_instruction(w, p.code[i], i, ops, next_operand);
    next_operand += static_cast<uint32_t>(p.code[i].srcs.size());
  }
  for (size_t i = 0; i < p.code.size(); ++i)
    for (const auto& o : p.code[i].srcs) write_operand(w, o, i);
  w.patch_u64(32, w.size());
  if (checksum == Checksum::Check) w.patch_u64(40, checksum_of(w.data(), w.size()));
  out = w.take();
}

namespace {

struct Header {
  uint32_t n_buffers, n_kernels, n_ops, n_code, n_operands;
  uint64_t checksum;
};

Header read_header(Reader& r, size_t size) {
  r.need(kHeaderBytes, "the header");
  r.seek(4);
  uint16_t version = r.u16("version");
  if (version != kLpuBinVersion)
    r.fail(4, strcat("unsupported version ", version, " (this build reads ", kLpuBinVersion, ")"));
  auto expect16 = [&](size_t want, const char* what) {
    size_t at = r.pos();
    uint16_t v = r.u16(what);
    if (v != want) r.fail(at, strcat(what, " is ", v, ", expected ", want));
  };
  expect16(kHeaderBytes, "header size");
  expect16(kInstrBytes, "instruction record size");
  expect16(kOperandBytes, "operand record size");
  Header h;
  h.n_buffers = r.u32("buffer count");
  h.n_kernels = r.u32("kernel count");
  h.n_ops = r.u32("op-name count");
  h.n_code = r.u32("instruction count");
  h.n_operands = r.u32("operand count");
  uint64_t total = r.u64("total size");
  if (total != size)
    r.fail(32, strcat("header says the program is ", total, " bytes, the input has ", size,
                      total > size ? " (truncated)" : ""));
  h.checksum = r.u64("checksum");
  // Implausible counts are reported against the header, not wherever parsing would run dry.
  uint64_t least = kHeaderBytes + 8 + uint64_t{21} * h.n_buffers + uint64_t{4} * (h.n_kernels + uint64_t{h.n_ops}) +
                   uint64_t{kInstrBytes} * h.n_code + uint64_t{kOperandBytes} * h.n_operands;
  if (least > size)
    r.fail(12, strcat("the header's counts (", h.n_buffers, " buffers, ", h.n_kernels, " kernels, ", h.n_ops,
                      " op names, ", h.n_code, " instructions, ", h.n_operands, " operands) need at least ", least,
                      " bytes, the program has ", size));
  return h;
}

void read_buffers(Reader& r, uint32_t n, Program& p) {
  for (uint32_t i = 0; i < n; ++i) {
    size_t buffer_at = r.pos();
    BufferDecl b;
    b.name = r.str("buffer name");
    b.hbm_addr = r.u64("buffer address");
    b.type.dtype = r.code(kDTypes, "dtype");
    b.role = r.code(kRoles, "buffer role");
    b.quant.format = r.code(kQuantFormats, "quantisation format");
    b.quant.group = r.u32("quantisation group");
    if (b.quant.on() ? !parse_quant(quant_str(b.quant), b.quant) : b.quant.group != 0)
      r.fail(buffer_at, strcat("buffer ", printable(b.name), ": quantisation group ", b.quant.group,
                               " is not an even number from 2 to ", kMaxQuantGroup, " (0 when unpacked)"));
    uint16_t rank = r.u16("rank");
    r.need(size_t{8} * rank, "buffer shape");
    for (uint16_t d = 0; d < rank; ++d) {
      size_t at = r.pos();
      int64_t dim = r.i64("dimension");
      if (dim < 0) r.fail(at, strcat("buffer ", b.name, " has negative dimension ", dim));
      b.type.shape.push_back(dim);
    }
    if (std::string why = shape_problem(b.type.shape, /*allow_empty=*/true); !why.empty())
      r.fail(buffer_at, "buffer " + printable(b.name) + ": " + why);
    if (std::string why = quant_problem(b); !why.empty()) r.fail(buffer_at, why);
    p.buffers.push_back(std::move(b));
  }
}

struct OpRef {
  bool reduce;
  ScalarOp vop;
  ReductionType rop;
};

std::vector<OpRef> read_op_names(Reader& r, uint32_t n) {
  std::vector<OpRef> ops;
  for (uint32_t i = 0; i < n; ++i) {
    size_t at = r.pos();
    std::string name = r.str("op name");
    OpRef o{false, ScalarOp::add, ReductionType::sum};
    if (name.size() > 1 && name[0] == 'r' && parse_reduction_type(name.substr(1), o.rop))
      o.reduce = true;
    else if (!parse_scalar_op(name, o.vop))
      r.fail(at, "unknown vector op " + printable(name) + " in the op table");
    ops.push_back(o);
  }
  return ops;
}

void read_host_ops(Reader& r, Program& p) {
  uint32_t n_host = r.u32("host-op count");
  for (uint32_t i = 0; i < n_host; ++i) {
    HostOp h;
    h.op = r.str("host-op name");
    h.node = r.str("host-op node");
    uint32_t n_in = r.u32("host-op input count");
    r.need(size_t{4} * n_in, "host-op inputs");
    for (uint32_t k = 0; k < n_in; ++k) h.inputs.push_back(r.str("host-op input"));
    h.output = r.str("host-op output");
    h.attrs_json = r.str("host-op attributes");
    p.host_ops.push_back(std::move(h));
  }
}

std::vector<Operand> read_operand_pool(Reader& r, uint32_t n_operands) {
  r.need(size_t{kOperandBytes} * n_operands, "the operand pool");
  std::vector<Operand> pool(n_operands);
  for (uint32_t i = 0; i < n_operands; ++i) {
    size_t at = r.pos();
    uint8_t kind = r.u8("operand kind");
    if (kind > 1) r.fail(at, strcat("operand ", i, ": unknown kind ", static_cast<int>(kind)));
    if (r.u8("pad") | r.u8("pad") | r.u8("pad")) r.fail(at + 1, strcat("operand ", i, ": padding is not zero"));
    Operand& o = pool[i];
    if (kind == 1) {
      if (r.u32("pad") != 0) r.fail(at + 4, strcat("operand ", i, ": padding is not zero"));
      o.immediate = true;
      o.value = r.f64("immediate");
    } else {
      o.addr = r.u32("operand address");
      o.rs = r.i32("operand row stride");
      o.cs = r.i32("operand column stride");
    }
  }
  return pool;
}

// The source operands an instruction of this form takes (a vector op: its arity).
size_t sources_wanted(const Instruction& in) {
  switch (opcode_info(in.opcode).form) {
    case Form::VectorOp: return static_cast<size_t>(scalar_op_arity(in.vop));
    case Form::Reduce:
    case Form::Unary:
    case Form::Gemm:
    case Form::Gather:
    case Form::Send: return 1;
    case Form::GemmGather: return 3;  // A, the row indices, the slab size
    default: return 0;
  }
}

// The instruction records, checked field by field against the tables read before.
class InstructionReader {
 public:
  InstructionReader(Reader& r, const Header& h, const Program& p, const std::vector<OpRef>& ops,
                    const std::vector<Operand>& pool)
      : r_(r), h_(h), p_(p), ops_(ops), pool_(pool) {}
  void read(uint32_t i, Instruction& in);
  void finish(size_t code_at);

 private:
  [[noreturn]] void bad(size_t field, const std::string& msg) const {
    r_.fail(at_ + field, strcat("instruction ", i_, ": ", msg));
  }
  void fields(Instruction& in, uint8_t& op, uint8_t& nsrc, uint32_t& first);
  void vector_op(Instruction& in, uint8_t op);
  void chain(Instruction& in);
  uint8_t post_ = 0, acc_ = 0;  // the record's chain bytes (57, 58), read by fields()
  Reader& r_;
  const Header& h_;
  const Program& p_;
  const std::vector<OpRef>& ops_;
  const std::vector<Operand>& pool_;
  StructureCheck structure_;  // the rules the assembly parser applies too
  size_t at_ = 0;
  uint32_t i_ = 0;
};

// The record's fields, unpacked by the opcode's form (write_instruction packs them).
void InstructionReader::fields(Instruction& in, uint8_t& op, uint8_t& nsrc, uint32_t& first) {
  uint8_t opcode = r_.u8("opcode"), dtype = r_.u8("dtype");
  const OpcodeInfo* info = opcode_by_code(opcode);
  if (!info) bad(0, strcat("unknown opcode code ", static_cast<int>(opcode)));
  if (dtype >= std::size(kDTypes)) bad(1, strcat("unknown dtype code ", static_cast<int>(dtype)));
  in.opcode = info->op;
  in.dtype = kDTypes[dtype];
  op = r_.u8("op index");
  nsrc = r_.u8("operand count");
  in.kernel = r_.i32("kernel");
  in.rows = r_.u32("rows");
  in.cols = r_.u32("cols");
  in.hbm_addr = r_.u64("hbm address");
  in.hbm_rs = r_.i32("hbm row stride");
  in.hbm_cs = r_.i32("hbm column stride");
  in.lm_addr = r_.u32("lm address");
  first = r_.u32("first operand");
  in.depth = r_.u32("depth");
  in.hbm_step = r_.i64("hbm step");
  in.lm_step = r_.i32("lm step");
  in.quant.format = r_.code(kQuantFormats, "quantisation format");
  post_ = r_.u8("post op");
  acc_ = r_.u8("row reduction");
  if (r_.u8("pad")) bad(59, "padding is not zero");
  in.quant.group = r_.u32("quantisation group");
  if (chain_in_tail(info->form)) {  // the group slot holds the row reduction's address
    in.acc_addr = in.quant.group;
    in.quant.group = 0;
  } else if (in.quant.on() ? !parse_quant(quant_str(in.quant), in.quant) : in.quant.group != 0) {
    bad(60, strcat("quantisation group ", in.quant.group, " is not an even number from 2 to ", kMaxQuantGroup,
                   " (0 when B is not packed)"));
  }
  if (info->form == Form::Send) {
    in.token = in.depth;
    in.depth = 0;
    in.peer = in.hbm_rs;
    in.hbm_rs = 0;
  }
  if (dest_stride_in_depth(info->form)) {
    in.lm_rs = in.depth;
    in.depth = 0;
  }
  if (info->form == Form::HostCall) {
    in.host_op = in.depth;
    in.depth = 0;
    if (in.host_op >= static_cast<int64_t>(p_.host_ops.size()))
      bad(40, strcat(info->name, " ", in.host_op, " outside the host-op table (", p_.host_ops.size(), " entries)"));
  }
}

void InstructionReader::vector_op(Instruction& in, uint8_t op) {
  const bool reduce = opcode_info(in.opcode).form == Form::Reduce;
  if (op >= ops_.size())
    bad(2, strcat("op index ", static_cast<int>(op), " outside the op table (", ops_.size(), " entries)"));
  if (ops_[op].reduce != reduce)
    bad(2, strcat(opcode_name(in.opcode), " names ", ops_[op].reduce ? "a reduction" : "an element-wise op"));
  if (reduce)
    in.rop = ops_[op].rop;
  else
    in.vop = ops_[op].vop;
}

// A vxe.<op> chain's post op (an element-wise op of the op table) and row reduction; every
// other opcode has zeros there.
void InstructionReader::chain(Instruction& in) {
  if (!chain_in_tail(opcode_info(in.opcode).form)) {
    if (post_ | acc_) bad(post_ ? 57 : 58, strcat(opcode_name(in.opcode), " carries a post op or a row reduction"));
    return;
  }
  if (post_) {
    const size_t k = post_ - 1u;
    if (k >= ops_.size()) bad(57, strcat("post op index ", k, " outside the op table (", ops_.size(), " entries)"));
    if (ops_[k].reduce) bad(57, "the post op names a reduction");
    in.post = ops_[k].vop;
  }
  if (acc_) {
    if (acc_ > std::size(kAccReductions))
      bad(58, strcat("unknown row reduction code ", static_cast<int>(acc_), " (1 .. ", std::size(kAccReductions),
                     ", 0 for none)"));
    in.acc = kAccReductions[acc_ - 1];
  }
}

void InstructionReader::read(uint32_t i, Instruction& in) {
  at_ = r_.pos();
  i_ = i;
  uint8_t op = 0, nsrc = 0;
  uint32_t first = 0;
  fields(in, op, nsrc, first);
  if (carries_op(in.opcode))
    vector_op(in, op);
  else if (op != kNoOp)
    bad(2, strcat(opcode_name(in.opcode), " carries op index ", static_cast<int>(op)));
  chain(in);
  const size_t want_src = sources_wanted(in);
  if (nsrc != want_src)
    bad(3, strcat(static_cast<int>(nsrc), " source operands, ", opcode_name(in.opcode), " takes ", want_src));
  if (in.kernel < -1 || in.kernel >= static_cast<int64_t>(h_.n_kernels))
    bad(4, strcat("kernel ", in.kernel, " outside -1 .. ", static_cast<int64_t>(h_.n_kernels) - 1));
  if (token_in_rows(opcode_info(in.opcode).form)) {
    in.token = in.rows;
    in.peer = in.cols - 1;
    in.rows = in.cols = 0;
  }
  if (static_cast<uint64_t>(first) + nsrc > h_.n_operands)
    bad(36, strcat("operands ", first, " .. ", static_cast<uint64_t>(first) + nsrc, " outside the pool (",
                   h_.n_operands, ")"));
  in.srcs.assign(pool_.begin() + first, pool_.begin() + first + nsrc);
  if (std::string why = structure_.next(in); !why.empty()) bad(0, why);
}

void InstructionReader::finish(size_t code_at) {
  size_t open_loop = 0;
  if (std::string why = structure_.finish(open_loop); !why.empty())
    r_.fail(code_at + size_t{kInstrBytes} * open_loop, strcat("instruction ", open_loop, ": ", why));
}

}  // namespace

Program decode_program(const uint8_t* data, size_t size, const std::string& source, Checksum checksum) {
  Reader r(data, size, source);
  r.need(kHeaderBytes, "the header");
  if (std::memcmp(data, kMagic, 4) != 0) r.fail(0, "not an LPU program (magic is not \"LPUB\")");
  const Header h = read_header(r, size);
  Program p;
  p.source = source;
  p.name = r.str("program name");
  read_buffers(r, h.n_buffers, p);
  for (uint32_t i = 0; i < h.n_kernels; ++i) p.kernels.push_back(r.str("kernel name"));
  const std::vector<OpRef> ops = read_op_names(r, h.n_ops);
  read_host_ops(r, p);

  size_t code_at = r.pos();
  r.need(size_t{kInstrBytes} * h.n_code, "the instruction records");
  r.seek(code_at + size_t{kInstrBytes} * h.n_code);
  const std::vector<Operand> pool = read_operand_pool(r, h.n_operands);
  if (r.pos() != size) r.fail(r.pos(), strcat(size - r.pos(), " unexpected trailing bytes"));

  r.seek(code_at);
  p.code.resize(h.n_code);
  InstructionReader reader(r, h, p, ops, pool);
  for (uint32_t i = 0; i < h.n_code; ++i) reader.read(i, p.code[i]);
  reader.finish(code_at);
  // Last, so a structural error reports where it is rather than only that something is.
  if (checksum == Checksum::Check && checksum_of(data, size) != h.checksum)
    r.fail(40, "checksum mismatch: the program is corrupt");
  return p;
}

}  // namespace lpu
