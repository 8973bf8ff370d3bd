#include "jobs/scalar_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>

#include "support/yaml_util.h"

namespace lpu {

nlohmann::json scalar_to_json(const std::string& scalar) {
  int64_t i;
  auto [p, ec] = std::from_chars(scalar.data(), scalar.data() + scalar.size(), i);
  if (ec == std::errc() && p == scalar.data() + scalar.size()) return i;
  YAML::Node n;
  try {
    n = YAML::Load(scalar);
  } catch (const YAML::Exception&) {
    return scalar;  // text that is not a YAML document on its own, e.g. a quoted "["
  }
  double d;
  bool b;
  if (YAML::convert<double>::decode(n, d) && std::isfinite(d)) return d;
  if (YAML::convert<bool>::decode(n, b)) return b;
  return scalar;
}

}  // namespace lpu
