// Host ops that have a core form in the cases mixture-of-experts layers use, so they run on the
// LPU instead of as graph breaks (docs/core-ops.md, "Host ops with a core form"):
//   aten.topk (largest, floating)   k rounds of amax + argmax, each masking the element it took
//   aten.index (one index at dim 0) an embedding gather of whole slabs of a graph input
//   aten.gather (k <= 16 picks along a dim, the other dims whole): k masked sums, one per pick
// Any other use stays a host op, as declared. Semantics are the host op's exactly: ties go to
// the lower index (argmax takes the first maximum, as torch's stable sort does), negative
// indices wrap.
#include <limits>

#include "graph/aten.h"
#include "graph/ops.h"
#include "passes/decompose.h"
#include "support/error.h"

namespace lpu {
namespace {

bool integer(DType t) { return t == DType::i64 || t == DType::i32; }

// The largest k a topk is unrolled for: each round is a few row reductions over the dim.
constexpr int64_t kMaxUnrolledTopk = 16;

// topk(x, k, dim, largest) -> values or indices (n's result 0 or 1), as k selection rounds in
// f32: v_j = amax(x_j), i_j = argmax(x_j), x_{j+1} = where(iota == i_j, -inf, x_j). The iota is
// an aten.arange (one host op per graph after CSE: every topk over the same width shares it).
std::optional<NodeId> topk(Graph& g, const Node& n, const std::vector<NodeId>& in) {
  const TensorType xt = g.node(in[0]).type;  // a copy: adding nodes below moves the graph's nodes
  if (!is_floating(xt.dtype) || xt.rank() < 1 || !n.attr_bool("largest", true)) return std::nullopt;
  const int64_t k = n.attr_int("k"), d = normalize_dim(n.attr_int("dim", -1), xt.rank(), n);
  const int64_t width = xt.shape[static_cast<size_t>(d)];
  if (k < 1 || k > kMaxUnrolledTopk || k > width) return std::nullopt;
  Builder b{g, n};
  NodeId x = b.cast(in[0], DType::f32);
  Shape iota_shape(xt.shape.size(), 1);
  iota_shape[static_cast<size_t>(d)] = width;
  NodeId iota = b.reshape(g.add_call("aten.arange", {}, {{"end", width}, {"dtype", std::string(dtype_name(DType::f32))}},
                                     strcat("topk_iota_", width)),
                          iota_shape);
  Attrs red{{"dims", std::vector<int64_t>{d}}, {"keepdim", true}};
  const bool want_indices = aten::result_index(n, 2) == 1;
  std::vector<NodeId> parts;
  for (int64_t j = 0; j < k; ++j) {
    NodeId idx = b.call("argmax", {x}, red, strcat("top", j, "_index"));
    parts.push_back(want_indices ? idx : b.call("amax", {x}, red, strcat("top", j, "_value")));
    if (j + 1 == k) break;
    NodeId taken = b.call("eq", {iota, idx}, {}, strcat("top", j, "_taken"));
    x = b.call("where", {taken, b.scalar(-std::numeric_limits<double>::infinity(), DType::f32), x}, {},
               strcat("top", j + 1, "_rest"));
  }
  NodeId r = parts.size() == 1 ? parts[0] : b.call("cat", parts, {{"dim", d}}, "top");
  return b.cast(r, n.type.dtype);
}

// self[ids] with one index tensor at dim 0 of a graph input (a weight, as MoE experts are):
// embedding(self as [rows, slab], ids wrapped) reshaped to ids.shape + self.shape[1:].
std::optional<NodeId> index(Graph& g, const Node& n, const std::vector<NodeId>& in) {
  if (in.size() != 2) return std::nullopt;
  if (n.has_attr("indexed_dims") && n.attr_ints("indexed_dims") != std::vector<int64_t>{0}) return std::nullopt;
  const Node& self = g.node(in[0]);
  if (self.kind != NodeKind::Parameter && self.kind != NodeKind::Placeholder) return std::nullopt;
  if (self.type.rank() < 1 || !integer(g.node(in[1]).type.dtype) || g.node(in[1]).type.rank() < 1)
    return std::nullopt;
  Builder b{g, n};
  const int64_t rows = self.type.shape[0];
  const int64_t slab = rows ? self.type.numel() / rows : 0;
  if (slab < 1) return std::nullopt;
  NodeId ids = in[1];
  NodeId wrapped = b.call("where", {b.call("lt", {ids, b.scalar(0, b.type(ids).dtype)}, {}, "negative"),
                                    b.call("add", {ids, b.scalar(static_cast<double>(rows), b.type(ids).dtype)}, {}, "wrapped"),
                                    ids},
                          {}, "ids");
  NodeId rowsv = b.call("embedding", {b.reshape(in[0], {rows, slab}), wrapped}, {}, "rows");
  return b.reshape(rowsv, n.type.shape);
}

// gather(x, dim, idx) with idx as x but k (<= 16) wide along dim (a router picking its top-k
// experts' scores): pick j is sum(where(iota == idx_j, x, 0)) along dim, exact (one nonzero).
std::optional<NodeId> gather(Graph& g, const Node& n, const std::vector<NodeId>& in) {
  if (in.size() != 2) return std::nullopt;
  const TensorType xt = g.node(in[0]).type;  // copies: adding nodes below moves the graph's nodes
  const TensorType it = g.node(in[1]).type;
  if (!is_floating(xt.dtype) || !integer(it.dtype) || xt.rank() < 1 || it.rank() != xt.rank()) return std::nullopt;
  const int64_t d = normalize_dim(n.attr_int("dim", 0), xt.rank(), n);
  const int64_t width = xt.shape[static_cast<size_t>(d)], k = it.shape[static_cast<size_t>(d)];
  for (int i = 0; i < xt.rank(); ++i)
    if (i != d && it.shape[static_cast<size_t>(i)] != xt.shape[static_cast<size_t>(i)]) return std::nullopt;
  if (k < 1 || k > kMaxUnrolledTopk || width < 1) return std::nullopt;
  Builder b{g, n};
  Shape iota_shape(xt.shape.size(), 1);
  iota_shape[static_cast<size_t>(d)] = width;
  NodeId iota = b.reshape(g.add_call("aten.arange", {}, {{"end", width}, {"dtype", std::string(dtype_name(DType::f32))}},
                                     strcat("gather_iota_", width)),
                          iota_shape);
  const DType idt = it.dtype;
  NodeId ids = b.call("where", {b.call("lt", {in[1], b.scalar(0, idt)}, {}, "negative"),
                                b.call("add", {in[1], b.scalar(static_cast<double>(width), idt)}, {}, "wrapped"), in[1]},
                      {}, "ids");
  ids = b.cast(ids, DType::f32);  // compared with the f32 iota (exact below 2^24)
  NodeId x = b.cast(in[0], DType::f32);
  std::vector<NodeId> parts;
  for (int64_t j = 0; j < k; ++j) {
    NodeId pick = b.call("slice", {ids}, {{"dim", d}, {"start", j}, {"end", j + 1}}, strcat("pick", j));
    NodeId hit = b.call("eq", {iota, pick}, {}, strcat("pick", j, "_hit"));
    NodeId only = b.call("where", {hit, x, b.scalar(0, DType::f32)}, {}, strcat("pick", j, "_only"));
    parts.push_back(b.call("sum", {only}, {{"dims", std::vector<int64_t>{d}}, {"keepdim", true}}, strcat("pick", j, "_value")));
  }
  NodeId r = parts.size() == 1 ? parts[0] : b.call("cat", parts, {{"dim", d}}, "picked");
  return b.cast(r, n.type.dtype);
}

}  // namespace

std::optional<NodeId> decompose_host_op(Graph& out, const Node& n, const std::vector<NodeId>& in) {
  std::optional<NodeId> r = n.op == "aten.topk"     ? topk(out, n, in)
                           : n.op == "aten.index"  ? index(out, n, in)
                           : n.op == "aten.gather" ? gather(out, n, in)
                                                   : std::nullopt;
  if (r && !(out.node(*r).type == n.type))
    throw InternalError(strcat("core form of ", n.op, " gave %", n.name, " type ", type_str(out.node(*r).type),
                               " instead of ", type_str(n.type)));
  return r;
}

}  // namespace lpu
