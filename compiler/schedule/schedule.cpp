#include "schedule/schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace lpu {

const std::vector<std::string>& fusion_policies() {
  static const std::vector<std::string> p = {"none", "greedy"};
  return p;
}

int64_t compulsory_hbm_bytes(const LoopProgram& p) {
  int64_t b = 0;
  for (const auto& n : p.inputs) b += p.buffers.at(n).bytes();
  for (const auto& n : p.outputs) b += p.buffers.at(n).bytes();
  return b;
}

namespace {

// Union-find over node indices; the representative is the group's smallest node index.
struct Groups {
  std::vector<int> parent;
  explicit Groups(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[static_cast<size_t>(x)] == x ? x : parent[static_cast<size_t>(x)] = find(parent[static_cast<size_t>(x)]); }
  void merge(int a, int b) {
    a = find(a);
    b = find(b);
    if (a > b) std::swap(a, b);
    parent[static_cast<size_t>(b)] = a;
  }
  std::vector<int> members(int g) {
    std::vector<int> m;
    for (size_t i = 0; i < parent.size(); ++i)
      if (find(static_cast<int>(i)) == g) m.push_back(static_cast<int>(i));
    return m;
  }
};

struct Analysis {
  const LoopProgram& p;
  std::map<std::string, std::vector<int>> writers;     // buffer -> nodes writing it
  std::vector<std::vector<int>> preds, succs;          // data dependencies between nodes
  std::vector<std::set<std::string>> reads;            // buffers read by each node

  explicit Analysis(const LoopProgram& prog) : p(prog) {
    size_t n = p.nodes.size();
    preds.resize(n);
    succs.resize(n);
    reads.resize(n);
    for (size_t i = 0; i < n; ++i) writers[p.nodes[i].out()].push_back(static_cast<int>(i));
    for (size_t i = 0; i < n; ++i) {
      for (const auto& l : p.nodes[i].loads()) {
        if (!reads[i].insert(l->buffer).second) continue;
        auto it = writers.find(l->buffer);
        if (it == writers.end()) continue;
        for (int w : it->second) {
          preds[i].push_back(w);
          succs[static_cast<size_t>(w)].push_back(static_cast<int>(i));
        }
      }
    }
  }
};

// Why the nodes of `merged` cannot run as one row-tiled kernel, or "" when they can.
std::string illegal_reason(const Analysis& a, const std::vector<int>& merged) {
  const LoopProgram& p = a.p;
  for (int i : merged)  // first: a break is the reason, whatever else would also be wrong
    if (p.nodes[static_cast<size_t>(i)].kind == LoopKind::Host)
      return strcat("graph break: ", p.nodes[static_cast<size_t>(i)].name, " runs on the host");
  int64_t rows = p.nodes[static_cast<size_t>(merged[0])].rows();
  for (int i : merged)
    if (p.nodes[static_cast<size_t>(i)].rows() != rows)
      return strcat("different iteration space: ", p.nodes[static_cast<size_t>(merged[0])].name, " has ", rows,
                    " rows, ", p.nodes[static_cast<size_t>(i)].name, " has ", p.nodes[static_cast<size_t>(i)].rows());
  for (int i : merged)
    if (p.nodes[static_cast<size_t>(i)].kind == LoopKind::Gather)
      return strcat("gather: ", p.nodes[static_cast<size_t>(i)].name, " reads its table indirectly and runs alone");
  std::set<int> in(merged.begin(), merged.end());
  for (int i : merged) {
    const LoopNode& c = p.nodes[static_cast<size_t>(i)];
    for (const auto& l : c.loads()) {
      auto it = a.writers.find(l->buffer);
      if (it == a.writers.end()) continue;
      bool inside = false;
      for (int w : it->second) inside |= in.count(w) > 0;
      if (!inside) continue;
      if (it->second.size() > 1)
        return strcat("concatenation: ", l->buffer, " is written by ", it->second.size(),
                      " nodes and is read from HBM");
      const LoopNode& prod = p.nodes[static_cast<size_t>(it->second[0])];
      AccessPattern sp = analyze_access(prod, prod.store_index);
      // With a single row the row stride is irrelevant (size-1 variables are folded away).
      bool one_row = prod.rows() == 1;
      if (!sp.ok || !sp.row_affine || sp.base != 0 || (sp.col_split && sp.col_split < prod.out_cols()) || (!one_row && sp.row_stride != prod.out_cols()) ||
          (prod.out_cols() > 1 && sp.col_stride != 1))
        return strcat("index mismatch: ", prod.name, " is not stored row by row (", prod.store_index.str(), ")");
      AccessPattern rp;
      int64_t width = c.cols();
      if (c.kind == LoopKind::Matmul) {
        if (l.get() == c.body->args[1].get() || l->buffer == c.body->args[1]->buffer)
          return strcat("matrix-engine operand: ", c.name, " streams ", prod.name, " as its B operand from HBM");
        rp = analyze_access(c, l->index, {"r0"}, c.reduction_ranges);
        width = c.reduction_ranges[0];
      } else {
        rp = analyze_access(c, l->index);
      }
      if (!rp.ok) return strcat("index mismatch: ", c.name, " reads ", prod.name, ": ", rp.why_not);
      if (rp.col_split && rp.col_split < width)
        return strcat("index mismatch: ", c.name, " reads ", prod.name, "[", l->index.str(), "] in ", width / rp.col_split,
                      " column blocks, not as the row ", prod.name, " computes");
      int64_t last = rp.base + rp.col_stride * (width - 1);
      if (!rp.row_affine || (!one_row && rp.row_stride != prod.out_cols()) || rp.base < 0 || last < 0 ||
          last >= prod.out_cols())
        return strcat("index mismatch: ", c.name, " reads ", prod.name, "[", l->index.str(),
                      "], not the row ", prod.name, " computes");
    }
  }
  return "";
}

// A kernel of `nodes`: it writes to HBM whatever a graph output or a node outside it reads.
Kernel make_kernel(const Analysis& a, const std::vector<int>& nodes) {
  Kernel k;
  k.nodes = nodes;
  const LoopNode& first = a.p.nodes[static_cast<size_t>(nodes[0])];
  k.rows = first.rows();
  std::set<int> self(nodes.begin(), nodes.end());
  std::set<std::string> graph_outputs(a.p.outputs.begin(), a.p.outputs.end());
  for (int m : nodes) {
    const LoopNode& ln = a.p.nodes[static_cast<size_t>(m)];
    // The host writes its result to HBM itself, so a host node's output always lives there.
    bool external = graph_outputs.count(ln.out()) > 0 || a.writers.at(ln.out()).size() > 1 || ln.kind == LoopKind::Host;
    for (int su : a.succs[static_cast<size_t>(m)])
      if (!self.count(su)) external = true;
    if (external && std::find(k.hbm_outputs.begin(), k.hbm_outputs.end(), ln.out()) == k.hbm_outputs.end())
      k.hbm_outputs.push_back(ln.out());
  }
  k.name = strcat(first.name, nodes.size() > 1 ? strcat("_x", nodes.size()) : "");
  return k;
}

}  // namespace

Schedule schedule_program(const LoopProgram& p, const ScheduleOptions& opts) {
  const auto& pol = fusion_policies();
  if (std::find(pol.begin(), pol.end(), opts.policy) == pol.end())
    throw InputError(strcat("unknown fusion policy '", opts.policy, "' (expected none, greedy or search)"));
  Schedule s;
  s.policy = opts.policy;
  size_t n = p.nodes.size();
  Analysis a(p);
  Groups groups(n);

  if (opts.policy == "greedy") {
    struct Candidate {
      int x, y;
      std::string kind;
      int64_t score;
    };
    std::vector<Candidate> cands;
    // Vertical: producer -> consumer; saves the producer's write and the consumer's read.
    for (size_t c = 0; c < n; ++c)
      for (int pr : a.preds[c]) {
        int64_t bytes = 2 * p.buffers.at(p.nodes[static_cast<size_t>(pr)].out()).bytes();
        cands.push_back({pr, static_cast<int>(c), "vertical", bytes});
      }
    // Horizontal: siblings reading the same buffer; saves one read of it.
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i + 1; j < n; ++j) {
        int64_t shared = 0;
        for (const auto& b : a.reads[i])
          if (a.reads[j].count(b)) shared += p.buffers.at(b).bytes();
        if (shared > 0) cands.push_back({static_cast<int>(i), static_cast<int>(j), "horizontal", shared});
      }
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& l, const Candidate& r) {
      if (l.score != r.score) return l.score > r.score;
      if (l.x != r.x) return l.x < r.x;
      return l.y < r.y;
    });
    // Dedupe exact repeats (a consumer reading a producer twice).
    std::set<std::tuple<int, int, std::string>> seen;
    std::vector<Candidate> unique;
    for (const auto& c : cands)
      if (seen.insert({c.x, c.y, c.kind}).second) unique.push_back(c);
    s.decisions.resize(unique.size());
    // Rounds until nothing changes: a pair rejected because it would close a cycle through a
    // third group can become legal once that group has joined (as in Inductor's scheduler).
    bool changed = true;
    for (int round = 0; round < 10 && changed; ++round) {
      changed = false;
      for (size_t ci = 0; ci < unique.size(); ++ci) {
        const Candidate& c = unique[ci];
        FusionDecision& d = s.decisions[ci];
        if (d.fused) continue;
        d.producer = p.nodes[static_cast<size_t>(c.x)].name;
        d.consumer = p.nodes[static_cast<size_t>(c.y)].name;
        d.kind = c.kind;
        d.score_bytes = c.score;
        int gx = groups.find(c.x), gy = groups.find(c.y);
        if (gx == gy) {
          d.fused = true;
          d.reason = "";
          continue;
        }
        std::vector<int> merged = groups.members(gx);
        auto my = groups.members(gy);
        merged.insert(merged.end(), my.begin(), my.end());
        std::sort(merged.begin(), merged.end());
        std::string why = illegal_reason(a, merged);
        // Cycle: a path from the merged group through another group back into it would make
        // the fused kernel both depend on and feed that group.
        if (why.empty()) {
          std::set<int> in(merged.begin(), merged.end());
          std::vector<int> stack;
          std::set<int> seen_nodes;
          for (int m : merged)
            for (int s2 : a.succs[static_cast<size_t>(m)])
              if (!in.count(s2)) stack.push_back(s2);
          while (!stack.empty() && why.empty()) {
            int v = stack.back();
            stack.pop_back();
            if (!seen_nodes.insert(v).second) continue;
            for (int s2 : a.succs[static_cast<size_t>(v)]) {
              if (in.count(s2)) {
                why = strcat("would create a cycle through ", p.nodes[static_cast<size_t>(v)].name);
                break;
              }
              stack.push_back(s2);
            }
          }
        }
        if (why.empty() && opts.lmu_bytes > 0 && opts.lmu_need) {
          int64_t need = opts.lmu_need(make_kernel(a, merged));
          if (need > opts.lmu_bytes)
            why = strcat("local-memory overflow: one row per tile needs ", need, " bytes, local memory has ",
                         opts.lmu_bytes);
        }
        if (why.empty()) {
          groups.merge(gx, gy);
          d.fused = true;
          d.reason = "";
          changed = true;
        } else {
          d.reason = why;
        }
      }
    }
  }

  // Kernels in topological order: repeatedly take the ready group with the smallest index.
  std::map<int, std::vector<int>> members;
  for (size_t i = 0; i < n; ++i) members[groups.find(static_cast<int>(i))].push_back(static_cast<int>(i));
  std::set<int> done_groups;
  std::set<int> done_nodes;
  std::vector<int> order;
  while (order.size() < members.size()) {
    bool progressed = false;
    for (const auto& [g, ms] : members) {
      if (done_groups.count(g)) continue;
      std::set<int> self(ms.begin(), ms.end());
      bool ready = true;
      for (int m : ms)
        for (int pr : a.preds[static_cast<size_t>(m)])
          if (!self.count(pr) && !done_nodes.count(pr)) ready = false;
      if (!ready) continue;
      order.push_back(g);
      done_groups.insert(g);
      done_nodes.insert(ms.begin(), ms.end());
      progressed = true;
      break;
    }
    if (!progressed) throw InternalError("schedule: kernel graph has a cycle");
  }

  for (int g : order) {
    Kernel k = make_kernel(a, members[g]);
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
    os << "]\n";
  }
  if (!s.decisions.empty()) os << "candidates (score = HBM bytes saved):\n";
  for (const auto& d : s.decisions)
    os << "  " << (d.fused ? "fused   " : "rejected") << " " << d.kind << " " << d.producer << " + " << d.consumer
       << " score=" << d.score_bytes << (d.reason.empty() ? "" : " reason: " + d.reason) << "\n";
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
    ks.push_back({{"name", k.name}, {"rows", k.rows}, {"loop_nodes", nodes}, {"graph_nodes", origins},
                  {"hbm_outputs", k.hbm_outputs}});
  }
  j["kernels"] = ks;
  nlohmann::json ds = nlohmann::json::array();
  for (const auto& d : s.decisions)
    ds.push_back({{"producer", d.producer}, {"consumer", d.consumer}, {"kind", d.kind}, {"score_bytes", d.score_bytes},
                  {"fused", d.fused}, {"reason", d.reason}});
  j["candidates"] = ds;
  return j.dump(2) + "\n";
}

}  // namespace lpu
