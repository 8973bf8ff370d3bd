#include "handlers/counting.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "handlers/ops_handler.h"
#include "support/error.h"

namespace lpu {
namespace {

// The abstract value: whether an expression can differ between iteration points.
struct Varies {
  bool varies = true;
};

class CountingHandler final : public OpsHandler<Varies> {
 public:
  CountingHandler(const LoopProgram& p, const LoopNode& n, KernelCounts& c)
      : p_(p), c_(c), domain_(numel(n.ranges) * numel(n.reduction_ranges)) {}

  std::vector<const ExprNode*> loads;  // every load visited, in order

  Varies load(const ExprNode& e) override {
    loads.push_back(&e);
    c_.naive_load_bytes += domain_ * dtype_bytes(p_.buffers.at(e.buffer).type.dtype);
    return {};
  }
  Varies constant(double, DType) override { return {false}; }
  Varies index_expr(const Index& index) override { return {!index.is_constant()}; }
  Varies to_dtype(Varies x, DType) override { return x; }
  Varies call(ScalarOp op, const std::vector<Varies>& args, DType) override {
    bool varies = std::any_of(args.begin(), args.end(), [](const Varies& v) { return v.varies; });
    if (varies) c_.ops[scalar_op_class(op)] += domain_;
    return {varies};
  }
  Varies reduction(ReductionType, Varies) override {
    c_.ops["reduction"] += domain_;
    return {};
  }

 private:
  const LoopProgram& p_;
  KernelCounts& c_;
  int64_t domain_;
};

// Points of the loop variables `index` depends on: the elements one pattern moves.
int64_t pattern_elements(const LoopNode& n, const Index& index) {
  int64_t e = 1;
  const auto ranges = n.var_ranges();
  for (const auto& v : index.variables()) {
    auto it = ranges.find(v);
    if (it == ranges.end())
      throw InputError(strcat("node ", n.name, ": index ", index.str(), " uses ", v.name(), ", not a loop variable of the node"));
    e *= it->second;
  }
  return e;
}

// Loads walking a buffer alike share a key (see counting.h).
std::string pattern_key(const LoopNode& n, const ExprNode& load) {
  AccessPattern ap = analyze_access(n, load.index);
  if (ap.ok)
    return strcat(load.buffer, "@", ap.base, ",", ap.row_stride, ",", ap.col_stride, ",", ap.row_stride ? n.rows() : 1, "x",
                  ap.col_stride ? n.cols() : 1);
  std::string sizes;
  for (const auto& v : load.index.variables()) sizes += strcat(" ", v.name(), "<", pattern_elements(n, Index::var(v)));
  return strcat(load.buffer, "[", load.index.str(), "]", sizes);
}

std::string with_commas(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return v < 0 ? "-" + s : s;
}

const std::vector<std::string>& op_classes() {
  static const std::vector<std::string> c = {"alu", "transcendental", "divide", "reduction"};
  return c;
}

}  // namespace

std::vector<KernelCounts> count_kernels(const LoopProgram& p, const Schedule& s) {
  std::vector<KernelCounts> out;
  for (const auto& k : s.kernels) {
    KernelCounts c;
    c.kernel = k.name;
    c.nodes = static_cast<int64_t>(k.nodes.size());
    for (const auto& cls : op_classes()) c.ops[cls] = 0;
    std::set<std::string> produced, patterns;
    for (int idx : k.nodes) {
      const LoopNode& n = p.nodes.at(static_cast<size_t>(idx));
      CountingHandler h(p, n, c);
      evaluate_node<Varies>(n, h);
      c.iterations += numel(n.ranges) * numel(n.reduction_ranges);
      const Buffer& out_buf = p.buffers.at(n.out());
      c.naive_store_bytes += numel(n.ranges) * dtype_bytes(out_buf.type.dtype);
      for (const ExprNode* l : h.loads) {
        if (produced.count(l->buffer)) continue;  // computed in this kernel: never leaves the chip
        if (!patterns.insert(pattern_key(n, *l)).second) continue;
        const Buffer& b = p.buffers.at(l->buffer);  // a packed weight: its blocks
        const int64_t elems = pattern_elements(n, l->index);
        c.hbm_read_bytes += b.quant.on() ? b.quant.bytes(elems) : elems * dtype_bytes(b.type.dtype);
      }
      produced.insert(n.out());
    }
    // Each node writing an HBM output stores its own elements (a concatenation's writers
    // each fill their slice of the shared buffer).
    std::set<std::string> hbm_out(k.hbm_outputs.begin(), k.hbm_outputs.end());
    for (int idx : k.nodes) {
      const LoopNode& n = p.nodes.at(static_cast<size_t>(idx));
      if (hbm_out.count(n.out())) c.hbm_write_bytes += numel(n.ranges) * dtype_bytes(p.buffers.at(n.out()).type.dtype);
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string print_counts(const std::vector<KernelCounts>& counts) {
  std::vector<std::string> classes = op_classes();
  for (const auto& c : counts)
    for (const auto& [cls, n] : c.ops)
      if (std::find(classes.begin(), classes.end(), cls) == classes.end()) classes.push_back(cls);
  std::vector<std::string> header = {"kernel", "nodes", "iterations", "hbm_read_B", "hbm_write_B", "naive_load_B", "naive_store_B"};
  header.insert(header.end(), classes.begin(), classes.end());
  KernelCounts total;
  total.kernel = "total";
  std::vector<std::vector<std::string>> rows;
  auto row = [&](const KernelCounts& c) {
    std::vector<std::string> r = {c.kernel, with_commas(c.nodes), with_commas(c.iterations), with_commas(c.hbm_read_bytes),
                                  with_commas(c.hbm_write_bytes), with_commas(c.naive_load_bytes), with_commas(c.naive_store_bytes)};
    for (const auto& cls : classes) r.push_back(with_commas(c.ops.count(cls) ? c.ops.at(cls) : 0));
    rows.push_back(r);
  };
  for (const auto& c : counts) {
    row(c);
    total.nodes += c.nodes;
    total.iterations += c.iterations;
    total.hbm_read_bytes += c.hbm_read_bytes;
    total.hbm_write_bytes += c.hbm_write_bytes;
    total.naive_load_bytes += c.naive_load_bytes;
    total.naive_store_bytes += c.naive_store_bytes;
    for (const auto& [cls, n] : c.ops) total.ops[cls] += n;
  }
  row(total);
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& r : rows) width[i] = std::max(width[i], r[i].size());
  }
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (size_t i = 0; i < r.size(); ++i) {
      std::string pad(width[i] - r[i].size(), ' ');
      l += (i ? "  " : "") + (i == 0 ? r[i] + pad : pad + r[i]);  // names left, numbers right
    }
    os << l.substr(0, l.find_last_not_of(' ') + 1) << "\n";
  };
  line(header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& r : rows) line(r);
  return os.str();
}

nlohmann::json counts_to_json(const std::vector<KernelCounts>& counts) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& c : counts)
    j.push_back({{"kernel", c.kernel},
                 {"nodes", c.nodes},
                 {"iterations", c.iterations},
                 {"hbm_read_bytes", c.hbm_read_bytes},
                 {"hbm_write_bytes", c.hbm_write_bytes},
                 {"naive_load_bytes", c.naive_load_bytes},
                 {"naive_store_bytes", c.naive_store_bytes},
                 {"ops", c.ops}});
  return j;
}

}  // namespace lpu
