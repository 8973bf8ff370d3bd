// Triton kernels: the @triton.jit function of each scheduled kernel (emit_kernel), as its plan
// (triton_plan.cpp) says it runs. Modes and their conditions are described in triton_source.h.
#include <algorithm>
#include <functional>

#include "handlers/triton_internal.h"
#include "support/error.h"

namespace lpu::triton {
namespace {

// Emits one node of a rows or grid kernel; `j` numbers its local names. In a grid kernel the
// node's work items (rows x column blocks; rows for a reduction) are dealt out to the programs.
class NodeEmitter {
 public:
  NodeEmitter(const LoopProgram& p, const LoopNode& n, size_t j, const KernelPlan& kp,
              const std::map<std::string, std::string>& ptrs, PyWriter& w, int& tmp)
      : p_(p), n_(n), pre_("n" + std::to_string(j) + "_"), kp_(kp), w_(w), h_(n, ptrs, w, tmp) {}

  void emit() {
    w_.line("# node " + pre_.substr(0, pre_.size() - 1) + ": " + kind_name());
    bool grid = kp_.mode == "grid";
    std::string rowv = "row";
    if (kp_.block > 0) {
      block_ = kp_.block;
      col_start_ = strcat("tl.program_id(1).to(tl.int64) * ", block_);
    }
    if (grid) {
      block_ = grid_block(n_);
      int64_t cblocks = grid_col_blocks(n_);
      int64_t items = n_.rows() * cblocks;
      w_.open(strcat("for ", pre_, "it in range(tl.program_id(0), ", items, ", tl.num_programs(0)):"));
      rowv = pre_ + "row";
      std::string it = pre_ + "it.to(tl.int64)";
      w_.line(rowv + " = " + (cblocks == 1 ? it : strcat(it, " // ", cblocks)));
      if (n_.kind != LoopKind::Reduction && !n_.ranges.empty())
        col_start_ = cblocks == 1 ? std::string("0") : strcat("(", it, " % ", cblocks, ") * ", block_);
    }
    bind_rows(rowv);
    switch (n_.kind) {
      case LoopKind::Pointwise:
      case LoopKind::Gather: emit_pointwise(); break;
      case LoopKind::Reduction: emit_reduction(); break;
      case LoopKind::Matmul: emit_matmul(); break;
      case LoopKind::Host:
      case LoopKind::Collective: throw InternalError("triton handler: host or collective node in a Triton kernel");
    }
    if (grid) w_.close();
  }

 private:
  std::string kind_name() const {
    switch (n_.kind) {
      case LoopKind::Pointwise: return "pointwise";
      case LoopKind::Reduction: return strcat("reduction.", reduction_type_name(n_.reduction));
      case LoopKind::Matmul: return "matmul";
      case LoopKind::Gather: return "gather";
      case LoopKind::Host: return "host";
      case LoopKind::Collective: return "collective";
    }
    return "?";
  }

  // Row variables from the flat row, row-major over LoopNode::row_sizes.
  void bind_rows(const std::string& rowv) {
    auto rv = n_.row_vars();
    auto rs = n_.row_sizes();
    std::vector<std::string> lines(rv.size());
    int64_t stride = 1;
    for (size_t k = rv.size(); k-- > 0;) {
      std::string name = pre_ + rv[k].name(), e;
      if (rs[k] == 1) {
        e = rowv + " * 0";
      } else {
        e = stride == 1 ? rowv : strcat("(", rowv, " // ", stride, ")");
        if (k > 0) e = strcat("(", e, " % ", rs[k], ")");
      }
      stride *= rs[k];
      lines[k] = name + " = " + e;
      h_.scope.var[rv[k]] = name;
      h_.scope.range[rv[k]] = rs[k];
    }
    for (const auto& l : lines) w_.line(l);
  }

  // Binds variables decomposed from a flat column `flat` (row-major over `sizes`).
  void bind_cols(const std::vector<LoopVar>& vars, const std::vector<int64_t>& sizes, const std::string& flat,
                 const std::string& mask, const std::string& suffix) {
    int64_t stride = 1;
    std::vector<std::string> lines(vars.size());
    for (size_t k = vars.size(); k-- > 0;) {
      std::string name = pre_ + vars[k].name() + suffix, e;
      if (vars.size() == 1) {
        e = flat;
      } else if (sizes[k] == 1) {
        e = flat + " * 0";
      } else {
        e = stride == 1 ? flat : strcat("(", flat, " // ", stride, ")");
        if (k > 0) e = strcat("(", e, " % ", sizes[k], ")");
      }
      stride *= sizes[k];
      lines[k] = name + " = " + e;
      h_.scope.var[vars[k]] = name;
      h_.scope.mask[vars[k]] = mask;
      h_.scope.range[vars[k]] = sizes[k];
    }
    for (const auto& l : lines) w_.line(l);
  }

  // Opens the column loop (or takes the program's column block): PRE{c}x (int64 offsets), PRE{c}m (mask).
  void open_cols(const std::string& c, int64_t total, int64_t block, bool split) {
    if (split)
      w_.line(strcat(pre_, c, "s = ", col_start_));
    else
      w_.open(strcat("for ", pre_, c, "s in range(0, ", total, ", ", block, "):"));
    w_.line(strcat(pre_, c, "x = ", pre_, c, "s + tl.arange(0, ", block, ").to(tl.int64)"));
    w_.line(strcat(pre_, c, "m = ", pre_, c, "x < ", total));
    h_.clear_cse();
  }
  void close_cols(bool split) {
    if (!split) w_.close();
    h_.clear_cse();
  }

  std::string store_value(const std::string& v) const {
    return p_.buffers.at(n_.out()).type.dtype == DType::boolean ? "(" + v + " != 0)" : v;
  }
  // A store inside a column block whose index does not use the column (a one-column node) is
  // still made block-shaped, so that a block-shaped value fits it.
  void store(const std::string& v, bool in_block = false) {
    std::string idx = index_py(n_.store_index, h_.scope, n_.name, "store");
    std::string m = mask_for(n_.store_index, h_.scope);
    if (in_block && !n_.store_index.depends_on(n_.column_var())) {
      idx += " + 0 * " + pre_ + "cx";
      m = pre_ + "cm";
    }
    w_.line("tl.store(" + h_.ptr(n_.out()) + " + (" + idx + "), " + store_value(v) + (m.empty() ? "" : ", mask=" + m) +
            ")");
  }

  std::string value() {
    if (n_.kind != LoopKind::Gather) return evaluate_node<std::string>(n_, h_);
    // out[row, c] = table[index(row) * cols + c]: the index is a loaded value.
    std::unordered_map<const ExprNode*, std::string> memo;
    std::string idx = evaluate(n_.gather_index, h_, memo);
    if (h_.is_literal(idx)) idx = h_.temp("tl.full([], " + idx + ", tl.float32)");
    std::string row = h_.temp(idx + ".to(tl.int64)");
    const LoopVar cv = n_.column_var();
    return h_.raw_load(
        strcat(h_.ptr(n_.gather_table), " + (", row, " * ", n_.ranges.back(), " + ", h_.scope.var.at(cv), ")"),
        h_.scope.mask.at(cv));
  }

  void emit_pointwise() {
    if (n_.ranges.empty()) {
      store(value());
      return;
    }
    bool split = !col_start_.empty();
    int64_t c = n_.ranges.back();
    int64_t block = split ? block_ : std::min<int64_t>(next_pow2(c), 1024);
    open_cols("c", c, block, split);
    bind_cols({n_.column_var()}, {c}, pre_ + "cx", pre_ + "cm", "");
    store(value(), true);
    close_cols(split);
  }

  std::vector<LoopVar> rvars() const { return loop_vars(LoopVar::Kind::Reduction, n_.reduction_ranges.size()); }

  void emit_reduction() {
    int64_t r = numel(n_.reduction_ranges);
    int64_t block = std::min<int64_t>(next_pow2(r), 1024);
    std::string acc = pre_ + "acc", arg = pre_ + "arg", m = pre_ + "rm", R = std::to_string(r) + ".0";
    auto loop = [&](const std::function<void(const std::string&)>& combine) {
      open_cols("r", r, block, false);
      bind_cols(rvars(), n_.reduction_ranges, pre_ + "rx", m, "");
      combine(evaluate_node<std::string>(n_, h_));
      close_cols(false);
    };
    std::string zeros = strcat("tl.zeros([", block, "], dtype=tl.float32)");
    auto full = [&](const std::string& v) { return strcat("tl.full([", block, "], ", v, ", tl.float32)"); };
    std::string result;
    switch (n_.reduction) {
      case ReductionType::sum:
      case ReductionType::mean:
        w_.line(acc + " = " + zeros);
        loop([&](const std::string& v) { w_.line(acc + " += tl.where(" + m + ", " + v + ", 0.0)"); });
        result = h_.temp("tl.sum(" + acc + ", axis=0)" + (n_.reduction == ReductionType::mean ? " / " + R : ""));
        break;
      case ReductionType::prod:
        w_.line(acc + " = " + full("1.0"));
        loop([&](const std::string& v) { w_.line(acc + " *= tl.where(" + m + ", " + v + ", 1.0)"); });
        result = h_.temp("tl.reduce(" + acc + ", 0, _lpu_mul)");
        break;
      case ReductionType::max:
      case ReductionType::min: {
        bool mx = n_.reduction == ReductionType::max;
        std::string inf = mx ? "float(\"-inf\")" : "float(\"inf\")";
        w_.line(acc + " = " + full(inf));
        loop([&](const std::string& v) {
          w_.line(acc + " = " + (mx ? "tl.maximum(" : "tl.minimum(") + acc + ", tl.where(" + m + ", " + v + ", " + inf +
                  "))");
        });
        result = h_.temp(std::string(mx ? "tl.max(" : "tl.min(") + acc + ", axis=0)");
        break;
      }
      case ReductionType::argmax:  // the first maximum (per lane, then the smallest index among the maxima)
        w_.line(acc + " = " + full("float(\"-inf\")"));
        w_.line(strcat(arg, " = tl.zeros([", block, "], dtype=tl.int64)"));
        loop([&](const std::string& v) {
          w_.line(pre_ + "take = (" + v + " > " + acc + ") & " + m);
          w_.line(acc + " = tl.where(" + pre_ + "take, " + v + ", " + acc + ")");
          w_.line(arg + " = tl.where(" + pre_ + "take, " + pre_ + "rx, " + arg + ")");
        });
        w_.line(pre_ + "best = tl.max(" + acc + ", axis=0)");
        result =
            h_.temp(strcat("tl.min(tl.where(", acc, " == ", pre_, "best, ", arg, ", ", r, "), axis=0).to(tl.float32)"));
        break;
      case ReductionType::var:  // two passes: the mean, then the mean squared deviation
        w_.line(acc + " = " + zeros);
        loop([&](const std::string& v) { w_.line(acc + " += tl.where(" + m + ", " + v + ", 0.0)"); });
        w_.line(pre_ + "mean = tl.sum(" + acc + ", axis=0) / " + R);
        w_.line(acc + "2 = " + zeros);
        loop([&](const std::string& v) {
          w_.line(pre_ + "d = tl.where(" + m + ", " + v + " - " + pre_ + "mean, 0.0)");
          w_.line(acc + "2 += " + pre_ + "d * " + pre_ + "d");
        });
        result = h_.temp("tl.sum(" + acc + "2, axis=0) / " + R);
        break;
    }
    store(result);
  }

  // One row of a matmul: column blocks of N, each a [BLOCK_K, BLOCK_N] product summed over K.
  void emit_matmul() {
    bool split = !col_start_.empty();
    int64_t n = n_.ranges.back(), k = numel(n_.reduction_ranges);
    int64_t bn = split ? block_ : std::min<int64_t>(next_pow2(n), 64);
    int64_t bk = std::min<int64_t>(next_pow2(k), 64);
    const LoopVar cv = n_.column_var();
    open_cols("c", n, bn, split);
    std::string acc = pre_ + "acc";
    w_.line(strcat(acc, " = tl.zeros([", bk, ", ", bn, "], dtype=tl.float32)"));
    w_.open(strcat("for ", pre_, "k0 in range(0, ", k, ", ", bk, "):"));
    w_.line(strcat(pre_, "kx = ", pre_, "k0 + tl.arange(0, ", bk, ").to(tl.int64)"));
    w_.line(strcat(pre_, "km = (", pre_, "kx < ", k, ")[:, None]"));
    w_.line(strcat(pre_, "cxb = ", pre_, "cx[None, :]"));
    w_.line(strcat(pre_, "cmb = ", pre_, "cm[None, :]"));
    h_.clear_cse();
    h_.scope.var[cv] = pre_ + "cxb";
    h_.scope.mask[cv] = pre_ + "cmb";
    h_.scope.range[cv] = n;
    bind_cols(rvars(), n_.reduction_ranges, pre_ + "kx[:, None]", pre_ + "km", "");
    std::string v = evaluate_node<std::string>(n_, h_);
    w_.line(acc + " += tl.where(" + pre_ + "km & " + pre_ + "cmb, " + v + ", 0.0)");
    w_.close();
    h_.clear_cse();
    h_.scope.var[cv] = pre_ + "cx";
    h_.scope.mask[cv] = pre_ + "cm";
    store(h_.temp("tl.sum(" + acc + ", axis=0)"), true);
    close_cols(split);
  }

  const LoopProgram& p_;
  const LoopNode& n_;
  std::string pre_;
  const KernelPlan& kp_;
  PyWriter& w_;
  TritonExprHandler h_;
  std::string col_start_;  // the column block this program runs (no column loop), or ""
  int64_t block_ = 0;      // its width
};

// A kernel of one matmul node on tl.dot: BLOCK_M x BLOCK_N output tiles, K in BLOCK_K steps.
void emit_dot(const LoopProgram& p, const LoopNode& n, const std::map<std::string, std::string>& ptrs, PyWriter& w,
              int& tmp) {
  Expr a, b;
  if (!dot_operands(n, a, b)) throw InternalError("triton handler: dot kernel without dot operands");
  size_t nd = n.ranges.size();
  int64_t m = n.ranges[nd - 2], nn = n.ranges[nd - 1], k = n.reduction_ranges[0];
  DType da = p.buffers.at(a->buffer).type.dtype, db = p.buffers.at(b->buffer).type.dtype;
  bool half = da == db && (da == DType::f16 || da == DType::bf16);
  int64_t bm = tile(m, 64), bn = tile(nn, 64), bk = tile(k, half ? 64 : 32);
  w.line("pid0 = tl.program_id(0).to(tl.int64)");
  w.line("pid1 = tl.program_id(1).to(tl.int64)");
  int64_t mblocks = cdiv(m, bm);
  w.line(strcat("mb = pid0 % ", mblocks));
  w.line(strcat("bt = pid0 // ", mblocks));
  TritonExprHandler h(n, ptrs, w, tmp);
  int64_t stride = 1;
  std::vector<std::string> lines(nd - 2);  // batch dims from the program's batch index
  for (size_t i = nd - 2; i-- > 0;) {
    const LoopVar v = LoopVar::output(i);
    std::string e = stride == 1 ? "bt" : strcat("(bt // ", stride, ")");
    if (i > 0) e = strcat("(", e, " % ", n.ranges[i], ")");
    lines[i] = v.name() + " = " + e;
    stride *= n.ranges[i];
    h.scope.var[v] = v.name();
    h.scope.range[v] = n.ranges[i];
  }
  for (const auto& l : lines) w.line(l);
  const LoopVar mv = LoopVar::output(nd - 2), nv = LoopVar::output(nd - 1), kv = LoopVar::reduction(0);
  w.line(strcat("om = mb * ", bm, " + tl.arange(0, ", bm, ").to(tl.int64)"));
  w.line(strcat("mm = om < ", m));
  w.line(strcat("on = pid1 * ", bn, " + tl.arange(0, ", bn, ").to(tl.int64)"));
  w.line(strcat("nm = on < ", nn));
  w.line(strcat("acc = tl.zeros([", bm, ", ", bn, "], dtype=tl.float32)"));
  w.open(strcat("for k0 in range(0, ", k, ", ", bk, "):"));
  w.line(strcat("ok = k0 + tl.arange(0, ", bk, ").to(tl.int64)"));
  w.line(strcat("km = ok < ", k));
  h.scope.range[mv] = m;
  h.scope.range[nv] = nn;
  h.scope.range[kv] = k;
  auto operand = [&](const Expr& e, const std::string& name, bool is_a) {
    h.scope.var[mv] = "om[:, None]";
    h.scope.mask[mv] = "mm[:, None]";
    h.scope.var[nv] = "on[None, :]";
    h.scope.mask[nv] = "nm[None, :]";
    h.scope.var[kv] = is_a ? "ok[None, :]" : "ok[:, None]";
    h.scope.mask[kv] = is_a ? "km[None, :]" : "km[:, None]";
    std::string idx = index_py(e->index, h.scope, n.name, "load of " + e->buffer);
    std::string cast = half ? "" : ".to(tl.float32)";
    w.line(name + " = tl.load(" + h.ptr(e->buffer) + " + (" + idx + "), mask=" + mask_for(e->index, h.scope) +
           ", other=0)" + cast);
  };
  operand(a, "a", true);
  operand(b, "b", false);
  w.line(half ? "acc += tl.dot(a, b)" : "acc += tl.dot(a, b, input_precision=\"ieee\")");
  w.close();
  h.scope.var[mv] = "om[:, None]";
  h.scope.var[nv] = "on[None, :]";
  std::string sidx = index_py(n.store_index, h.scope, n.name, "store");
  w.line("tl.store(" + h.ptr(n.out()) + " + (" + sidx + "), acc, mask=" + mask_for(n.store_index, h.scope) + ")");
}

}  // namespace

KernelText emit_kernel(const LoopProgram& p, const KernelPlan& kp) {
  KernelText out;
  if (kp.mode == "host") return out;
  std::map<std::string, std::string> ptrs;
  std::string params;
  const Kernel& k = *kp.kernel;
  std::string outs;
  for (const auto& b : k.hbm_outputs) outs += (outs.empty() ? "" : ", ") + b;
  PyWriter c;
  c.line(strcat(
      "# kernel ", k.name, ": ", k.nodes.size(), " node(s), mode ", kp.mode, ", grid (",
      [&] {
        std::string g;
        for (int64_t x : kp.grid) g += (g.empty() ? "" : ", ") + std::to_string(x);
        return g;
      }(),
      "), HBM outputs: ", outs.empty() ? "none" : outs));
  if (!kp.why_not_rows.empty()) c.line("#   not one program per row: " + kp.why_not_rows);
  for (size_t i = 0; i < kp.args.size(); ++i) {
    std::string v = "p" + std::to_string(i);
    ptrs[kp.args[i]] = v;
    params += (params.empty() ? "" : ", ") + v;
    c.line(strcat("#   ", v, " = ", kp.args[i], ": ", type_str(p.buffers.at(kp.args[i]).type)));
  }
  for (size_t j = 0; j < k.nodes.size(); ++j) {
    std::istringstream text(print_loop_node(p.nodes.at(static_cast<size_t>(k.nodes[j]))));
    bool first = true;
    for (std::string l; std::getline(text, l); first = false)
      c.line((first ? strcat("#   node ", j, ": ") : "#     ") + l);
  }
  if (kp.mode == "grid") params += ", sync";
  PyWriter w;
  w.line("@triton.jit");
  w.open("def @FN@(" + params + "):");
  int tmp = 0;
  if (kp.mode == "dot") {
    emit_dot(p, p.nodes.at(static_cast<size_t>(k.nodes.front())), ptrs, w, tmp);
  } else {
    if (kp.mode == "rows") w.line("row = tl.program_id(0).to(tl.int64)");
    // A node that reads what an earlier node of the kernel wrote waits for it: a CTA barrier when
    // the same program wrote it (rows mode; in grid mode, the same work items and a read inside
    // the item that wrote), a grid barrier otherwise.
    std::map<std::string, std::vector<const LoopNode*>> since_grid;  // writers since the last grid barrier
    std::set<std::string> since_any;
    for (size_t j = 0; j < k.nodes.size(); ++j) {
      const LoopNode& n = p.nodes.at(static_cast<size_t>(k.nodes[j]));
      bool local = false, global = false;
      for (const auto& b : node_reads(n)) local = local || since_any.count(b) > 0;
      if (kp.mode == "grid") {
        for (const auto& l : node_loads(n)) {
          auto it = since_grid.find(l->buffer);
          if (it == since_grid.end()) continue;
          bool exact = true;
          bool same_items = local_read_problem(n, l, it->second, exact).empty();
          for (const LoopNode* wn : it->second)
            same_items = same_items && wn->rows() == n.rows() && grid_col_blocks(*wn) == grid_col_blocks(n) &&
                         grid_block(*wn) == grid_block(n);
          if (grid_col_blocks(n) > 1 && !exact) same_items = false;
          global = global || !same_items;
        }
        if (n.kind == LoopKind::Gather && since_grid.count(n.gather_table)) global = true;
      }
      if (global) {
        w.line("_lpu_grid_barrier(sync)  # every program's stores above are visible below");
        since_grid.clear();
        since_any.clear();
      } else if (local) {
        w.line("tl.debug_barrier()  # this program's stores above are visible to its loads below");
        since_any.clear();
      }
      NodeEmitter(p, n, j, kp, ptrs, w, tmp).emit();
      since_grid[n.out()].push_back(&n);
      since_any.insert(n.out());
    }
  }
  w.close();
  out.comment = c.str();
  out.body = w.str();
  return out;
}

std::vector<KernelText> emit_kernels(const LoopProgram& p, ModulePlan& mp) {
  std::vector<KernelText> texts;
  std::map<std::string, std::string> fn_of_body;
  for (auto& kp : mp.kernels) {
    texts.push_back(emit_kernel(p, kp));
    if (kp.mode == "host") continue;
    auto [it, fresh] = fn_of_body.emplace(texts.back().body, kp.fn);
    if (!fresh) kp.fn = it->second;  // identical code: one function, one compilation
  }
  return texts;
}

}  // namespace lpu::triton
