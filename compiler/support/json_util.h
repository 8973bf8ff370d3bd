// Strict JSON reading shared by every JSON reader (graph files, sweep results, host-op attributes).
// nlohmann::json accepts a key given twice (the last one wins, silently) and any nesting depth
// (copying a value nested 300k deep overflows the stack). Both are InputErrors here.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace lpu {

constexpr int kMaxJsonDepth = 256;  // our formats nest a handful of levels; meta gets the rest

// Parses `text`; errors are InputErrors "SOURCE: ..." naming the key path (a.b[3].c). An array
// with more than `max_array_entries` entries stops the parse there (a reader that caps its
// lists says so before building a document it would reject anyway).
nlohmann::ordered_json parse_json_strict(const std::string& text, const std::string& source,
                                         size_t max_array_entries = SIZE_MAX);

}  // namespace lpu
