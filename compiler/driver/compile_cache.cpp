#include "driver/compile_cache.h"

#include <algorithm>
#include <set>

#include "codegen/lpu_codegen.h"
#include "support/error.h"

namespace lpu {

std::shared_ptr<const CompileCache::Entry> CompileCache::find(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return it->second;
}

void CompileCache::insert(const std::string& key, std::shared_ptr<const Entry> e) {
  if (entries_.size() < capacity_) entries_.emplace(key, std::move(e));
}

int64_t KernelCostMemo::intern(const std::string& s) {
  auto [it, fresh] = ids_.try_emplace(s, next_id_, epoch_);
  if (fresh) ++next_id_;
  it->second.second = epoch_;
  return it->second.first;
}

void KernelCostMemo::prepare(const LoopProgram& p) {
  // Keep what the previous compile used (epoch_), drop the rest, then start this compile.
  std::erase_if(ids_, [&](const auto& e) { return e.second.second < epoch_; });
  std::erase_if(memo_, [&](const auto& e) { return e.second.second < epoch_; });
  ++epoch_;
  access_ = std::make_unique<TileAccessCache>();
  node_ids_.clear();
  for (const LoopNode& n : p.nodes) {
    std::string key = print_loop_node(n) + "|" + n.origin;
    std::set<std::string> touched = {n.out()};
    for (const Expr& e : n.loads()) touched.insert(e->buffer);
    if (!n.gather_table.empty()) touched.insert(n.gather_table);
    touched.insert(n.host_inputs.begin(), n.host_inputs.end());
    for (const auto& name : touched) {
      auto it = p.buffers.find(name);
      if (it == p.buffers.end()) {
        key += "|" + name + " ?";
        continue;
      }
      const Buffer& b = it->second;
      key += strcat("|", name, " ", dtype_name(b.type.dtype), " ", b.offset, " ", static_cast<int>(b.role), " [");
      for (auto d : b.type.shape) key += strcat(d, ",");
      key += "] [";
      for (auto st : b.strides) key += strcat(st, ",");
      key += "]";
      if (b.quant.on()) key += " " + quant_str(b.quant);  // packed weights stream fewer bytes
    }
    node_ids_.push_back(intern(key));
  }
}

KernelCost KernelCostMemo::cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& cg, bool with_traffic) {
  if (node_ids_.size() != p.nodes.size()) throw InternalError("KernelCostMemo: program not prepared");
  std::vector<int64_t> key = {with_traffic ? 1 : 0, k.rows, intern("kernel:" + k.name),
                              static_cast<int64_t>(k.hbm_outputs.size())};
  for (const auto& o : k.hbm_outputs) key.push_back(intern("out:" + o));
  for (int i : k.nodes) key.push_back(node_ids_.at(static_cast<size_t>(i)));
  auto it = memo_.find(key);
  if (it != memo_.end()) {
    ++hits_;
    it->second.second = epoch_;
    return it->second.first;
  }
  ++misses_;
  KernelCost c = kernel_cost(p, k, cg, with_traffic, access_.get());
  memo_.emplace(std::move(key), std::make_pair(c, epoch_));
  return c;
}

Compilation compile_with_memo(const Graph& g, const CompileOptions& opts, KernelCostMemo& memo) {
  CompileOptions o = opts;
  o.cost_model = [&memo](const LoopProgram& lp, const CodegenOptions& cg) {
    memo.prepare(lp);
    // Pointers: the loop IR and the options outlive the scheduling that calls this.
    return [&memo, p = &lp, c = &cg](const Kernel& k, bool with_traffic) { return memo.cost(*p, k, *c, with_traffic); };
  };
  return compile_graph(g, o);
}

std::optional<RankTemplates> RankTemplates::make(const CompiledStep& a, int64_t sa, const CompiledStep& b, int64_t sb,
                                                 int64_t hbm_alignment, std::string& why) {
  RankTemplates t;
  if (a.others.size() != b.others.size()) {
    why = "the programs are for different device counts";
    return std::nullopt;
  }
  for (size_t r = 0; r <= a.others.size(); ++r) {
    const Program& pa = r == 0 ? a.program : a.others[r - 1];
    const Program& pb = r == 0 ? b.program : b.others[r - 1];
    auto x = ProgramTemplate::make(pa, sa, pb, sb, hbm_alignment, why);
    if (!x) {
      if (a.others.size()) why = strcat("device ", r, ": ", why);
      return std::nullopt;
    }
    t.ranks_.push_back(std::move(*x));
  }
  return t;
}

bool RankTemplates::same_symbolic_part_everywhere() const {
  bool same = true;
  for (size_t r = 1; r < ranks_.size(); ++r) same = same && ranks_[r].same_symbolic_part(ranks_[0]);
  return same;
}

bool RankTemplates::holds(int64_t s) const {
  for (const auto& t : ranks_)
    if (!t.holds(s)) return false;
  return !ranks_.empty();
}

int64_t RankTemplates::lo() const {
  int64_t v = ranks_.front().lo();
  for (const auto& t : ranks_) v = std::max(v, t.lo());
  return v;
}

int64_t RankTemplates::hi() const {
  int64_t v = ranks_.front().hi();
  for (const auto& t : ranks_) v = std::min(v, t.hi());
  return v;
}

Program RankTemplates::instantiate(int64_t s) const { return ranks_.front().instantiate(s); }

std::vector<Program> RankTemplates::instantiate_others(int64_t s) const {
  std::vector<Program> v;
  for (size_t r = 1; r < ranks_.size(); ++r) v.push_back(ranks_[r].instantiate(s));
  return v;
}

bool RankTemplates::verify(const CompiledStep& e, int64_t s, std::string& why) {
  if (e.others.size() + 1 != ranks_.size()) {
    why = "the compiled step is for another device count";
    return false;
  }
  bool ok = true;
  for (size_t r = 0; r < ranks_.size(); ++r) {  // every rank, so that each guard grows where it holds
    std::string w;
    if (!ranks_[r].verify(r == 0 ? e.program : e.others[r - 1], s, w) && ok) {
      ok = false;
      why = ranks_.size() > 1 ? strcat("device ", r, ": ", w) : w;
    }
  }
  return ok;
}

}  // namespace lpu
