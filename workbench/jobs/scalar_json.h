// YAML scalars (config overrides, sweep axis values, decoder keys) as typed JSON values, for the
// statistics a run writes and the rows a sweep stores: one conversion for both.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace lpu {

// A YAML scalar as a typed JSON value: integer, number, bool, or string.
nlohmann::json scalar_to_json(const std::string& scalar);

}  // namespace lpu
