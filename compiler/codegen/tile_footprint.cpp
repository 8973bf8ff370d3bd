#include "codegen/tile_footprint.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <unordered_map>

#include "codegen/region_allocator.h"
#include "codegen/tile_plan.h"
#include "handlers/ops_handler.h"
#include "support/error.h"

namespace lpu {

void tile_region_exhausted() { throw InternalError("codegen: tile region exhausted"); }

namespace {

// A value of the tile: an immediate, a hoisted (resident) row, or a tile register `vid`
// of [rows, cols] (KernelEmitter's VReg without addresses and strides).
struct FVal {
  bool imm = false;
  int vid = -1;
  int64_t rows = 1, cols = 1;
  bool owned = false;  // dense result of an instruction of this node (not an alias)
};

// An instruction (or a run of instructions of one register: a load's DMAs, a matmul's row
// groups, a store's parts) as the register allocator sees it.
struct Step {
  int def = -1;
  std::array<int, 3> src{-1, -1, -1};
  int store = -1;
};

// What a load is, analysed once per kernel.
struct PreparedLoad {
  AccessPattern ap;
  int64_t width = 0;  // columns of the access (numel of its column sizes)
  bool in_kernel = false;
  int64_t eb = 0;
  // The emitter's load keys (which loads of a tile share a register) up to their per-tile
  // parts: a two-level load's whole key or a hoisted load's up to its columns; a tile load's.
  std::string block_key, tile_key;
};

struct PreparedMatmul {
  int64_t K = 0, ks = 0, ns = 0, eb = 0;
  AccessPattern rows_of_b;  // row_offset() evaluates B's row part per flattened row
};

struct PreparedStore {
  AccessPattern sp;
  int64_t eb = 0;
};

}  // namespace

struct TileFootprintAnalysis::Impl {
  const LoopProgram& p;
  const Kernel& k;
  std::set<const LoopNode*> split;
  std::set<std::string> in_kernel, hbm_out;
  std::map<std::pair<const LoopNode*, const ExprNode*>, PreparedLoad> loads_prepared;
  std::map<const LoopNode*, PreparedMatmul> matmuls;
  std::map<const LoopNode*, PreparedStore> stores;
  // Resident across tiles (as in the emitter, which keeps them for the whole kernel).
  std::set<std::string> hoisted;
  int64_t hoisted_bytes = 0, hoisted_hbm = 0;
  bool walked = false;
  int64_t granule = 0;
  // Per tile:
  bool with_hbm = false;
  int64_t r0 = 0, rows = 0, c0 = 0, cw = 0, hbm = 0;
  std::vector<uint64_t> vsize;
  std::map<std::string, FVal> tile_loads;
  std::map<std::string, FVal> values;
  std::vector<Step> load_steps, body;

  Impl(const LoopProgram& prog, const Kernel& kernel, const ColumnSplit* columns) : p(prog), k(kernel) {
    for (int i : k.nodes) in_kernel.insert(p.nodes[static_cast<size_t>(i)].out());
    hbm_out.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
    if (columns) {
      granule = columns->granule;
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (columns->split[i]) split.insert(&p.nodes[static_cast<size_t>(k.nodes[i])]);
    }
  }

  int64_t col0(const LoopNode& n) const { return split.count(&n) ? c0 : 0; }
  int64_t col_width(const LoopNode& n) const { return split.count(&n) ? cw : n.out_cols(); }

  FVal alloc(int64_t r, int64_t c) {
    FVal v;
    v.vid = static_cast<int>(vsize.size());
    vsize.push_back(static_cast<uint64_t>(align_up(r * c * kLmElem, kLmAlign)));
    v.rows = r;
    v.cols = c;
    v.owned = true;
    return v;
  }
  void step(std::vector<Step>& seq, int def, std::initializer_list<FVal> srcs = {}, int store = -1) {
    Step s;
    s.def = def;
    size_t i = 0;
    for (const FVal& v : srcs) s.src[i++] = v.imm ? -1 : v.vid;
    s.store = store;
    seq.push_back(s);
  }
  FVal expand(const FVal& v, int64_t r, int64_t c) {
    FVal dst = alloc(r, c);
    step(body, dst.vid, {v});
    return dst;
  }

  const PreparedLoad& prepare(const LoopNode& node, const ExprNode& e, const std::vector<std::string>& cols,
                              const std::vector<int64_t>& col_sizes) {
    auto key = std::make_pair(&node, &e);
    if (auto it = loads_prepared.find(key); it != loads_prepared.end()) return it->second;
    PreparedLoad pl;
    pl.ap = analyze_access(node, e.index, cols, col_sizes);
    if (!pl.ap.ok)
      throw InputError(strcat("kernel ", k.name, ", node ", node.name, ": load ", e.buffer, "[", e.index.str(),
                              "] is not a strided access the LPU DMA can do (", pl.ap.why_not, ")"));
    pl.width = numel(col_sizes);
    pl.in_kernel = in_kernel.count(e.buffer) > 0;
    if (!pl.in_kernel) {
      const AccessPattern& ap = pl.ap;
      pl.eb = dtype_bytes(p.buffers.at(e.buffer).type.dtype);
      if (ap.col_split && ap.col_split < pl.width)
        pl.block_key = strcat(e.buffer, "@", e.index.str(), "/", node.rows());
      else if (ap.row_affine && ap.row_stride == 0)
        pl.block_key = strcat(e.buffer, "@", ap.base, ",", ap.col_stride, ",");  // hoisted: + ncols
      if (ap.row_affine)  // a tile load (or a window of a row-invariant one): + ncols, coff
        pl.tile_key = strcat(e.buffer, "@", ap.base, ",", ap.row_stride, ",", ap.col_stride, ",");
      else
        pl.tile_key = strcat(e.buffer, "@", e.index.str(), "/", ap.col_stride, ",");
    }
    return loads_prepared.emplace(key, std::move(pl)).first->second;
  }

  // KernelEmitter::load without the instructions.
  FVal load(const LoopNode& node, const ExprNode& e) {
    bool s = split.count(&node) > 0;
    return load(node, e, node.col_vars(), node.col_sizes(), s, s ? c0 : 0, s ? cw : node.cols());
  }
  FVal load(const LoopNode& node, const ExprNode& e, const std::vector<std::string>& cols,
            const std::vector<int64_t>& col_sizes, bool window = false, int64_t wc0 = 0, int64_t wcw = 0) {
    const PreparedLoad& pl = prepare(node, e, cols, col_sizes);
    const AccessPattern& ap = pl.ap;
    int64_t width = pl.width;
    if (!window) wcw = width;
    bool windowed = window && ap.col_stride != 0;
    int64_t ncols = ap.col_stride == 0 ? 1 : wcw;
    int64_t coff = ap.col_stride * wc0;
    if (pl.in_kernel) {  // produced earlier in this tile: an alias of its register
      FVal v = values.at(e.buffer);
      v.cols = ncols;
      v.owned = false;
      return v;
    }
    if (ap.col_split && ap.col_split < width) {  // two-level columns: a DMA per row and block
      int64_t D = ap.col_split;
      if (width % D != 0 || wc0 % D != 0 || wcw % D != 0)
        throw InternalError("codegen: column blocks do not tile the row in " + node.name);
      const std::string& key = pl.block_key;
      if (auto it = tile_loads.find(key); it != tile_loads.end()) return it->second;
      FVal v = alloc(rows, wcw);
      v.owned = false;
      int64_t parts = rows * ((wc0 + wcw) / D - wc0 / D);
      if (parts > 0) step(load_steps, v.vid);
      if (with_hbm) hbm += parts * D * pl.eb;
      tile_loads[key] = v;
      return v;
    }
    if (ap.row_affine && ap.row_stride == 0 && !windowed) {  // row-invariant: resident
      std::string key = strcat(pl.block_key, ncols);
      if (hoisted.insert(key).second) {
        hoisted_bytes += align_up(ncols * kLmElem, kLmAlign);
        hoisted_hbm += ncols * pl.eb;
      }
      FVal v;
      v.rows = 1;
      v.cols = ncols;
      return v;
    }
    int64_t load_rows = ap.row_affine && ap.row_stride == 0 ? 1 : rows;
    std::string key =
        ap.row_affine ? strcat(pl.tile_key, ncols, "+", coff) : strcat(pl.tile_key, ncols, "/", node.rows(), "+", coff);
    if (auto it = tile_loads.find(key); it != tile_loads.end()) return it->second;
    FVal v = alloc(load_rows, ncols);
    v.owned = false;
    step(load_steps, v.vid);
    if (with_hbm) hbm += load_rows * ncols * pl.eb;
    tile_loads[key] = v;
    return v;
  }

  // KernelEmitter::matmul: the A operand's load, the [rows, N] result, B streamed once per
  // run of rows sharing a B block.
  FVal matmul(const LoopNode& node) {
    const Expr& a_load = node.body->args.at(0);
    const Expr& b_load = node.body->args.at(1);
    if (a_load->kind != ExprKind::Load || b_load->kind != ExprKind::Load)
      throw InternalError("codegen: matmul body is not mul(load, load) in " + node.name);
    int64_t K = node.reduction_ranges.at(0), N = col_width(node);
    const std::string kvar = LoopVar::reduction(0).name();
    FVal a = load(node, *a_load, {kvar}, {K});
    if (a.imm || a.cols != K) throw InputError(strcat("node ", node.name, ": matmul A operand must vary along K"));
    auto it = matmuls.find(&node);
    if (it == matmuls.end()) {
      PreparedMatmul pm;
      std::string nvar = node.column_var().name();
      const Index& bi = b_load->index;
      Index b_row = bi.substitute({{kvar, Index::constant(0)}, {nvar, Index::constant(0)}});
      Index b_cols = bi - b_row;
      for (const auto& v : b_cols.variables())
        if (v != kvar && v != nvar)
          throw InputError(strcat("node ", node.name, ": B operand index ", bi.str(), " mixes rows with K/N"));
      if (!b_cols.is_affine())
        throw InputError(strcat("node ", node.name, ": B operand index ", bi.str(), " is not strided in K and N"));
      pm.K = K;
      pm.ks = b_cols.coefficient(kvar);
      pm.ns = b_cols.coefficient(nvar);
      pm.rows_of_b.row_part = b_row;
      pm.rows_of_b.row_vars = node.row_vars();
      pm.rows_of_b.row_sizes = node.row_sizes();
      pm.eb = dtype_bytes(p.buffers.at(b_load->buffer).type.dtype);
      if (in_kernel.count(b_load->buffer))
        throw InternalError("codegen: matmul B operand produced inside its kernel: " + node.name);
      it = matmuls.emplace(&node, std::move(pm)).first;
    }
    FVal dst = alloc(rows, N);
    step(body, dst.vid, {a});
    if (with_hbm) {
      int64_t groups = 0;
      for (int64_t r = 0; r < rows; ++groups) {  // rows sharing one B matrix form one instruction
        int64_t base = it->second.rows_of_b.row_offset(r0 + r);
        int64_t n = 1;
        while (r + n < rows && it->second.rows_of_b.row_offset(r0 + r + n) == base) ++n;
        r += n;
      }
      hbm += groups * it->second.K * N * it->second.eb;
    }
    return dst;
  }

  FVal gather(const LoopNode& node) {
    FVal idx = load(node, *node.gather_index);
    int64_t D = node.cols();
    FVal dst = alloc(rows, D);
    if (idx.cols != 1) throw InternalError("codegen: gather indices of " + node.name + " are not one per row");
    step(body, dst.vid, {idx});
    if (with_hbm) hbm += rows * D * dtype_bytes(p.buffers.at(node.gather_table).type.dtype);
    return dst;
  }

  const PreparedStore& store_access(const LoopNode& n) {
    auto it = stores.find(&n);
    if (it != stores.end()) return it->second;
    PreparedStore ps;
    ps.sp = analyze_access(n, n.store_index);
    if (!ps.sp.ok) throw InternalError(strcat("codegen: store of ", n.name, ": ", ps.sp.why_not));
    ps.eb = dtype_bytes(p.buffers.at(n.out()).type.dtype);
    return stores.emplace(&n, std::move(ps)).first->second;
  }

  void walk();
  int64_t place() const;
};

namespace {
class FootprintHandler final : public OpsHandler<FVal> {
 public:
  FootprintHandler(TileFootprintAnalysis::Impl& a, const LoopNode& n) : a_(a), n_(n) {}
  FVal load(const ExprNode& e) override { return a_.load(n_, e); }
  FVal constant(double, DType) override {
    FVal v;
    v.imm = true;
    return v;
  }
  FVal index_expr(const Index& index) override {
    throw InputError(strcat("node ", n_.name, ": index expression ", index.str(),
                            " used as a value is not supported by the LPU vector engine"));
  }
  FVal to_dtype(FVal x, DType) override { return x; }
  FVal call(ScalarOp, const std::vector<FVal>& args, DType) override {
    if (std::all_of(args.begin(), args.end(), [](const FVal& v) { return v.imm; })) return constant(0, DType::f32);
    int64_t r = 1, c = 1;
    for (const auto& v : args)
      if (!v.imm) {
        r = std::max(r, v.rows);
        c = std::max(c, v.cols);
      }
    FVal dst = a_.alloc(r, c);
    Step s;
    s.def = dst.vid;
    for (size_t i = 0; i < args.size() && i < s.src.size(); ++i) s.src[i] = args[i].imm ? -1 : args[i].vid;
    a_.body.push_back(s);
    return dst;
  }
  FVal reduction(ReductionType, FVal v) override {
    int64_t width = n_.cols();
    if (v.imm || v.cols != width || v.rows != a_.rows) v = a_.expand(v, a_.rows, width);
    FVal dst = a_.alloc(v.rows, 1);
    a_.step(a_.body, dst.vid, {v});
    return dst;
  }

 private:
  TileFootprintAnalysis::Impl& a_;
  const LoopNode& n_;
};
}  // namespace

// KernelEmitter::emit_tile's node walk, registers and HBM bytes only.
void TileFootprintAnalysis::Impl::walk() {
  vsize.clear();
  tile_loads.clear();
  values.clear();
  load_steps.clear();
  body.clear();
  hbm = 0;
  for (int idx : k.nodes) {
    const LoopNode& n = p.nodes[static_cast<size_t>(idx)];
    FootprintHandler h(*this, n);
    FVal v = n.kind == LoopKind::Matmul   ? matmul(n)
             : n.kind == LoopKind::Gather ? gather(n)
                                          : evaluate_node<FVal>(n, h);
    int64_t ncols = col_width(n), nc0 = col0(n);
    if (!(v.owned && v.rows == rows && v.cols == ncols)) v = expand(v, rows, ncols);
    values[n.out()] = v;
    if (!(hbm_out.count(n.out()) && (split.count(&n) || c0 == 0))) continue;
    const PreparedStore& ps = store_access(n);
    int64_t parts = rows, cols = ncols;
    if (ps.sp.col_split && ps.sp.col_split < n.out_cols()) {  // two-level columns: a DMA per row and block
      int64_t D = ps.sp.col_split;
      parts = rows * ((nc0 + ncols) / D - nc0 / D);
      cols = D;
    }
    if (parts > 0) step(body, -1, {}, v.vid);
    if (with_hbm) hbm += parts * cols * ps.eb;
  }
  walked = true;
}

// KernelEmitter::emit_tile's linear scan: a register is placed (first fit) by the first
// instruction writing it and freed after the last one reading it; the peak is the tile's bytes.
int64_t TileFootprintAnalysis::Impl::place() const {
  size_t n = load_steps.size() + body.size();
  auto at = [&](size_t i) -> const Step& {
    return i < load_steps.size() ? load_steps[i] : body[i - load_steps.size()];
  };
  std::vector<size_t> last_use(vsize.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const Step& s = at(i);
    for (int v : s.src)
      if (v >= 0) last_use[static_cast<size_t>(v)] = i;
    if (s.store >= 0) last_use[static_cast<size_t>(s.store)] = i;
    if (s.def >= 0) last_use[static_cast<size_t>(s.def)] = std::max(last_use[static_cast<size_t>(s.def)], i);
  }
  std::vector<std::vector<int>> dies_after(n);
  for (size_t v = 0; v < vsize.size(); ++v) dies_after[last_use[v]].push_back(static_cast<int>(v));
  RegionAllocator ra(0, UINT64_MAX / 2);
  std::vector<uint64_t> addr(vsize.size(), 0);
  std::vector<bool> placed(vsize.size(), false);
  for (size_t i = 0; i < n; ++i) {
    const Step& s = at(i);
    if (s.def >= 0 && !placed[static_cast<size_t>(s.def)]) {
      addr[static_cast<size_t>(s.def)] = ra.alloc(vsize[static_cast<size_t>(s.def)]);
      placed[static_cast<size_t>(s.def)] = true;
    }
    for (int v : dies_after[i]) ra.release(addr[static_cast<size_t>(v)], vsize[static_cast<size_t>(v)]);
  }
  return static_cast<int64_t>(ra.peak());
}

TileFootprintAnalysis::TileFootprintAnalysis(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns)
    : impl_(std::make_unique<Impl>(p, k, columns)) {}
TileFootprintAnalysis::~TileFootprintAnalysis() = default;

TileFootprint TileFootprintAnalysis::tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw) {
  Impl& a = *impl_;
  a.with_hbm = true;
  a.r0 = r0;
  a.rows = rows;
  a.c0 = c0;
  a.cw = cw;
  a.walk();
  return {a.place(), a.hbm};
}

int64_t TileFootprintAnalysis::peak_bytes(int64_t rows, int64_t cw) {
  Impl& a = *impl_;
  a.with_hbm = false;
  a.r0 = 0;
  a.rows = rows;
  a.c0 = 0;
  a.cw = cw;
  a.walk();
  return a.place();
}

int64_t TileFootprintAnalysis::hbm_bytes(int64_t r0, int64_t rows, int64_t c0, int64_t cw) {
  Impl& a = *impl_;
  a.with_hbm = true;
  a.r0 = r0;
  a.rows = rows;
  a.c0 = c0;
  a.cw = cw;
  a.walk();
  return a.hbm;
}

int64_t TileFootprintAnalysis::hoisted_bytes() {
  if (!impl_->walked) peak_bytes(1, impl_->granule);
  return impl_->hoisted_bytes;
}

int64_t TileFootprintAnalysis::hoisted_hbm_bytes() {
  if (!impl_->walked) peak_bytes(1, impl_->granule);
  return impl_->hoisted_hbm;
}

}  // namespace lpu
