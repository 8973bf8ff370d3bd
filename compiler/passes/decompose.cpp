// Decomposition of composite ops into the core op set: the pass, the builder, and the table
// of our own composite ops (the aten.* table is aten_decompositions.cpp). Numerics follow
// PyTorch's eager definitions.
#include <cmath>
#include <map>

#include "graph/ops.h"
#include "passes/decompose.h"
#include "passes/passes.h"
#include "support/error.h"

namespace lpu {
namespace {

// layer_norm(x, w, b) = (x - mean) * rsqrt(var + eps) * w + b, var biased, over the last dim.
NodeId layer_norm(Builder& b, const std::vector<NodeId>& in) {
  double eps = b.src.attr_float("eps", 1e-5);
  NodeId mean = b.mean_last(in[0]);
  NodeId xc = b.call("sub", {in[0], mean});
  NodeId var = b.mean_last(b.call("mul", {xc, xc}, {}, "sq"));
  NodeId rstd = b.call("rsqrt", {b.call("add", {var, b.scalar(eps)}, {}, "var_eps")});
  NodeId y = b.call("mul", {xc, rstd}, {}, "norm");
  if (in.size() > 1) y = b.call("mul", {y, in[1]}, {}, "scale");
  if (in.size() > 2) y = b.call("add", {y, in[2]}, {}, "shift");
  return y;
}

// rms_norm(x, w) = x * rsqrt(mean(x^2) + eps) * w
NodeId rms_norm(Builder& b, const std::vector<NodeId>& in) {
  double eps = b.src.attr_float("eps", 1e-6);
  NodeId ms = b.mean_last(b.call("mul", {in[0], in[0]}, {}, "sq"));
  NodeId r = b.call("rsqrt", {b.call("add", {ms, b.scalar(eps)}, {}, "ms_eps")});
  NodeId y = b.call("mul", {in[0], r}, {}, "norm");
  if (in.size() > 1) y = b.call("mul", {y, in[1]}, {}, "scale");
  return y;
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2));  tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
NodeId gelu(Builder& b, const std::vector<NodeId>& in) {
  NodeId x = in[0];
  NodeId inner;
  if (b.src.attr_str("approximate", "none") == "tanh") {
    NodeId x3 = b.call("mul", {b.call("mul", {x, x}, {}, "x2"), x}, {}, "x3");
    NodeId poly = b.call("add", {x, b.call("mul", {x3, b.scalar(0.044715)}, {}, "cubic")}, {}, "poly");
    inner = b.call("tanh", {b.call("mul", {poly, b.scalar(std::sqrt(2.0 / M_PI))}, {}, "scaled")});
  } else {
    inner = b.call("erf", {b.call("mul", {x, b.scalar(M_SQRT1_2)}, {}, "scaled")});
  }
  NodeId one_plus = b.call("add", {inner, b.scalar(1.0)}, {}, "one_plus");
  return b.call("mul", {b.call("mul", {x, one_plus}, {}, "x_cdf"), b.scalar(0.5)}, {}, "half");
}

NodeId silu(Builder& b, const std::vector<NodeId>& in) {
  return b.call("mul", {in[0], b.call("sigmoid", {in[0]})});
}

// softmax(x) = exp(x - amax(x)) / sum(exp(x - amax(x))) over `dim`
NodeId softmax(Builder& b, const std::vector<NodeId>& in) {
  Attrs red{{"dims", std::vector<int64_t>{b.src.attr_int("dim", -1)}}, {"keepdim", true}};
  NodeId m = b.call("amax", {in[0]}, red);
  NodeId e = b.call("exp", {b.call("sub", {in[0], m}, {}, "shifted")});
  NodeId s = b.call("sum", {e}, red);
  return b.call("div", {e, s});
}

}  // namespace

const std::map<std::string, Expander>& composite_decompositions() {
  static const std::map<std::string, Expander> table = {
      {"layer_norm", layer_norm}, {"rms_norm", rms_norm}, {"gelu", gelu},
      {"silu", silu},             {"softmax", softmax},
  };
  return table;
}

NodeId Builder::call(const std::string& op, std::vector<NodeId> in, Attrs attrs, const std::string& suffix) {
  std::string name = src.name + (suffix.empty() ? "_" + op : "_" + suffix);
  const OpInfo* info = find_op(op);
  if (!info || info->core()) return g.add_call(op, std::move(in), std::move(attrs), name);
  // A composite used by another decomposition: type it, then expand it in place.
  Node tmp;
  tmp.name = name;
  tmp.op = op;
  tmp.inputs = in;
  tmp.attrs = std::move(attrs);
  tmp.type = info->infer(g, tmp);
  return expand_node(g, tmp, in);
}

NodeId Builder::scalar(double v) { return scalar(v, src.type.dtype); }

NodeId Builder::scalar(double v, DType t) {
  return g.add_call("full", {}, {{"value", v}, {"dtype", std::string(dtype_name(t))}}, src.name + "_c");
}

NodeId Builder::cast(NodeId x, DType t) {
  if (type(x).dtype == t) return x;
  return call("to_dtype", {x}, {{"dtype", std::string(dtype_name(t))}});
}

NodeId Builder::reshape(NodeId x, const Shape& s) {
  if (type(x).shape == s) return x;
  return call("reshape", {x}, {{"shape", s}});
}

NodeId Builder::mean_last(NodeId x) {
  return call("mean", {x}, {{"dims", std::vector<int64_t>{-1}}, {"keepdim", true}});
}

NodeId expand_node(Graph& out, const Node& n, const std::vector<NodeId>& in) {
  const auto* table = n.op.rfind("aten.", 0) == 0 ? &aten_decompositions() : &composite_decompositions();
  auto it = table->find(n.op);
  if (it == table->end())
    throw InputError(strcat("node %", n.name, ": op '", n.op, "' is not in the core set and has no decomposition"));
  // A decomposition reads its operands by position: check the count first (verify does for
  // whole graphs; this also covers nodes built by hand).
  if (const OpInfo* info = find_op(n.op)) check_arity(*info, n);
  Builder b{out, n};
  NodeId r = it->second(b, in);
  if (!(out.node(r).type == n.type))
    throw InternalError(strcat("decomposition of ", n.op, " gave %", n.name, " type ", type_str(out.node(r).type),
                               " instead of ", type_str(n.type)));
  return r;
}

Graph decompose(const Graph& g) {
  Graph out(g.name());
  out.reserve(g.size());
  std::vector<NodeId> map(g.size(), -1);
  for (const Node& n : g.nodes()) {
    std::vector<NodeId> in;
    for (NodeId i : n.inputs) in.push_back(map[static_cast<size_t>(i)]);
    switch (n.kind) {
      case NodeKind::Placeholder:
      case NodeKind::Parameter: map[static_cast<size_t>(n.id)] = copy_input_node(out, n); break;
      case NodeKind::Output: out.set_output(in); break;
      case NodeKind::Call: {
        // An empty tensor (x[..., 16:] of 16 columns, as partial rotary embeddings make) has
        // no core form; a concatenation drops it, any other use is an error.
        constexpr NodeId kEmpty = -2;
        if (n.type.numel() == 0) {
          map[static_cast<size_t>(n.id)] = kEmpty;
          break;
        }
        for (size_t k = 0; k < in.size(); ++k)
          if (in[k] == kEmpty && n.op != "aten.cat")
            throw InputError(strcat("node %", n.name, " (", n.op, "): input %", g.node(n.inputs[k]).name,
                                    " is an empty tensor; only aten.cat accepts one (and drops it)"));
        if (std::erase(in, kEmpty) && in.empty()) throw InputError(strcat("node %", n.name, " (", n.op, "): every input is an empty tensor"));
        const OpInfo* info = find_op(n.op);
        if (info && info->host()) {  // kept as declared (some results depend on the data: nonzero)
          if (auto r = decompose_host_op(out, n, in)) {  // unless the use has a core form
            map[static_cast<size_t>(n.id)] = *r;
            break;
          }
          map[static_cast<size_t>(n.id)] = out.add_call_typed(n.op, in, n.attrs, n.name, n.type);
          break;
        }
        if (info && info->core()) {
          map[static_cast<size_t>(n.id)] = out.add_call(n.op, in, n.attrs, n.name);
          break;
        }
        map[static_cast<size_t>(n.id)] = expand_node(out, n, in);
        break;
      }
    }
  }
  return out;
}

}  // namespace lpu
