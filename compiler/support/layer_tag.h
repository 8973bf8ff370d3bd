// The builders' layer tag in names: `l<N>.` marks what belongs to decoder layer N (a buffer
// `l2.q_proj.weight`, a kernel `k7_l2.q_scaled_x6`). The regional compiler's layer template
// (isa/layer_template.h) lines programs up by it, and the code generator's HBM assignment
// (codegen/hbm_assign.h) lets the same part of different layers share memory by it.
#pragma once
#include <cstdint>
#include <string>

namespace lpu {

// The number N of the first `l<N>.` that starts the name or follows a character other than a
// letter or digit; -1 when none.
int64_t layer_of_name(const std::string& name);
// The name with its layer tag's number replaced by `*` (`l3.fc1` -> `l*.fc1`): the same part of
// every layer. The name itself when it has no tag.
std::string without_layer_number(const std::string& name);

}  // namespace lpu
