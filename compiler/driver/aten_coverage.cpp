#include "driver/aten_coverage.h"

#include <fstream>
#include <map>
#include <sstream>

#include "graph/ops.h"
#include "passes/decompose.h"
#include "ref/host_ops.h"
#include "support/error.h"

namespace lpu {

namespace {

std::string handling_of(const std::string& name) {
  const std::string op = "aten." + name;
  const OpInfo* info = find_op(op);
  if (!info) return "missing";
  if (info->host()) return host_ops::has_semantics(op) ? "host" : "host (timing only)";
  if (!aten_decompositions().count(op)) return "missing";
  const OpInfo* core = find_op(name);
  return core && core->core() && !core->host() ? "lowered" : "decomposed";
}

}  // namespace

CoreAtenSet core_aten_coverage(const std::string& path_in) {
  std::string path = path_in.empty() ? std::string(LPU_SOURCE_DIR) + "/compiler/graph/data/core_aten_ops-torch-2.11.txt" : path_in;
  std::ifstream f(path);
  if (!f) throw InputError(strcat(path, ": cannot read the core ATen op list"));
  CoreAtenSet set;
  std::map<std::string, std::vector<std::string>> overloads;
  std::string line;
  for (int no = 1; std::getline(f, line); ++no) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string a, b, extra;
    if (!(in >> a >> b) || (in >> extra))
      throw InputError(strcat(path, ":", no, ": expected `name overload` or `torch_version V`, got '", line, "'"));
    if (a == "torch_version") set.torch_version = b;
    else overloads[a].push_back(b);
  }
  if (set.torch_version.empty() || overloads.empty())
    throw InputError(strcat(path, ": no torch_version line or no ops"));
  for (auto& [name, ov] : overloads) set.ops.push_back({name, ov, handling_of(name)});
  return set;
}

}  // namespace lpu
