// Op classes of kernels (LM head, FFN, projection, attention, norm, ...). The rules live in
// one table, reports/op_classes.json, which the HTML report reads and this binary compiles in,
// so `lpu run`, `lpu-bench roofline` and the report's plots and tables classify alike.
#pragma once
#include <string>
#include <vector>

namespace lpu {

const std::vector<std::string>& op_class_order();  // heaviest first; the last is "other"
std::string node_op_class(const std::string& node);
// The heaviest class among the kernel's graph nodes; without nodes, its name less "kNN_".
std::string kernel_op_class(const std::string& kernel_name, const std::vector<std::string>& nodes);

}  // namespace lpu
