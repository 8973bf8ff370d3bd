#include "codegen/lpu_codegen.h"

#include <algorithm>
#include <map>
#include <set>

#include "handlers/ops_handler.h"
#include "support/error.h"

namespace lpu {
namespace {

constexpr int64_t kLmElem = 4;    // LMU holds fp32
constexpr int64_t kLmAlign = 64;  // allocation granule in local memory

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// A value in local memory: a [rows, cols] view with strides, or an immediate scalar.
// Tile values live in virtual registers (vid >= 0; `addr` is then a byte offset into the
// register) that a linear-scan allocator places in the tile region once the tile's
// instruction sequence is known; hoisted values (vid < 0) have absolute addresses.
struct VReg {
  bool imm = false;
  double value = 0;
  int vid = -1;
  uint64_t addr = 0;
  int64_t rows = 1, cols = 1;
  int64_t rs = 0, cs = 0;
  bool owned = false;  // dense result of an instruction of this node (not an alias)
  Operand operand() const {
    Operand o;
    if (imm) {
      o.immediate = true;
      o.value = value;
      return o;
    }
    o.addr = addr;
    o.rs = rows > 1 ? rs : 0;
    o.cs = cols > 1 ? cs : 0;
    return o;
  }
};

// An instruction whose local-memory addresses still name virtual registers.
struct Pending {
  Instruction in;
  int def = -1;               // vid written (lm_addr)
  std::vector<int> src_vid;   // per source operand, -1 when absolute or immediate
  int store_vid = -1;         // dma.store reads lm_addr from this vid
};

// First-fit allocator over [base, base + limit).
class RegionAllocator {
 public:
  RegionAllocator(uint64_t base, uint64_t limit) : base_(base) { free_[base] = base + limit; }
  uint64_t alloc(uint64_t bytes) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second - it->first < bytes) continue;
      uint64_t a = it->first, e = it->second;
      free_.erase(it);
      if (a + bytes < e) free_[a + bytes] = e;
      peak_ = std::max(peak_, a + bytes - base_);
      return a;
    }
    throw InternalError("codegen: tile region exhausted");
  }
  void release(uint64_t a, uint64_t bytes) {
    uint64_t e = a + bytes;
    auto next = free_.lower_bound(a);
    if (next != free_.end() && next->first == e) {
      e = next->second;
      free_.erase(next);
    }
    auto it = free_.lower_bound(a);
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->second == a) {
        prev->second = e;
        return;
      }
    }
    free_[a] = e;
  }
  uint64_t peak() const { return peak_; }

 private:
  uint64_t base_;
  uint64_t peak_ = 0;
  std::map<uint64_t, uint64_t> free_;  // start -> end
};

// Emits one kernel: hoisted loads once, then one instruction block per tile.
class KernelEmitter {
 public:
  KernelEmitter(const LoopProgram& p, const Kernel& k, int kernel_id, const std::map<std::string, uint64_t>& hbm)
      : p_(p), k_(k), id_(kernel_id), hbm_(hbm) {
    for (int i : k.nodes) in_kernel_.insert(p.nodes[static_cast<size_t>(i)].name);
    hbm_out_.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
  }

  // Emits tile [r0, r0 + rows) with its registers allocated in [base, base + limit).
  // Returns the peak bytes the tile region used.
  int64_t emit_tile(int64_t r0, int64_t rows, uint64_t base, uint64_t limit, std::vector<Instruction>& out);

  // Hoisted (row-invariant) loads live below the tile regions and survive across tiles.
  std::vector<Instruction> hoisted_code;
  int64_t hoisted_bytes = 0;

  // Used by the handler.
  VReg load(const LoopNode& node, const ExprNode& e);
  VReg alloc(int64_t rows, int64_t cols) {
    VReg v;
    v.vid = static_cast<int>(vsize_.size());
    vsize_.push_back(static_cast<uint64_t>(align_up(rows * cols * kLmElem, kLmAlign)));
    v.rows = rows;
    v.cols = cols;
    v.rs = cols;
    v.cs = 1;
    v.owned = true;
    return v;
  }
  // Records a VXE instruction writing `dst` from `srcs`.
  void emit(Instruction in, const VReg& dst, const std::vector<VReg>& srcs) {
    in.kernel = id_;
    Pending pd;
    pd.def = dst.vid;
    for (const auto& s : srcs) {
      in.srcs.push_back(s.operand());
      pd.src_vid.push_back(s.imm ? -1 : s.vid);
    }
    pd.in = std::move(in);
    body_.push_back(std::move(pd));
  }
  int64_t tile_rows() const { return rows_; }

 private:
  const LoopProgram& p_;
  const Kernel& k_;
  int id_;
  const std::map<std::string, uint64_t>& hbm_;
  std::set<std::string> in_kernel_, hbm_out_;
  std::map<std::string, VReg> hoisted_;  // key -> persistent vreg
  // Per tile:
  int64_t r0_ = 0, rows_ = 0;
  std::vector<uint64_t> vsize_;
  std::map<std::string, VReg> tile_loads_;
  std::map<std::string, VReg> values_;  // node -> dense value in this tile
  std::vector<Pending> loads_, body_;
};

class LpuAsmHandler final : public OpsHandler<VReg> {
 public:
  LpuAsmHandler(KernelEmitter& k, const LoopNode& n) : k_(k), n_(n) {}

  VReg load(const ExprNode& e) override { return k_.load(n_, e); }
  VReg constant(double value, DType) override {
    VReg v;
    v.imm = true;
    v.value = value;
    return v;
  }
  VReg index_expr(const Index& index) override {
    throw InputError(strcat("node ", n_.name, ": index expression ", index.str(),
                            " used as a value is not supported by the LPU vector engine"));
  }
  VReg to_dtype(VReg x, DType) override { return x; }  // the LMU computes in fp32
  VReg call(ScalarOp op, const std::vector<VReg>& args, DType) override {
    bool all_imm = std::all_of(args.begin(), args.end(), [](const VReg& v) { return v.imm; });
    if (all_imm) {  // constant folding
      float a[3] = {0, 0, 0};
      for (size_t i = 0; i < args.size(); ++i) a[i] = static_cast<float>(args[i].value);
      return constant(eval_scalar_op(op, a), DType::f32);
    }
    int64_t rows = 1, cols = 1;
    for (const auto& v : args)
      if (!v.imm) {
        rows = std::max(rows, v.rows);
        cols = std::max(cols, v.cols);
      }
    VReg dst = k_.alloc(rows, cols);
    Instruction in;
    in.opcode = Opcode::VxeOp;
    in.vop = op;
    in.rows = rows;
    in.cols = cols;
    k_.emit(in, dst, args);
    return dst;
  }
  VReg reduction(ReductionType type, VReg v) override {
    int64_t width = n_.cols();
    if (v.imm || v.cols != width || v.rows != k_.tile_rows()) v = expand(v, k_.tile_rows(), width);
    VReg dst = k_.alloc(v.rows, 1);
    Instruction in;
    in.opcode = Opcode::VxeReduce;
    in.rop = type;
    in.rows = v.rows;
    in.cols = width;
    k_.emit(in, dst, {v});
    return dst;
  }
  // Copies a (possibly broadcast or immediate) value into a dense [rows, cols] register.
  VReg expand(const VReg& v, int64_t rows, int64_t cols) {
    VReg dst = k_.alloc(rows, cols);
    Instruction in;
    in.opcode = Opcode::VxeMov;
    in.rows = rows;
    in.cols = cols;
    k_.emit(in, dst, {v});
    return dst;
  }

 private:
  KernelEmitter& k_;
  const LoopNode& n_;
};

VReg KernelEmitter::load(const LoopNode& node, const ExprNode& e) {
  AccessPattern ap = analyze_access(node, e.index);
  if (!ap.ok)
    throw InputError(strcat("kernel ", k_.name, ", node ", node.name, ": load ", e.buffer, "[", e.index.str(),
                            "] is not a 2-D strided access the LPU DMA can do (", ap.why_not, ")"));
  int64_t ncols = ap.col_stride == 0 ? 1 : node.cols();
  if (in_kernel_.count(e.buffer)) {
    // Produced earlier in this tile: read it from local memory, row-aligned (checked by fusion).
    const VReg& pv = values_.at(e.buffer);
    VReg v = pv;
    v.addr = pv.addr + static_cast<uint64_t>(ap.base * kLmElem);
    v.cols = ncols;
    v.cs = ap.col_stride;
    v.owned = false;
    return v;
  }
  const Buffer& buf = p_.buffers.at(e.buffer);
  int64_t eb = dtype_bytes(buf.type.dtype);
  uint64_t hbase = hbm_.at(e.buffer);
  std::string key = strcat(e.buffer, "@", ap.base, ",", ap.row_stride, ",", ap.col_stride, ",", ncols);
  auto check_bounds = [&](int64_t first_row, int64_t nrows) {
    int64_t last = ap.base + ap.row_stride * (first_row + nrows - 1) + ap.col_stride * (ncols - 1);
    if (ap.base + ap.row_stride * first_row < 0 || last >= buf.type.numel())
      throw InternalError(strcat("codegen: load of ", e.buffer, " out of bounds in ", node.name));
  };
  Instruction in;
  in.opcode = Opcode::DmaLoad;
  in.dtype = buf.type.dtype;
  in.cols = ncols;
  in.hbm_cs = ap.col_stride;
  in.kernel = id_;
  if (ap.row_stride == 0) {
    if (auto it = hoisted_.find(key); it != hoisted_.end()) return it->second;
    check_bounds(0, 1);
    VReg v;
    v.addr = static_cast<uint64_t>(hoisted_bytes);
    v.rows = 1;
    v.cols = ncols;
    v.rs = 0;
    v.cs = 1;
    hoisted_bytes += align_up(ncols * kLmElem, kLmAlign);
    in.rows = 1;
    in.lm_addr = v.addr;
    in.hbm_addr = hbase + static_cast<uint64_t>(ap.base * eb);
    hoisted_code.push_back(in);
    hoisted_[key] = v;
    return v;
  }
  if (auto it = tile_loads_.find(key); it != tile_loads_.end()) return it->second;
  check_bounds(r0_, rows_);
  VReg v = alloc(rows_, ncols);
  v.owned = false;
  in.rows = rows_;
  in.hbm_addr = hbase + static_cast<uint64_t>((ap.base + ap.row_stride * r0_) * eb);
  in.hbm_rs = ap.row_stride;
  Pending pd;
  pd.in = in;
  pd.def = v.vid;
  loads_.push_back(pd);
  tile_loads_[key] = v;
  return v;
}

int64_t KernelEmitter::emit_tile(int64_t r0, int64_t rows, uint64_t base, uint64_t limit, std::vector<Instruction>& out) {
  r0_ = r0;
  rows_ = rows;
  vsize_.clear();
  tile_loads_.clear();
  values_.clear();
  loads_.clear();
  body_.clear();
  for (int idx : k_.nodes) {
    const LoopNode& n = p_.nodes[static_cast<size_t>(idx)];
    LpuAsmHandler h(*this, n);
    VReg v = evaluate_node<VReg>(n, h);
    if (!(v.owned && v.rows == rows && v.cols == n.out_cols())) v = h.expand(v, rows, n.out_cols());
    values_[n.name] = v;
    if (hbm_out_.count(n.name)) {  // store right after the value is complete, so it can die early
      const Buffer& buf = p_.buffers.at(n.name);
      AccessPattern sp = analyze_access(n, n.store_index);
      if (!sp.ok) throw InternalError(strcat("codegen: store of ", n.name, ": ", sp.why_not));
      Pending st;
      st.in.opcode = Opcode::DmaStore;
      st.in.dtype = buf.type.dtype;
      st.in.rows = rows;
      st.in.cols = n.out_cols();
      st.in.hbm_addr = hbm_.at(n.name) + static_cast<uint64_t>((sp.base + sp.row_stride * r0) * dtype_bytes(buf.type.dtype));
      st.in.hbm_rs = sp.row_stride;
      st.in.hbm_cs = n.out_cols() > 1 ? sp.col_stride : 0;
      st.in.kernel = id_;
      st.store_vid = v.vid;
      body_.push_back(st);
    }
  }
  // Linear scan over the tile's sequence: loads first (prefetch), then compute and stores.
  std::vector<Pending*> seq;
  for (auto& pd : loads_) seq.push_back(&pd);
  for (auto& pd : body_) seq.push_back(&pd);
  std::vector<size_t> last_use(vsize_.size(), 0);
  for (size_t i = 0; i < seq.size(); ++i) {
    for (int v : seq[i]->src_vid)
      if (v >= 0) last_use[static_cast<size_t>(v)] = i;
    if (seq[i]->store_vid >= 0) last_use[static_cast<size_t>(seq[i]->store_vid)] = i;
    if (seq[i]->def >= 0) last_use[static_cast<size_t>(seq[i]->def)] = std::max(last_use[static_cast<size_t>(seq[i]->def)], i);
  }
  std::vector<std::vector<int>> dies_after(seq.size());
  for (size_t v = 0; v < vsize_.size(); ++v) dies_after[last_use[v]].push_back(static_cast<int>(v));
  RegionAllocator ra(base, limit);
  std::vector<uint64_t> addr(vsize_.size(), 0);
  for (size_t i = 0; i < seq.size(); ++i) {
    Pending& pd = *seq[i];
    if (pd.def >= 0) {
      addr[static_cast<size_t>(pd.def)] = ra.alloc(vsize_[static_cast<size_t>(pd.def)]);
      pd.in.lm_addr = addr[static_cast<size_t>(pd.def)];
    }
    for (size_t k = 0; k < pd.src_vid.size(); ++k)
      if (pd.src_vid[k] >= 0) pd.in.srcs[k].addr += addr[static_cast<size_t>(pd.src_vid[k])];
    if (pd.store_vid >= 0) pd.in.lm_addr = addr[static_cast<size_t>(pd.store_vid)];
    for (int v : dies_after[i]) ra.release(addr[static_cast<size_t>(v)], vsize_[static_cast<size_t>(v)]);
    out.push_back(pd.in);
  }
  return static_cast<int64_t>(ra.peak());
}

}  // namespace

int64_t kernel_min_lmu_bytes(const LoopProgram& p, const Kernel& k, bool double_buffer) {
  std::map<std::string, uint64_t> hbm;  // addresses do not matter for sizing
  for (const auto& [name, b] : p.buffers) hbm[name] = 0;
  KernelEmitter e(p, k, 0, hbm);
  std::vector<Instruction> scratch;
  int64_t one = e.emit_tile(0, 1, 0, UINT64_MAX / 2, scratch);
  return align_up(e.hoisted_bytes, kLmAlign) + align_up(one, kLmAlign) * (double_buffer ? 2 : 1);
}

CodegenResult generate_lpu_program(const LoopProgram& p, const Schedule& s, const CodegenOptions& opts) {
  CodegenResult res;
  Program& prog = res.program;
  prog.name = p.name;

  // HBM memory map: weights, inputs, then every buffer some kernel writes to HBM.
  std::map<std::string, uint64_t> hbm;
  uint64_t next = 0;
  auto place = [&](const std::string& name) {
    if (hbm.count(name)) return;
    const Buffer& b = p.buffers.at(name);
    hbm[name] = next;
    prog.buffers.push_back({name, next, b.type, b.role});
    next += static_cast<uint64_t>(align_up(b.bytes(), opts.hbm_alignment));
  };
  for (const auto& n : p.inputs)
    if (p.buffers.at(n).role == BufferRole::Weight) place(n);
  for (const auto& n : p.inputs)
    if (p.buffers.at(n).role != BufferRole::Weight) place(n);
  for (const auto& k : s.kernels)
    for (const auto& o : k.hbm_outputs) place(o);

  int64_t nbuf = opts.double_buffer ? 2 : 1;
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& k = s.kernels[ki];
    prog.kernels.push_back(k.name);
    int id = static_cast<int>(ki);
    // Dry runs find the hoisted footprint and how tile bytes grow with rows.
    auto tile_bytes = [&](int64_t rows, int64_t* hoisted) {
      KernelEmitter e(p, k, id, hbm);
      std::vector<Instruction> scratch;
      int64_t b = e.emit_tile(0, rows, 0, UINT64_MAX / 2, scratch);
      if (hoisted) *hoisted = e.hoisted_bytes;
      return b;
    };
    int64_t hoisted = 0;
    int64_t one = tile_bytes(1, &hoisted);
    int64_t avail = opts.lmu_bytes - align_up(hoisted, kLmAlign);
    if (one * nbuf > avail)
      throw InputError(strcat("kernel ", k.name, " needs ", align_up(hoisted, kLmAlign) + one * nbuf,
                              " bytes of local memory for one row per tile", opts.double_buffer ? " (double-buffered)" : "",
                              "; the config has lmu.capacity_kib = ", opts.lmu_bytes / 1024, " (", opts.lmu_bytes, " bytes)"));
    int64_t two = k.rows > 1 ? tile_bytes(2, nullptr) : one;
    int64_t per_row = std::max<int64_t>(two - one, 1);
    int64_t rows = std::min<int64_t>(k.rows, 1 + (avail / nbuf - one) / per_row);
    if (opts.max_tile_rows > 0) rows = std::min(rows, opts.max_tile_rows);
    rows = std::max<int64_t>(rows, 1);
    while (rows > 1 && tile_bytes(rows, nullptr) * nbuf > avail) --rows;
    int64_t tb = align_up(tile_bytes(rows, nullptr), kLmAlign);

    KernelEmitter e(p, k, id, hbm);
    std::vector<Instruction> body;
    int64_t tiles = 0;
    uint64_t region0 = static_cast<uint64_t>(align_up(hoisted, kLmAlign));
    for (int64_t r0 = 0; r0 < k.rows; r0 += rows, ++tiles) {
      uint64_t base = region0 + static_cast<uint64_t>((tiles % nbuf) * tb);
      e.emit_tile(r0, std::min(rows, k.rows - r0), base, static_cast<uint64_t>(tb), body);
    }
    prog.code.insert(prog.code.end(), e.hoisted_code.begin(), e.hoisted_code.end());
    prog.code.insert(prog.code.end(), body.begin(), body.end());
    res.tiling.push_back({k.name, rows, tiles, hoisted, tb});
  }
  Instruction halt;
  halt.opcode = Opcode::Halt;
  prog.code.push_back(halt);
  return res;
}

}  // namespace lpu
