#include "codegen/lpu_codegen.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/collective.h"
#include "codegen/column_split.h"
#include "codegen/region_allocator.h"
#include "codegen/gathered_weights.h"
#include "codegen/tile_footprint.h"
#include "codegen/tile_plan.h"
#include "codegen/tile_skew.h"
#include "handlers/ops_handler.h"
#include "graph/attrs_json.h"
#include "graph/collective.h"
#include "support/error.h"

namespace lpu {
namespace {

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
  int def = -1;               // vid written (lm_addr = its address + def_offset)
  uint64_t def_offset = 0;    // several instructions may fill parts of one register
  std::vector<int> src_vid;   // per source operand, -1 when absolute or immediate
  int store_vid = -1;         // dma.store reads lm_addr from this vid (+ store_offset)
  uint64_t store_offset = 0;
};

// Rows [r0, r0 + rows) of an access split into runs whose HBM offsets advance by one
// stride: one DMA each (a single run when the rows are affine).
struct RowRun {
  int64_t row;     // first row, relative to r0
  int64_t count;
  int64_t first;   // element offset of the first row
  int64_t stride;  // elements between consecutive rows of the run (0 for one row)
};
std::vector<RowRun> row_runs(const AccessPattern& ap, int64_t r0, int64_t rows) {
  std::vector<RowRun> runs;
  for (int64_t r = 0; r < rows;) {
    RowRun run{r, 1, ap.row_offset(r0 + r), 0};
    if (r + 1 < rows) {
      run.stride = ap.row_offset(r0 + r + 1) - run.first;
      run.count = 2;
      while (r + run.count < rows && ap.row_offset(r0 + r + run.count) - run.first == run.stride * run.count) ++run.count;
    }
    runs.push_back(run);
    r += run.count;
  }
  return runs;
}

// A weight stored packed (graph/types.h, Quant) is read only through the SXE's input path,
// which dequantises it (a matmul's streamed B, sxe.gemm or sxe.gemm_gather): any other reader
// would see blocks of codes and scales, not elements.
void refuse_packed(const Buffer& b, const LoopNode& node, const char* how) {
  if (b.quant.on())
    throw InputError(strcat("node ", node.name, ": reads ", b.name, ", a weight stored packed (", quant_str(b.quant), "), by ",
                            how, "; only a matmul's streamed weights B may be packed"));
}

// The byte offset of element `e` of `b` where an sxe.gemm's B starts: packed B must start a
// block (the SXE counts blocks from its B address).
uint64_t packed_offset(const Buffer& b, const LoopNode& node, int64_t e) {
  if (!b.quant.on()) return static_cast<uint64_t>(e * dtype_bytes(b.type.dtype));
  if (e % b.quant.group)
    throw InputError(strcat("node ", node.name, ": streams ", b.name, " (", quant_str(b.quant), ") from element ", e,
                            ", which does not start a group"));
  return static_cast<uint64_t>(b.quant.block_offset(e));
}

// Emits one kernel: hoisted loads once, then one instruction block per tile.
// With a column split (column_split.h), a tile is rows [r0, r0 + rows) x columns [c0, c0 + cw)
// of the split nodes; the other nodes compute their whole row in every tile.
class KernelEmitter {
 public:
  KernelEmitter(const LoopProgram& p, const Kernel& k, int kernel_id, const std::map<std::string, uint64_t>& hbm,
                const ColumnSplit* columns = nullptr)
      : p_(p), k_(k), id_(kernel_id), hbm_(hbm) {
    for (int i : k.nodes) in_kernel_.insert(p.nodes[static_cast<size_t>(i)].out());
    hbm_out_.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
    if (columns)
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (columns->split[i]) split_.insert(&p.nodes[static_cast<size_t>(k.nodes[i])]);
  }

  // Emits tile [r0, r0 + rows) x [c0, c0 + cw) (cw < 0: whole rows) with its registers
  // allocated in [base, base + limit). Returns the peak bytes the tile region used.
  int64_t emit_tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw, uint64_t base, uint64_t limit,
                    std::vector<Instruction>& out);

  // Hoisted (row-invariant) loads live below the tile regions and survive across tiles.
  std::vector<Instruction> hoisted_code;
  int64_t hoisted_bytes = 0;

  // Used by the handler: a split node loads the tile's column window.
  VReg load(const LoopNode& node, const ExprNode& e) {
    bool split = split_.count(&node) > 0;
    return load(node, e, node.col_vars(), node.col_sizes(), split, split ? c0_ : 0, split ? cw_ : node.cols());
  }
  // Loads with the given column variables (a Matmul's A operand uses {r0}, {K}), in a window
  // of columns [c0, c0 + cw) when `window` (a split node under column tiling).
  VReg load(const LoopNode& node, const ExprNode& e, const std::vector<LoopVar>& cols,
            const std::vector<int64_t>& col_sizes, bool window = false, int64_t c0 = 0, int64_t cw = 0);
  // The columns of its result a node computes in this tile: all of its row unless it is split.
  int64_t col0(const LoopNode& n) const { return split_.count(&n) ? c0_ : 0; }
  int64_t col_width(const LoopNode& n) const { return split_.count(&n) ? cw_ : n.out_cols(); }
  // Emits the matrix-engine instructions of a Matmul node for this tile.
  VReg matmul(const LoopNode& node);
  // Emits the indices' load and a dma.gather of table rows for a Gather node.
  VReg gather(const LoopNode& node);
  // A matmul streaming an elided gather's slabs from its table: one sxe.gemm_gather.
  VReg matmul_gathered(const LoopNode& node, const GatheredWeights& gw, const VReg& a, int64_t K, int64_t N,
                       int64_t c0);
  const std::optional<GatheredWeights>& gathered(const LoopNode& n) {
    auto it = gathered_.find(&n);
    if (it == gathered_.end()) it = gathered_.emplace(&n, gathered_weights(p_, n)).first;
    return it->second;
  }
  VReg alloc(int64_t rows, int64_t cols) {
    VReg v;
    v.vid = static_cast<int>(vsize_.size());
    vsize_.push_back(lm_register_bytes(rows, cols));
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
  // HBM base of a buffer; 0 in sizing runs, which pass an empty map.
  uint64_t hbm_base(const std::string& b) const {
    auto it = hbm_.find(b);
    return it == hbm_.end() ? 0 : it->second;
  }
  std::map<std::string, VReg> hoisted_;  // key -> persistent vreg
  std::set<const LoopNode*> split_;      // nodes computing a column window (column tiling)
  std::map<const LoopNode*, std::optional<GatheredWeights>> gathered_;  // per matmul, decided once
  // Per tile:
  int64_t r0_ = 0, rows_ = 0, c0_ = 0, cw_ = 0;
  std::vector<uint64_t> vsize_;
  std::map<std::string, VReg> tile_loads_;
  std::map<std::string, VReg> values_;  // node -> dense value in this tile
  std::vector<Pending> loads_, body_;

  // A load from HBM being planned: its access, its window and the DMA template.
  struct HbmLoad {
    const LoopNode& node;
    const ExprNode& e;
    const AccessPattern& ap;
    int64_t width, c0, cw, ncols, coff;
    bool windowed;
    const Buffer& buf;
    int64_t eb;
    uint64_t hbase;
    Instruction in;
    // Elements [off, off + col_stride * (count - 1)] (count: ncols when < 0) inside the buffer.
    void check_bounds(int64_t off, int64_t count = -1) const {
      int64_t last = off + ap.col_stride * ((count < 0 ? ncols : count) - 1);
      if (off < 0 || last >= buf.type.numel() || last < 0)
        throw InternalError(strcat("codegen: load of ", e.buffer, "[", e.index.str(), "] out of bounds in ", node.name));
    }
  };
  VReg load_blocks(const HbmLoad& l);
  VReg load_hoisted(HbmLoad& l);
  VReg load_rows(const HbmLoad& l);
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
    if (args.size() == 2 && divides_by_row_value(op, args[1].imm, args[1].cols, cols)) {
      VReg r = call(ScalarOp::reciprocal, {args[1]}, DType::f32);
      return call(ScalarOp::mul, {args[0], r}, DType::f32);
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

VReg KernelEmitter::load(const LoopNode& node, const ExprNode& e, const std::vector<LoopVar>& cols,
                         const std::vector<int64_t>& col_sizes, bool window, int64_t c0, int64_t cw) {
  AccessPattern ap = analyze_access(node, e.index, cols, col_sizes);
  if (!ap.ok)
    throw InputError(strcat("kernel ", k_.name, ", node ", node.name, ": load ", e.buffer, "[", e.index.str(),
                            "] is not a strided access the LPU DMA can do (", ap.why_not, ")"));
  int64_t width = numel(col_sizes);
  if (!window) cw = width;
  // A window of a column-varying access (column tiling): columns [c0, c0 + cw) of the row.
  // Decided by the node, not by cw < width, so that every tile width of a plan has the same
  // hoisted operands (plan_columns sizes the tile region below them).
  bool windowed = window && ap.col_stride != 0;
  int64_t ncols = ap.col_stride == 0 ? 1 : cw;
  int64_t coff = ap.col_stride * c0;  // element offset of the window
  if (in_kernel_.count(e.buffer)) {
    // Produced earlier in this tile: read it from local memory, row-aligned (checked by fusion;
    // a split consumer reads a split producer column by column: column_split.cpp).
    const VReg& pv = values_.at(e.buffer);
    VReg v = pv;
    v.addr = pv.addr + static_cast<uint64_t>(ap.base * kLmElem);
    v.cols = ncols;
    v.cs = ap.col_stride;
    v.owned = false;
    return v;
  }
  const Buffer& buf = p_.buffers.at(e.buffer);
  refuse_packed(buf, node, "a DMA load");
  Instruction in;
  in.opcode = Opcode::DmaLoad;
  in.dtype = buf.type.dtype;
  in.cols = ncols;
  in.hbm_cs = ap.col_stride;
  in.kernel = id_;
  HbmLoad l{node, e, ap, width, c0, cw, ncols, coff, windowed, buf, dtype_bytes(buf.type.dtype), hbm_base(e.buffer), in};
  if (ap.col_split && ap.col_split < width) return load_blocks(l);
  if (ap.row_affine && ap.row_stride == 0 && !windowed) return load_hoisted(l);
  return load_rows(l);
}

// Two-level columns (e.g. [heads, hd] merged after a permute): one DMA per row and block
// (a column window starts and ends on block boundaries: ColumnSplit::granule).
VReg KernelEmitter::load_blocks(const HbmLoad& l) {
  const AccessPattern& ap = l.ap;
  int64_t D = ap.col_split;
  if (l.width % D != 0 || l.c0 % D != 0 || l.cw % D != 0)
    throw InternalError("codegen: column blocks do not tile the row in " + l.node.name);
  std::string key = strcat(l.e.buffer, "@", l.e.index.str(), "/", l.node.rows());
  if (auto it = tile_loads_.find(key); it != tile_loads_.end()) return it->second;
  VReg v = alloc(rows_, l.cw);
  v.owned = false;
  for (int64_t r = 0; r < rows_; ++r)
    for (int64_t j = l.c0 / D; j < (l.c0 + l.cw) / D; ++j) {
      int64_t first = ap.row_offset(r0_ + r) + j * ap.col_outer_stride;
      l.check_bounds(first, D);
      Pending pd;
      pd.in = l.in;
      pd.in.rows = 1;
      pd.in.cols = D;
      pd.in.hbm_addr = l.hbase + static_cast<uint64_t>(first * l.eb);
      pd.def = v.vid;
      pd.def_offset = static_cast<uint64_t>((r * l.cw + j * D - l.c0) * kLmElem);
      loads_.push_back(pd);
    }
  tile_loads_[key] = v;
  return v;
}

// Row-invariant: loaded once, kept resident below the tile regions.
VReg KernelEmitter::load_hoisted(HbmLoad& l) {
  const AccessPattern& ap = l.ap;
  std::string key = strcat(l.e.buffer, "@", ap.base, ",", ap.col_stride, ",", l.ncols);
  if (auto it = hoisted_.find(key); it != hoisted_.end()) return it->second;
  l.check_bounds(ap.base);
  VReg v;
  v.addr = static_cast<uint64_t>(hoisted_bytes);
  v.rows = 1;
  v.cols = l.ncols;
  v.rs = 0;
  v.cs = 1;
  hoisted_bytes += align_up(l.ncols * kLmElem, kLmAlign);
  l.in.rows = 1;
  l.in.lm_addr = v.addr;
  l.in.hbm_addr = l.hbase + static_cast<uint64_t>(ap.base * l.eb);
  hoisted_code.push_back(l.in);
  hoisted_[key] = v;
  return v;
}

// Loaded with the tile. A row-invariant window (a bias under column tiling) changes from
// column tile to column tile: loaded with the tile, one row broadcast to all.
VReg KernelEmitter::load_rows(const HbmLoad& l) {
  const AccessPattern& ap = l.ap;
  int64_t load_rows = ap.row_affine && ap.row_stride == 0 ? 1 : rows_;
  std::string key =
      strcat(l.e.buffer, "@", l.e.index.str(), "/", ap.col_stride, ",", l.ncols, "/", l.node.rows(), "+", l.coff);
  if (ap.row_affine)
    key = strcat(l.e.buffer, "@", ap.base, ",", ap.row_stride, ",", ap.col_stride, ",", l.ncols, "+", l.coff);
  if (auto it = tile_loads_.find(key); it != tile_loads_.end()) return it->second;
  VReg v = alloc(load_rows, l.ncols);
  v.owned = false;
  // One DMA per run of rows whose HBM offsets advance by one stride (all rows when affine).
  for (const RowRun& run : row_runs(ap, r0_, load_rows)) {
    l.check_bounds(run.first + l.coff);
    l.check_bounds(run.first + l.coff + run.stride * (run.count - 1));
    Pending pd;
    pd.in = l.in;
    pd.in.rows = run.count;
    pd.in.hbm_addr = l.hbase + static_cast<uint64_t>((run.first + l.coff) * l.eb);
    pd.in.hbm_rs = run.count > 1 ? run.stride : 0;
    pd.def = v.vid;
    pd.def_offset = static_cast<uint64_t>(run.row * l.ncols * kLmElem);
    loads_.push_back(pd);
  }
  tile_loads_[key] = v;
  return v;
}

VReg KernelEmitter::matmul(const LoopNode& node) {
  const Expr& a_load = node.body->args.at(0);
  const Expr& b_load = node.body->args.at(1);
  if (a_load->kind != ExprKind::Load || b_load->kind != ExprKind::Load)
    throw InternalError("codegen: matmul body is not mul(load, load) in " + node.name);
  // Under column tiling N is the tile's window of columns [c0, c0 + N): B's columns of the tile only.
  int64_t K = node.reduction_ranges.at(0), N = col_width(node), c0 = col0(node);
  const LoopVar kvar = LoopVar::reduction(0);
  VReg a = load(node, *a_load, {kvar}, {K});
  if (a.imm || a.cols != K) throw InputError(strcat("node ", node.name, ": matmul A operand must vary along K"));
  if (const auto& gw = gathered(node)) return matmul_gathered(node, *gw, a, K, N, c0);
  // B streams from HBM: element (k, n) of row rho's matrix at b_base(rho) + ks*k + ns*n.
  const LoopVar nvar = node.column_var();
  const Index& bi = b_load->index;
  Index b_row = bi.substitute({{kvar, Index::constant(0)}, {nvar, Index::constant(0)}});
  Index b_cols = bi - b_row;
  for (const auto& v : b_cols.variables())
    if (v != kvar && v != nvar)
      throw InputError(strcat("node ", node.name, ": B operand index ", bi.str(), " mixes rows with K/N"));
  if (!b_cols.is_affine())
    throw InputError(strcat("node ", node.name, ": B operand index ", bi.str(), " is not strided in K and N"));
  int64_t ks = b_cols.coefficient(kvar), ns = b_cols.coefficient(nvar);
  AccessPattern rows_of_b;  // reuse row_offset() to evaluate b_row per flattened row
  rows_of_b.row_part = b_row;
  rows_of_b.row_vars = node.row_vars();
  rows_of_b.row_sizes = node.row_sizes();
  const Buffer& bbuf = p_.buffers.at(b_load->buffer);
  if (in_kernel_.count(b_load->buffer))
    throw InternalError("codegen: matmul B operand produced inside its kernel: " + node.name);
  VReg dst = alloc(rows_, N);
  int64_t r = 0;
  while (r < rows_) {  // rows sharing one B matrix form one instruction (GQA groups, GEMM rows)
    int64_t base = rows_of_b.row_offset(r0_ + r);
    int64_t n = 1;
    while (r + n < rows_ && rows_of_b.row_offset(r0_ + r + n) == base) ++n;
    base += ns * c0;
    int64_t last = base + ks * (K - 1) + ns * (N - 1);
    if (base < 0 || last >= bbuf.type.numel())
      throw InternalError(strcat("codegen: matmul B of ", node.name, " out of bounds"));
    Instruction in;
    in.opcode = Opcode::SxeGemm;
    in.dtype = bbuf.type.dtype;
    in.rows = n;
    in.depth = K;
    in.cols = N;
    in.hbm_addr = hbm_base(b_load->buffer) + packed_offset(bbuf, node, base);
    in.quant = bbuf.quant;
    in.hbm_rs = ks;
    in.hbm_cs = ns;
    in.kernel = id_;
    VReg arow = a;
    if (a.rows > 1) arow.addr = a.addr + static_cast<uint64_t>(r * a.rs * kLmElem);
    in.srcs.push_back(arow.operand());
    if (n > 1 && a.rows == 1) in.srcs[0].rs = 0;
    Pending pd;
    pd.in = in;
    pd.def = dst.vid;
    pd.def_offset = static_cast<uint64_t>(r * N * kLmElem);
    pd.src_vid.push_back(a.vid);
    body_.push_back(pd);
    r += n;
  }
  return dst;
}

VReg KernelEmitter::matmul_gathered(const LoopNode& node, const GatheredWeights& gw, const VReg& a, int64_t K,
                                    int64_t N, int64_t c0) {
  VReg idx = load(node, *gw.row_index);
  if (idx.imm || idx.cols != 1) throw InternalError("codegen: gathered-weight row indices of " + node.name + " are not one per row");
  const std::string& table = gw.gather->gather_table;
  const Buffer& tbuf = p_.buffers.at(table);
  const DType dt = tbuf.type.dtype;
  if (tbuf.quant.on() && gw.slab % tbuf.quant.group)
    throw InputError(strcat("node ", node.name, ": packed weights ", table, " (", quant_str(tbuf.quant), ") picked in slabs of ",
                            gw.slab, " elements, not a whole number of groups"));
  VReg dst = alloc(rows_, N);
  Instruction in;
  in.opcode = Opcode::SxeGemmGather;
  in.dtype = dt;
  in.rows = rows_;
  in.depth = K;
  in.cols = N;
  in.hbm_addr = hbm_base(table) + packed_offset(tbuf, node, gw.offset + gw.ns * c0);
  in.quant = tbuf.quant;
  in.hbm_rs = gw.ks;
  in.hbm_cs = gw.ns;
  in.kernel = id_;
  in.srcs.push_back(a.operand());
  if (rows_ > 1 && a.rows == 1) in.srcs[0].rs = 0;
  in.srcs.push_back(idx.operand());
  Operand slab;
  slab.immediate = true;
  slab.value = static_cast<double>(gw.slab);
  in.srcs.push_back(slab);
  Pending pd;
  pd.in = in;
  pd.def = dst.vid;
  pd.src_vid = {a.vid, idx.vid, -1};
  body_.push_back(pd);
  return dst;
}

VReg KernelEmitter::gather(const LoopNode& node) {
  VReg idx = load(node, *node.gather_index);
  const Buffer& table = p_.buffers.at(node.gather_table);
  refuse_packed(table, node, "a row gather");
  // Under column tiling the tile's window [c0, c0 + D) of each picked table row.
  int64_t D = col_width(node), c0 = col0(node);
  VReg dst = alloc(rows_, D);
  Instruction in;
  in.opcode = Opcode::DmaGather;
  in.dtype = table.type.dtype;
  in.rows = rows_;
  in.cols = D;
  in.hbm_addr = hbm_base(node.gather_table) + static_cast<uint64_t>(c0 * dtype_bytes(table.type.dtype));
  in.hbm_rs = node.cols();
  in.hbm_cs = 1;
  in.kernel = id_;
  VReg i = idx;
  if (i.cols != 1) throw InternalError("codegen: gather indices of " + node.name + " are not one per row");
  in.srcs.push_back(i.operand());
  if (i.rows > 1) in.srcs[0].rs = i.rs;
  Pending pd;
  pd.in = in;
  pd.def = dst.vid;
  pd.src_vid.push_back(idx.vid);
  body_.push_back(pd);
  return dst;
}

int64_t KernelEmitter::emit_tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw, uint64_t base, uint64_t limit,
                                 std::vector<Instruction>& out) {
  r0_ = r0;
  rows_ = rows;
  c0_ = c0;
  cw_ = cw;
  vsize_.clear();
  tile_loads_.clear();
  values_.clear();
  loads_.clear();
  body_.clear();
  for (int idx : k_.nodes) {
    const LoopNode& n = p_.nodes[static_cast<size_t>(idx)];
    LpuAsmHandler h(*this, n);
    VReg v = n.kind == LoopKind::Matmul ? matmul(n) : n.kind == LoopKind::Gather ? gather(n) : evaluate_node<VReg>(n, h);
    int64_t ncols = col_width(n), nc0 = col0(n);
    if (!(v.owned && v.rows == rows && v.cols == ncols)) v = h.expand(v, rows, ncols);
    values_[n.out()] = v;
    // A node computing its whole row in every column tile stores it from the first one only.
    bool store = hbm_out_.count(n.out()) && (split_.count(&n) || c0 == 0);
    if (store) {  // store right after the value is complete, so it can die early
      const Buffer& buf = p_.buffers.at(n.out());
      AccessPattern sp = analyze_access(n, n.store_index);
      if (!sp.ok) throw InternalError(strcat("codegen: store of ", n.name, ": ", sp.why_not));
      Pending st;
      st.in.opcode = Opcode::DmaStore;
      st.in.dtype = buf.type.dtype;
      st.in.rows = rows;
      st.in.cols = ncols;
      st.in.hbm_cs = ncols > 1 ? sp.col_stride : 0;
      st.in.kernel = id_;
      st.store_vid = v.vid;
      int64_t eb = dtype_bytes(buf.type.dtype);
      if (sp.col_split && sp.col_split < n.out_cols()) {  // two-level columns: a DMA per row and block
        int64_t D = sp.col_split;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = nc0 / D; j < (nc0 + ncols) / D; ++j) {
            Pending part = st;
            part.in.rows = 1;
            part.in.cols = D;
            part.in.hbm_addr = hbm_base(n.out()) + static_cast<uint64_t>((sp.row_offset(r0 + r) + j * sp.col_outer_stride) * eb);
            part.in.hbm_rs = 0;
            part.store_offset = static_cast<uint64_t>((r * ncols + j * D - nc0) * kLmElem);
            body_.push_back(part);
          }
        continue;
      }
      // One DMA per run of rows whose HBM offsets advance by one stride.
      for (const RowRun& run : row_runs(sp, r0, rows)) {
        Pending part = st;
        part.in.rows = run.count;
        part.in.hbm_addr = hbm_base(n.out()) + static_cast<uint64_t>((run.first + sp.col_stride * nc0) * eb);
        part.in.hbm_rs = run.count > 1 ? run.stride : 0;
        part.store_offset = static_cast<uint64_t>(run.row * ncols * kLmElem);
        body_.push_back(part);
      }
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
  std::vector<bool> placed(vsize_.size(), false);
  for (size_t i = 0; i < seq.size(); ++i) {
    Pending& pd = *seq[i];
    if (pd.def >= 0) {
      size_t d = static_cast<size_t>(pd.def);
      if (!placed[d]) {  // the first instruction writing a register allocates it
        addr[d] = ra.alloc(vsize_[d]);
        placed[d] = true;
      }
      pd.in.lm_addr = addr[d] + pd.def_offset;
    }
    for (size_t k = 0; k < pd.src_vid.size(); ++k)
      if (pd.src_vid[k] >= 0) pd.in.srcs[k].addr += addr[static_cast<size_t>(pd.src_vid[k])];
    if (pd.store_vid >= 0) pd.in.lm_addr = addr[static_cast<size_t>(pd.store_vid)] + pd.store_offset;
    for (int v : dies_after[i]) ra.release(addr[static_cast<size_t>(v)], vsize_[static_cast<size_t>(v)]);
    out.push_back(pd.in);
  }
  return static_cast<int64_t>(ra.peak());
}

}  // namespace

// Folds tiles into a loop: groups of `group` consecutive tiles (one per local-memory buffer)
// that differ from the first group only by HBM addresses advancing linearly become one loop
// body with hbm steps; the tiles after the longest such run stay unrolled.
std::vector<Instruction> fold_tiles(const std::vector<std::vector<Instruction>>& tiles, size_t group, int kernel) {
  std::vector<Instruction> out;
  auto flat = [&](size_t g) {
    std::vector<const Instruction*> v;
    for (size_t t = g * group; t < (g + 1) * group && t < tiles.size(); ++t)
      for (const auto& in : tiles[t]) v.push_back(&in);
    return v;
  };
  size_t groups = tiles.size() / group;
  size_t n = 0;
  std::vector<int64_t> step;
  if (groups >= 2) {
    auto g0 = flat(0), g1 = flat(1);
    bool same = g0.size() == g1.size();
    for (size_t i = 0; same && i < g0.size(); ++i) {
      Instruction b = *g1[i];
      step.push_back(static_cast<int64_t>(b.hbm_addr) - static_cast<int64_t>(g0[i]->hbm_addr));
      b.hbm_addr = g0[i]->hbm_addr;
      same = b.same_as(*g0[i]);
    }
    if (same) {
      n = 2;
      for (; n < groups; ++n) {
        auto gj = flat(n);
        bool ok = gj.size() == g0.size();
        for (size_t i = 0; ok && i < g0.size(); ++i) {
          Instruction b = *gj[i];
          ok = static_cast<int64_t>(b.hbm_addr) ==
               static_cast<int64_t>(g0[i]->hbm_addr) + step[i] * static_cast<int64_t>(n);
          b.hbm_addr = g0[i]->hbm_addr;
          ok = ok && b.same_as(*g0[i]);
        }
        if (!ok) break;
      }
    }
  }
  size_t unrolled_from = 0;
  if (n >= 2) {
    Instruction begin;
    begin.opcode = Opcode::LoopBegin;
    begin.token = static_cast<int64_t>(n);
    begin.kernel = kernel;
    out.push_back(begin);
    auto g0 = flat(0);
    for (size_t i = 0; i < g0.size(); ++i) {
      Instruction in = *g0[i];
      in.hbm_step = step[i];
      out.push_back(in);
    }
    Instruction end;
    end.opcode = Opcode::LoopEnd;
    end.kernel = kernel;
    out.push_back(end);
    unrolled_from = n * group;
  }
  for (size_t t = unrolled_from; t < tiles.size(); ++t) out.insert(out.end(), tiles[t].begin(), tiles[t].end());
  return out;
}

namespace {
// A kernel's tiles in emission order: skewed into stages (tile_skew.h) where that applies,
// folded into loops when opts.fold_loops (the skew's prologue and epilogue steps outside the
// loop, its steady steps folded like tiles).
std::vector<Instruction> order_tiles(std::vector<std::vector<Instruction>> tiles, int64_t nbuf, int id,
                                     const CodegenOptions& opts) {
  if (opts.interleave_rows)
    for (auto& tile : tiles) tile = interleave_row_groups(tile);
  SkewedTiles sk;
  if (opts.skew_tiles) {
    sk = skew_tiles(std::move(tiles), nbuf);
  } else {
    sk.steps = std::move(tiles);
  }
  std::vector<Instruction> body;
  auto emit = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) body.insert(body.end(), sk.steps[i].begin(), sk.steps[i].end());
  };
  const size_t steady_end = sk.steps.size() - sk.epilogue;
  if (!opts.fold_loops) {
    emit(0, sk.steps.size());
    return body;
  }
  emit(0, sk.prologue);
  std::vector<std::vector<Instruction>> steady(sk.steps.begin() + static_cast<std::ptrdiff_t>(sk.prologue),
                                               sk.steps.begin() + static_cast<std::ptrdiff_t>(steady_end));
  std::vector<Instruction> folded = fold_tiles(steady, static_cast<size_t>(nbuf), id);
  body.insert(body.end(), folded.begin(), folded.end());
  emit(steady_end, sk.steps.size());
  return body;
}
}  // namespace

EmittedTile measure_emitted_tile(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, int64_t r0,
                                 int64_t rows, int64_t c0, int64_t cw) {
  static const std::map<std::string, uint64_t> no_addresses;  // addresses do not change sizes
  KernelEmitter e(p, k, 0, no_addresses, columns);
  std::vector<Instruction> code;
  EmittedTile t;
  t.peak_bytes = e.emit_tile(r0, rows, c0, cw, 0, UINT64_MAX / 2, code);
  for (const auto& in : code) t.hbm_bytes += instruction_hbm_bytes(in);
  t.hoisted_bytes = e.hoisted_bytes;
  for (const auto& in : e.hoisted_code) t.hoisted_hbm_bytes += instruction_hbm_bytes(in);
  return t;
}

KernelCost kernel_cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts, bool with_traffic,
                       TileAccessCache* cache) {
  KernelCost c;
  if (is_opaque(p.nodes[static_cast<size_t>(k.nodes.at(0))].kind)) {  // a graph break or collective: never fused
    c.hbm_bytes = untiled_hbm_bytes(p, k);
    return c;
  }
  std::unique_ptr<TileFootprintAnalysis> fa;
  TilePlan plan = plan_tiles(p, k, opts, !with_traffic, &fa, cache);
  c.lmu_bytes = plan.min_lmu_bytes;
  c.fits = plan.configured;
  c.col_tiled = plan.col_tiled;
  if (!plan.configured && !plan.columns.ok) c.no_columns = plan.columns.why_not;
  if (!plan.fits || !with_traffic) return c;
  c.tile_rows = plan.rows;
  auto tile_bytes = [&](int64_t r0, int64_t rows, int64_t j) {
    auto [c0, cw] = column_window(plan, j);
    return fa->hbm_bytes(r0, rows, c0, cw);
  };
  // A row of column tiles: the first (it also stores the unsplit nodes) and the last (narrower)
  // exactly, those between alike but for their HBM addresses.
  auto row_bytes = [&](int64_t r0, int64_t rows) {
    int64_t nc = plan.col_tiles, b = tile_bytes(r0, rows, 0);
    if (nc > 2) b += (nc - 2) * tile_bytes(r0, rows, 1);
    if (nc > 1) b += tile_bytes(r0, rows, nc - 1);
    return b;
  };
  // Tiles differ only in their HBM addresses, except where rows sharing a matmul B block
  // (attention groups) or row runs fall differently: the first tiles are counted exactly and
  // the rest of the full tiles extrapolated from their mean; the last tile is exact.
  constexpr int64_t kExactTiles = 8;
  int64_t full = k.rows / plan.rows, rem = k.rows % plan.rows;
  int64_t exact = std::min(full, kExactTiles), exact_bytes = 0;
  for (int64_t t = 0; t < exact; ++t) exact_bytes += row_bytes(t * plan.rows, plan.rows);
  c.hbm_bytes = exact_bytes + (exact ? (full - exact) * exact_bytes / exact : 0);
  if (rem) c.hbm_bytes += row_bytes(full * plan.rows, rem);
  c.hbm_bytes += fa->hoisted_hbm_bytes();
  return c;
}

namespace {
// The tiling plan_tiles decides for kernel `k` (a graph break: none); an InputError when no
// tiling fits local memory.
KernelTiling tile_kernel(const LoopProgram& p, const Kernel& k, const CodegenOptions& opts,
                         TileAccessCache* cache = nullptr) {
  const LoopNode& first = p.nodes[static_cast<size_t>(k.nodes.at(0))];
  if (is_opaque(first.kind)) return {k.name, 0, 0, 0, 0, 0, 0, 0};
  TilePlan plan = plan_tiles(p, k, opts, false, nullptr, cache);
  if (!plan.fits) {
    std::string cols = plan.columns.ok ? strcat("even in column tiles of ", plan.columns.granule, " columns it needs ",
                                                plan.min_lmu_bytes)
                                       : "it cannot be tiled in columns: " + plan.columns.why_not;
    throw InputError(strcat("kernel ", k.name, " needs ", plan.one_row_bytes,
                            " bytes of local memory for one row per tile, even single-buffered",
                            "; the config has lmu.capacity_kib = ", opts.lmu_bytes / 1024, " (", opts.lmu_bytes,
                            " bytes); ", cols));
  }
  int64_t tiles = (k.rows + plan.rows - 1) / plan.rows * plan.col_tiles;
  return {k.name,         plan.rows,   tiles, plan.hoisted, plan.tile_bytes, plan.col_tiled ? plan.cols : 0,
          plan.col_tiles, plan.buffers};
}

// The host-op entry of a graph break. The host reads and writes tensors in their dtype: a
// packed weight is the SXE's only.
HostOp host_op_of(const LoopProgram& p, const LoopNode& n) {
  for (const auto& in : n.host_inputs)
    if (p.buffers.at(in).quant.on())
      throw InputError(strcat("node ", n.origin, " (", n.host_op, ", a graph break) reads ", in, ", a weight stored packed (",
                              quant_str(p.buffers.at(in).quant), "): only the SXE reads packed weights (a matmul's streamed B)"));
  HostOp h;
  h.op = n.host_op;
  h.node = n.origin;
  h.inputs = n.host_inputs;
  h.output = n.out();
  h.attrs_json = attrs_to_json(n.host_attrs);
  return h;
}
}  // namespace

std::vector<KernelTiling> plan_kernel_tiling(const LoopProgram& p, const Schedule& s, const CodegenOptions& opts,
                                             TileAccessCache* cache) {
  std::vector<KernelTiling> tiling;
  TileAccessCache own;
  for (const Kernel& k : s.kernels) tiling.push_back(tile_kernel(p, k, opts, cache ? cache : &own));
  return tiling;
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
    prog.buffers.push_back({name, next, b.type, b.role, b.quant});
    next += static_cast<uint64_t>(align_up(b.bytes(), opts.hbm_alignment));
  };
  for (const auto& n : p.inputs)
    if (p.buffers.at(n).role == BufferRole::Weight) place(n);
  for (const auto& n : p.inputs)
    if (p.buffers.at(n).role != BufferRole::Weight) place(n);
  // An elided gather (codegen/gathered_weights.h) runs nowhere: its kernel emits nothing and its
  // output needs no HBM.
  auto elided = [&](const Kernel& k) {
    const LoopNode& n = p.nodes[static_cast<size_t>(k.nodes.at(0))];
    return k.nodes.size() == 1 && n.kind == LoopKind::Gather && gather_is_elided(p, n);
  };
  for (const auto& k : s.kernels)
    if (!elided(k))
      for (const auto& o : k.hbm_outputs) place(o);

  // Collectives (tensor parallelism) receive above the local memory the kernels get.
  const CollectivePlacement collectives = place_collectives(p, static_cast<uint64_t>(opts.lmu_bytes), opts.lmu_bytes + opts.collective_lmu_bytes);
  int64_t collectives_seen = 0;
  for (size_t ki = 0; ki < s.kernels.size(); ++ki) {
    const Kernel& k = s.kernels[ki];
    prog.kernels.push_back(k.name);
    int id = static_cast<int>(ki);
    const LoopNode& first = p.nodes[static_cast<size_t>(k.nodes.at(0))];
    if (first.kind == LoopKind::Collective) {  // over the ESL: codegen/collective.h
      auto code = emit_collective(p, first, id, collectives_seen++, hbm.at(first.host_inputs.at(0)), hbm.at(first.out()),
                                  collectives);
      prog.code.insert(prog.code.end(), code.begin(), code.end());
      res.tiling.push_back({k.name, 0, 0, 0, 0, 0, 0, 0});
      continue;
    }
    if (elided(k)) {
      res.tiling.push_back({k.name, 0, 0, 0, 0, 0, 0, 0});
      continue;
    }
    if (first.kind == LoopKind::Host) {  // a graph break: one host.call, no tiles
      if (k.nodes.size() != 1) throw InternalError("codegen: host node " + first.name + " fused into a kernel");
      Instruction call;
      call.opcode = Opcode::HostCall;
      call.host_op = static_cast<int64_t>(prog.host_ops.size());
      call.kernel = id;
      prog.host_ops.push_back(host_op_of(p, first));
      prog.code.push_back(call);
      res.tiling.push_back({k.name, 0, 0, 0, 0, 0, 0, 0});
      continue;
    }
    // The tiling recorded in the schedule (the driver plans it after scheduling), else planned here.
    const KernelTiling kt = k.tiling ? *k.tiling : tile_kernel(p, k, opts);
    if (kt.kernel != k.name || kt.tile_rows <= 0)
      throw InternalError(strcat("codegen: kernel ", k.name, " has no tiling of its own (", kt.kernel, ")"));
    TilePlan plan = plan_from_tiling(p, k, kt);
    int64_t rows = plan.rows, hoisted = plan.hoisted, tb = plan.tile_bytes, nbuf = plan.buffers;
    KernelEmitter e(p, k, id, hbm, plan.col_tiled ? &plan.columns : nullptr);
    std::vector<std::vector<Instruction>> tile_code;
    int64_t tiles = 0;
    uint64_t region0 = static_cast<uint64_t>(align_up(hoisted, kLmAlign));
    // Double-buffered regions start at fixed halves of the local memory above the hoisted
    // operands, not at multiples of the tile's size: a tile's size grows with the context in
    // steps of the allocation granule, and an address that follows it would not be affine in
    // the context (generate's symbolic programs, isa/program_template.h, need it to be).
    const int64_t region_stride =
        nbuf > 1 ? std::max(tb, (opts.lmu_bytes - static_cast<int64_t>(region0)) / nbuf / kLmAlign * kLmAlign) : tb;
    // Row tiles in order, each as its column tiles left to right (one tile without column tiling).
    for (int64_t r0 = 0; r0 < k.rows; r0 += rows)
      for (int64_t j = 0; j < plan.col_tiles; ++j, ++tiles) {
        uint64_t base = region0 + static_cast<uint64_t>((tiles % nbuf) * region_stride);
        auto [c0, cw] = column_window(plan, j);
        tile_code.emplace_back();
        e.emit_tile(r0, std::min(rows, k.rows - r0), c0, cw, base, static_cast<uint64_t>(tb), tile_code.back());
      }
    prog.code.insert(prog.code.end(), e.hoisted_code.begin(), e.hoisted_code.end());
    std::vector<Instruction> body = order_tiles(std::move(tile_code), nbuf, id, opts);
    prog.code.insert(prog.code.end(), body.begin(), body.end());
    res.tiling.push_back({k.name, rows, tiles, hoisted, tb, plan.col_tiled ? plan.cols : 0, plan.col_tiles, nbuf});
  }
  Instruction halt;
  halt.opcode = Opcode::Halt;
  prog.code.push_back(halt);
  return res;
}

}  // namespace lpu
