#include "codegen/column_split.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "support/error.h"

namespace lpu {

namespace {
ColumnSplit refuse(std::string why) {
  ColumnSplit s;
  s.why_not = std::move(why);
  return s;
}
}  // namespace

ColumnSplit analyze_column_split(const LoopProgram& p, const Kernel& k) {
  size_t n = k.nodes.size();
  auto node = [&](size_t i) -> const LoopNode& { return p.nodes[static_cast<size_t>(k.nodes[i])]; };
  std::map<std::string, size_t> pos;  // buffer -> the kernel node writing it
  std::set<std::string> parts;        // buffers several nodes write (a concatenation's)
  for (size_t i = 0; i < n; ++i)
    if (!pos.emplace(node(i).out(), i).second) parts.insert(node(i).out());
  for (size_t i = 0; i < n; ++i)
    for (const auto& l : node(i).loads())
      if (parts.count(l->buffer))  // joined in one register (tile_walk.h): whole rows
        return refuse(strcat(node(i).name, " reads ", l->buffer, ", a concatenation joined in local memory"));
  ColumnSplit s;
  s.split.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const LoopNode& c = node(i);
    if (is_opaque(c.kind)) return refuse(strcat(c.name, " (a host or collective node) runs whole rows"));
    if (c.kind == LoopKind::Matmul) {
      if (s.width && c.cols() != s.width)
        return refuse(strcat("its matmuls have different widths (", s.width, " and ", c.cols(), " columns)"));
      s.width = c.cols();
      s.split[i] = true;
    }
  }
  // No matmul: the widest pointwise or gather nodes (a gather reads a window of its table
  // row: one index per row, the columns [c0, c0 + width) of the row it picks).
  auto seedable = [&](size_t i) { return node(i).kind == LoopKind::Pointwise || node(i).kind == LoopKind::Gather; };
  if (!s.width) {
    for (size_t i = 0; i < n; ++i)
      if (seedable(i)) s.width = std::max(s.width, node(i).out_cols());
    for (size_t i = 0; i < n; ++i) s.split[i] = seedable(i) && node(i).out_cols() == s.width;
  }
  if (s.width < 2) {
    for (size_t i = 0; i < n; ++i)
      if (node(i).kind == LoopKind::Reduction)
        return refuse(strcat(node(i).name, " reduces over the row (a row reduction needs its whole row)"));
    return refuse(strcat("no node has a row of several columns to split (", node(0).name, ")"));
  }

  // Nodes are in topological order, so one forward pass propagates the split to consumers.
  for (size_t i = 0; i < n; ++i) {
    const LoopNode& c = node(i);
    bool is_mm = c.kind == LoopKind::Matmul;
    if (c.kind == LoopKind::Gather) {  // its index is one per row: never from a split node
      auto it = pos.find(c.gather_index->buffer);
      if (c.gather_index->kind == ExprKind::Load && it != pos.end() && it->second < i && s.split[it->second])
        return refuse(strcat("gather ", c.name, " takes its indices from ", node(it->second).name, ", which is split"));
      if (s.width && c.out_cols() != s.width) return refuse(strcat(c.name, " (a gather) runs whole rows"));
      s.split[i] = true;
      continue;
    }
    std::vector<Expr> loads = is_mm ? std::vector<Expr>{c.body->args.at(0)} : c.loads();
    for (const auto& l : loads) {
      auto it = pos.find(l->buffer);
      if (it == pos.end() || it->second >= i || !s.split[it->second]) continue;
      const LoopNode& prod = node(it->second);
      if (is_mm) return refuse(strcat("matmul ", c.name, " reads the whole row of ", prod.name, " as its A operand"));
      if (c.kind == LoopKind::Reduction)
        return refuse(strcat(c.name, " reduces over the row of ", prod.name,
                             ", which a column tile holds only part of (a row reduction needs its whole row)"));
      s.split[i] = true;
    }
  }
  auto granule = [&](const AccessPattern& ap) {
    if (ap.col_split && ap.col_split < s.width) s.granule = std::lcm(s.granule, ap.col_split);
  };
  for (size_t i = 0; i < n; ++i) {
    if (!s.split[i]) continue;
    const LoopNode& c = node(i);
    if (c.out_cols() != s.width)
      return refuse(strcat(c.name, " has ", c.out_cols(), " columns, the split row ", s.width));
    granule(analyze_access(c, c.store_index));
    // A is read whole (unsplit), B windowed by the emitter; a gather's table row likewise
    if (c.kind == LoopKind::Matmul || c.kind == LoopKind::Gather) continue;
    for (const auto& l : c.loads()) {
      AccessPattern ap = analyze_access(c, l->index);
      auto it = pos.find(l->buffer);
      if (it == pos.end() || it->second >= i) {  // from HBM: any strided window
        granule(ap);
        continue;
      }
      const LoopNode& prod = node(it->second);
      bool same_cols = ap.ok && ap.base == 0 && ap.col_stride == 1 && !(ap.col_split && ap.col_split < s.width);
      if (s.split[it->second] && !same_cols)
        return refuse(strcat(c.name, " reads ", prod.name, "[", l->index.str(), "], not column by column"));
      if (!s.split[it->second] && !(ap.ok && ap.col_stride == 0))
        return refuse(strcat(c.name, " reads the row of ", prod.name, ", which is not split"));
    }
  }
  if (s.width % s.granule != 0) return refuse(strcat("column blocks of ", s.granule, " do not tile ", s.width));
  s.ok = true;
  return s;
}

}  // namespace lpu
