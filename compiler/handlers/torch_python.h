// Python text shared by the modules that call PyTorch: the Triton launcher (its graph breaks run
// in torch) and the eager spelling of a core graph (torch_graph.h). One place for how a core
// element-wise op and a host op are spelled in torch.
#pragma once
#include <string>

#include "graph/graph.h"

namespace lpu {

// Python source defining _DTYPES (lpu dtype name -> torch dtype), _HOST_SCALAR (core element-wise
// op name -> torch callable) and _host_op(op, args, attrs, out) (a host op computed by torch into
// the preallocated `out`). Needs `import torch` before it.
const char* torch_host_ops_py();

// A graph attribute as a Python literal (int, float incl. float("inf"), bool, str, list of int).
std::string attr_py(const AttrValue& v);

}  // namespace lpu
