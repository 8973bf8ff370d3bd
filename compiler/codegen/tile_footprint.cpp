#include "codegen/tile_footprint.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>

#include "codegen/gathered_weights.h"
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

// The kernel as the emitter walks it, recorded once: one op per value the walk makes (the
// handler calls on each node's body, each shared subexpression once, then the node's result
// and store). What an op allocates depends on the tile (its rows, its column window), so each
// candidate replays the ops; nothing of the loop IR is looked at again.
enum class OpKind : uint8_t { Imm, Load, Call, Reduce, Matmul, Gather, NodeEnd };
struct Op {
  OpKind kind = OpKind::Imm;
  ScalarOp sop = ScalarOp::add;       // Call
  std::array<int, 3> in{-1, -1, -1};  // operand ops (Call: its arguments; Reduce, NodeEnd: the
                                      // value; Matmul: the A operand; Gather: the indices)
  int load = -1;                      // Load: index into Impl::loads
  const LoopNode* node = nullptr;     // Reduce, Matmul, Gather, NodeEnd
  bool split = false;                 // Matmul, NodeEnd: the node computes the column window
  bool store = false;                 // NodeEnd: the node's value goes to HBM
  int64_t block = 0;                  // NodeEnd: two-level columns of the store (0: one level)
  int64_t eb = 0;                     // Gather: the table's, NodeEnd: the output's element bytes
  bool gathered = false;              // Matmul: sxe.gemm_gather (in[1]: its row indices)
};

// What a load is (KernelEmitter::load's cases), decided once per kernel.
enum class LoadKind : uint8_t { InKernel, TwoLevel, Hoisted, Tile };
struct LoadInfo {
  LoadKind kind = LoadKind::Tile;
  bool window = false;  // a split node's load: the tile's column window
  int64_t width = 0;    // columns of the access
  int64_t col_stride = 0;
  int64_t block = 0;     // TwoLevel: columns per block
  bool one_row = false;  // Tile: a row-invariant window, one row broadcast to all
  int producer = -1;     // InKernel: the op of the producing node's value
  int key = -1;          // TwoLevel, Tile: the emitter's load key without its per-tile parts
  int64_t eb = 0;        // element bytes in HBM
  int64_t hoisted_cols = 0;
  const LoopNode* node = nullptr;
};

struct MatmulInfo {
  int64_t K = 0, eb = 0;
  AccessPattern rows_of_b;  // row_offset() evaluates B's row part per flattened row
};

// Two loads of one tile share a register when the emitter's keys are equal: the static part
// (interned) and, for tile loads, the columns and the window's element offset.
struct LoadKey {
  int key;
  int64_t ncols, coff;
  bool operator==(const LoadKey& o) const { return key == o.key && ncols == o.ncols && coff == o.coff; }
};

// What a load's access is, whatever kernel its node is in: analysed once per program
// (TileAccessCache) and classified per kernel.
struct AccessInfo {
  AccessPattern ap;      // analyze_access's answer
  int64_t width = 0;     // columns of the access
  int64_t eb = -1;       // element bytes of the buffer in HBM (-1: not looked up yet)
  int block_key = -1;    // the emitter's load keys, interned: two-level, hoisted (with its
  int hoisted_key = -1;  // columns), tile (without its columns and window offset)
  int tile_key = -1;
};

// A matmul's B operand: the emitter's input error for it (empty when it is strided in K and
// N), the row part of its index and its element bytes.
struct MatmulAccess {
  std::string error;
  MatmulInfo info;
};

struct StoreAccess {
  bool ok = false;
  std::string why_not;
  int64_t block = 0, eb = 0;
};

}  // namespace

struct TileAccessCache::Impl {
  std::map<std::pair<const LoopNode*, const ExprNode*>, AccessInfo> loads;
  std::map<const LoopNode*, MatmulAccess> matmuls;
  // Matmuls streaming an elided gather's slabs (their row-index loads live here: loads are keyed
  // by the expression's address).
  std::map<const LoopNode*, std::optional<GatheredWeights>> gathered_weights_of;
  const std::optional<GatheredWeights>& gathered(const LoopProgram& p, const LoopNode& node) {
    auto it = gathered_weights_of.find(&node);
    if (it == gathered_weights_of.end()) it = gathered_weights_of.emplace(&node, gathered_weights(p, node)).first;
    return it->second;
  }
  std::map<const LoopNode*, StoreAccess> stores;
  std::map<std::string, int> keys;  // the emitter's load keys, interned
  int intern(const std::string& key) { return keys.emplace(key, static_cast<int>(keys.size())).first->second; }

  // `matmul_a`: a matmul's A operand, whose columns are K (r0), not the node's.
  const AccessInfo& load(const LoopProgram& p, const LoopNode& node, const ExprNode& e, bool matmul_a) {
    auto key = std::make_pair(&node, &e);
    if (auto it = loads.find(key); it != loads.end()) return it->second;
    AccessInfo a;
    std::vector<int64_t> col_sizes = matmul_a ? std::vector<int64_t>{node.reduction_ranges.at(0)} : node.col_sizes();
    a.ap = matmul_a ? analyze_access(node, e.index, {LoopVar::reduction(0)}, col_sizes)
                    : analyze_access(node, e.index, node.col_vars(), col_sizes);
    a.width = numel(col_sizes);
    if (a.ap.ok) {
      const AccessPattern& ap = a.ap;
      if (auto b = p.buffers.find(e.buffer); b != p.buffers.end()) a.eb = dtype_bytes(b->second.type.dtype);
      if (ap.col_split && ap.col_split < a.width)
        a.block_key = intern(strcat(e.buffer, "@", e.index.str(), "/", node.rows()));
      if (ap.row_affine && ap.row_stride == 0)
        a.hoisted_key =
            intern(strcat(e.buffer, "@", ap.base, ",", ap.col_stride, ",", ap.col_stride == 0 ? 1 : a.width));
      // The tile key without its columns and window offset; a non-row-affine one also holds
      // the node's row count (after the columns there, which is the same key).
      a.tile_key = ap.row_affine
                       ? intern(strcat("|", e.buffer, "@", ap.base, ",", ap.row_stride, ",", ap.col_stride))
                       : intern(strcat("|", e.buffer, "@", e.index.str(), "/", ap.col_stride, "/", node.rows()));
    }
    return loads.emplace(key, std::move(a)).first->second;
  }

  // KernelEmitter::matmul's checks of B, in its order.
  const MatmulAccess& matmul(const LoopProgram& p, const LoopNode& node, const ExprNode& b_load) {
    if (auto it = matmuls.find(&node); it != matmuls.end()) return it->second;
    MatmulAccess m;
    const LoopVar kvar = LoopVar::reduction(0), nvar = node.column_var();
    const Index& bi = b_load.index;
    Index b_row = bi.substitute({{kvar, Index::constant(0)}, {nvar, Index::constant(0)}});
    Index b_cols = bi - b_row;
    for (const auto& v : b_cols.variables())
      if (v != kvar && v != nvar && m.error.empty())
        m.error = strcat("node ", node.name, ": B operand index ", bi.str(), " mixes rows with K/N");
    if (m.error.empty() && !b_cols.is_affine())
      m.error = strcat("node ", node.name, ": B operand index ", bi.str(), " is not strided in K and N");
    m.info.K = node.reduction_ranges.at(0);
    m.info.rows_of_b.row_part = b_row;
    m.info.rows_of_b.row_vars = node.row_vars();
    m.info.rows_of_b.row_sizes = node.row_sizes();
    if (auto b = p.buffers.find(b_load.buffer); b != p.buffers.end()) m.info.eb = dtype_bytes(b->second.type.dtype);
    return matmuls.emplace(&node, std::move(m)).first->second;
  }

  // A node's body as the emitter's handler walks it (each shared subexpression once): loads,
  // constants, vector ops and the reduction, whatever the kernel. An index used as a value is
  // kept as its error, thrown where the walk would meet it.
  struct TraceOp {
    OpKind kind = OpKind::Imm;
    ScalarOp sop = ScalarOp::add;       // Call
    std::array<int, 3> in{-1, -1, -1};  // earlier ops of the trace
    const ExprNode* load = nullptr;
    std::string error;  // an index used as a value
  };
  struct Trace {
    std::vector<TraceOp> ops;
    int result = -1;
  };
  std::map<const LoopNode*, Trace> traces;
  const Trace& trace(const LoopNode& n);

  const StoreAccess& store(const LoopProgram& p, const LoopNode& n) {
    if (auto it = stores.find(&n); it != stores.end()) return it->second;
    StoreAccess st;
    AccessPattern sp = analyze_access(n, n.store_index);
    st.ok = sp.ok;
    st.why_not = sp.why_not;
    st.block = sp.col_split && sp.col_split < n.out_cols() ? sp.col_split : 0;
    st.eb = dtype_bytes(p.buffers.at(n.out()).type.dtype);
    return stores.emplace(&n, std::move(st)).first->second;
  }
};

TileAccessCache::TileAccessCache() : impl_(std::make_unique<Impl>()) {}
TileAccessCache::~TileAccessCache() = default;

struct TileFootprintAnalysis::Impl {
  const LoopProgram& p;
  const Kernel& k;
  std::set<const LoopNode*> split;
  std::set<std::string> in_kernel, hbm_out;
  int64_t granule = 0;
  // The recording.
  bool recorded = false;
  std::vector<Op> ops;
  std::vector<LoadInfo> loads;
  std::map<const LoopNode*, const MatmulInfo*> matmuls;
  TileAccessCache::Impl& cache;
  std::map<std::string, int> values;  // node output -> its NodeEnd op
  std::set<int> hoisted;              // keys of the resident loads
  int64_t hoisted_bytes = 0, hoisted_hbm = 0;
  // Per tile (replay):
  int64_t r0 = 0, rows = 0, c0 = 0, cw = 0, hbm = 0;
  bool with_hbm = false;
  std::vector<FVal> vals;
  std::vector<uint64_t> vsize;
  std::vector<std::pair<LoadKey, FVal>> tile_loads;
  std::vector<Step> load_steps, body;

  Impl(const LoopProgram& prog, const Kernel& kernel, const ColumnSplit* columns, TileAccessCache::Impl& access)
      : p(prog), k(kernel), cache(access) {
    for (int i : k.nodes) in_kernel.insert(p.nodes[static_cast<size_t>(i)].out());
    hbm_out.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
    if (columns) {
      granule = columns->granule;
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (columns->split[i]) split.insert(&p.nodes[static_cast<size_t>(k.nodes[i])]);
    }
  }

  int push(Op op) {
    ops.push_back(op);
    return static_cast<int>(ops.size()) - 1;
  }

  // KernelEmitter::load's decisions, with its error for an access the DMA cannot do.
  int record_load(const LoopNode& node, const ExprNode& e, bool window, bool matmul_a = false) {
    const AccessInfo& a = cache.load(p, node, e, matmul_a);
    const AccessPattern& ap = a.ap;
    if (!ap.ok)
      throw InputError(strcat("kernel ", k.name, ", node ", node.name, ": load ", e.buffer, "[", e.index.str(),
                              "] is not a strided access the LPU DMA can do (", ap.why_not, ")"));
    LoadInfo l;
    l.node = &node;
    l.window = window;
    l.width = a.width;
    l.col_stride = ap.col_stride;
    if (in_kernel.count(e.buffer)) {  // produced earlier in this tile: an alias of its register
      l.kind = LoadKind::InKernel;
      l.producer = values.at(e.buffer);
    } else {
      l.eb = a.eb >= 0 ? a.eb : dtype_bytes(p.buffers.at(e.buffer).type.dtype);
      bool windowed = window && ap.col_stride != 0;
      if (a.block_key >= 0) {  // two-level columns: a DMA per row and block
        l.kind = LoadKind::TwoLevel;
        l.block = ap.col_split;
        l.key = a.block_key;
      } else if (a.hoisted_key >= 0 && !windowed) {  // row-invariant: resident
        l.kind = LoadKind::Hoisted;
        l.hoisted_cols = ap.col_stride == 0 ? 1 : l.width;
        if (hoisted.insert(a.hoisted_key).second) {
          hoisted_bytes += align_up(l.hoisted_cols * kLmElem, kLmAlign);
          hoisted_hbm += l.hoisted_cols * l.eb;
        }
      } else {
        l.kind = LoadKind::Tile;
        l.one_row = ap.row_affine && ap.row_stride == 0;
        l.key = a.tile_key;
      }
    }
    loads.push_back(l);
    Op op;
    op.kind = OpKind::Load;
    op.load = static_cast<int>(loads.size()) - 1;
    return push(op);
  }

  // KernelEmitter::matmul's checks; the A operand's load.
  int record_matmul(const LoopNode& node) {
    const Expr& a_load = node.body->args.at(0);
    const Expr& b_load = node.body->args.at(1);
    if (a_load->kind != ExprKind::Load || b_load->kind != ExprKind::Load)
      throw InternalError("codegen: matmul body is not mul(load, load) in " + node.name);
    int64_t K = node.reduction_ranges.at(0);
    Op op;
    op.kind = OpKind::Matmul;
    op.node = &node;
    op.split = split.count(&node) > 0;
    op.in[0] = record_load(node, *a_load, false, true);
    const LoadInfo& a = loads.back();
    int64_t a_cols = a.kind == LoadKind::TwoLevel ? a.width : a.col_stride == 0 ? 1 : a.width;
    if (a_cols != K) throw InputError(strcat("node ", node.name, ": matmul A operand must vary along K"));
    const MatmulAccess& m = cache.matmul(p, node, *b_load);
    if (!m.error.empty()) throw InputError(m.error);
    if (m.info.eb <= 0) (void)p.buffers.at(b_load->buffer);  // the emitter's lookup (throws)
    if (in_kernel.count(b_load->buffer))
      throw InternalError("codegen: matmul B operand produced inside its kernel: " + node.name);
    if (const auto& gw = cache.gathered(p, node)) {  // the emitter's matmul_gathered: its row indices next
      op.in[1] = record_load(node, *gw->row_index, false);
      op.gathered = true;
    }
    matmuls[&node] = &m.info;
    return push(op);
  }

  void record();
  int record_body(const LoopNode& n);
  std::vector<int> trace_ops;
  void replay(int64_t tile_r0, int64_t tile_rows, int64_t tile_c0, int64_t tile_cw, bool hbm_too);
  FVal alloc(int64_t r, int64_t c) {
    FVal v;
    v.vid = static_cast<int>(vsize.size());
    vsize.push_back(lm_register_bytes(r, c));
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
  FVal load(const LoadInfo& l);
  int64_t place() const;
};

namespace {
// Records a node's body as a trace (values are trace op indices).
class TraceHandler final : public OpsHandler<int> {
 public:
  TraceHandler(TileAccessCache::Impl::Trace& t, const LoopNode& n) : t_(t), n_(n) {}
  int load(const ExprNode& e) override {
    TileAccessCache::Impl::TraceOp op;
    op.kind = OpKind::Load;
    op.load = &e;
    return push(std::move(op));
  }
  int constant(double, DType) override { return push({}); }
  int index_expr(const Index& index) override {
    TileAccessCache::Impl::TraceOp op;  // thrown when the walk gets here (an Imm until then)
    op.error = strcat("node ", n_.name, ": index expression ", index.str(),
                      " used as a value is not supported by the LPU vector engine");
    return push(std::move(op));
  }
  int to_dtype(int x, DType) override { return x; }  // the LMU computes in fp32
  int call(ScalarOp sop, const std::vector<int>& args, DType) override {
    if (args.size() > 3) throw InternalError("codegen: a scalar op of more than 3 operands in " + n_.name);
    bool all_imm = std::all_of(args.begin(), args.end(), [&](int a) {
      const auto& op = t_.ops[static_cast<size_t>(a)];
      return op.kind == OpKind::Imm && op.error.empty();
    });
    if (all_imm) return push({});  // constant folding
    TileAccessCache::Impl::TraceOp op;
    op.kind = OpKind::Call;
    op.sop = sop;
    std::copy(args.begin(), args.end(), op.in.begin());
    return push(std::move(op));
  }
  int reduction(ReductionType, int v) override {
    TileAccessCache::Impl::TraceOp op;
    op.kind = OpKind::Reduce;
    op.in[0] = v;
    return push(std::move(op));
  }

 private:
  int push(TileAccessCache::Impl::TraceOp op) {
    t_.ops.push_back(std::move(op));
    return static_cast<int>(t_.ops.size()) - 1;
  }
  TileAccessCache::Impl::Trace& t_;
  const LoopNode& n_;
};
}  // namespace

const TileAccessCache::Impl::Trace& TileAccessCache::Impl::trace(const LoopNode& n) {
  if (auto it = traces.find(&n); it != traces.end()) return it->second;
  Trace t;
  TraceHandler h(t, n);
  t.result = evaluate_node<int>(n, h);
  return traces.emplace(&n, std::move(t)).first->second;
}

// A node's trace in this kernel: its loads classified here, in the walk's order.
int TileFootprintAnalysis::Impl::record_body(const LoopNode& n) {
  const TileAccessCache::Impl::Trace& t = cache.trace(n);
  bool window = split.count(&n) > 0;
  std::vector<int>& at = trace_ops;  // trace op -> op of the kernel
  at.assign(t.ops.size(), -1);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TileAccessCache::Impl::TraceOp& top = t.ops[i];
    if (!top.error.empty()) throw InputError(top.error);
    if (top.kind == OpKind::Load) {
      at[i] = record_load(n, *top.load, window);
      continue;
    }
    Op op;
    op.kind = top.kind;
    op.sop = top.sop;
    op.node = &n;
    for (size_t j = 0; j < 3; ++j)
      if (top.in[j] >= 0) op.in[j] = at[static_cast<size_t>(top.in[j])];
    at[i] = push(op);
  }
  return at[static_cast<size_t>(t.result)];
}

// KernelEmitter::emit_tile's node walk, once: every error the emitter's first tile would
// throw for the kernel's loop IR is thrown here, in the same order.
void TileFootprintAnalysis::Impl::record() {
  ops.clear();  // a recording an error cut short starts again
  loads.clear();
  matmuls.clear();
  values.clear();
  hoisted.clear();
  hoisted_bytes = hoisted_hbm = 0;
  for (int idx : k.nodes) {
    const LoopNode& n = p.nodes[static_cast<size_t>(idx)];
    int v;
    if (n.kind == LoopKind::Matmul) {
      v = record_matmul(n);
    } else if (n.kind == LoopKind::Gather) {
      Op op;
      op.kind = OpKind::Gather;
      op.node = &n;
      op.in[0] = record_load(n, *n.gather_index, false);  // one index per row, never windowed
      op.split = split.count(&n) > 0;
      op.eb = dtype_bytes(p.buffers.at(n.gather_table).type.dtype);
      v = push(op);
    } else {
      v = record_body(n);
    }
    Op end;
    end.kind = OpKind::NodeEnd;
    end.in[0] = v;
    end.node = &n;
    end.split = split.count(&n) > 0;
    end.store = hbm_out.count(n.out()) > 0;
    if (end.store) {
      const StoreAccess& st = cache.store(p, n);
      if (!st.ok) throw InternalError(strcat("codegen: store of ", n.name, ": ", st.why_not));
      end.block = st.block;
      end.eb = st.eb;
    }
    values[n.out()] = push(end);
  }
  recorded = true;
}

FVal TileFootprintAnalysis::Impl::load(const LoadInfo& l) {
  int64_t wcw = l.window ? cw : l.width, wc0 = l.window ? c0 : 0;
  int64_t ncols = l.col_stride == 0 ? 1 : wcw;
  auto shared = [&](const LoadKey& key) -> const FVal* {
    for (const auto& [kk, v] : tile_loads)
      if (kk == key) return &v;
    return nullptr;
  };
  switch (l.kind) {
    case LoadKind::InKernel: {
      FVal v = vals[static_cast<size_t>(l.producer)];
      v.cols = ncols;
      v.owned = false;
      return v;
    }
    case LoadKind::Hoisted: {
      FVal v;
      v.cols = l.hoisted_cols;
      return v;
    }
    case LoadKind::TwoLevel: {
      int64_t D = l.block;
      if (l.width % D != 0 || wc0 % D != 0 || wcw % D != 0)
        throw InternalError("codegen: column blocks do not tile the row in " + l.node->name);
      LoadKey key{l.key, -1, 0};
      if (const FVal* v = shared(key)) return *v;
      FVal v = alloc(rows, wcw);
      v.owned = false;
      int64_t parts = rows * ((wc0 + wcw) / D - wc0 / D);
      if (parts > 0) step(load_steps, v.vid);
      hbm += parts * D * l.eb;
      tile_loads.push_back({key, v});
      return v;
    }
    case LoadKind::Tile: {
      LoadKey key{l.key, ncols, l.col_stride * wc0};
      if (const FVal* v = shared(key)) return *v;
      int64_t load_rows = l.one_row ? 1 : rows;
      FVal v = alloc(load_rows, ncols);
      v.owned = false;
      step(load_steps, v.vid);
      hbm += load_rows * ncols * l.eb;
      tile_loads.push_back({key, v});
      return v;
    }
  }
  throw InternalError("codegen: unknown load kind");
}

// One tile: the recorded ops on this tile's rows and window (KernelEmitter::emit_tile's
// registers, their uses and the HBM bytes of its instructions).
void TileFootprintAnalysis::Impl::replay(int64_t tile_r0, int64_t tile_rows, int64_t tile_c0, int64_t tile_cw,
                                         bool hbm_too) {
  if (!recorded) record();
  r0 = tile_r0;
  rows = tile_rows;
  c0 = tile_c0;
  cw = tile_cw;
  with_hbm = hbm_too;
  hbm = 0;
  vals.assign(ops.size(), FVal{});
  vsize.clear();
  tile_loads.clear();
  load_steps.clear();
  body.clear();
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    auto in = [&](size_t j) -> const FVal& { return vals[static_cast<size_t>(op.in[j])]; };
    FVal& out = vals[i];
    switch (op.kind) {
      case OpKind::Imm: out.imm = true; break;
      case OpKind::Load: out = load(loads[static_cast<size_t>(op.load)]); break;
      case OpKind::Call: {
        int64_t r = 1, c = 1;
        for (size_t j = 0; j < 3 && op.in[j] >= 0; ++j)
          if (!in(j).imm) {
            r = std::max(r, in(j).rows);
            c = std::max(c, in(j).cols);
          }
        if (op.in[1] >= 0 && op.in[2] < 0 && divides_by_row_value(op.sop, in(1).imm, in(1).cols, c)) {
          FVal recip = alloc(in(1).rows, 1);  // the emitter's reciprocal, then the multiply
          step(body, recip.vid, {in(1)});
          out = alloc(r, c);
          step(body, out.vid, {in(0), recip});
          break;
        }
        out = alloc(r, c);
        Step s;
        s.def = out.vid;
        for (size_t j = 0; j < 3 && op.in[j] >= 0; ++j) s.src[j] = in(j).imm ? -1 : in(j).vid;
        body.push_back(s);
        break;
      }
      case OpKind::Reduce: {
        FVal v = in(0);
        int64_t width = op.node->cols();
        if (v.imm || v.cols != width || v.rows != rows) v = expand(v, rows, width);
        out = alloc(v.rows, 1);
        step(body, out.vid, {v});
        break;
      }
      case OpKind::Matmul: {
        const MatmulInfo& m = *matmuls.at(op.node);
        int64_t N = op.split ? cw : op.node->out_cols();
        out = alloc(rows, N);
        if (op.gathered) {  // one slab block per row
          step(body, out.vid, {in(0), in(1)});
          if (with_hbm) hbm += rows * m.K * N * m.eb;
          break;
        }
        step(body, out.vid, {in(0)});
        if (with_hbm) {
          int64_t groups = 0;
          for (int64_t r = 0; r < rows; ++groups) {  // rows sharing one B matrix: one instruction
            int64_t base = m.rows_of_b.row_offset(r0 + r);
            int64_t n = 1;
            while (r + n < rows && m.rows_of_b.row_offset(r0 + r + n) == base) ++n;
            r += n;
          }
          hbm += groups * m.K * N * m.eb;
        }
        break;
      }
      case OpKind::Gather: {
        int64_t D = op.split ? cw : op.node->cols();
        out = alloc(rows, D);
        if (in(0).cols != 1)
          throw InternalError("codegen: gather indices of " + op.node->name + " are not one per row");
        step(body, out.vid, {in(0)});
        hbm += rows * D * op.eb;
        break;
      }
      case OpKind::NodeEnd: {
        int64_t ncols = op.split ? cw : op.node->out_cols(), nc0 = op.split ? c0 : 0;
        FVal v = in(0);
        if (!(v.owned && v.rows == rows && v.cols == ncols)) v = expand(v, rows, ncols);
        out = v;
        // A node computing its whole row in every column tile stores it from the first one only.
        if (!(op.store && (op.split || c0 == 0))) break;
        int64_t D = op.block, parts = rows, cols = ncols;
        if (D) {  // two-level columns: a DMA per row and block
          parts = rows * ((nc0 + ncols) / D - nc0 / D);
          cols = D;
        }
        if (parts > 0) step(body, -1, {}, v.vid);
        hbm += parts * cols * op.eb;
        break;
      }
    }
  }
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
  // Registers in the order they die (by step, then by register, as the emitter frees them).
  std::vector<std::pair<size_t, int>> deaths;
  for (size_t v = 0; v < vsize.size(); ++v) deaths.push_back({last_use[v], static_cast<int>(v)});
  std::sort(deaths.begin(), deaths.end());
  RegionAllocator ra(0, UINT64_MAX / 2);
  std::vector<uint64_t> addr(vsize.size(), 0);
  std::vector<bool> placed(vsize.size(), false);
  size_t d = 0;
  for (size_t i = 0; i < n; ++i) {
    const Step& s = at(i);
    if (s.def >= 0 && !placed[static_cast<size_t>(s.def)]) {
      addr[static_cast<size_t>(s.def)] = ra.alloc(vsize[static_cast<size_t>(s.def)]);
      placed[static_cast<size_t>(s.def)] = true;
    }
    for (; d < deaths.size() && deaths[d].first == i; ++d) {
      size_t v = static_cast<size_t>(deaths[d].second);
      ra.release(addr[v], vsize[v]);
    }
  }
  return static_cast<int64_t>(ra.peak());
}

TileFootprintAnalysis::TileFootprintAnalysis(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns,
                                             TileAccessCache* cache)
    : own_cache_(cache ? nullptr : std::make_unique<TileAccessCache>()),
      impl_(std::make_unique<Impl>(p, k, columns, *(cache ? cache : own_cache_.get())->impl_)) {}
TileFootprintAnalysis::~TileFootprintAnalysis() = default;

TileFootprint TileFootprintAnalysis::tile(int64_t r0, int64_t rows, int64_t c0, int64_t cw) {
  impl_->replay(r0, rows, c0, cw, true);
  return {impl_->place(), impl_->hbm};
}

int64_t TileFootprintAnalysis::peak_bytes(int64_t rows, int64_t cw) {
  impl_->replay(0, rows, 0, cw, false);
  return impl_->place();
}

int64_t TileFootprintAnalysis::hbm_bytes(int64_t r0, int64_t rows, int64_t c0, int64_t cw) {
  impl_->replay(r0, rows, c0, cw, true);
  return impl_->hbm;
}

int64_t TileFootprintAnalysis::hoisted_bytes() {
  if (!impl_->recorded) impl_->record();
  return impl_->hoisted_bytes;
}

int64_t TileFootprintAnalysis::hoisted_hbm_bytes() {
  if (!impl_->recorded) impl_->record();
  return impl_->hoisted_hbm;
}

}  // namespace lpu
