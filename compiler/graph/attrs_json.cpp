#include "graph/attrs_json.h"

#include <nlohmann/json.hpp>

#include "support/error.h"

namespace lpu {

std::string attrs_to_json(const Attrs& attrs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : attrs) std::visit([&j, &k = k](const auto& x) { j[k] = x; }, v);
  return j.dump();
}

Attrs attrs_from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(strcat("host-op attributes are not JSON: ", e.what()));
  }
  if (!j.is_object()) throw InputError("host-op attributes must be a JSON object");
  Attrs a;
  for (const auto& [k, v] : j.items()) {
    if (v.is_boolean())
      a[k] = v.get<bool>();
    else if (v.is_number_integer())
      a[k] = v.get<int64_t>();
    else if (v.is_number_float())
      a[k] = v.get<double>();
    else if (v.is_string())
      a[k] = v.get<std::string>();
    else if (v.is_array())
      a[k] = v.get<std::vector<int64_t>>();
    else
      throw InputError(strcat("host-op attribute '", k, "' has an unsupported JSON type"));
  }
  return a;
}

}  // namespace lpu
