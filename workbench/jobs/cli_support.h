// What every front end of the jobs needs around them: output paths checked before any work
// starts (a bad one is exit 2 naming the flag, and a refused run leaves nothing behind), files
// written, comma-separated lists.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner.h"  // BreakOptions

namespace lpu {

// Writes `text` to `path`, creating its directory (InputError when it cannot).
void write_file(const std::string& path, const std::string& text);
// `j` indented by 2, and a newline.
void write_json(const std::string& path, const nlohmann::json& j);
// `flag` names the option in the error; an empty path (not asked for) passes.
void check_output_file(const std::string& flag, const std::string& path);
void check_output_dir(const std::string& flag, const std::string& path);
// "a,b,,c" -> {a, b, c}.
std::vector<std::string> split_list(const std::string& s);
// --on-unsupported (error | break) and --unsupported-ops (comma-separated core ops), checked
// (docs/graph-breaks.md).
BreakOptions break_options(const std::string& on_unsupported, const std::string& unsupported_ops);

}  // namespace lpu
