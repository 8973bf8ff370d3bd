#include "isa/encoding.h"

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
constexpr size_t kInstrBytes = 56;
constexpr size_t kOperandBytes = 16;
constexpr uint8_t kNoOp = 0xFF;  // op-table index of instructions without a vector op

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::boolean};
constexpr BufferRole kRoles[] = {BufferRole::Input, BufferRole::Weight, BufferRole::Intermediate, BufferRole::Output};

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
  if (in.opcode == Opcode::VxeOp) return scalar_op_name(in.vop);
  if (in.opcode == Opcode::VxeReduce) return std::string("r") + reduction_type_name(in.rop);
  return "";
}

class Writer {
 public:
  std::vector<uint8_t> out;
  void u8(uint8_t v) { out.push_back(v); }
  void u16(uint16_t v) { le(v, 2); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i32(int32_t v) { le(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    le(bits, 8);
  }
  void str(const std::string& s) {
    u32(narrow_u32(s.size(), [] { return std::string("a name's length"); }));
    out.insert(out.end(), s.begin(), s.end());
  }
  void patch_u64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
  }
  // `what` builds the field's description, only when the value does not fit.
  template <typename What>
  static uint32_t narrow_u32(uint64_t v, const What& what) {
    if (v > std::numeric_limits<uint32_t>::max()) throw InputError(strcat("cannot encode: ", what(), " = ", v, " does not fit 32 bits"));
    return static_cast<uint32_t>(v);
  }
  template <typename What>
  static int32_t narrow_i32(int64_t v, const What& what) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw InputError(strcat("cannot encode: ", what(), " = ", v, " does not fit a signed 32-bit field"));
    return static_cast<int32_t>(v);
  }

 private:
  void le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
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
  void need(size_t bytes, const char* what) const {
    if (n_ - pos_ < bytes) fail(pos_, strcat("truncated: ", what, ": ", bytes, " bytes needed, ", n_ - pos_, " left"));
  }
  uint64_t le(int bytes, const char* what) {
    need(static_cast<size_t>(bytes), what);
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(d_[pos_ + static_cast<size_t>(i)]) << (8 * i);
    pos_ += static_cast<size_t>(bytes);
    return v;
  }
  uint8_t u8(const char* w) { return static_cast<uint8_t>(le(1, w)); }
  uint16_t u16(const char* w) { return static_cast<uint16_t>(le(2, w)); }
  uint32_t u32(const char* w) { return static_cast<uint32_t>(le(4, w)); }
  uint64_t u64(const char* w) { return le(8, w); }
  int32_t i32(const char* w) { return static_cast<int32_t>(u32(w)); }
  int64_t i64(const char* w) { return static_cast<int64_t>(u64(w)); }
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

std::vector<uint8_t> encode_program(const Program& p) {
  // The op-name table: every vector op the program uses, in first-use order. Indexed by
  // (opcode, enum value) while encoding, so names are built once per distinct op.
  std::vector<std::string> ops;
  std::map<std::pair<Opcode, int>, uint8_t> op_index;
  auto op_key = [](const Instruction& in) {
    return std::pair{in.opcode, in.opcode == Opcode::VxeOp ? static_cast<int>(in.vop) : static_cast<int>(in.rop)};
  };
  size_t n_operands = 0;
  for (const auto& in : p.code) {
    n_operands += in.srcs.size();
    if (in.opcode != Opcode::VxeOp && in.opcode != Opcode::VxeReduce) continue;
    if (op_index.count(op_key(in))) continue;
    if (ops.size() >= kNoOp) throw InputError("cannot encode: more than 255 distinct vector ops");
    op_index[op_key(in)] = static_cast<uint8_t>(ops.size());
    ops.push_back(op_name(in));
  }

  Writer w;
  w.out.reserve(kHeaderBytes + p.code.size() * kInstrBytes + n_operands * kOperandBytes + 64 * (p.buffers.size() + 1));
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u16(kLpuBinVersion);
  w.u16(kHeaderBytes);
  w.u16(kInstrBytes);
  w.u16(kOperandBytes);
  auto named = [](const char* what) { return [what] { return std::string(what); }; };
  w.u32(Writer::narrow_u32(p.buffers.size(), named("buffer count")));
  w.u32(Writer::narrow_u32(p.kernels.size(), named("kernel count")));
  w.u32(static_cast<uint32_t>(ops.size()));
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
    if (b.type.shape.size() > 0xFFFF) throw InputError("cannot encode: buffer " + b.name + " has rank > 65535");
    w.u16(static_cast<uint16_t>(b.type.shape.size()));
    for (int64_t d : b.type.shape) w.i64(d);
  }
  for (const auto& k : p.kernels) w.str(k);
  for (const auto& o : ops) w.str(o);
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

  uint32_t next_operand = 0;
  for (size_t i = 0; i < p.code.size(); ++i) {
    const Instruction& in = p.code[i];
    auto what = [&](const char* field) { return [&, field] { return strcat("instruction ", i, " (", print_instruction(in), ") ", field); }; };
    bool has_op = in.opcode == Opcode::VxeOp || in.opcode == Opcode::VxeReduce;
    w.u8(opcode_info(in.opcode).code);  // the opcode table's stable code
    w.u8(code_of(kDTypes, in.dtype));
    w.u8(has_op ? op_index.at(op_key(in)) : kNoOp);
    if (in.srcs.size() > 0xFF) throw InputError(what("has more than 255 operands")());
    w.u8(static_cast<uint8_t>(in.srcs.size()));
    w.i32(Writer::narrow_i32(in.kernel, what("kernel")));
    if (in.rows < 0 || in.cols < 0) throw InputError(what("has a negative tile shape")());
    // Sync and loop instructions carry their token / count in the rows field.
    bool sync = in.opcode == Opcode::SyncSignal || in.opcode == Opcode::SyncWait || in.opcode == Opcode::LoopBegin;
    // Sync instructions carry the token in the rows field and peer + 1 in the cols field.
    w.u32(Writer::narrow_u32(static_cast<uint64_t>(sync ? in.token : in.rows), what("rows")));
    w.u32(Writer::narrow_u32(static_cast<uint64_t>(sync ? in.peer + 1 : in.cols), what("cols")));
    w.u64(in.hbm_addr);
    w.i32(Writer::narrow_i32(in.opcode == Opcode::EslSend ? in.peer : in.hbm_rs, what("hbm row stride")));
    w.i32(Writer::narrow_i32(in.hbm_cs, what("hbm column stride")));
    w.u32(Writer::narrow_u32(in.lm_addr, what("lm address")));
    w.u32(next_operand);
    if (in.depth < 0 || in.host_op < 0) throw InputError(what("has a negative depth")());
    // The depth field carries K for sxe.gemm and the host-op index for host.call.
    // esl.send: the token in the depth field and the target device in the hbm row stride.
    int64_t depth = in.opcode == Opcode::HostCall ? in.host_op : in.opcode == Opcode::EslSend ? in.token : in.depth;
    w.u32(Writer::narrow_u32(static_cast<uint64_t>(depth), what("depth")));
    w.i64(in.hbm_step);
    w.i32(Writer::narrow_i32(in.lm_step, what("lm step")));
    next_operand += static_cast<uint32_t>(in.srcs.size());
  }
  for (size_t i = 0; i < p.code.size(); ++i)
    for (const auto& o : p.code[i].srcs) {
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
  w.patch_u64(32, w.out.size());
  w.patch_u64(40, checksum_of(w.out.data(), w.out.size()));
  return std::move(w.out);
}

Program decode_program(const uint8_t* data, size_t size, const std::string& source) {
  Reader r(data, size, source);
  r.need(kHeaderBytes, "the header");
  if (std::memcmp(data, kMagic, 4) != 0) r.fail(0, "not an LPU program (magic is not \"LPUB\")");
  r.seek(4);
  uint16_t version = r.u16("version");
  if (version != kLpuBinVersion) r.fail(4, strcat("unsupported version ", version, " (this build reads ", kLpuBinVersion, ")"));
  auto expect16 = [&](size_t want, const char* what) {
    size_t at = r.pos();
    uint16_t v = r.u16(what);
    if (v != want) r.fail(at, strcat(what, " is ", v, ", expected ", want));
  };
  expect16(kHeaderBytes, "header size");
  expect16(kInstrBytes, "instruction record size");
  expect16(kOperandBytes, "operand record size");
  uint32_t n_buffers = r.u32("buffer count");
  uint32_t n_kernels = r.u32("kernel count");
  uint32_t n_ops = r.u32("op-name count");
  uint32_t n_code = r.u32("instruction count");
  uint32_t n_operands = r.u32("operand count");
  uint64_t total = r.u64("total size");
  if (total != size) r.fail(32, strcat("header says the program is ", total, " bytes, the input has ", size, total > size ? " (truncated)" : ""));
  uint64_t checksum = r.u64("checksum");
  // Implausible counts are reported against the header, not wherever parsing would run dry.
  uint64_t least = kHeaderBytes + 8 + uint64_t{16} * n_buffers + uint64_t{4} * (n_kernels + uint64_t{n_ops}) +
                   uint64_t{kInstrBytes} * n_code + uint64_t{kOperandBytes} * n_operands;
  if (least > size)
    r.fail(12, strcat("the header's counts (", n_buffers, " buffers, ", n_kernels, " kernels, ", n_ops, " op names, ", n_code,
                      " instructions, ", n_operands, " operands) need at least ", least, " bytes, the program has ", size));

  Program p;
  p.source = source;
  p.name = r.str("program name");
  for (uint32_t i = 0; i < n_buffers; ++i) {
    size_t buffer_at = r.pos();
    BufferDecl b;
    b.name = r.str("buffer name");
    b.hbm_addr = r.u64("buffer address");
    b.type.dtype = r.code(kDTypes, "dtype");
    b.role = r.code(kRoles, "buffer role");
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
    p.buffers.push_back(std::move(b));
  }
  for (uint32_t i = 0; i < n_kernels; ++i) p.kernels.push_back(r.str("kernel name"));
  struct OpRef {
    bool reduce;
    ScalarOp vop;
    ReductionType rop;
  };
  std::vector<OpRef> ops;
  for (uint32_t i = 0; i < n_ops; ++i) {
    size_t at = r.pos();
    std::string name = r.str("op name");
    OpRef o{false, ScalarOp::add, ReductionType::sum};
    if (name.size() > 1 && name[0] == 'r' && parse_reduction_type(name.substr(1), o.rop)) o.reduce = true;
    else if (!parse_scalar_op(name, o.vop)) r.fail(at, "unknown vector op " + printable(name) + " in the op table");
    ops.push_back(o);
  }
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

  size_t code_at = r.pos();
  r.need(size_t{kInstrBytes} * n_code, "the instruction records");
  size_t pool_at = code_at + size_t{kInstrBytes} * n_code;
  r.seek(pool_at);
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
  if (r.pos() != size) r.fail(r.pos(), strcat(size - r.pos(), " unexpected trailing bytes"));

  r.seek(code_at);
  p.code.resize(n_code);
  StructureCheck structure;  // the rules the assembly parser applies too
  for (uint32_t i = 0; i < n_code; ++i) {
    size_t at = r.pos();
    auto bad = [&](size_t field, const std::string& msg) { r.fail(at + field, strcat("instruction ", i, ": ", msg)); };
    Instruction& in = p.code[i];
    uint8_t opcode = r.u8("opcode"), dtype = r.u8("dtype");
    const OpcodeInfo* info = opcode_by_code(opcode);
    if (!info) bad(0, strcat("unknown opcode code ", static_cast<int>(opcode)));
    if (dtype >= std::size(kDTypes)) bad(1, strcat("unknown dtype code ", static_cast<int>(dtype)));
    in.opcode = info->op;
    in.dtype = kDTypes[dtype];
    uint8_t op = r.u8("op index");
    uint8_t nsrc = r.u8("operand count");
    in.kernel = r.i32("kernel");
    in.rows = r.u32("rows");
    in.cols = r.u32("cols");
    in.hbm_addr = r.u64("hbm address");
    in.hbm_rs = r.i32("hbm row stride");
    in.hbm_cs = r.i32("hbm column stride");
    in.lm_addr = r.u32("lm address");
    uint32_t first = r.u32("first operand");
    in.depth = r.u32("depth");
    in.hbm_step = r.i64("hbm step");
    if (in.opcode == Opcode::EslSend) {
      in.token = in.depth;
      in.depth = 0;
      in.peer = in.hbm_rs;
      in.hbm_rs = 0;
    }
    in.lm_step = r.i32("lm step");
    if (in.opcode == Opcode::HostCall) {
      in.host_op = in.depth;
      in.depth = 0;
      if (in.host_op >= static_cast<int64_t>(p.host_ops.size()))
        bad(40, strcat("host.call ", in.host_op, " outside the host-op table (", p.host_ops.size(), " entries)"));
    }
    size_t want_src = 0;
    bool wants_op = in.opcode == Opcode::VxeOp || in.opcode == Opcode::VxeReduce;
    if (wants_op) {
      if (op >= ops.size()) bad(2, strcat("op index ", static_cast<int>(op), " outside the op table (", ops.size(), " entries)"));
      if (ops[op].reduce != (in.opcode == Opcode::VxeReduce))
        bad(2, strcat(opcode_name(in.opcode), " names ", ops[op].reduce ? "a reduction" : "an element-wise op"));
      if (in.opcode == Opcode::VxeOp) in.vop = ops[op].vop;
      else in.rop = ops[op].rop;
      want_src = in.opcode == Opcode::VxeOp ? static_cast<size_t>(scalar_op_arity(in.vop)) : 1;
    } else {
      if (op != kNoOp) bad(2, strcat(opcode_name(in.opcode), " carries op index ", static_cast<int>(op)));
      want_src = in.opcode == Opcode::VxeMov || in.opcode == Opcode::SxeGemm || in.opcode == Opcode::DmaGather ||
                         in.opcode == Opcode::EslSend
                     ? 1
                     : 0;
    }
    if (nsrc != want_src) bad(3, strcat(static_cast<int>(nsrc), " source operands, ", opcode_name(in.opcode), " takes ", want_src));
    if (in.kernel < -1 || in.kernel >= static_cast<int64_t>(n_kernels))
      bad(4, strcat("kernel ", in.kernel, " outside -1 .. ", static_cast<int64_t>(n_kernels) - 1));
    if (in.opcode == Opcode::SyncSignal || in.opcode == Opcode::SyncWait || in.opcode == Opcode::LoopBegin) {
      in.token = in.rows;
      in.peer = in.cols - 1;
      in.rows = in.cols = 0;
    }
    if (static_cast<uint64_t>(first) + nsrc > n_operands)
      bad(36, strcat("operands ", first, " .. ", static_cast<uint64_t>(first) + nsrc, " outside the pool (", n_operands, ")"));
    in.srcs.assign(pool.begin() + first, pool.begin() + first + nsrc);
    if (std::string why = structure.next(in); !why.empty()) bad(0, why);
  }
  size_t open_loop = 0;
  if (std::string why = structure.finish(open_loop); !why.empty())
    r.fail(code_at + size_t{kInstrBytes} * open_loop, strcat("instruction ", open_loop, ": ", why));
  // Last, so a structural error reports where it is rather than only that something is.
  if (checksum_of(data, size) != checksum) r.fail(40, "checksum mismatch: the program is corrupt");
  return p;
}

}  // namespace lpu
