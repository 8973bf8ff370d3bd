#include "isa/layer_template.h"

#include <cctype>
#include <utility>

#include "isa/hbm_layout.h"
#include "isa/program_fields.h"
#include "isa/program_template.h"  // uses_hbm_address
#include "support/error.h"
#include "support/layer_tag.h"

namespace lpu {

std::string LayerTemplate::Name::at(int64_t L, int64_t j) const {
  std::string s = text[0];
  for (size_t k = 0; k < nums.size(); ++k) s += std::to_string(nums[k].at(L, j)) + text[k + 1];
  return s;
}

namespace {

using Affine = LayerTemplate::Affine;
using Name = LayerTemplate::Name;

// Three observations of one number: at 3 layers (a), at 4 layers (b) and, for an item of a
// middle layer, its copy one layer further in the 4-layer program (p; = b otherwise).
Affine affine(int64_t a, int64_t b, int64_t p) { return {b, b - a, p - b}; }

// Splits a name into its text and its numbers (digit runs without leading zeros, so that
// printing them back gives the name).
bool split(const std::string& s, std::vector<std::string>& text, std::vector<int64_t>& nums) {
  text.assign(1, "");
  nums.clear();
  for (size_t i = 0; i < s.size();) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
      text.back() += s[i++];
      continue;
    }
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if ((j - i > 1 && s[i] == '0') || j - i > 15) return false;
    nums.push_back(std::stoll(s.substr(i, j - i)));
    text.emplace_back();
    i = j;
  }
  return true;
}

std::optional<Name> affine_name(const std::string& a, const std::string& b, const std::string& p) {
  std::vector<std::string> ta, tb, tp;
  std::vector<int64_t> na, nb, np;
  if (!split(a, ta, na) || !split(b, tb, nb) || !split(p, tp, np) || ta != tb || tb != tp) return std::nullopt;
  Name n;
  n.text = tb;
  for (size_t k = 0; k < nb.size(); ++k) n.nums.push_back(affine(na[k], nb[k], np[k]));
  return n;
}

// How the items of the 4-layer program's list map to the 3-layer program's: a_of[i] is the
// 3-layer item of 4-layer item i (-1 for the copies of layer 2), partner[i] the layer-2 copy of
// a layer-1 item (i itself otherwise).
struct Alignment {
  std::vector<long> a_of, partner;
  std::vector<size_t> run_start;  // 4-layer items that start a run of layer-1 items
  std::vector<size_t> run_len;
};

bool align(const std::vector<int64_t>& ta, const std::vector<int64_t>& tb, const char* what, Alignment& al,
           std::string& why) {
  al.a_of.assign(tb.size(), -1);
  al.partner.resize(tb.size());
  for (size_t i = 0; i < tb.size(); ++i) al.partner[i] = static_cast<long>(i);
  size_t a = 0;
  for (size_t i = 0; i < tb.size();) {
    if (tb[i] == 1) {
      size_t r = 0;
      while (i + r < tb.size() && tb[i + r] == 1) ++r;
      for (size_t k = 0; k < r; ++k)
        if (i + r + k >= tb.size() || tb[i + r + k] != 2) {
          why = strcat("the ", what, " of layer 1 (", r, " from ", what, " ", i,
                       " of the 4-layer program) are not followed by as many of layer 2");
          return false;
        }
      if (i + 2 * r < tb.size() && tb[i + 2 * r] == 2) {
        why = strcat("the 4-layer program has more ", what, " of layer 2 than of layer 1 after ", what, " ", i);
        return false;
      }
      al.run_start.push_back(i);
      al.run_len.push_back(r);
      for (size_t k = 0; k < r; ++k) {
        if (a >= ta.size() || ta[a] != 1) {
          why = strcat("the ", what, " of layer 1 do not line up between the 3- and 4-layer programs");
          return false;
        }
        al.a_of[i + k] = static_cast<long>(a++);
        al.partner[i + k] = static_cast<long>(i + r + k);
      }
      i += 2 * r;
      continue;
    }
    if (tb[i] == 2 || tb[i] > 3) {
      why = strcat(what, " ", i, " of the 4-layer program belongs to layer ", tb[i], " outside a repeated run");
      return false;
    }
    const int64_t expect = tb[i] == 3 ? 2 : tb[i];
    if (a >= ta.size() || ta[a] != expect) {
      why = strcat("the ", what, " do not line up between the 3- and 4-layer programs at ", what, " ", i);
      return false;
    }
    al.a_of[i] = static_cast<long>(a++);
    ++i;
  }
  if (a != ta.size()) {
    why = strcat("the 3-layer program has ", ta.size() - a, " ", what, " more than the 4-layer one repeats");
    return false;
  }
  return true;
}

template <class Slot>
std::vector<Slot> slots_of(const Alignment& al, size_t n) {
  std::vector<Slot> slots;
  size_t run = 0;
  for (size_t i = 0; i < n;) {
    if (run < al.run_start.size() && al.run_start[run] == i) {
      slots.push_back({i, al.run_len[run], true});
      i += 2 * al.run_len[run++];
    } else {
      slots.push_back({i, 0, false});
      ++i;
    }
  }
  return slots;
}

// Calls f(item, j) for every item of the program at L layers, in order.
template <class Slot, class F>
void for_each_item(const std::vector<Slot>& slots, int64_t L, F f) {
  for (const auto& s : slots) {
    if (!s.middle) {
      f(s.item, 1);
      continue;
    }
    for (int64_t j = 1; j <= L - 2; ++j)
      for (size_t k = 0; k < s.run; ++k) f(s.item + k, j);
  }
}

}  // namespace

std::optional<LayerTemplate> LayerTemplate::make(const Program& three, const Program& four, int64_t hbm_alignment,
                                                 std::string& why) {
  LayerTemplate t;
  t.four_ = four;
  t.alignment_ = hbm_alignment;
  auto pname = affine_name(three.name, four.name, four.name);
  if (!pname) {
    why = "the program names differ";
    return std::nullopt;
  }
  t.program_name_ = *pname;

  Layouts hbm;
  std::vector<int64_t> ka, kb;
  if (!t.make_buffers(three, four, hbm, why) || !t.make_kernels(three, four, ka, kb, why) ||
      !t.make_host_ops(three, four, why) || !t.make_code(three, four, ka, kb, hbm, why))
    return std::nullopt;

  // Both programs it was made from must come back; the 4-layer one checks this code, the
  // 3-layer one that the first and last layers and the rest moved as affinely as assumed.
  for (auto [p, L] : {std::pair<const Program*, int64_t>{&four, 4}, {&three, 3}}) {
    std::string d = t.verify(*p, L);
    if (!d.empty()) {
      why = strcat("at ", L, " layers: ", d);
      return std::nullopt;
    }
  }
  return t;
}

// Buffers, with where the layout rule puts them at 3 and 4 layers (`hbm`).
bool LayerTemplate::make_buffers(const Program& three, const Program& four, Layouts& hbm, std::string& why) {
  std::vector<int64_t> ta, tb;
  for (const auto& b : three.buffers) ta.push_back(layer_of_name(b.name));
  for (const auto& b : four.buffers) tb.push_back(layer_of_name(b.name));
  Alignment bal;
  if (!align(ta, tb, "buffers", bal, why)) return false;
  hbm.leaders_three = region_leaders(three.buffers);
  hbm.leaders_four = region_leaders(four.buffers);
  hbm.three = region_layout(three.buffers, hbm.leaders_three, alignment_);
  hbm.four = region_layout(four.buffers, hbm.leaders_four, alignment_);
  for (auto [p, l] : {std::pair{&three, &hbm.three}, std::pair{&four, &hbm.four}})
    for (size_t i = 0; i < p->buffers.size(); ++i)
      if (p->buffers[i].hbm_addr != (*l)[i]) {
        why = strcat("buffer ", p->buffers[i].name, " is not where the layout rule (isa/hbm_layout.h) puts it");
        return false;
      }
  buffers_.resize(four.buffers.size());
  for (size_t i = 0; i < four.buffers.size(); ++i) {
    if (bal.a_of[i] < 0) continue;  // a copy: described by its layer-1 item
    const BufferDecl &x = three.buffers[static_cast<size_t>(bal.a_of[i])], &y = four.buffers[i],
                     &z = four.buffers[static_cast<size_t>(bal.partner[i])];
    auto n = affine_name(x.name, y.name, z.name);
    if (!n || x.role != y.role || y.role != z.role || x.type.dtype != y.type.dtype || y.type.dtype != z.type.dtype ||
        x.type.shape.size() != y.type.shape.size() || y.type.shape.size() != z.type.shape.size()) {
      why = strcat("buffer ", y.name, " does not repeat (name, role, dtype or rank)");
      return false;
    }
    buffers_[i].name = *n;
    buffers_[i].leader = affine(static_cast<int64_t>(hbm.leaders_three[static_cast<size_t>(bal.a_of[i])]),
                                static_cast<int64_t>(hbm.leaders_four[i]),
                                static_cast<int64_t>(hbm.leaders_four[static_cast<size_t>(bal.partner[i])]));
    for (size_t d = 0; d < y.type.shape.size(); ++d)
      buffers_[i].dims.push_back(affine(x.type.shape[d], y.type.shape[d], z.type.shape[d]));
  }
  buffer_slots_ = slots_of<Slot>(bal, four.buffers.size());

  return true;
}

// Kernels, with the layer of each at 3 and 4 layers (`ka`, `kb`).
bool LayerTemplate::make_kernels(const Program& three, const Program& four, std::vector<int64_t>& ka,
                                 std::vector<int64_t>& kb, std::string& why) {
  for (const auto& k : three.kernels) ka.push_back(layer_of_name(k));
  for (const auto& k : four.kernels) kb.push_back(layer_of_name(k));
  Alignment kal;
  if (!align(ka, kb, "kernels", kal, why)) return false;
  kernels_.resize(four.kernels.size());
  for (size_t i = 0; i < four.kernels.size(); ++i) {
    if (kal.a_of[i] < 0) continue;
    auto n = affine_name(three.kernels[static_cast<size_t>(kal.a_of[i])], four.kernels[i],
                         four.kernels[static_cast<size_t>(kal.partner[i])]);
    if (!n) {
      why = strcat("kernel ", four.kernels[i], " does not repeat");
      return false;
    }
    kernels_[i] = *n;
  }
  kernel_slots_ = slots_of<Slot>(kal, four.kernels.size());

  return true;
}

bool LayerTemplate::make_host_ops(const Program& three, const Program& four, std::string& why) {
  // Host ops (graph breaks), by the layer of the node each runs.
  std::vector<int64_t> ha, hb;
  for (const auto& h : three.host_ops) ha.push_back(layer_of_name(h.node));
  for (const auto& h : four.host_ops) hb.push_back(layer_of_name(h.node));
  Alignment hal;
  if (!align(ha, hb, "host ops", hal, why)) return false;
  host_ops_.resize(four.host_ops.size());
  for (size_t i = 0; i < four.host_ops.size(); ++i) {
    if (hal.a_of[i] < 0) continue;
    const HostOp &x = three.host_ops[static_cast<size_t>(hal.a_of[i])], &y = four.host_ops[i],
                 &z = four.host_ops[static_cast<size_t>(hal.partner[i])];
    HostOpItem& it = host_ops_[i];
    auto node = affine_name(x.node, y.node, z.node), out = affine_name(x.output, y.output, z.output);
    bool ok = node && out && x.op == y.op && y.op == z.op && x.attrs_json == y.attrs_json &&
              y.attrs_json == z.attrs_json && x.inputs.size() == y.inputs.size() && y.inputs.size() == z.inputs.size();
    for (size_t k = 0; ok && k < y.inputs.size(); ++k) {
      auto in = affine_name(x.inputs[k], y.inputs[k], z.inputs[k]);
      ok = in.has_value();
      if (ok) it.inputs.push_back(*in);
    }
    if (!ok) {
      why = strcat("host op ", i, " (", y.op, " of ", y.node, ") does not repeat");
      return false;
    }
    it.node = *node;
    it.output = *out;
  }
  host_op_slots_ = slots_of<Slot>(hal, four.host_ops.size());

  return true;
}

bool LayerTemplate::make_code(const Program& three, const Program& four, const std::vector<int64_t>& ka,
                              const std::vector<int64_t>& kb, const Layouts& hbm, std::string& why) {
  // Instructions: each belongs to its kernel's layer.
  auto tags = [](const Program& p, const std::vector<int64_t>& klayer) {
    std::vector<int64_t> v;
    v.reserve(p.code.size());
    for (const auto& in : p.code)
      v.push_back(in.kernel >= 0 && static_cast<size_t>(in.kernel) < klayer.size()
                      ? klayer[static_cast<size_t>(in.kernel)]
                      : -1);
    return v;
  };
  Alignment cal;
  if (!align(tags(three, ka), tags(four, kb), "instructions", cal, why)) return false;
  const std::vector<uint64_t>&la = hbm.three, &lb = hbm.four;
  const RegionLookup ra(la, hbm.leaders_three), rb(lb, hbm.leaders_four);
  code_.resize(four.code.size());
  for (size_t i = 0; i < four.code.size(); ++i) {
    if (cal.a_of[i] < 0) continue;
    const Instruction &x = three.code[static_cast<size_t>(cal.a_of[i])], &y = four.code[i],
                      &z = four.code[static_cast<size_t>(cal.partner[i])];
    if (!fields::same_structure(x, y) || !fields::same_structure(y, z)) {
      why = strcat(fields::where(four, i), " does not repeat (opcode, operation, dtype or operands)");
      return false;
    }
    InstrItem& it = code_[i];
    it.kernel = affine(x.kernel, y.kernel, z.kernel);
    auto field = [&](int f, size_t src) {
      Affine af = affine(fields::get(x, f, src), fields::get(y, f, src), fields::get(z, f, src));
      if (af.sL || af.sj) it.deltas.push_back({static_cast<uint32_t>(f), static_cast<uint16_t>(src), af.sL, af.sj});
    };
    it.hbm = uses_hbm_address(y.opcode);
    for (int f = 0; f < fields::kInstructionFields; ++f)
      if (!(it.hbm && f == fields::HbmAddr)) field(f, 0);
    for (size_t s = 0; s < y.srcs.size(); ++s)
      if (!y.srcs[s].immediate)
        for (int f : {fields::SrcAddr, fields::SrcRs, fields::SrcCs}) field(f, s);
    if (it.hbm) {
      size_t bx = ra.leader_at(x.hbm_addr), by = rb.leader_at(y.hbm_addr), bz = rb.leader_at(z.hbm_addr);
      it.buffer = affine(static_cast<int64_t>(bx), static_cast<int64_t>(by), static_cast<int64_t>(bz));
      it.offset = affine(static_cast<int64_t>(x.hbm_addr - la[bx]), static_cast<int64_t>(y.hbm_addr - lb[by]),
                         static_cast<int64_t>(z.hbm_addr - lb[bz]));
    }
  }
  code_slots_ = slots_of<Slot>(cal, four.code.size());

  return true;
}

Program LayerTemplate::instantiate(int64_t L) const {
  if (L < 3) throw InternalError(strcat("LayerTemplate: instantiated at ", L, " layers (needs 3 or more)"));
  Program p;
  p.name = program_name_.at(L, 1);
  p.source = four_.source;
  for_each_item(buffer_slots_, L, [&](size_t i, int64_t j) {
    const BufferDecl& b = four_.buffers[i];
    const BufferItem& it = buffers_[i];
    BufferDecl d;
    d.name = it.name.at(L, j);
    d.role = b.role;
    d.type.dtype = b.type.dtype;
    for (const auto& a : it.dims) d.type.shape.push_back(a.at(L, j));
    p.buffers.push_back(std::move(d));
  });
  std::vector<size_t> leaders;
  leaders.reserve(p.buffers.size());
  for_each_item(buffer_slots_, L, [&](size_t i, int64_t j) {
    const int64_t l = buffers_[i].leader.at(L, j);
    if (l < 0 || static_cast<size_t>(l) > leaders.size())
      throw InternalError(strcat("LayerTemplate: buffer ", p.buffers[leaders.size()].name, " has region leader ", l,
                                 " at ", L, " layers"));
    leaders.push_back(static_cast<size_t>(l));
  });
  const std::vector<uint64_t> bases = region_layout(p.buffers, leaders, alignment_);
  for (size_t i = 0; i < p.buffers.size(); ++i) p.buffers[i].hbm_addr = bases[i];
  for_each_item(kernel_slots_, L, [&](size_t i, int64_t j) { p.kernels.push_back(kernels_[i].at(L, j)); });
  for_each_item(host_op_slots_, L, [&](size_t i, int64_t j) {
    HostOp h = four_.host_ops[i];
    const HostOpItem& it = host_ops_[i];
    h.node = it.node.at(L, j);
    h.output = it.output.at(L, j);
    for (size_t k = 0; k < h.inputs.size(); ++k) h.inputs[k] = it.inputs[k].at(L, j);
    p.host_ops.push_back(std::move(h));
  });
  p.code.reserve(four_.code.size() + repeated_instructions() * static_cast<size_t>(std::max<int64_t>(L - 4, 0)));
  for_each_item(code_slots_, L, [&](size_t i, int64_t j) {
    Instruction in = four_.code[i];
    const InstrItem& it = code_[i];
    in.line = 0;
    in.kernel = static_cast<int>(it.kernel.at(L, j));
    for (const auto& d : it.deltas)
      fields::set(in, static_cast<int>(d.field), d.src,
                  fields::get(in, static_cast<int>(d.field), d.src) + d.sL * (L - 4) + d.sj * (j - 1));
    if (it.hbm) {
      int64_t b = it.buffer.at(L, j);
      if (b < 0 || static_cast<size_t>(b) >= bases.size())
        throw InternalError(strcat("LayerTemplate: instruction ", p.code.size(), " points into buffer ", b, " of ",
                                   bases.size(), " at ", L, " layers"));
      in.hbm_addr = bases[static_cast<size_t>(b)] + static_cast<uint64_t>(it.offset.at(L, j));
    }
    p.code.push_back(std::move(in));
  });
  return p;
}

std::string LayerTemplate::verify(const Program& compiled, int64_t layers) const {
  return fields::program_difference(compiled, instantiate(layers));
}

size_t LayerTemplate::repeated_instructions() const {
  size_t n = 0;
  for (const auto& s : code_slots_)
    if (s.middle) n += s.run;
  return n;
}

}  // namespace lpu
