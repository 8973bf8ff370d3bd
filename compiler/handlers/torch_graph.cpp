// The eager PyTorch spelling of a core graph (torch_graph.h).
#include "handlers/torch_graph.h"

#include <map>
#include <sstream>

#include "graph/ops.h"
#include "handlers/torch_python.h"
#include "handlers/triton_internal.h"
#include "ops/reduction.h"
#include "ops/scalar_ops.h"
#include "support/error.h"

namespace lpu {
namespace {

using triton::py_string;
using triton::torch_dtype;

std::string ints_py(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Element-wise ops that Python operators spell, so an operand may be a Python number on either side.
const char* operator_py(const std::string& op) {
  static const std::map<std::string, const char*> ops = {{"add", "+"},  {"sub", "-"}, {"mul", "*"}, {"div", "/"},
                                                         {"pow", "**"}, {"lt", "<"},  {"le", "<="}, {"gt", ">"},
                                                         {"ge", ">="},  {"eq", "=="}, {"ne", "!="}};
  auto it = ops.find(op);
  return it == ops.end() ? nullptr : it->second;
}

bool is_scalar_full(const Node& n) { return n.kind == NodeKind::Call && n.op == "full" && n.type.shape.empty(); }

// Names the operands: v<ID> for tensors, a Python number for a 0-d `full` that only feeds operator
// ops next to a tensor (what an eager user writes, `x * 0.5`: no fill kernel per call).
struct Operands {
  std::map<NodeId, std::string> number;
  Operands(const Graph& g) {
    auto users = g.users();
    for (const Node& n : g.nodes()) {
      if (!is_scalar_full(n) || users[static_cast<size_t>(n.id)].empty()) continue;
      bool ok = true;
      for (NodeId u : users[static_cast<size_t>(n.id)]) {
        const Node& un = g.node(u);
        ok = ok && un.kind == NodeKind::Call && operator_py(un.op);
        for (NodeId i : un.inputs) ok = ok && (i == n.id || !is_scalar_full(g.node(i)));
      }
      if (ok) number[n.id] = std::string();  // filled by fill_value_py below
    }
  }
  std::string operator()(NodeId id) const {
    auto it = number.find(id);
    return it != number.end() ? it->second : "v" + std::to_string(id);
  }
};

// The value of a `full`: a Python number of the result's kind.
std::string fill_value_py(const Node& n) {
  double v = n.attr_float("value", 0);
  switch (n.type.dtype) {
    case DType::boolean: return v != 0 ? "True" : "False";
    case DType::i64:
    case DType::i32: return std::to_string(static_cast<int64_t>(v));
    default: return attr_py(AttrValue{v});
  }
}

// The right-hand side for call node `n` (operands already named v<ID>).
std::string call_py(const Graph& g, const Node& n, const Operands& var) {
  const OpInfo* info = find_op(n.op);
  if (!info) throw InputError(strcat("node %", n.name, ": unknown op '", n.op, "'"));
  std::vector<std::string> a;
  for (NodeId i : n.inputs) a.push_back(var(i));
  const std::string dt = torch_dtype(n.type.dtype);
  const Shape& out = n.type.shape;
  auto in_shape = [&](size_t k) -> const Shape& { return g.node(n.inputs.at(k)).type.shape; };
  if (info->category == OpCategory::Constant)
    return strcat("torch.full(", ints_py(out), ", ", fill_value_py(n), ", dtype=", dt, ", device=dev)");
  if (info->host()) {
    std::string attrs;
    for (const auto& [key, v] : n.attrs) attrs += (attrs.empty() ? "" : ", ") + py_string(key) + ": " + attr_py(v);
    std::string args;
    for (const auto& s : a) args += (args.empty() ? "" : ", ") + s;
    return strcat("_host(", py_string(n.op), ", [", args, "], {", attrs, "}, ", ints_py(out), ", ", dt, ", dev)");
  }
  if (info->category == OpCategory::Reduction) {
    auto dims = normalize_dims(n.attr_ints("dims"), static_cast<int>(in_shape(0).size()), n);
    if (dims.empty()) return a[0];  // over no dim: the input itself (ref/reference.cpp)
    ReductionType type;
    if (!graph_reduction_type(n.op, type))
      throw InputError(strcat("node %", n.name, ": reduction '", n.op, "' has no torch spelling"));
    if (type == ReductionType::argmax)  // torch's is int64 over one dim; ours a number of x's dtype
      return strcat("torch.argmax(", a[0], ", dim=", dims.at(0),
                    ", keepdim=", n.attr_bool("keepdim", false) ? "True" : "False", ").to(", dt, ")");
    return strcat("torch.", torch_reduction_name(type), "(", a[0], ", dim=", ints_py(dims),
                  ", keepdim=", n.attr_bool("keepdim", false) ? "True" : "False", ")");
  }
  if (info->category == OpCategory::Matmul) return strcat("torch.matmul(", a[0], ", ", a[1], ")");
  if (n.op == "to_dtype") return strcat(a[0], ".to(", dt, ")");
  if (n.op == "reshape") return strcat(a[0], ".reshape(", ints_py(out), ")");
  if (n.op == "permute") {
    std::vector<int64_t> dims;
    for (int64_t d : n.attr_ints("dims")) dims.push_back(normalize_dim(d, static_cast<int>(in_shape(0).size()), n));
    return strcat(a[0], ".permute(", ints_py(dims), ")");
  }
  if (n.op == "expand") return strcat(a[0], ".expand(", ints_py(out), ")");
  if (n.op == "slice") {
    auto d = normalize_dim(n.attr_int("dim"), static_cast<int>(in_shape(0).size()), n);
    SliceRange r = slice_range(n, in_shape(0).at(static_cast<size_t>(d)));
    std::string key;
    for (int64_t k = 0; k < d; ++k) key += ":, ";
    return strcat(a[0], "[", key, r.start, ":", r.end, ":", r.step, "]");
  }
  if (n.op == "cat") {
    std::string list;
    for (const auto& s : a) list += (list.empty() ? "" : ", ") + s;
    return strcat("torch.cat([", list, "], dim=", normalize_dim(n.attr_int("dim"), static_cast<int>(out.size()), n),
                  ")");
  }
  if (n.op == "embedding") return strcat("torch.nn.functional.embedding(", a[1], ".long(), ", a[0], ")");
  if (ScalarOp op; parse_scalar_op(n.op, op)) {
    std::string args;
    for (const auto& s : a) args += (args.empty() ? "" : ", ") + s;
    // torch's own result dtype may differ (bitwise ops on bool computed as int64): cast to the graph's.
    if (const char* o = operator_py(n.op); o && a.size() == 2)
      return strcat("_cast(", a[0], " ", o, " ", a[1], ", ", dt, ")");
    return strcat("_cast(_HOST_SCALAR[", py_string(n.op), "](", args, "), ", dt, ")");
  }
  throw InputError(
      strcat("node %", n.name, ": op '", n.op, "' is not a core op (torch spelling); run decompose first"));
}

const char* kHelpers = R"PY(

def _cast(t, dtype):
    return t if t.dtype == dtype else t.to(dtype)


def _host(op, args, attrs, shape, dtype, device):
    out = torch.empty(shape, dtype=dtype, device=device)
    _host_op(op, args, attrs, out)
    return out


def prepare(inputs, device="cuda"):
    """{name: tensor} -> forward's arguments: on `device`, in the graph's dtype, contiguous."""
    args = []
    for name, dt, shape in INPUTS:
        if name not in inputs:
            raise KeyError("missing input %r" % name)
        t = torch.as_tensor(inputs[name])
        if list(t.shape) != shape:
            raise ValueError("input %r has shape %s, the graph %s" % (name, list(t.shape), shape))
        args.append(t.to(device=device, dtype=_DTYPES[dt]).contiguous())
    return args


def run(inputs, device="cuda"):
    """inputs: {name: tensor}; returns {name: tensor} of the outputs (OUTPUTS)."""
    return dict(zip(OUTPUTS, forward(*prepare(inputs, device))))
)PY";

}  // namespace

std::string emit_torch_graph_module(const Graph& core, const std::vector<std::string>& output_names) {
  std::vector<NodeId> outs = core.outputs();
  if (outs.size() != output_names.size())
    throw InputError(strcat("torch module: graph ", core.name(), " has ", outs.size(), " outputs but ",
                            output_names.size(), " output names"));
  triton::PyWriter w;
  w.line("# Generated by lpu from graph " + core.name() + " (core ops, after normalisation) by");
  w.line("# compiler/handlers/torch_graph.cpp: the same computation as eager PyTorch calls, one per core op.");
  w.line("# forward(*prepare(inputs)) runs it; torch.compile(forward) is what Inductor makes of it.");
  w.line("import torch");
  w.blank();
  std::istringstream host(torch_host_ops_py());
  for (std::string l; std::getline(host, l);) w.line(l);
  std::istringstream helpers(kHelpers);
  for (std::string l; std::getline(helpers, l);) w.line(l);
  w.blank();
  w.blank();
  Operands var(core);
  for (auto& [id, text] : var.number) text = fill_value_py(core.node(id));
  std::vector<NodeId> ins;
  w.line("INPUTS = [");
  for (const Node& n : core.nodes()) {
    if (n.kind != NodeKind::Placeholder && n.kind != NodeKind::Parameter) continue;
    ins.push_back(n.id);
    w.line(strcat("    (", py_string(n.name), ", ", py_string(dtype_name(n.type.dtype)), ", ", ints_py(n.type.shape),
                  "),"));
  }
  w.line("]");
  std::string names;
  for (const auto& s : output_names) names += (names.empty() ? "" : ", ") + py_string(s);
  w.line("OUTPUTS = [" + names + "]");
  w.blank();
  w.blank();
  w.open("def forward(*args):");
  w.line("\"\"\"The graph's results (OUTPUTS order) for args in INPUTS order.\"\"\"");
  if (!ins.empty()) {
    std::string lhs;
    for (NodeId id : ins) lhs += var(id) + ", ";
    w.line(strcat("(", lhs, ") = args"));
    w.line("dev = args[0].device");
  } else {
    w.line("dev = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")");
  }
  for (const Node& n : core.nodes()) {
    if (n.kind != NodeKind::Call || var.number.count(n.id)) continue;
    w.line(strcat(var(n.id), " = ", call_py(core, n, var), "  # %", n.name, ": ", type_str(n.type)));
  }
  std::string res;
  for (NodeId o : outs) res += var(o) + ", ";
  w.line("return (" + res + ")");
  w.close();
  return w.str();
}

}  // namespace lpu
