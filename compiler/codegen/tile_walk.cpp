#include "codegen/tile_walk.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "codegen/gathered_weights.h"
#include "codegen/tile_plan.h"
#include "handlers/ops_handler.h"
#include "support/error.h"

namespace lpu {

void tile_replay_bug(const std::string& what) { throw InternalError("codegen: " + what); }

namespace {

// What a load's access is, whatever kernel its node is in: analysed once per program
// (TileAccessCache) and classified per kernel.
struct AccessInfo {
  AccessPattern ap;             // analyze_access's answer
  int64_t width = 0;            // columns of the access
  const Buffer* buf = nullptr;  // the buffer, where the program has it
  int64_t eb = -1;              // its element bytes in HBM (-1: no buffer)
  int block_key = -1;           // the load keys, interned: two-level, hoisted (with its columns),
  int hoisted_key = -1;         // tile (without its columns and window offset)
  int tile_key = -1;
};

// A matmul's B operand: the input error for it (empty when it is strided in K and N) and
// where it streams from.
struct MatmulAccess {
  std::string error;
  TileWalk::MatmulB b;
};

struct StoreAccess {
  AccessPattern ap;
  int64_t block = 0, eb = 0;
  const Buffer* buf = nullptr;
};

}  // namespace

struct TileAccessCache::Impl {
  bool vector_chains = true;
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
  std::map<std::string, int> keys;  // the load keys, interned
  int intern(const std::string& key) { return keys.emplace(key, static_cast<int>(keys.size())).first->second; }

  const AccessInfo& load(const LoopProgram& p, const LoopNode& node, const ExprNode& e, bool matmul_a);
  const MatmulAccess& matmul(const LoopProgram& p, const LoopNode& node, const ExprNode& b_load);

  // A node's body as the handler walks it (each shared subexpression once): loads, constants
  // (folded where all operands are), vector ops and the reduction, whatever the kernel. An
  // index used as a value is kept as its error, thrown where the walk meets it.
  struct TraceOp {
    TileWalk::OpKind kind = TileWalk::OpKind::Imm;
    ScalarOp sop = ScalarOp::add;            // Call
    ReductionType rop = ReductionType::sum;  // Reduce
    std::array<int, 3> in{-1, -1, -1};       // earlier ops of the trace
    double value = 0;                        // Imm
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
    st.ap = analyze_access(n, n.store_index);
    st.block = st.ap.col_split && st.ap.col_split < n.out_cols() ? st.ap.col_split : 0;
    st.buf = &p.buffers.at(n.out());
    st.eb = dtype_bytes(st.buf->type.dtype);
    return stores.emplace(&n, std::move(st)).first->second;
  }
};

TileAccessCache::TileAccessCache(bool vector_chains) : impl_(std::make_unique<Impl>()) {
  impl_->vector_chains = vector_chains;
}
TileAccessCache::~TileAccessCache() = default;

// `matmul_a`: a matmul's A operand, whose columns are K (r0), not the node's.
const AccessInfo& TileAccessCache::Impl::load(const LoopProgram& p, const LoopNode& node, const ExprNode& e,
                                              bool matmul_a) {
  auto key = std::make_pair(&node, &e);
  if (auto it = loads.find(key); it != loads.end()) return it->second;
  AccessInfo a;
  std::vector<int64_t> col_sizes = matmul_a ? std::vector<int64_t>{node.reduction_ranges.at(0)} : node.col_sizes();
  a.ap = matmul_a ? analyze_access(node, e.index, {LoopVar::reduction(0)}, col_sizes)
                  : analyze_access(node, e.index, node.col_vars(), col_sizes);
  a.width = numel(col_sizes);
  if (a.ap.ok) {
    const AccessPattern& ap = a.ap;
    if (auto b = p.buffers.find(e.buffer); b != p.buffers.end()) {
      a.buf = &b->second;
      a.eb = dtype_bytes(b->second.type.dtype);
    }
    if (ap.col_split && ap.col_split < a.width)
      a.block_key = intern(strcat(e.buffer, "@", e.index.str(), "/", node.rows()));
    if (ap.row_affine && ap.row_stride == 0)
      a.hoisted_key = intern(strcat(e.buffer, "@", ap.base, ",", ap.col_stride, ",", ap.col_stride == 0 ? 1 : a.width));
    // The tile key without its columns and window offset; a non-row-affine one also holds the
    // node's row count.
    a.tile_key = ap.row_affine
                     ? intern(strcat("|", e.buffer, "@", ap.base, ",", ap.row_stride, ",", ap.col_stride))
                     : intern(strcat("|", e.buffer, "@", e.index.str(), "/", ap.col_stride, "/", node.rows()));
  }
  return loads.emplace(key, std::move(a)).first->second;
}

// A streamed B's checks, in order: its index splits into a row part and a part affine in K, N.
const MatmulAccess& TileAccessCache::Impl::matmul(const LoopProgram& p, const LoopNode& node, const ExprNode& b_load) {
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
  if (m.error.empty()) {
    m.b.ks = b_cols.coefficient(kvar);
    m.b.ns = b_cols.coefficient(nvar);
  }
  m.b.K = node.reduction_ranges.at(0);
  m.b.rows_of_b.row_part = b_row;
  m.b.rows_of_b.row_vars = node.row_vars();
  m.b.rows_of_b.row_sizes = node.row_sizes();
  m.b.b = &b_load;
  if (auto b = p.buffers.find(b_load.buffer); b != p.buffers.end()) {
    m.b.buf = &b->second;
    m.b.eb = dtype_bytes(b->second.type.dtype);
  }
  return matmuls.emplace(&node, std::move(m)).first->second;
}

namespace {
using TraceOp = TileAccessCache::Impl::TraceOp;
using Trace = TileAccessCache::Impl::Trace;

// Records a node's body as a trace (values are trace op indices).
class TraceHandler final : public OpsHandler<int> {
 public:
  TraceHandler(Trace& t, const LoopNode& n) : t_(t), n_(n) {}
  int load(const ExprNode& e) override {
    TraceOp op;
    op.kind = TileWalk::OpKind::Load;
    op.load = &e;
    return push(std::move(op));
  }
  int constant(double value, DType) override {
    TraceOp op;
    op.value = value;
    return push(std::move(op));
  }
  int index_expr(const Index& index) override {
    TraceOp op;  // thrown when the walk gets here (an Imm until then)
    op.error = strcat("node ", n_.name, ": index expression ", index.str(),
                      " used as a value is not supported by the LPU vector engine");
    return push(std::move(op));
  }
  int to_dtype(int x, DType) override { return x; }  // the LMU computes in fp32
  int call(ScalarOp sop, const std::vector<int>& args, DType) override {
    if (args.size() > 3) throw InternalError("codegen: a scalar op of more than 3 operands in " + n_.name);
    bool all_imm = std::all_of(args.begin(), args.end(), [&](int a) {
      const TraceOp& op = t_.ops[static_cast<size_t>(a)];
      return op.kind == TileWalk::OpKind::Imm && op.error.empty();
    });
    if (all_imm) {  // constant folding, in fp32 as the vector engine computes
      float a[3] = {0, 0, 0};
      for (size_t i = 0; i < args.size(); ++i) a[i] = static_cast<float>(t_.ops[static_cast<size_t>(args[i])].value);
      return constant(eval_scalar_op(sop, a), DType::f32);
    }
    TraceOp op;
    op.kind = TileWalk::OpKind::Call;
    op.sop = sop;
    std::copy(args.begin(), args.end(), op.in.begin());
    return push(std::move(op));
  }
  int reduction(ReductionType type, int v) override {
    TraceOp op;
    op.kind = TileWalk::OpKind::Reduce;
    op.rop = type;
    op.in[0] = v;
    return push(std::move(op));
  }

 private:
  int push(TraceOp op) {
    t_.ops.push_back(std::move(op));
    return static_cast<int>(t_.ops.size()) - 1;
  }
  Trace& t_;
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

namespace {

// Records one kernel's walk (TileWalk::record).
class Recorder {
 public:
  Recorder(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, TileAccessCache::Impl& cache, TileWalk& w)
      : p_(p), k_(k), cache_(cache), w_(w) {
    std::map<std::string, int> writers;
    for (int i : k.nodes) ++writers[p.nodes[static_cast<size_t>(i)].out()];
    for (const auto& [b, n] : writers) in_kernel_.insert(b);
    // Concatenations to join: buffers of several writers here that a node here reads (fusion
    // let them in only with every writer: schedule.cpp, join_problem).
    for (int i : k.nodes) {
      const LoopNode& n = p.nodes[static_cast<size_t>(i)];
      for (const auto& l : n.loads()) {
        ++reads_[l->buffer];
        if (auto it = writers.find(l->buffer); it != writers.end() && it->second > 1) joined_.insert(l->buffer);
      }
    }
    hbm_out_.insert(k.hbm_outputs.begin(), k.hbm_outputs.end());
    if (columns)
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (columns->split[i]) split_.insert(&p.nodes[static_cast<size_t>(k.nodes[i])]);
  }

  void record() {
    // The registers concatenations fill, first: a part may be computed by an earlier node of the
    // kernel straight into its window (record_end). A register is placed at its first write.
    for (int idx : k_.nodes) {
      const LoopNode& n = p_.nodes[static_cast<size_t>(idx)];
      if (!joined_.count(n.out()) || values_.count(n.out())) continue;
      TileWalk::Op join;
      join.kind = TileWalk::OpKind::Join;
      join.node = &n;
      join.cols = p_.buffers.at(n.out()).type.numel() / std::max<int64_t>(n.rows(), 1);
      values_[n.out()] = push(join);
    }
    for (int idx : k_.nodes) {
      const LoopNode& n = p_.nodes[static_cast<size_t>(idx)];
      int v = n.kind == LoopKind::Matmul   ? record_matmul(n)
              : n.kind == LoopKind::Gather ? record_gather(n)
                                           : record_body(n);
      record_end(n, v);
    }
  }

 private:
  const LoopProgram& p_;
  const Kernel& k_;
  TileAccessCache::Impl& cache_;
  TileWalk& w_;
  std::set<std::string> in_kernel_, hbm_out_, joined_;
  std::map<std::string, int> reads_;   // buffer -> loads of it in the kernel
  std::set<const LoopNode*> split_;    // nodes computing a column window (column tiling)
  std::map<std::string, int> values_;  // node output -> its NodeEnd op (a concatenation: its Join)
  std::map<int, uint64_t> hoisted_;    // key of a resident load -> its offset
  std::vector<int> trace_ops_;         // record_body's trace op -> op of the kernel

  int push(const TileWalk::Op& op) {
    w_.ops.push_back(op);
    return static_cast<int>(w_.ops.size()) - 1;
  }
  bool split(const LoopNode& n) const { return split_.count(&n) > 0; }
  int record_load(const LoopNode& node, const ExprNode& e, bool window, bool matmul_a = false);
  void classify_hbm_load(TileWalk::Load& l, const AccessInfo& a, bool window);
  int record_matmul(const LoopNode& node);
  int record_gather(const LoopNode& node);
  int record_body(const LoopNode& n);
  void record_end(const LoopNode& n, int value);
};

// A load: its error for an access the DMA cannot do, then what it is.
int Recorder::record_load(const LoopNode& node, const ExprNode& e, bool window, bool matmul_a) {
  const AccessInfo& a = cache_.load(p_, node, e, matmul_a);
  const AccessPattern& ap = a.ap;
  if (!ap.ok)
    throw InputError(strcat("kernel ", k_.name, ", node ", node.name, ": load ", e.buffer, "[", e.index.str(),
                            "] is not a strided access the LPU DMA can do (", ap.why_not, ")"));
  TileWalk::Load l;
  l.node = &node;
  l.expr = &e;
  l.ap = &ap;
  l.window = window;
  l.width = a.width;
  l.col_stride = ap.col_stride;
  if (in_kernel_.count(e.buffer)) {
    // Produced earlier in this tile: an alias of its register, row-aligned (checked by fusion;
    // a split consumer reads a split producer column by column: column_split.cpp).
    l.kind = TileWalk::LoadKind::InKernel;
    l.producer = values_.at(e.buffer);
  } else {
    classify_hbm_load(l, a, window);
  }
  w_.loads.push_back(l);
  TileWalk::Op op;
  op.kind = TileWalk::OpKind::Load;
  op.load = static_cast<int>(w_.loads.size()) - 1;
  return push(op);
}

void Recorder::classify_hbm_load(TileWalk::Load& l, const AccessInfo& a, bool window) {
  const AccessPattern& ap = a.ap;
  l.buf = a.buf ? a.buf : &p_.buffers.at(l.expr->buffer);  // throws: no such buffer
  l.eb = a.eb;
  // A window of a column-varying access (column tiling): decided by the node, not by the tile's
  // width, so that every tile width of a plan has the same hoisted operands (plan_columns sizes
  // the tile region below them).
  bool windowed = window && ap.col_stride != 0;
  if (a.block_key >= 0) {  // two-level columns (e.g. [heads, hd] merged after a permute)
    l.kind = TileWalk::LoadKind::TwoLevel;
    l.block = ap.col_split;
    l.key = a.block_key;
  } else if (a.hoisted_key >= 0 && !windowed) {  // row-invariant: loaded once, resident
    l.kind = TileWalk::LoadKind::Hoisted;
    l.hoisted_cols = ap.col_stride == 0 ? 1 : l.width;
    auto [it, first] = hoisted_.emplace(a.hoisted_key, static_cast<uint64_t>(w_.hoisted_bytes));
    l.hoisted_addr = it->second;
    l.hoisted_first = first;
    if (first) {
      w_.hoisted_bytes += align_up(l.hoisted_cols * kLmElem, kLmAlign);
      w_.hoisted_hbm_bytes += l.hoisted_cols * l.eb;
    }
  } else {  // loaded with the tile (a row-invariant window: one row, broadcast)
    l.kind = TileWalk::LoadKind::Tile;
    l.one_row = ap.row_affine && ap.row_stride == 0;
    l.key = a.tile_key;
  }
}

// The A operand's load, then either an elided gather's row indices (sxe.gemm_gather) or the
// checks of a B streamed from HBM.
int Recorder::record_matmul(const LoopNode& node) {
  const Expr& a_load = node.body->args.at(0);
  const Expr& b_load = node.body->args.at(1);
  if (a_load->kind != ExprKind::Load || b_load->kind != ExprKind::Load)
    throw InternalError("codegen: matmul body is not mul(load, load) in " + node.name);
  int64_t K = node.reduction_ranges.at(0);
  TileWalk::Op op;
  op.kind = TileWalk::OpKind::Matmul;
  op.node = &node;
  op.split = split(node);
  op.in[0] = record_load(node, *a_load, false, true);
  const TileWalk::Load& a = w_.loads.back();
  int64_t a_cols = a.kind == TileWalk::LoadKind::TwoLevel ? a.width : a.col_stride == 0 ? 1 : a.width;
  if (a_cols != K) throw InputError(strcat("node ", node.name, ": matmul A operand must vary along K"));
  if (const auto& gw = cache_.gathered(p_, node)) {
    op.gathered = &*gw;
    op.eb = dtype_bytes(p_.buffers.at(b_load->buffer).type.dtype);  // what sizing counts per slab element
    op.in[1] = record_load(node, *gw->row_index, op.split);
    op.buf = &p_.buffers.at(gw->gather->gather_table);
    return push(op);
  }
  const MatmulAccess& m = cache_.matmul(p_, node, *b_load);
  if (!m.error.empty()) throw InputError(m.error);
  if (!m.b.buf) (void)p_.buffers.at(b_load->buffer);  // throws: B is no buffer
  if (in_kernel_.count(b_load->buffer))
    throw InternalError("codegen: matmul B operand produced inside its kernel: " + node.name);
  op.matmul = &m.b;
  return push(op);
}

int Recorder::record_gather(const LoopNode& n) {
  TileWalk::Op op;
  op.kind = TileWalk::OpKind::Gather;
  op.node = &n;
  op.split = split(n);
  op.in[0] = record_load(n, *n.gather_index, op.split);
  op.buf = &p_.buffers.at(n.gather_table);
  op.eb = dtype_bytes(op.buf->type.dtype);
  return push(op);
}

// A node's trace in this kernel: its loads classified here, in the walk's order.
int Recorder::record_body(const LoopNode& n) {
  const TileAccessCache::Impl::Trace& t = cache_.trace(n);
  std::vector<int>& at = trace_ops_;
  at.assign(t.ops.size(), -1);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const TraceOp& top = t.ops[i];
    if (!top.error.empty()) throw InputError(top.error);
    if (top.kind == TileWalk::OpKind::Load) {
      at[i] = record_load(n, *top.load, split(n));
      continue;
    }
    TileWalk::Op op;
    op.kind = top.kind;
    op.sop = top.sop;
    op.rop = top.rop;
    op.value = top.value;
    op.node = &n;
    for (size_t j = 0; j < 3; ++j)
      if (top.in[j] >= 0) op.in[j] = at[static_cast<size_t>(top.in[j])];
    at[i] = push(op);
  }
  return at[static_cast<size_t>(t.result)];
}

// The node's value made dense, and its store when it goes to HBM.
void Recorder::record_end(const LoopNode& n, int value) {
  TileWalk::Op end;
  end.kind = TileWalk::OpKind::NodeEnd;
  end.in[0] = value;
  end.node = &n;
  end.split = split(n);
  end.store = hbm_out_.count(n.out()) > 0;
  if (end.store) {
    const StoreAccess& st = cache_.store(p_, n);
    if (!st.ap.ok) throw InternalError(strcat("codegen: store of ", n.name, ": ", st.ap.why_not));
    end.block = st.block;
    end.eb = st.eb;
    end.buf = st.buf;
    end.store_ap = &st.ap;
  }
  if (!joined_.count(n.out())) {
    values_[n.out()] = push(end);
    return;
  }
  const AccessPattern& sp = cache_.store(p_, n).ap;
  if (!sp.ok || sp.base < 0) throw InternalError(strcat("codegen: part ", n.name, " of a concatenation: ", sp.why_not));
  end.join = values_.at(n.out());
  end.join_col = sp.base;
  // The vector op computing a part writes its window directly, with no move after it: the part's
  // own, or that of the node whose whole row the part copies (cat's parts are copies) where
  // nothing else reads that node's value (its NodeEnd then keeps the window: join -2).
  TileWalk::Op* call = &w_.ops[static_cast<size_t>(value)];
  if (call->kind == TileWalk::OpKind::Load) {
    const TileWalk::Load& l = w_.loads[static_cast<size_t>(call->load)];
    TileWalk::Op* prod = l.kind == TileWalk::LoadKind::InKernel ? &w_.ops[static_cast<size_t>(l.producer)] : nullptr;
    bool copy = prod && prod->kind == TileWalk::OpKind::NodeEnd && !prod->store && !prod->split && l.ap->base == 0 &&
                l.col_stride == 1 && l.width == n.out_cols() && prod->node->out_cols() == n.out_cols() &&
                reads_.at(prod->node->out()) == 1;
    call = copy ? &w_.ops[static_cast<size_t>(prod->in[0])] : nullptr;
    if (call && call->kind == TileWalk::OpKind::Call && call->node == prod->node) prod->join = -2;
  }
  if (call && call->kind == TileWalk::OpKind::Call) {  // the part's own op, or its producer's
    call->join = end.join;
    call->join_col = end.join_col;
  }
  push(end);
}

// The reductions a vector op can compute beside its result (`=> rRED`, docs/isa.md).
bool accumulates(ReductionType r) {
  return r == ReductionType::sum || r == ReductionType::max || r == ReductionType::min || r == ReductionType::mean;
}

// Marks the walk's chains. A value passes from one node to the next through the first node's
// NodeEnd and the second's load of it; where that load is the whole row as it is (an alias),
// the Call computing the value is still the source. Post: a unary Call whose operand is a Call
// read by nothing else on the way (no store, no other load) applies its op in that Call's
// instruction; a Call that already ends a chain does not start another. Acc: a Reduce of
// sum, max, min or mean whose operand is a Call (read by anything else too) is computed by the
// Call's instruction; whether the tile's shapes allow it is the replay's call (tile_replay.h).
void mark_chains(TileWalk& w) {
  using Kind = TileWalk::OpKind;
  std::vector<int> uses(w.ops.size(), 0);
  for (const TileWalk::Op& op : w.ops)
    for (int i : op.in)
      if (i >= 0) ++uses[static_cast<size_t>(i)];
  for (const TileWalk::Load& l : w.loads)
    if (l.kind == TileWalk::LoadKind::InKernel && l.producer >= 0) ++uses[static_cast<size_t>(l.producer)];
  // The Call that op `i`'s value is, or -1; `single`: every op on the way has one reader.
  auto source = [&](int i, bool single) {
    while (i >= 0) {
      const TileWalk::Op& op = w.ops[static_cast<size_t>(i)];
      if (single && uses[static_cast<size_t>(i)] != 1) return -1;
      if (op.kind == Kind::Call) return op.join == -1 ? i : -1;
      if (op.kind == Kind::NodeEnd && !op.split && op.join == -1 && !(single && op.store)) {
        i = op.in[0];
        continue;
      }
      if (op.kind != Kind::Load) return -1;
      const TileWalk::Load& l = w.loads[static_cast<size_t>(op.load)];
      const bool alias = l.kind == TileWalk::LoadKind::InKernel && !l.window && l.ap->base == 0 &&
                         (l.col_stride == 1 || l.width == 1) && l.producer >= 0 &&
                         l.width == w.ops[static_cast<size_t>(l.producer)].node->out_cols();
      i = alias ? l.producer : -1;
    }
    return -1;
  };
  std::vector<bool> ends_chain(w.ops.size(), false);
  for (size_t x = 0; x < w.ops.size(); ++x) {
    TileWalk::Op& op = w.ops[x];
    if (op.kind == Kind::Call && scalar_op_arity(op.sop) == 1) {
      const int y = source(op.in[0], true);
      if (y >= 0 && !ends_chain[static_cast<size_t>(y)] && w.ops[static_cast<size_t>(y)].post_of < 0) {
        w.ops[static_cast<size_t>(y)].post_of = static_cast<int>(x);
        ends_chain[x] = true;
      }
    } else if (op.kind == Kind::Reduce && accumulates(op.rop)) {
      const int c = source(op.in[0], false);
      if (c >= 0 && w.ops[static_cast<size_t>(c)].acc < 0 && w.ops[static_cast<size_t>(c)].post_of < 0)
        w.ops[static_cast<size_t>(c)].acc = static_cast<int>(x);
    }
  }
}

}  // namespace

TileWalk TileWalk::record(const LoopProgram& p, const Kernel& k, const ColumnSplit* columns, TileAccessCache& cache) {
  TileWalk w;
  Recorder(p, k, columns, *cache.impl_, w).record();
  if (cache.impl_->vector_chains) mark_chains(w);
  return w;
}

}  // namespace lpu
