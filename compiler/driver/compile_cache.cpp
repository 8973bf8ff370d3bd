#include "driver/compile_cache.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "codegen/lpu_codegen.h"
#include "graph/attrs_json.h"
#include "ops/scalar_ops.h"
#include "support/error.h"
#include "support/units.h"

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

namespace {

// Node n's content without its names: everything print_loop_node shows (kind, loop ranges,
// dtypes, the store index, the body with every load's index) with its buffers under local
// names $0, $1, ... in the order they appear (output, the body's loads, the gather index, the
// table, host inputs). `bufs` receives the real names in that order. The same text for the
// same node in every layer; written directly, not printed, since every node is keyed.
std::string anonymous_key(const LoopNode& n, std::vector<std::string>& bufs) {
  // std::to_string and appends, not strcat (an ostringstream a call): this runs on every node.
  std::map<std::string, size_t> local;
  std::string k;
  auto name = [&](const std::string& b) {
    auto [it, fresh] = local.try_emplace(b, local.size());
    if (fresh) bufs.push_back(b);
    k += '$';
    k += std::to_string(it->second);
  };
  auto ints = [&](const std::vector<int64_t>& v) {
    k += '[';
    for (int64_t x : v) (k += std::to_string(x)) += ',';
    k += ']';
  };
  std::function<void(const Expr&)> expr = [&](const Expr& e) {
    if (!e) return k.append("-"), void();
    ((((k += '(') += std::to_string(static_cast<int>(e->kind))) += ':') += dtype_name(e->dtype)) += ':';
    switch (e->kind) {
      case ExprKind::Load:
        name(e->buffer);
        ((k += '[') += e->index.str()) += ']';
        break;
      case ExprKind::Constant: k += format_number("%a", e->value); break;
      case ExprKind::IndexExpr: k += e->index.str(); break;
      case ExprKind::Call: k += scalar_op_name(e->op); break;
      case ExprKind::Cast: break;
    }
    for (const auto& arg : e->args) expr(arg);
    k += ')';
  };
  (((((k += std::to_string(static_cast<int>(n.kind))) += ' ') += std::to_string(static_cast<int>(n.reduction))) +=
    ' ') += dtype_name(n.dtype)) += ' ';
  ints(n.ranges);
  ints(n.reduction_ranges);
  k += ' ';
  name(n.out());
  ((k += '[') += n.store_index.str()) += "]=";
  expr(n.body);
  expr(n.gather_index);
  if (!n.gather_table.empty()) {
    k += " table ";
    name(n.gather_table);
  }
  if (is_opaque(n.kind)) {
    (((k += ' ') += n.host_op) += ' ') += attrs_to_json(n.host_attrs);
    for (const auto& h : n.host_inputs) {
      k += ',';
      name(h);
    }
  }
  return k;
}

bool same_cost(const KernelCost& a, const KernelCost& b) {
  return a.hbm_bytes == b.hbm_bytes && a.lmu_bytes == b.lmu_bytes && a.tile_rows == b.tile_rows && a.fits == b.fits &&
         a.col_tiled == b.col_tiled && a.no_columns.empty() == b.no_columns.empty();
}

}  // namespace

void KernelCostMemo::prepare(const LoopProgram& p, bool vector_chains) {
  auto own = std::make_unique<TileAccessCache>(vector_chains);
  prepare_with(p, own.get());
  own_access_ = std::move(own);
}

void KernelCostMemo::prepare(const LoopProgram& p, TileAccessCache& access) {
  prepare_with(p, &access);
  own_access_.reset();
}

void KernelCostMemo::prepare_with(const LoopProgram& p, TileAccessCache* access) {
  // Keep what the previous compile used (epoch_), drop the rest, then start this compile.
  std::erase_if(ids_, [&](const auto& e) { return e.second.second < epoch_; });
  std::erase_if(memo_, [&](const auto& e) { return e.second.second < epoch_; });
  ++epoch_;
  access_ = access;
  node_ids_.clear();
  node_buffers_.clear();
  buffer_numbers_.clear();
  // Each buffer's properties once, as the id of their text (a weight is read by one node, an
  // activation by a few: building the text per use cost as much as the nodes' own).
  std::unordered_map<std::string, int64_t> buffer_ids;
  auto buffer_id = [&](const std::string& name) {
    auto [it, fresh] = buffer_ids.try_emplace(name, -1);
    if (!fresh) return it->second;
    auto b = p.buffers.find(name);
    if (b == p.buffers.end()) return it->second = intern("buffer ?");
    std::string k = strcat("buffer ", dtype_name(b->second.type.dtype), " ", b->second.offset, " ",
                           static_cast<int>(b->second.role), " [");
    for (auto d : b->second.type.shape) k += strcat(d, ",");
    k += "] [";
    for (auto st : b->second.strides) k += strcat(st, ",");
    k += "]";
    if (b->second.quant.on()) k += " " + quant_str(b->second.quant);  // packed weights stream fewer bytes
    return it->second = intern(k);
  };
  for (const LoopNode& n : p.nodes) {
    std::vector<std::string> bufs;
    std::string key = anonymous_key(n, bufs);
    for (const auto& name : bufs) (key += '|') += std::to_string(buffer_id(name));
    node_ids_.push_back(intern(key));
    std::vector<int> numbers;
    numbers.reserve(bufs.size());
    for (const auto& name : bufs) numbers.push_back(buffer_number(name));
    node_buffers_.push_back(std::move(numbers));
  }
}

int KernelCostMemo::buffer_number(const std::string& name) {
  auto [it, fresh] = buffer_numbers_.try_emplace(name, static_cast<int>(buffer_numbers_.size()));
  if (fresh && local_stamp_.size() < buffer_numbers_.size()) {
    local_stamp_.resize(buffer_numbers_.size(), 0);
    local_id_.resize(buffer_numbers_.size(), 0);
  }
  return it->second;
}

KernelCost KernelCostMemo::cost(const LoopProgram& p, const Kernel& k, const CodegenOptions& cg, bool with_traffic) {
  if (node_ids_.size() != p.nodes.size()) throw InternalError("KernelCostMemo: program not prepared");
  // The kernel's content without its names: each node's anonymous text, and which of the
  // kernel's buffers each of its local names is (numbered by first use in the kernel).
  std::vector<int64_t> key = {with_traffic ? 1 : 0, k.rows, static_cast<int64_t>(k.nodes.size()),
                              static_cast<int64_t>(k.hbm_outputs.size())};
  // Local names numbered by first use in the kernel: a buffer's stamp says it has one already.
  ++stamp_;
  int64_t locals = 0;
  auto id = [&](int b) {
    auto ub = static_cast<size_t>(b);
    if (local_stamp_[ub] != stamp_) {
      local_stamp_[ub] = stamp_;
      local_id_[ub] = locals++;
    }
    return local_id_[ub];
  };
  for (int i : k.nodes) {
    key.push_back(node_ids_.at(static_cast<size_t>(i)));
    for (int b : node_buffers_[static_cast<size_t>(i)]) key.push_back(id(b));
  }
  for (const auto& o : k.hbm_outputs) key.push_back(id(buffer_number(o)));
  auto it = memo_.find(key);
  // A result that explains itself (why no column tiling) names nodes: computed again.
  if (it != memo_.end() && it->second.first.no_columns.empty()) {
    ++hits_;
    it->second.second = epoch_;
    if (check_hits_) {
      KernelCost fresh = kernel_cost(p, k, cg, with_traffic, access_);
      if (!same_cost(fresh, it->second.first))
        throw InternalError(strcat("KernelCostMemo: kernel ", k.name, " costs ", fresh.hbm_bytes, " bytes, ",
                                   fresh.lmu_bytes, " of local memory, but the memo says ", it->second.first.hbm_bytes,
                                   ", ", it->second.first.lmu_bytes));
    }
    return it->second.first;
  }
  ++misses_;
  KernelCost c = kernel_cost(p, k, cg, with_traffic, access_);
  memo_.insert_or_assign(std::move(key), std::make_pair(c, epoch_));
  return c;
}

namespace {
CompileOptions with_memo(const CompileOptions& opts, KernelCostMemo& memo) {
  CompileOptions o = opts;
  o.cost_model = [&memo](const LoopProgram& lp, const CodegenOptions& cg) {
    memo.prepare(lp, cg.vector_chains);
    // Pointers: the loop IR and the options outlive the scheduling that calls this.
    return [&memo, p = &lp, c = &cg](const Kernel& k, bool with_traffic) { return memo.cost(*p, k, *c, with_traffic); };
  };
  return o;
}
}  // namespace

Compilation compile_with_memo(const Graph& g, const CompileOptions& opts, KernelCostMemo& memo) {
  return compile_graph(g, with_memo(opts, memo));
}

FrontEnd front_end_with_memo(const Graph& g, const CompileOptions& opts, KernelCostMemo& memo) {
  return compile_front_end(g, with_memo(opts, memo));
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
