// The Triton module: prelude, kernels, BUFFER_PLAN and the launcher (triton_source.h).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "handlers/torch_python.h"
#include "handlers/triton_internal.h"
#include "handlers/triton_source.h"
#include "support/error.h"

namespace lpu {
namespace {

using namespace triton;

const char* kPrelude = R"PY(import json

import torch
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice
except ImportError:  # Triton < 3.0
    from triton.language.extra.cuda import libdevice


# Floor division and non-negative modulo for a divisor d > 0 (loopir/index.h semantics). Triton's
# integer // and % truncate like C; the kernels use them plainly only where the compiler proved
# the operand non-negative, and these helpers everywhere else.
@triton.jit
def _lpu_floordiv(a, d):
    return (a - ((a % d) + d) % d) // d


@triton.jit
def _lpu_mod(a, d):
    return ((a % d) + d) % d


@triton.jit
def _lpu_mul(a, b):
    return a * b


# Grid barrier of the "grid" kernels (as TorchInductor's cooperative reductions do it): every
# program adds to a uint32 counter so that the top bit flips once all have arrived (program 0
# adds 0x80000000 - (n - 1), the others 1), and spins until it sees the flip. Correct only when
# all programs are resident at once: the launcher starts one per SM (_lpu_nprog).
@triton.jit
def _lpu_grid_barrier(sync):
    tl.debug_barrier()
    one_i32 = 1
    one_u32 = one_i32.to(tl.uint32)
    expected = tl.num_programs(0).to(tl.uint32)
    if tl.program_id(0) == 0:
        nb = 0x80000000 - (expected - one_u32)
    else:
        nb = one_u32
    old_arrive = tl.atomic_add(sync, nb, sem="release")
    bar_flipped = False
    while not bar_flipped:
        current_arrive = tl.atomic_add(sync, 0, sem="acquire")
        bar_flipped = ((old_arrive ^ current_arrive) & 0x80000000) != 0
    tl.debug_barrier()


_NPROG = {}


def _lpu_nprog(bufs):
    """Programs of a "grid" kernel: one per SM (all resident, so the grid barrier cannot deadlock);
    one under TRITON_INTERPRET, whose programs run one after another."""
    dev = bufs["__lpu_sync"].device
    if dev.type != "cuda":
        return 1
    if dev not in _NPROG:
        _NPROG[dev] = torch.cuda.get_device_properties(dev).multi_processor_count
    return _NPROG[dev]
)PY";

const char* kLauncher = R"PY(

def allocate(inputs, device="cuda"):
    """Every buffer of BUFFER_PLAN: the inputs (by graph name; moved to `device`, converted to the
    plan's dtype, made contiguous), torch.empty for intermediates, scratch and outputs."""
    bufs = {}
    for b in BUFFER_PLAN["buffers"]:
        dt = _DTYPES[b["dtype"]]
        if b["storage"] == "input":
            if b["name"] not in inputs:
                raise KeyError("missing input %r" % b["name"])
            t = torch.as_tensor(inputs[b["name"]])
            if list(t.shape) != b["shape"]:
                raise ValueError("input %r has shape %s, the plan %s" % (b["name"], list(t.shape), b["shape"]))
            bufs[b["name"]] = t.to(device=device, dtype=dt).contiguous()
        else:
            bufs[b["name"]] = torch.empty(b["shape"], dtype=dt, device=device)
    bufs["__lpu_sync"] = torch.zeros(1, dtype=torch.uint32, device=device)  # the grid barrier's counter
    return bufs


def run(inputs, device="cuda"):
    """inputs: {name: tensor} for BUFFER_PLAN["inputs"]; returns {name: tensor} of the outputs."""
    bufs = allocate(inputs, device)
    launch(bufs)
    return {name: bufs[name] for name in BUFFER_PLAN["outputs"]}
)PY";

nlohmann::json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

nlohmann::json plan_json(const LoopProgram& p, const Schedule& s, const ModulePlan& mp) {
  nlohmann::json j;
  j["format"] = "lpu-triton-plan/1";
  j["program"] = p.name;
  j["policy"] = s.policy;
  j["inputs"] = p.inputs;
  j["outputs"] = p.outputs;
  nlohmann::json bufs = nlohmann::json::array();
  for (const auto& name : mp.buffers) {
    const Buffer& b = p.buffers.at(name);
    nlohmann::json e;
    e["name"] = name;
    e["shape"] = b.type.shape;
    e["dtype"] = dtype_name(b.type.dtype);
    e["role"] = buffer_role_name(b.role);
    e["storage"] = mp.storage.at(name);
    if (auto it = mp.index_bound.find(name); it != mp.index_bound.end()) e["index_bound"] = it->second;
    bufs.push_back(e);
  }
  j["buffers"] = bufs;
  nlohmann::json ks = nlohmann::json::array();
  for (const auto& kp : mp.kernels) {
    const Kernel& k = *kp.kernel;
    nlohmann::json e;
    e["name"] = k.name;
    e["triton"] = kp.fn;
    e["mode"] = kp.mode;
    e["grid"] = kp.grid;
    std::vector<std::string> nodes;
    for (int idx : k.nodes) nodes.push_back(p.nodes.at(static_cast<size_t>(idx)).name);
    e["nodes"] = nodes;
    e["hbm_outputs"] = k.hbm_outputs;
    e["reads"] = kp.reads;
    e["writes"] = kp.writes;
    e["args"] = kp.args;
    if (!kp.why_not_rows.empty()) e["why_not_rows"] = kp.why_not_rows;
    if (kp.mode == "host") {
      const LoopNode& n = p.nodes.at(static_cast<size_t>(k.nodes.front()));
      nlohmann::json attrs = nlohmann::json::object();
      for (const auto& [key, v] : n.host_attrs) attrs[key] = attr_json(v);
      e["host"] = {{"op", n.host_op}, {"inputs", n.host_inputs}, {"attrs", attrs}};
    }
    ks.push_back(e);
  }
  j["kernels"] = ks;
  return j;
}

}  // namespace

std::string triton_buffer_plan_json(const LoopProgram& p, const Schedule& s) {
  ModulePlan mp = plan_module(p, s);
  emit_kernels(p, mp);
  return plan_json(p, s, mp).dump(1) + "\n";
}

std::string emit_triton_module(const LoopProgram& p, const Schedule& s) {
  ModulePlan mp = plan_module(p, s);
  std::vector<KernelText> texts = emit_kernels(p, mp);
  PyWriter w;
  w.line("# Generated by lpu from program " + p.name + " (schedule: " + s.policy + ", " +
         std::to_string(s.kernels.size()) +
         " kernel(s)) by the Triton source handler, compiler/handlers/triton_*.cpp.");
  w.line("# run(inputs) -> outputs; allocate(inputs) + launch(bufs) to time the kernels alone.");
  w.line("# BUFFER_PLAN: every buffer (shape, dtype, storage) and kernel (mode, grid) in schedule order.");
  w.line("# Index arithmetic assumes what loopir/index.h guarantees: floor division and modulo by d > 0.");
  std::istringstream prelude(std::string(kPrelude) + "\n\n" + torch_host_ops_py());
  for (std::string l; std::getline(prelude, l);) w.line(l);
  w.blank();
  w.blank();
  std::set<std::string> defined;
  for (size_t i = 0; i < mp.kernels.size(); ++i) {
    const KernelPlan& kp = mp.kernels[i];
    if (kp.mode == "host") continue;
    std::istringstream comment(texts[i].comment);
    for (std::string l; std::getline(comment, l);) w.line(l);
    if (!defined.insert(kp.fn).second) {
      w.line("#   same code as " + kp.fn + " above");
      w.blank();
      continue;
    }
    std::string body = texts[i].body;
    body.replace(body.find("@FN@"), 4, kp.fn);
    std::istringstream b(body);
    for (std::string l; std::getline(b, l);) w.line(l);
    w.blank();
    w.blank();
  }

  std::string plan = plan_json(p, s, mp).dump(1);
  w.line("BUFFER_PLAN = json.loads(r\"\"\"" + plan + "\"\"\")");
  w.blank();
  w.blank();
  w.open("def launch(bufs):");
  w.line("\"\"\"Every kernel in schedule order; bufs is what allocate() returns.\"\"\"");
  for (const auto& kp : mp.kernels) {
    const Kernel& k = *kp.kernel;
    if (kp.mode == "host") {
      const LoopNode& n = p.nodes.at(static_cast<size_t>(k.nodes.front()));
      std::string ins, attrs;
      for (const auto& b : n.host_inputs) ins += (ins.empty() ? "" : ", ") + strcat("bufs[", py_string(b), "]");
      for (const auto& [key, v] : n.host_attrs)
        attrs += (attrs.empty() ? "" : ", ") + py_string(key) + ": " + attr_py(v);
      w.line(strcat("# ", k.name, ": graph break, ", n.host_op, " on the host"));
      w.line(
          strcat("_host_op(", py_string(n.host_op), ", [", ins, "], {", attrs, "}, bufs[", py_string(n.out()), "])"));
      continue;
    }
    std::string grid, args;
    for (int64_t g : kp.grid) grid += std::to_string(g) + ", ";
    for (const auto& b : kp.args) args += (args.empty() ? "" : ", ") + strcat("bufs[", py_string(b), "]");
    if (kp.mode == "grid") {
      grid = "_lpu_nprog(bufs), ";
      args += ", bufs[\"__lpu_sync\"]";
    }
    w.line(strcat(kp.fn, "[(", grid, ")](", args, ")"));
  }
  w.close();
  std::istringstream launcher(kLauncher);
  for (std::string l; std::getline(launcher, l);) w.line(l);
  return w.str();
}

}  // namespace lpu
