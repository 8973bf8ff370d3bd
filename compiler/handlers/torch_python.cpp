// The Python spellings shared by the torch-calling modules (torch_python.h).
#include "handlers/torch_python.h"

#include <cstdio>

#include "handlers/triton_internal.h"

namespace lpu {

const char* torch_host_ops_py() {
  return R"PY(_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
           "i64": torch.int64, "i32": torch.int32, "bool": torch.bool}

# Graph breaks: the node runs on the host side in torch. Core element-wise ops by name, the host ops
# of the core ATen set seen in the fixtures by hand, any other ATen op through torch.ops.aten with
# the graph node's attributes as keywords ("result" picks one result of a multi-result op).
_HOST_SCALAR = {
    "neg": torch.neg, "abs": torch.abs, "relu": torch.relu, "sign": torch.sign, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "exp": torch.exp, "expm1": torch.expm1,
    "log": torch.log, "log1p": torch.log1p, "log2": torch.log2, "log10": torch.log10, "sin": torch.sin,
    "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "erf": torch.erf, "sigmoid": torch.sigmoid, "rsqrt": torch.rsqrt, "sqrt": torch.sqrt,
    "reciprocal": torch.reciprocal, "is_nan": torch.isnan, "is_inf": torch.isinf, "add": torch.add,
    "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum, "minimum": torch.minimum,
    "pow": torch.pow, "atan2": torch.atan2, "fmod": torch.fmod, "remainder": torch.remainder,
    "bitwise_and": lambda a, b: torch.bitwise_and(a.long(), b.long()),
    "bitwise_or": lambda a, b: torch.bitwise_or(a.long(), b.long()),
    "bitwise_xor": lambda a, b: torch.bitwise_xor(a.long(), b.long()),
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge, "eq": torch.eq, "ne": torch.ne,
    "where": lambda c, a, b: torch.where(c != 0, a, b),
}


def _host_op(op, args, attrs, out):
    a = attrs
    if op in _HOST_SCALAR:
        r = _HOST_SCALAR[op](*[x.float() for x in args])
    elif op == "aten.gather":
        r = torch.gather(args[0], a["dim"], args[1].long())
    elif op == "aten.index":  # self[indices]: index tensors at indexed_dims (default 0, 1, ...)
        dims = a.get("indexed_dims", list(range(len(args) - 1)))
        key = [slice(None)] * args[0].dim()
        for d, t in zip(dims, args[1:]):
            key[d] = t.long()
        r = args[0][tuple(key)]
    elif op == "aten.scatter":
        idx = args[1].long()
        r = torch.scatter(args[0], a["dim"], idx, args[2]) if len(args) > 2 else torch.scatter(args[0], a["dim"], idx, a["value"])
    elif op == "aten.topk":
        r = torch.topk(args[0], a["k"], dim=a.get("dim", -1), largest=a.get("largest", True), sorted=True)[a.get("result", 0)]
    elif op == "aten.sort":
        r = torch.sort(args[0], dim=a.get("dim", -1), descending=a.get("descending", False))[a.get("result", 0)]
    elif op in ("aten.cumsum", "aten.cumprod"):
        r = (torch.cumsum if op == "aten.cumsum" else torch.cumprod)(args[0].double(), a["dim"])
    elif op == "aten.arange":
        r = torch.arange(a.get("start", 0), a["end"], a.get("step", 1), device=out.device)
    elif op.startswith("aten."):  # the rest: torch.ops.aten with the attributes as keywords
        fn = getattr(torch.ops.aten, op[len("aten."):])
        r = fn(*args, **{k: v for k, v in a.items() if k != "result"})
        if isinstance(r, (tuple, list)):
            r = r[int(a.get("result", 0))]
    else:
        raise NotImplementedError("graph break: op %r has no torch spelling in the launcher" % op)
    out.copy_(torch.as_tensor(r).reshape(out.shape).to(out.dtype))
)PY";
}

std::string attr_py(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {  // every digit of the double (attributes are not fp32)
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    std::string s = buf;
    if (s == "inf" || s == "-inf" || s == "nan") return "float(\"" + s + "\")";
    return s;
  }
  if (auto* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (auto* s = std::get_if<std::string>(&v)) return triton::py_string(*s);
  std::string out = "[";
  for (int64_t x : std::get<std::vector<int64_t>>(v)) out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  return out + "]";
}

}  // namespace lpu
