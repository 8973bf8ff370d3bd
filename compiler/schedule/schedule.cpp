#include "schedule/schedule.h"

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <sstream>

#include "support/error.h"
#include "support/units.h"

namespace lpu {

const std::vector<std::string>& fusion_policies() {
  static const std::vector<std::string> p = {"none", "greedy"};
  return p;
}

int64_t compulsory_hbm_bytes(const LoopProgram& p) {
  // An input read only as a gather's table (an embedding, MoE expert slabs) must supply the
  // rows the indices pick, at most one per index: min(rows, indices) rows of it.
  std::map<std::string, int64_t> gathered_rows;  // table -> indices over its gathers
  std::set<std::string> read_otherwise;
  for (const LoopNode& n : p.nodes) {
    if (n.kind == LoopKind::Gather) gathered_rows[n.gather_table] += n.rows();
    for (const std::string& b : n.loaded_buffers())  // host inputs included
      if (n.kind != LoopKind::Gather || b != n.gather_table) read_otherwise.insert(b);
  }
  int64_t b = 0;
  for (const auto& n : p.inputs) {
    const Buffer& buf = p.buffers.at(n);
    auto g = gathered_rows.find(n);
    const int64_t rows = buf.type.shape.empty() ? 1 : buf.type.shape[0];
    if (g == gathered_rows.end() || read_otherwise.count(n) || rows < 1) {
      b += buf.bytes();
      continue;
    }
    b += buf.bytes() / rows * std::min(rows, g->second);
  }
  for (const auto& n : p.outputs) b += p.buffers.at(n).bytes();
  return b;
}

namespace {

// Union-find over node indices; the representative is the group's smallest node index.
// Each representative keeps its members (sorted) and a version bumped on every merge, so a
// decision about two unchanged groups is not re-evaluated.
struct Groups {
  std::vector<int> parent;
  std::vector<std::vector<int>> list;  // members, valid at representatives
  std::vector<int> version;
  explicit Groups(size_t n) : parent(n), list(n), version(n, 0), out_edges(n, {-1, {}}) {
    std::iota(parent.begin(), parent.end(), 0);
    for (size_t i = 0; i < n; ++i) list[i] = {static_cast<int>(i)};
    while (leaves_ < n) leaves_ *= 2;
    last_member_.assign(2 * leaves_, -1);
    for (size_t i = 0; i < n; ++i) set_last_member(static_cast<int>(i), static_cast<int>(i));
  }
  int find(int x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  }
  void merge(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (a > b) std::swap(a, b);
    parent[static_cast<size_t>(b)] = a;
    auto& la = list[static_cast<size_t>(a)];
    auto& lb = list[static_cast<size_t>(b)];
    std::vector<int> m;
    m.reserve(la.size() + lb.size());
    std::merge(la.begin(), la.end(), lb.begin(), lb.end(), std::back_inserter(m));
    la = std::move(m);
    lb.clear();
    lb.shrink_to_fit();
    ++version[static_cast<size_t>(a)];
    set_last_member(b, -1);
    set_last_member(a, la.back());
  }
  // The last member of any group whose first member is at most x: where a group that starts
  // before x can end (cycle_reason's bound). Max over [0, x] of the tree below.
  int last_member_upto(int x) const {
    int r = -1;
    for (size_t lo = leaves_, hi = leaves_ + static_cast<size_t>(x) + 1; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) r = std::max(r, last_member_[lo++]);
      if (hi & 1) r = std::max(r, last_member_[--hi]);
    }
    return r;
  }
  const std::vector<int>& members(int g) { return list[static_cast<size_t>(find(g))]; }

  // The edges (member, successor) leaving group g, members ascending and each member's
  // successors in order: the cycle search walks these on every candidate, and a large group's
  // internal edges would be most of its walk. Kept per representative until g changes.
  const std::vector<std::pair<int, int>>& edges_out(int g, const std::vector<std::vector<int>>& succs) {
    g = find(g);
    auto& [ver, edges] = out_edges[static_cast<size_t>(g)];
    if (ver != version[static_cast<size_t>(g)]) {
      edges.clear();
      for (int v : list[static_cast<size_t>(g)])
        for (int s : succs[static_cast<size_t>(v)])
          if (find(s) != g) edges.emplace_back(v, s);
      ver = version[static_cast<size_t>(g)];
    }
    return edges;
  }

 private:
  std::vector<std::pair<int, std::vector<std::pair<int, int>>>> out_edges;  // version, edges
  // A max segment tree over node indices: at a representative's leaf its group's last member,
  // -1 at every other node's.
  size_t leaves_ = 1;
  std::vector<int> last_member_;
  void set_last_member(int node, int value) {
    size_t i = leaves_ + static_cast<size_t>(node);
    last_member_[i] = value;
    for (i /= 2; i > 0; i /= 2) last_member_[i] = std::max(last_member_[2 * i], last_member_[2 * i + 1]);
  }
};

// A set of node indices emptied in O(1) (a stamp per node), for the membership tests the
// fusion search makes on every candidate; a std::set there cost a third of a large compile.
struct NodeSet {
  std::vector<unsigned> mark;
  unsigned stamp = 1;
  explicit NodeSet(size_t n) : mark(n, 0) {}
  void clear() {
    if (++stamp == 0) {  // wrapped: forget every old mark
      std::fill(mark.begin(), mark.end(), 0);
      stamp = 1;
    }
  }
  bool count(int i) const { return mark[static_cast<size_t>(i)] == stamp; }
  bool insert(int i) {  // true when i was not in the set
    unsigned& m = mark[static_cast<size_t>(i)];
    if (m == stamp) return false;
    m = stamp;
    return true;
  }
};

struct Analysis {
  const LoopProgram& p;
  std::map<std::string, std::vector<int>> writers;  // buffer -> nodes writing it
  std::vector<std::vector<int>> preds, succs;       // data dependencies between nodes
  std::vector<std::set<std::string>> reads;         // buffers read by each node
  std::set<std::string> graph_outputs;
  bool topological = true;               // every node after its producers
  std::vector<std::vector<Expr>> loads;  // LoopNode::loads() of each node, once
  // Per node, per load: the nodes writing the loaded buffer (nullptr for a graph input), so
  // judging a candidate looks no buffer name up.
  std::vector<std::vector<const std::vector<int>*>> load_writers;
  std::vector<size_t> out_writers;  // per node: how many nodes write its output buffer
  std::vector<int64_t> rows;        // LoopNode::rows() of each node: every candidate compares them
  // Access patterns depend on one node and one load only, not on the group being judged:
  // computed once, on first use (illegal_reason asks for them on every candidate).
  mutable std::vector<std::optional<AccessPattern>> store_patterns;              // per node
  mutable std::vector<std::vector<std::optional<AccessPattern>>> read_patterns;  // per node, per load
  mutable std::vector<std::vector<std::optional<std::string>>> load_problems;    // per node, per load
  const std::string& load_problem(int i, size_t j) const;
  // Scratch of the candidate being judged (one judgement at a time): its member and visited
  // sets, and the cycle search's stack, kept so that judging allocates nothing.
  mutable NodeSet members, visited;
  mutable std::vector<int> stack;

  const AccessPattern& store_pattern(int i) const {
    auto& slot = store_patterns[static_cast<size_t>(i)];
    if (!slot) {
      const LoopNode& n = p.nodes[static_cast<size_t>(i)];
      slot = analyze_access(n, n.store_index);
    }
    return *slot;
  }
  const AccessPattern& read_pattern(int i, size_t load) const {
    auto& slot = read_patterns[static_cast<size_t>(i)][load];
    if (!slot) {
      const LoopNode& c = p.nodes[static_cast<size_t>(i)];
      const Expr& l = loads[static_cast<size_t>(i)][load];
      slot = c.kind == LoopKind::Matmul
                 ? analyze_access(c, l->index, {LoopVar::reduction(0)}, c.reduction_ranges)
                 : analyze_access(c, l->index);
    }
    return *slot;
  }

  explicit Analysis(const LoopProgram& prog)
      : p(prog),
        graph_outputs(prog.outputs.begin(), prog.outputs.end()),
        members(prog.nodes.size()),
        visited(prog.nodes.size()) {
    size_t n = p.nodes.size();
    preds.resize(n);
    succs.resize(n);
    reads.resize(n);
    loads.resize(n);
    load_writers.resize(n);
    out_writers.resize(n);
    store_patterns.resize(n);
    read_patterns.resize(n);
    rows.resize(n);
    for (size_t i = 0; i < n; ++i) {
      loads[i] = p.nodes[i].loads();
      rows[i] = p.nodes[i].rows();
    }
    for (size_t i = 0; i < n; ++i) writers[p.nodes[i].out()].push_back(static_cast<int>(i));
    for (size_t i = 0; i < n; ++i) {
      out_writers[i] = writers[p.nodes[i].out()].size();
      read_patterns[i].resize(loads[i].size());
      load_problems.push_back(std::vector<std::optional<std::string>>(loads[i].size()));
      for (const auto& l : loads[i]) {
        auto it = writers.find(l->buffer);
        load_writers[i].push_back(it == writers.end() ? nullptr : &it->second);
        if (!reads[i].insert(l->buffer).second || it == writers.end()) continue;
        for (int w : it->second) {
          preds[i].push_back(w);
          succs[static_cast<size_t>(w)].push_back(static_cast<int>(i));
          if (w >= static_cast<int>(i)) topological = false;
        }
      }
    }
  }
};

// Why node i's load j, whose producer is in the same kernel, keeps the two from running as
// one row-tiled kernel, or "": it depends on the node, the load and its producer only.
// Whether writer w stores its rows as columns [base, base + its columns) of rows of `row`
// elements: one part of a row-wise concatenation.
bool stores_a_column_window(const Analysis& a, int w, int64_t row) {
  const LoopNode& prod = a.p.nodes[static_cast<size_t>(w)];
  const AccessPattern& sp = a.store_pattern(w);
  const int64_t cols = prod.out_cols();
  return sp.ok && sp.row_affine && sp.base >= 0 && sp.base + cols <= row && !(sp.col_split && sp.col_split < cols) &&
         (prod.rows() == 1 || sp.row_stride == row) && (cols == 1 || sp.col_stride == 1);
}

// The row of a buffer written by several nodes, read in the kernel that holds them all: each
// writer must store a column window of the same rows, and the windows must tile the row (a
// concatenation along the columns; codegen joins the parts in one register). Returns "" or why.
std::string join_problem(const Analysis& a, const std::string& buffer, const std::vector<int>& ws, int64_t& row) {
  const LoopNode& first = a.p.nodes[static_cast<size_t>(ws[0])];
  row = a.p.buffers.at(buffer).type.numel() / std::max<int64_t>(first.rows(), 1);
  std::vector<std::pair<int64_t, int64_t>> parts;  // [base, end) of each writer's window
  for (int w : ws) {
    const LoopNode& prod = a.p.nodes[static_cast<size_t>(w)];
    if (prod.rows() != first.rows() || !stores_a_column_window(a, w, row))
      return strcat("concatenation: ", prod.name, " does not store a column window of the rows of ", buffer, " (",
                    prod.store_index.str(), ")");
    parts.push_back({a.store_pattern(w).base, a.store_pattern(w).base + prod.out_cols()});
  }
  std::sort(parts.begin(), parts.end());
  int64_t at = 0;
  for (const auto& [b, e] : parts) {
    if (b != at) return strcat("concatenation: the ", ws.size(), " writers of ", buffer, " do not tile its row");
    at = e;
  }
  if (at != row) return strcat("concatenation: the ", ws.size(), " writers of ", buffer, " do not tile its row");
  return "";
}

std::string load_problem_uncached(const Analysis& a, int i, size_t j) {
  const LoopProgram& p = a.p;
  const LoopNode& c = p.nodes[static_cast<size_t>(i)];
  const Expr& l = a.loads[static_cast<size_t>(i)][j];
  const std::vector<int>* ws = a.load_writers[static_cast<size_t>(i)][j];
  const LoopNode& prod = p.nodes[static_cast<size_t>((*ws)[0])];
  int64_t prod_cols = prod.out_cols();
  const std::string& prod_name = ws->size() > 1 ? l->buffer : prod.name;
  if (ws->size() > 1) {
    if (std::string why = join_problem(a, l->buffer, *ws, prod_cols); !why.empty()) return why;
  } else {
    const AccessPattern& sp = a.store_pattern((*ws)[0]);
    // With a single row the row stride is irrelevant (size-1 variables are folded away).
    if (!sp.ok || !sp.row_affine || sp.base != 0 || (sp.col_split && sp.col_split < prod_cols) ||
        (prod.rows() != 1 && sp.row_stride != prod_cols) || (prod_cols > 1 && sp.col_stride != 1))
      return strcat("index mismatch: ", prod.name, " is not stored row by row (", prod.store_index.str(), ")");
  }
  bool one_row = prod.rows() == 1;
  int64_t width = c.cols();
  if (c.kind == LoopKind::Matmul) {
    if (l.get() == c.body->args[1].get() || l->buffer == c.body->args[1]->buffer)
      return strcat("matrix-engine operand: ", c.name, " streams ", prod_name, " as its B operand from HBM");
    width = c.reduction_ranges[0];
  }
  const AccessPattern& rp = a.read_pattern(i, j);
  if (!rp.ok) return strcat("index mismatch: ", c.name, " reads ", prod_name, ": ", rp.why_not);
  if (rp.col_split && rp.col_split < width)
    return strcat("index mismatch: ", c.name, " reads ", prod_name, "[", l->index.str(), "] in ", width / rp.col_split,
                  " column blocks, not as the row ", prod_name, " computes");
  int64_t last = rp.base + rp.col_stride * (width - 1);
  if (!rp.row_affine || (!one_row && rp.row_stride != prod_cols) || rp.base < 0 || last < 0 || last >= prod_cols)
    return strcat("index mismatch: ", c.name, " reads ", prod_name, "[", l->index.str(), "], not the row ", prod_name,
                  " computes");
  return "";
}

const std::string& Analysis::load_problem(int i, size_t j) const {
  auto& slot = load_problems[static_cast<size_t>(i)][j];
  if (!slot) slot = load_problem_uncached(*this, i, j);
  return *slot;
}

// Why the nodes of `merged` cannot run as one row-tiled kernel, or "" when they can.
std::string illegal_reason(const Analysis& a, const std::vector<int>& merged) {
  const LoopProgram& p = a.p;
  for (int i : merged)  // first: a break is the reason, whatever else would also be wrong
    if (const LoopNode& n = p.nodes[static_cast<size_t>(i)]; is_opaque(n.kind))
      return n.kind == LoopKind::Host ? strcat("graph break: ", n.name, " runs on the host")
                                      : strcat("collective: ", n.name, " runs over the ESL");
  int64_t rows = a.rows[static_cast<size_t>(merged[0])];
  for (int i : merged)
    if (a.rows[static_cast<size_t>(i)] != rows)
      return strcat("different iteration space: ", p.nodes[static_cast<size_t>(merged[0])].name, " has ", rows,
                    " rows, ", p.nodes[static_cast<size_t>(i)].name, " has ", a.rows[static_cast<size_t>(i)]);
  for (int i : merged)
    if (p.nodes[static_cast<size_t>(i)].kind == LoopKind::Gather)
      return strcat("gather: ", p.nodes[static_cast<size_t>(i)].name, " reads its table indirectly and runs alone");
  NodeSet& in = a.members;
  in.clear();
  for (int i : merged) in.insert(i);
  for (int i : merged) {
    const auto& loads = a.loads[static_cast<size_t>(i)];
    for (size_t j = 0; j < loads.size(); ++j) {
      const std::vector<int>* ws = a.load_writers[static_cast<size_t>(i)][j];
      if (!ws) continue;
      size_t inside = 0;
      for (int w : *ws) inside += in.count(w) ? 1 : 0;
      if (!inside) continue;
      if (inside < ws->size())  // a concatenation joins in local memory only whole
        return strcat("concatenation: ", loads[j]->buffer, " is written by ", ws->size(), " nodes, ",
                      ws->size() - inside, " of them outside the kernel, and is read from HBM");
      if (const std::string& why = a.load_problem(i, j); !why.empty()) return why;
    }
  }
  return "";
}

// A kernel of `nodes`: it writes to HBM whatever a graph output or a node outside it reads.
Kernel make_kernel(const Analysis& a, const std::vector<int>& nodes) {
  Kernel k;
  k.nodes = nodes;
  const LoopNode& first = a.p.nodes[static_cast<size_t>(nodes[0])];
  k.rows = a.rows[static_cast<size_t>(nodes[0])];
  NodeSet& self = a.members;
  self.clear();
  for (int m : nodes) self.insert(m);
  for (int m : nodes) {
    const LoopNode& ln = a.p.nodes[static_cast<size_t>(m)];
    // The host (or the ESL) writes its result to HBM itself, so such a node's output lives there.
    // A buffer with several writers stays local only where the kernel holds them all (a
    // concatenation joined in local memory).
    bool external = is_opaque(ln.kind) || a.graph_outputs.count(ln.out()) > 0;
    if (a.out_writers[static_cast<size_t>(m)] > 1)
      for (int w : a.writers.at(ln.out())) external |= !self.count(w);
    for (int su : a.succs[static_cast<size_t>(m)])
      if (!self.count(su)) external = true;
    if (external && std::find(k.hbm_outputs.begin(), k.hbm_outputs.end(), ln.out()) == k.hbm_outputs.end())
      k.hbm_outputs.push_back(ln.out());
  }
  k.name = strcat(first.name, nodes.size() > 1 ? strcat("_x", nodes.size()) : "");
  return k;
}

}  // namespace

int64_t untiled_hbm_bytes(const LoopProgram& p, const Kernel& k) {
  std::set<std::string> produced, read;
  for (int i : k.nodes) produced.insert(p.nodes[static_cast<size_t>(i)].out());
  int64_t b = 0;
  for (int i : k.nodes) {
    const LoopNode& n = p.nodes[static_cast<size_t>(i)];
    for (const auto& l : n.loads())
      if (!produced.count(l->buffer) && read.insert(l->buffer).second) b += p.buffers.at(l->buffer).bytes();
    if (n.kind == LoopKind::Gather && read.insert(n.gather_table).second)  // upper bound: the whole table
      b += p.buffers.at(n.gather_table).bytes();
  }
  for (const auto& o : k.hbm_outputs) b += p.buffers.at(o).bytes();
  return b;
}

namespace {

struct Candidate {
  int x, y;
  std::string kind;
  int64_t score;
};

// Candidate pairs, best first: vertical (producer -> consumer: saves the producer's write and
// the consumer's read), horizontal (siblings reading the same buffers: saves one read) and
// concatenation (two parts of one buffer: lets its readers join them).
// Siblings are paired through the buffers they read, so the cost is in the number of readers,
// not nodes squared; a buffer read by very many nodes (a mask every layer reads) pairs each
// reader with the next only.
std::vector<Candidate> fusion_candidates(const Analysis& a) {
  const LoopProgram& p = a.p;
  size_t n = p.nodes.size();
  std::vector<Candidate> cands;
  for (size_t c = 0; c < n; ++c) {
    std::set<int> seen;
    for (int pr : a.preds[c])
      if (seen.insert(pr).second)
        cands.push_back(
            {pr, static_cast<int>(c), "vertical", 2 * p.buffers.at(p.nodes[static_cast<size_t>(pr)].out()).bytes()});
  }
  constexpr size_t kAllPairsReaders = 64;
  std::map<std::string, std::vector<int>> readers;
  for (size_t i = 0; i < n; ++i)
    for (const auto& b : a.reads[i]) readers[b].push_back(static_cast<int>(i));
  std::map<std::pair<int, int>, int64_t> shared;
  for (const auto& [b, rs] : readers) {
    int64_t bytes = p.buffers.at(b).bytes();
    if (rs.size() <= kAllPairsReaders) {
      for (size_t i = 0; i < rs.size(); ++i)
        for (size_t j = i + 1; j < rs.size(); ++j) shared[{rs[i], rs[j]}] += bytes;
    } else {
      for (size_t i = 0; i + 1 < rs.size(); ++i) shared[{rs[i], rs[i + 1]}] += bytes;
    }
  }
  for (const auto& [xy, bytes] : shared)
    if (bytes > 0) cands.push_back({xy.first, xy.second, "horizontal", bytes});
  // The parts of a concatenation (a buffer several nodes write), each with the next: a reader
  // joins them in local memory only in a kernel that holds every part (join_problem), which
  // saves the buffer's write and read.
  for (const auto& [b, ws] : a.writers)
    for (size_t i = 0; i + 1 < ws.size(); ++i)
      cands.push_back({ws[i], ws[i + 1], "concatenation", 2 * p.buffers.at(b).bytes()});
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& l, const Candidate& r) {
    if (l.score != r.score) return l.score > r.score;
    if (l.x != r.x) return l.x < r.x;
    if (l.y != r.y) return l.y < r.y;
    return l.kind > r.kind;  // vertical first
  });
  return cands;
}

// A path from `merged` through nodes outside it back into it would make the fused kernel both
// depend on and feed them. The path runs over kernels, not nodes: a group already fused is one
// kernel, so entering it at one member and leaving it at another is a path too (two sibling
// nodes fused horizontally, one fed by the merged group and one feeding it, close a cycle that
// no node-level path shows).
// Where nodes are in topological order, the search stops at groups that start past a bound B:
// every group starting at or before B also ends there (B is the closure of the merged group's
// last member under "the last member of a group starting at or before it"), so a group starting
// past B has all its members past B, its edges lead past B, into such groups only, and never
// back into the merged group. (The bound was once the merged group's last member alone, which
// missed a path through a group spanning it, one member before and one after: OPT-1.3B's
// 96-token chunk on a 1024-token cache fused a cycle.)
// A group past the bound, or one visited already, would be popped and skipped: it is not
// pushed at all, which visits the same groups in the same order (and so finds the same edge).
std::string cycle_reason(const Analysis& a, Groups& groups, const std::vector<int>& merged) {
  NodeSet& in = a.members;
  in.clear();
  for (int m : merged) in.insert(m);
  int bound = merged.back();
  for (int end = groups.last_member_upto(bound); end > bound; end = groups.last_member_upto(bound)) bound = end;
  std::vector<int>& stack = a.stack;  // groups to visit
  stack.clear();
  NodeSet& seen = a.visited;
  seen.clear();
  auto unvisited = [&](int g) { return !(a.topological && g > bound) && !seen.count(g); };
  for (int m : merged)
    for (int s : a.succs[static_cast<size_t>(m)])
      if (!in.count(s))
        if (int g = groups.find(s); unvisited(g)) stack.push_back(g);
  while (!stack.empty()) {
    int g = stack.back();
    stack.pop_back();
    if (!seen.insert(g)) continue;  // pushed twice before its first visit
    for (auto [v, s] : groups.edges_out(g, a.succs)) {
      if (in.count(s)) return strcat("would create a cycle through ", a.p.nodes[static_cast<size_t>(v)].name);
      if (int h = groups.find(s); unvisited(h)) stack.push_back(h);
    }
  }
  return "";
}

// A pair of a fusion kind the options turn off (ScheduleOptions::fuse_*), or "".
std::string disabled_reason(const LoopProgram& p, const Candidate& c, const ScheduleOptions& opts) {
  if (c.kind == "horizontal") return opts.fuse_horizontal ? "" : "disabled: horizontal fusion is off";
  bool x_mm = p.nodes[static_cast<size_t>(c.x)].kind == LoopKind::Matmul;
  bool y_mm = p.nodes[static_cast<size_t>(c.y)].kind == LoopKind::Matmul;
  if (!opts.fuse_prologue && !x_mm && y_mm) return "disabled: prologue fusion into a matmul is off";
  if (!opts.fuse_epilogue && x_mm && !y_mm) return "disabled: epilogue fusion of a matmul is off";
  return "";
}

// The greedy policy: candidates in score order, each fused when legal and worth it, in rounds
// until nothing changes. Fills the schedule's decisions and merges `groups`.
class GreedyFusion {
 public:
  GreedyFusion(const Analysis& a, Groups& groups, Schedule& s, const ScheduleOptions& opts)
      : a_(a), p_(a.p), groups_(groups), s_(s), opts_(opts) {}

  void run() {
    cands_ = fusion_candidates(a_);
    s_.decisions.resize(cands_.size());
    for (size_t ci = 0; ci < cands_.size(); ++ci) {
      FusionDecision& d = s_.decisions[ci];
      d.producer = p_.nodes[static_cast<size_t>(cands_[ci].x)].name;
      d.consumer = p_.nodes[static_cast<size_t>(cands_[ci].y)].name;
      d.kind = cands_[ci].kind;
      d.score_bytes = cands_[ci].score;
    }
    judged_.assign(cands_.size(), {-1, -1, -1, -1});
    // Rounds until nothing changes: a pair rejected because it would close a cycle through a
    // third group can become legal once that group has joined (as in Inductor's scheduler).
    bool changed = true;
    for (int round = 0; round < 10 && changed; ++round) {
      changed = false;
      for (size_t ci = 0; ci < cands_.size(); ++ci) changed |= consider(ci);
    }
  }

 private:
  const Analysis& a_;
  const LoopProgram& p_;
  Groups& groups_;
  Schedule& s_;
  const ScheduleOptions& opts_;
  std::vector<Candidate> cands_;
  // The cost of each current group's kernel, recomputed only after the group changed.
  std::map<int, std::pair<int, KernelCost>> cost_cache_;
  // The groups (and their versions) each candidate was last rejected for: every rejection
  // depends only on the members of the two groups, so it stands until one of them changes.
  std::vector<std::array<int, 4>> judged_;
  std::vector<int> merged_;  // the members of the pair being judged (kept: no allocation a candidate)
  // Pairs of groups found illegal or cyclic since the last merge, with the reason.
  std::map<std::pair<int, int>, std::string> rejected_pairs_;

  KernelCost cost_of(const std::vector<int>& nodes, bool with_traffic) const {
    Kernel k = make_kernel(a_, nodes);
    if (opts_.kernel_cost) return opts_.kernel_cost(k, with_traffic);
    KernelCost c;
    c.hbm_bytes = untiled_hbm_bytes(p_, k);
    return c;
  }

  const KernelCost& group_cost(int g) {
    int version = groups_.version[static_cast<size_t>(g)];
    auto it = cost_cache_.find(g);
    if (it == cost_cache_.end() || it->second.first != version)
      it = cost_cache_.insert_or_assign(g, std::make_pair(version, cost_of(groups_.members(g), true))).first;
    return it->second.second;
  }

  // Candidate ci once more: true when it fused its two groups now.
  bool consider(size_t ci) {
    const Candidate& c = cands_[ci];
    FusionDecision& d = s_.decisions[ci];
    if (d.fused) return false;
    int gx = groups_.find(c.x), gy = groups_.find(c.y);
    if (gx == gy) {  // joined through other pairs
      d.fused = true;
      d.reason = "";
      return false;
    }
    std::array<int, 4> key = {gx, gy, groups_.version[static_cast<size_t>(gx)],
                              groups_.version[static_cast<size_t>(gy)]};
    if (judged_[ci] == key) return false;
    judged_[ci] = key;
    std::string why = reject_reason(c, gx, gy, d);
    if (!why.empty()) {
      d.reason = why;
      return false;
    }
    groups_.merge(gx, gy);
    rejected_pairs_.clear();
    d.fused = true;
    d.reason = "";
    return true;
  }

  // Why the groups gx and gy of candidate c may not (or should not) fuse, or "".
  std::string reject_reason(const Candidate& c, int gx, int gy, FusionDecision& d) {
    const auto& mx = groups_.members(gx);
    const auto& my = groups_.members(gy);
    std::string why = disabled_reason(p_, c, opts_);
    if (why.empty() && opts_.max_kernel_nodes > 0 &&
        mx.size() + my.size() > static_cast<size_t>(opts_.max_kernel_nodes))
      why = strcat("kernel size limit: ", mx.size() + my.size(), " loop nodes, at most ", opts_.max_kernel_nodes);
    if (!why.empty()) return why;
    // Legality and cycles depend on the two groups and, for a cycle, on every other group: a
    // verdict on the pair stands until the next merge, and many candidates pair the same two
    // groups (every layer's RoPE nodes read the same cos and sin tables).
    std::pair<int, int> pair = std::minmax(gx, gy);
    if (auto it = rejected_pairs_.find(pair); it != rejected_pairs_.end()) return it->second;
    std::vector<int>& merged = merged_;
    merged.clear();
    std::merge(mx.begin(), mx.end(), my.begin(), my.end(), std::back_inserter(merged));
    why = illegal_reason(a_, merged);
    if (why.empty()) why = cycle_reason(a_, groups_, merged);
    if (!why.empty()) return rejected_pairs_.emplace(pair, why).first->second;
    return cost_reason(merged, gx, gy, d);
  }

  // Traffic can grow only through a matmul: its B block streams from HBM once per tile, so
  // a kernel with fewer rows per tile re-reads its weights more often. Every other load
  // and store moves each row's data once whatever the tiling, and fusing removes the
  // stores and loads of the intermediates, so without a matmul only the local memory
  // needs measuring (which keeps long element-wise chains cheap to schedule).
  std::string cost_reason(const std::vector<int>& merged, int gx, int gy, FusionDecision& d) {
    bool has_matmul = false;
    for (int m : merged) has_matmul |= p_.nodes[static_cast<size_t>(m)].kind == LoopKind::Matmul;
    KernelCost fused = cost_of(merged, has_matmul);
    if (!fused.fits || (opts_.lmu_bytes > 0 && fused.lmu_bytes > opts_.lmu_bytes))
      return strcat("local-memory overflow: ", fused.col_tiled ? "a column tile of one row" : "one row per tile",
                    " needs ", fused.lmu_bytes, " bytes, local memory has ", opts_.lmu_bytes,
                    fused.no_columns.empty() ? "" : "; it cannot be tiled in columns: " + fused.no_columns);
    if (!has_matmul) return "";
    int64_t apart = group_cost(gx).hbm_bytes + group_cost(gy).hbm_bytes;
    d.apart_bytes = apart;
    d.fused_bytes = fused.hbm_bytes;
    if (fused.hbm_bytes <= apart) return "";
    return strcat("adds traffic: the fused kernel moves ", format_bytes(static_cast<double>(fused.hbm_bytes)),
                  " of HBM traffic (", fused.tile_rows, " rows per tile), the two kernels apart ",
                  format_bytes(static_cast<double>(apart)));
  }
};

// Kernels in topological order: repeatedly take the ready group with the smallest index
// (Kahn's algorithm over groups, a min-heap of the ready ones).
std::vector<int> kernel_order(const Analysis& a, Groups& groups) {
  std::map<int, int> unmet;                   // group -> producer edges from other groups not yet done
  std::map<int, std::vector<int>> consumers;  // group -> consumer groups, one entry per edge
  for (size_t i = 0; i < a.p.nodes.size(); ++i) {
    int g = groups.find(static_cast<int>(i));
    unmet.emplace(g, 0);
    for (int pr : a.preds[i]) {
      int gp = groups.find(pr);
      if (gp == g) continue;
      ++unmet[g];
      consumers[gp].push_back(g);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (const auto& [g, k] : unmet)
    if (k == 0) ready.push(g);
  std::vector<int> order;
  while (!ready.empty()) {
    int g = ready.top();
    ready.pop();
    order.push_back(g);
    for (int c : consumers[g])
      if (--unmet[c] == 0) ready.push(c);
  }
  if (order.size() != unmet.size()) throw InternalError("schedule: kernel graph has a cycle");
  return order;
}

}  // namespace

Schedule schedule_program(const LoopProgram& p, const ScheduleOptions& opts) {
  const auto& pol = fusion_policies();
  if (std::find(pol.begin(), pol.end(), opts.policy) == pol.end())
    throw InputError(strcat("unknown fusion policy '", opts.policy, "' (expected none, greedy or search)"));
  Schedule s;
  s.policy = opts.policy;
  Analysis a(p);
  Groups groups(p.nodes.size());
  if (opts.policy == "greedy") GreedyFusion(a, groups, s, opts).run();
  for (int g : kernel_order(a, groups)) {
    Kernel k = make_kernel(a, groups.members(g));
    k.name = strcat("k", s.kernels.size(), "_", k.name);
    s.kernels.push_back(std::move(k));
  }
  return s;
}

std::string print_schedule(const LoopProgram& p, const Schedule& s) {
  std::ostringstream os;
  os << "schedule " << p.name << " policy=" << s.policy << " kernels=" << s.kernels.size() << "\n";
  for (const auto& k : s.kernels) {
    os << "kernel " << k.name << " rows=" << k.rows << " nodes=[";
    for (size_t i = 0; i < k.nodes.size(); ++i) os << (i ? ", " : "") << p.nodes[static_cast<size_t>(k.nodes[i])].name;
    os << "] hbm_outputs=[";
    for (size_t i = 0; i < k.hbm_outputs.size(); ++i) os << (i ? ", " : "") << k.hbm_outputs[i];
    os << "]";
    if (const auto& t = k.tiling; t && t->tile_rows > 0) {  // the code generator's decision
      os << " tiles=" << t->tiles << " (" << t->tile_rows << (t->tile_rows == 1 ? " row" : " rows");
      if (t->tile_cols > 0) os << " x " << t->tile_cols << " columns, " << t->col_tiles << " per row";
      os << ") tile=" << format_bytes(static_cast<double>(t->tile_bytes)) << " x" << t->buffers
         << " hoisted=" << format_bytes(static_cast<double>(t->hoisted_bytes));
    }
    os << "\n";
  }
  // Bytes with units, as everywhere users read them (support/units.h); exact counts are in
  // --emit schedule-json.
  if (!s.decisions.empty())
    os << "candidates (score = HBM bytes saved before tiling; hbm = the cost model's bytes apart -> fused):\n";
  for (const auto& d : s.decisions)
    os << "  " << (d.fused ? "fused   " : "rejected") << " " << d.kind << " " << d.producer << " + " << d.consumer
       << " score=" << format_bytes(static_cast<double>(d.score_bytes))
       << (d.apart_bytes || d.fused_bytes ? strcat(" hbm=", format_bytes(static_cast<double>(d.apart_bytes)), " -> ",
                                                   format_bytes(static_cast<double>(d.fused_bytes)))
                                          : "")
       << (d.reason.empty() ? "" : " reason: " + d.reason) << "\n";
  return os.str();
}

}  // namespace lpu

namespace lpu {

std::string schedule_to_json(const LoopProgram& p, const Schedule& s) {
  nlohmann::json j;
  j["program"] = p.name;
  j["policy"] = s.policy;
  j["compulsory_hbm_bytes"] = compulsory_hbm_bytes(p);
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& k : s.kernels) {
    nlohmann::json nodes = nlohmann::json::array(), origins = nlohmann::json::array();
    for (int n : k.nodes) {
      nodes.push_back(p.nodes[static_cast<size_t>(n)].name);
      origins.push_back(p.nodes[static_cast<size_t>(n)].origin);
    }
    nlohmann::json kj = {{"name", k.name},
                         {"rows", k.rows},
                         {"loop_nodes", nodes},
                         {"graph_nodes", origins},
                         {"hbm_outputs", k.hbm_outputs}};
    if (const auto& t = k.tiling)  // the code generator's decision, once it ran
      kj["tiling"] = {{"tile_rows", t->tile_rows},        {"tiles", t->tiles},
                      {"tile_bytes", t->tile_bytes},      {"buffers", t->buffers},
                      {"tile_cols", t->tile_cols},        {"col_tiles", t->col_tiles},
                      {"hoisted_bytes", t->hoisted_bytes}};
    ks.push_back(kj);
  }
  j["kernels"] = ks;
  nlohmann::json ds = nlohmann::json::array();
  for (const auto& d : s.decisions)
    ds.push_back({{"producer", d.producer},
                  {"consumer", d.consumer},
                  {"kind", d.kind},
                  {"score_bytes", d.score_bytes},
                  {"hbm_apart_bytes", d.apart_bytes},
                  {"hbm_fused_bytes", d.fused_bytes},
                  {"fused", d.fused},
                  {"reason", d.reason}});
  j["candidates"] = ds;
  return j.dump(2) + "\n";
}

}  // namespace lpu
