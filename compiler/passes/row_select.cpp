// Matmuls over a row select: where(mask, rows, cache) with `mask` non-trivial along one axis
// only and `rows` of size 1 along it (a KV-cache write of one position, read back by attention)
// is consumed as its two parts instead of being materialised. See passes.h and
// docs/core-ops.md ("The other normalisation passes").
#include <optional>

#include "graph/ops.h"
#include "passes/passes.h"
#include "support/error.h"

namespace lpu {
namespace {

// A value of the original graph that is a row select seen through pure views: the `where`
// it comes from, the selected axis in this value's shape, and which branch holds the rows.
struct RowSelect {
  NodeId where = -1;
  int axis = -1;
  bool rows_true = true;  // the rows are the where's true branch (else its false branch)
};

// `s` padded with leading 1s to rank r (numpy broadcasting alignment).
Shape aligned(const Shape& s, size_t r) {
  Shape out(r - s.size(), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// The where node `w` as a row select, if it is one: its mask has size > 1 along exactly one
// axis a (the where's size there), one branch has the where's full shape and the other size 1
// along a; floating dtype.
std::optional<RowSelect> where_row_select(const Graph& g, const Node& w) {
  const Shape& s = w.type.shape;
  if (!is_floating(w.type.dtype) || s.empty()) return std::nullopt;
  Shape m = aligned(g.node(w.inputs[0]).type.shape, s.size());
  int axis = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (m[i] == 1) continue;
    if (axis >= 0) return std::nullopt;  // the mask varies along two axes
    axis = static_cast<int>(i);
  }
  if (axis < 0) return std::nullopt;  // a uniform condition: nothing is selected by rows
  const Shape& x = g.node(w.inputs[1]).type.shape;
  const Shape& y = g.node(w.inputs[2]).type.shape;
  auto small = [&](const Shape& b) { return aligned(b, s.size())[static_cast<size_t>(axis)] == 1; };
  if (y == s && small(x)) return RowSelect{w.id, axis, true};
  if (x == s && small(y)) return RowSelect{w.id, axis, false};
  return std::nullopt;
}

int64_t prefix(const Shape& s, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= s[static_cast<size_t>(i)];
  return p;
}

// The axis of view `v`'s result that holds axis `a` of its input, or -1 when the view does not
// keep that axis whole and alone (a reshape merging or splitting it) or is not followed (a
// slice: the select then ends there, as at any other op).
int view_axis(const Graph& g, const Node& v, int a) {
  const Shape& in = g.node(v.inputs[0]).type.shape;
  const Shape& out = v.type.shape;
  int rank = static_cast<int>(out.size());
  if (v.op == "slice") return -1;
  if (v.op == "permute") {
    auto dims = v.attr_ints("dims");
    for (int j = 0; j < rank; ++j)
      if (normalize_dim(dims[static_cast<size_t>(j)], rank, v) == a) return j;
    return -1;
  }
  if (v.op == "expand") return a + rank - static_cast<int>(in.size());
  // reshape: the elements before and after the axis must stay before and after it.
  int64_t before = prefix(in, a);
  for (int j = 0; j < rank; ++j)
    if (prefix(out, j) == before && out[static_cast<size_t>(j)] == in[static_cast<size_t>(a)]) return j;
  return -1;
}

// The input of `v` through which a row select passes on to v's result, or -1: a pure view, or
// a pointwise op with a floating result of which exactly one input is a row select and every
// other input has size 1 along its selected axis (a scale, a bias broadcast over positions):
// then v(select, ...) = where(mask, v(rows, ...), v(cache, ...)).
int carried_input(const Graph& g, const Node& v, const std::vector<std::optional<RowSelect>>& rs) {
  if (v.kind != NodeKind::Call) return -1;
  if (is_view_op(v)) return rs[static_cast<size_t>(v.inputs[0])] ? 0 : -1;
  if (find_op(v.op)->category != OpCategory::Pointwise || !is_floating(v.type.dtype)) return -1;
  int src = -1;
  for (size_t j = 0; j < v.inputs.size(); ++j)
    if (rs[static_cast<size_t>(v.inputs[j])]) {
      if (src >= 0) return -1;
      src = static_cast<int>(j);
    }
  if (src < 0) return -1;
  const Node& x = g.node(v.inputs[static_cast<size_t>(src)]);
  size_t axis = static_cast<size_t>(rs[static_cast<size_t>(x.id)]->axis + v.type.rank() - x.type.rank());
  for (size_t j = 0; j < v.inputs.size(); ++j)
    if (static_cast<int>(j) != src && aligned(g.node(v.inputs[j]).type.shape, v.type.shape.size())[axis] != 1) return -1;
  return src;
}

// Which operand of matmul `mm` is split: 0 or 1, or -1 for none. Both operands have rank >= 2
// and only one is a row select, selected along one of its two matrix axes (not a batch axis).
// B (the matrix engine's streamed operand, never produced in the matmul's kernel, so a select
// there always goes through HBM) is split along either axis. A is split only along its output
// axis M, and only when B is no larger than the select: the split reads B twice, where a select
// of A could otherwise run as the matmul's prologue; along A's reduced axis the split would move
// the select onto B, so that is never done.
int split_operand(const Graph& g, const Node& mm, const std::vector<std::optional<RowSelect>>& rs) {
  if (mm.kind != NodeKind::Call || mm.op != "matmul") return -1;
  const auto& a = rs[static_cast<size_t>(mm.inputs[0])];
  const auto& b = rs[static_cast<size_t>(mm.inputs[1])];
  const TensorType& ta = g.node(mm.inputs[0]).type;
  const TensorType& tb = g.node(mm.inputs[1]).type;
  if (a.has_value() == b.has_value() || ta.rank() < 2 || tb.rank() < 2) return -1;
  if (b) return b->axis >= tb.rank() - 2 ? 1 : -1;
  return a->axis == ta.rank() - 2 && tb.numel() <= g.node(a->where).type.numel() ? 0 : -1;
}

// The pass in three steps over one graph (the numbered comments).
class RowSelectSplitter {
 public:
  explicit RowSelectSplitter(const Graph& g)
      : g_(g), n_(g.size()), rs_(n_), ok_(n_, true), out_(g.name()), map_(n_, -1), rows_(n_, -1), cache_(n_, -1) {}

  Graph run() {
    find_selects();
    keep_unsplittable();
    // 3. Rebuild: every node is copied (the selects and their views become dead, for dce); the
    // rows and the cache are carried through the views separately; split matmuls are replaced.
    for (const Node& v : g_.nodes()) {
      std::vector<NodeId> in;
      for (NodeId i : v.inputs) in.push_back(map_[at(i)]);
      int k = active(v.id) ? -1 : split_operand(g_, v, rs_);
      if (k >= 0 && !active(v.inputs[static_cast<size_t>(k)])) k = -1;
      if (k >= 0) {
        map_[at(v.id)] = split_matmul(v, k, in);
        continue;
      }
      map_[at(v.id)] = copy_node(out_, v, in);
      if (!active(v.id)) continue;
      if (rs_[at(v.id)]->where == v.id)
        select_parts(v, in);
      else
        carry_parts(v, in);
    }
    return std::move(out_);
  }

 private:
  const Graph& g_;
  const size_t n_;
  std::vector<std::optional<RowSelect>> rs_;
  std::vector<bool> ok_;
  Graph out_;
  std::vector<NodeId> map_, rows_, cache_;

  static size_t at(NodeId id) { return static_cast<size_t>(id); }
  bool active(NodeId id) const {
    const auto& r = rs_[at(id)];
    return r && ok_[at(r->where)];
  }

  // 1. Row selects, and the views and pointwise ops that carry them (carried_input).
  void find_selects() {
    for (const Node& v : g_.nodes()) {
      if (v.kind == NodeKind::Call && v.op == "where") rs_[at(v.id)] = where_row_select(g_, v);
      if (rs_[at(v.id)]) continue;
      int src = carried_input(g_, v, rs_);
      if (src < 0) continue;
      NodeId x = v.inputs[static_cast<size_t>(src)];
      RowSelect r = *rs_[at(x)];
      r.axis = is_view_op(v) ? view_axis(g_, v, r.axis) : r.axis + v.type.rank() - g_.node(x).type.rank();
      if (r.axis >= 0) rs_[at(v.id)] = r;
    }
  }

  // 2. A where is rewritten only when every use of it, through those carriers, is a matmul that
  // can be split: then the selected tensor is no longer computed at all. Anything else reading
  // it (a graph output, a view that merges the axis, a reduction) keeps it as it is.
  void keep_unsplittable() {
    for (const Node& u : g_.nodes())
      for (NodeId i : u.inputs) {
        const auto& r = rs_[at(i)];
        if (!r) continue;
        const auto& ru = rs_[at(u.id)];
        bool fine = (ru && ru->where == r->where) || split_operand(g_, u, rs_) >= 0;
        if (!fine) ok_[at(r->where)] = false;
      }
  }

  NodeId mask_as(NodeId where, int rank, int axis, const std::string& name) {
    NodeId m = map_[at(g_.node(where).inputs[0])];
    Shape s(static_cast<size_t>(rank), 1);
    s[static_cast<size_t>(axis)] = g_.node(where).type.shape[static_cast<size_t>(rs_[at(where)]->axis)];
    return out_.node(m).type.shape == s ? m : out_.add_call("reshape", {m}, {{"shape", s}}, name);
  }

  // A split matmul. X is the row select operand k (rows R, cache C), Y the other one.
  NodeId split_matmul(const Node& v, int k, const std::vector<NodeId>& in) {
    NodeId x = v.inputs[static_cast<size_t>(k)];
    const RowSelect& r = *rs_[at(x)];
    NodeId R = rows_[at(x)], C = cache_[at(x)], Y = in[static_cast<size_t>(1 - k)];
    int xr = g_.node(x).type.rank(), yr = g_.node(v.inputs[static_cast<size_t>(1 - k)]).type.rank();
    auto mm = [&](NodeId p, const std::string& suffix) {
      return out_.add_call("matmul", k == 0 ? std::vector<NodeId>{p, Y} : std::vector<NodeId>{Y, p}, {}, v.name + suffix);
    };
    NodeId res;
    if (k == 0 || r.axis == xr - 1) {
      // An output axis (M of A, N of B): out = where(mask, R·B, C·B) or where(mask, A·R, A·C).
      NodeId m = mask_as(r.where, v.type.rank(), v.type.rank() - (k == 0 ? 2 : 1), v.name + "_mask");
      NodeId with_rows = mm(R, "_rows"), with_cache = mm(C, "_cache");
      res = r.rows_true ? out_.add_call("where", {m, with_rows, with_cache}, {}, v.name)
                        : out_.add_call("where", {m, with_cache, with_rows}, {}, v.name);
    } else {
      res = split_reduced_axis(v, r, yr, R, C, Y);
    }
    if (out_.node(res).type != v.type)
      throw InternalError(strcat("split_row_selects: %", v.name, " changed type to ", type_str(out_.node(res).type)));
    return res;
  }

  // B's reduced axis K: out = (A with 0 at the selected positions)·C
  //                           + (A summed over the selected positions) * R.
  NodeId split_reduced_axis(const Node& v, const RowSelect& r, int yr, NodeId R, NodeId C, NodeId Y) {
    NodeId m = mask_as(r.where, yr, yr - 1, v.name + "_mask");
    NodeId zero = out_.add_call("full", {}, {{"value", 0.0}, {"dtype", std::string(dtype_name(v.type.dtype))}},
                                v.name + "_zero");
    NodeId y_cache = r.rows_true ? out_.add_call("where", {m, zero, Y}, {}, v.name + "_a_cache")
                                 : out_.add_call("where", {m, Y, zero}, {}, v.name + "_a_cache");
    NodeId y_rows = r.rows_true ? out_.add_call("where", {m, Y, zero}, {}, v.name + "_a_rows")
                                : out_.add_call("where", {m, zero, Y}, {}, v.name + "_a_rows");
    NodeId sum = out_.add_call("sum", {y_rows}, {{"dims", std::vector<int64_t>{yr - 1}}, {"keepdim", true}},
                               v.name + "_a_rows_sum");
    return out_.add_call("add", {out_.add_call("matmul", {y_cache, C}, {}, v.name + "_cache"),
                                 out_.add_call("mul", {sum, R}, {}, v.name + "_rows")},
                         {}, v.name);
  }

  Shape rows_shape(const Node& v) const {
    Shape s = v.type.shape;
    s[static_cast<size_t>(rs_[at(v.id)]->axis)] = 1;
    return s;
  }

  // A row select: its rows (size 1 along the axis) and its cache.
  void select_parts(const Node& v, const std::vector<NodeId>& in) {
    const RowSelect& r = *rs_[at(v.id)];
    const Shape rs = rows_shape(v);
    NodeId b = in[r.rows_true ? 1 : 2];
    if (out_.node(b).type.rank() != v.type.rank()) {
      Shape s = aligned(out_.node(b).type.shape, rs.size());
      b = out_.add_call("reshape", {b}, {{"shape", s}}, v.name + "_rows");
    }
    if (out_.node(b).type.shape != rs) b = out_.add_call("expand", {b}, {{"shape", rs}}, v.name + "_rows");
    rows_[at(v.id)] = b;
    cache_[at(v.id)] = in[r.rows_true ? 2 : 1];
  }

  // A view or pointwise op of one: the same op on the rows and on the cache.
  void carry_parts(const Node& v, const std::vector<NodeId>& in) {
    const Shape rs = rows_shape(v);
    size_t src = static_cast<size_t>(carried_input(g_, v, rs_));
    std::vector<NodeId> ri = in, ci = in;
    ri[src] = rows_[at(v.inputs[src])];
    ci[src] = cache_[at(v.inputs[src])];
    Attrs ra = v.attrs;
    if (v.op == "reshape" || v.op == "expand") ra["shape"] = rs;
    rows_[at(v.id)] = out_.add_call(v.op, ri, ra, v.name + "_rows");
    cache_[at(v.id)] = out_.add_call(v.op, ci, v.attrs, v.name + "_cache");
    if (out_.node(rows_[at(v.id)]).type.shape != rs)
      throw InternalError(strcat("split_row_selects: the rows of %", v.name, " have shape ",
                                 shape_str(out_.node(rows_[at(v.id)]).type.shape)));
  }
};

}  // namespace

Graph split_row_selects(const Graph& g) { return RowSelectSplitter(g).run(); }

}  // namespace lpu
