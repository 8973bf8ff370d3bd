#include "isa/program_template.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "isa/encoding.h"
#include "isa/hbm_layout.h"
#include "isa/program_fields.h"
#include "support/error.h"

namespace lpu {

bool uses_hbm_address(Opcode op) {
  // Its HBM operand (roles from the opcode table) names a place in a buffer.
  return (opcode_info(op).roles & (role::HbmTileRead | role::HbmTileWrite | role::HbmWeights | role::HbmTableRow)) != 0;
}

using fields::get;
using fields::set;
using fields::where;

std::optional<ProgramTemplate> ProgramTemplate::make(const Program& a, int64_t sa, const Program& b, int64_t sb,
                                                     int64_t hbm_alignment, std::string& why) {
  if (sb <= sa) throw InternalError("ProgramTemplate::make: needs sa < sb");
  const int64_t ds = sb - sa;
  ProgramTemplate t;
  t.base_ = a;
  t.s0_ = t.lo_ = sa;
  t.hi_ = sb;
  t.alignment_ = hbm_alignment;
  if (a.name != b.name || a.kernels != b.kernels || a.host_ops != b.host_ops) {
    why = "the kernels or host ops differ";
    return std::nullopt;
  }
  if (a.buffers.size() != b.buffers.size()) {
    why = strcat(a.buffers.size(), " buffers vs ", b.buffers.size());
    return std::nullopt;
  }
  t.leaders_ = region_leaders(a.buffers);
  if (region_leaders(b.buffers) != t.leaders_) {
    why = "the buffers share HBM regions differently";
    return std::nullopt;
  }
  std::vector<uint64_t> la = region_layout(a.buffers, t.leaders_, hbm_alignment),
                        lb = region_layout(b.buffers, t.leaders_, hbm_alignment);
  const RegionLookup ra(la, t.leaders_), rb(lb, t.leaders_);
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    const BufferDecl &x = a.buffers[i], &y = b.buffers[i];
    if (x.name != y.name || x.role != y.role || x.type.dtype != y.type.dtype ||
        x.type.shape.size() != y.type.shape.size()) {
      why = strcat("buffer ", i, " (", x.name, ") differs in name, role, dtype or rank");
      return std::nullopt;
    }
    if (x.hbm_addr != la[i] || y.hbm_addr != lb[i]) {
      why = strcat("buffer ", x.name, " is not where the layout rule (isa/hbm_layout.h) puts it");
      return std::nullopt;
    }
    for (size_t d = 0; d < x.type.shape.size(); ++d) {
      int64_t diff = y.type.shape[d] - x.type.shape[d];
      if (diff % ds) {
        why = strcat("buffer ", x.name, " dimension ", d, " is not affine in the symbol");
        return std::nullopt;
      }
      if (diff) t.buffer_dims_.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(d), diff / ds});
    }
  }
  if (a.code.size() != b.code.size()) {
    why = strcat(a.code.size(), " instructions vs ", b.code.size());
    return std::nullopt;
  }
  for (size_t i = 0; i < a.code.size(); ++i) {
    const Instruction &x = a.code[i], &y = b.code[i];
    if (!fields::same_structure(x, y) || x.kernel != y.kernel) {
      why = strcat(where(a, i), ": opcode, operation, dtype, kernel, operand count or an immediate differs");
      return std::nullopt;
    }
    auto affine = [&](int f, size_t src) {
      int64_t d = get(y, f, src) - get(x, f, src);
      if (d % ds) {
        why = strcat(where(a, i), ": ", fields::field_name(f), " ", get(x, f, src), " -> ", get(y, f, src),
                     " is not affine in the symbol");
        return false;
      }
      if (d)
        t.deltas_.push_back(
            {static_cast<uint32_t>(i), static_cast<fields::Field>(f), static_cast<uint16_t>(src), d / ds});
      return true;
    };
    for (int f = 0; f < fields::kInstructionFields; ++f)  // the HBM address below
      if (f != fields::HbmAddr && !affine(f, 0)) return std::nullopt;
    for (size_t s = 0; s < x.srcs.size(); ++s)
      if (!x.srcs[s].immediate)
        for (int f : {fields::SrcAddr, fields::SrcRs, fields::SrcCs})
          if (!affine(f, s)) return std::nullopt;
    if (uses_hbm_address(x.opcode)) {
      size_t ba = ra.leader_at(x.hbm_addr), bb = rb.leader_at(y.hbm_addr);
      if (ba != bb) {
        why =
            strcat(where(a, i), ": its HBM address moves from buffer ", a.buffers[ba].name, " to ", b.buffers[bb].name);
        return std::nullopt;
      }
      int64_t oa = static_cast<int64_t>(x.hbm_addr - la[ba]), ob = static_cast<int64_t>(y.hbm_addr - lb[bb]);
      if ((ob - oa) % ds) {
        why = strcat(where(a, i), ": its offset into ", a.buffers[ba].name, " is not affine in the symbol");
        return std::nullopt;
      }
      t.hbm_refs_.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(ba), oa, (ob - oa) / ds});
    } else if (!affine(fields::HbmAddr, 0)) {
      return std::nullopt;
    }
  }
  std::string vwhy;
  if (!t.verify(b, sb, vwhy)) throw InternalError("ProgramTemplate: does not reproduce its own probe: " + vwhy);
  return t;
}

Program ProgramTemplate::instantiate(int64_t s) const {
  Program p = base_;
  const int64_t d = s - s0_;
  for (const auto& bd : buffer_dims_) p.buffers[bd.buffer].type.shape[bd.dim] += bd.slope * d;
  std::vector<uint64_t> bases = region_layout(p.buffers, leaders_, alignment_);
  for (size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].hbm_addr = bases[i];
  for (const auto& dl : deltas_) {
    Instruction& in = p.code[dl.instr];
    set(in, dl.field, dl.src, get(in, dl.field, dl.src) + dl.slope * d);
  }
  for (const auto& r : hbm_refs_)
    p.code[r.instr].hbm_addr = bases[r.buffer] + static_cast<uint64_t>(r.off0 + r.slope * d);
  return p;
}

void ProgramTemplate::instantiate_into(Program& p, int64_t s) const {
  if (p.code.size() != base_.code.size() || p.buffers.size() != base_.buffers.size())
    throw InternalError("ProgramTemplate::instantiate_into: the program is not an instantiation of this template");
  const int64_t d = s - s0_;
  for (const auto& bd : buffer_dims_)
    p.buffers[bd.buffer].type.shape[bd.dim] = base_.buffers[bd.buffer].type.shape[bd.dim] + bd.slope * d;
  std::vector<uint64_t> bases = region_layout(p.buffers, leaders_, alignment_);
  for (size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].hbm_addr = bases[i];
  for (const auto& dl : deltas_)  // each (instruction, field, operand) once: make() found them so
    set(p.code[dl.instr], dl.field, dl.src, get(base_.code[dl.instr], dl.field, dl.src) + dl.slope * d);
  for (const auto& r : hbm_refs_)
    p.code[r.instr].hbm_addr = bases[r.buffer] + static_cast<uint64_t>(r.off0 + r.slope * d);
}

namespace {
constexpr char kTemplateMagic[4] = {'L', 'P', 'U', 'T'};
constexpr uint32_t kTemplateVersion = 1;

void put(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
template <typename T>
void put(std::string& out, T v) {
  static_assert(std::is_integral_v<T>);
  put(out, &v, sizeof v);  // host byte order: the bytes go to a process of this same binary
}

class TemplateReader {
 public:
  explicit TemplateReader(const std::string& b) : b_(b) {}
  template <typename T>
  T get(const char* what) {
    if (b_.size() - pos_ < sizeof(T)) fail(strcat("truncated at byte ", pos_, " (", what, ")"));
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  size_t pos() const { return pos_; }
  [[noreturn]] static void fail(const std::string& msg) { throw InputError("program template: " + msg); }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};
}  // namespace

std::string ProgramTemplate::encode() const {
  std::string out;
  put(out, kTemplateMagic, sizeof kTemplateMagic);
  put(out, kTemplateVersion);
  for (int64_t v : {s0_, lo_, hi_, alignment_}) put(out, v);
  put(out, static_cast<uint32_t>(deltas_.size()));
  put(out, static_cast<uint32_t>(hbm_refs_.size()));
  put(out, static_cast<uint32_t>(buffer_dims_.size()));
  for (const auto& d : deltas_) {
    put(out, d.instr);
    put(out, static_cast<uint8_t>(d.field));
    put(out, d.src);
    put(out, d.slope);
  }
  for (const auto& r : hbm_refs_) {
    put(out, r.instr);
    put(out, r.buffer);
    put(out, r.off0);
    put(out, r.slope);
  }
  for (const auto& b : buffer_dims_) {
    put(out, b.buffer);
    put(out, b.dim);
    put(out, b.slope);
  }
  std::vector<uint8_t> base;
  encode_program_into(base_, base, Checksum::Skip);
  put(out, base.data(), base.size());
  return out;
}

ProgramTemplate ProgramTemplate::decode(const std::string& bytes) {
  TemplateReader r(bytes);
  if (bytes.size() < sizeof kTemplateMagic || std::memcmp(bytes.data(), kTemplateMagic, sizeof kTemplateMagic) != 0)
    TemplateReader::fail("not a program template (no LPUT magic)");
  for (size_t i = 0; i < sizeof kTemplateMagic; ++i) r.get<char>("magic");
  if (uint32_t v = r.get<uint32_t>("version"); v != kTemplateVersion)
    TemplateReader::fail(strcat("version ", v, ", this build reads ", kTemplateVersion));
  ProgramTemplate t;
  t.s0_ = r.get<int64_t>("s0");
  t.lo_ = r.get<int64_t>("lo");
  t.hi_ = r.get<int64_t>("hi");
  t.alignment_ = r.get<int64_t>("alignment");
  const uint32_t nd = r.get<uint32_t>("delta count"), nr = r.get<uint32_t>("reference count"),
                 nb = r.get<uint32_t>("dimension count");
  const size_t records = size_t{nd} * 15 + size_t{nr} * 24 + size_t{nb} * 16;
  if (bytes.size() - r.pos() < records) TemplateReader::fail("truncated: the counts need more bytes than there are");
  for (uint32_t i = 0; i < nd; ++i) {
    Delta d{};
    d.instr = r.get<uint32_t>("delta instruction");
    d.field = static_cast<fields::Field>(r.get<uint8_t>("delta field"));
    d.src = r.get<uint16_t>("delta operand");
    d.slope = r.get<int64_t>("delta slope");
    t.deltas_.push_back(d);
  }
  for (uint32_t i = 0; i < nr; ++i) {
    HbmRef h{};
    h.instr = r.get<uint32_t>("reference instruction");
    h.buffer = r.get<uint32_t>("reference buffer");
    h.off0 = r.get<int64_t>("reference offset");
    h.slope = r.get<int64_t>("reference slope");
    t.hbm_refs_.push_back(h);
  }
  for (uint32_t i = 0; i < nb; ++i) {
    DimDelta b{};
    b.buffer = r.get<uint32_t>("dimension buffer");
    b.dim = r.get<uint32_t>("dimension index");
    b.slope = r.get<int64_t>("dimension slope");
    t.buffer_dims_.push_back(b);
  }
  t.base_ = decode_program(reinterpret_cast<const uint8_t*>(bytes.data()) + r.pos(), bytes.size() - r.pos(),
                           "program template base", Checksum::Skip);
  t.leaders_ = region_leaders(t.base_.buffers);
  // Every index within the base, so that instantiating cannot write outside it.
  const Program& b = t.base_;
  for (const auto& d : t.deltas_) {
    if (d.instr >= b.code.size() || d.field > fields::SrcCs)
      TemplateReader::fail(strcat("a field change names instruction ", d.instr, " field ", int{d.field}, " (",
                                  b.code.size(), " instructions)"));
    if (d.field >= fields::kInstructionFields &&
        (d.src >= b.code[d.instr].srcs.size() || b.code[d.instr].srcs[d.src].immediate))
      TemplateReader::fail(strcat("a field change names operand ", d.src, " of instruction ", d.instr,
                                  ", which has no such address operand"));
  }
  for (const auto& h : t.hbm_refs_)
    if (h.instr >= b.code.size() || h.buffer >= b.buffers.size())
      TemplateReader::fail(strcat("an HBM reference names instruction ", h.instr, " and buffer ", h.buffer));
  for (const auto& d : t.buffer_dims_)
    if (d.buffer >= b.buffers.size() || d.dim >= b.buffers[d.buffer].type.shape.size())
      TemplateReader::fail(strcat("a dimension change names buffer ", d.buffer, " dimension ", d.dim));
  if (t.alignment_ < 1) TemplateReader::fail(strcat("HBM alignment ", t.alignment_));
  return t;
}

bool ProgramTemplate::same_symbolic_part(const ProgramTemplate& o) const {
  return s0_ == o.s0_ && alignment_ == o.alignment_ && deltas_ == o.deltas_ && hbm_refs_ == o.hbm_refs_ &&
         buffer_dims_ == o.buffer_dims_;
}

bool ProgramTemplate::verify(const Program& p, int64_t s, std::string& why) {
  why = fields::program_difference(p, instantiate(s));
  if (!why.empty()) return false;
  if (s > hi_) hi_ = s;
  if (s < lo_) lo_ = s;
  return true;
}

}  // namespace lpu
