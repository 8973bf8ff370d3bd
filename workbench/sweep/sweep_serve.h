// Serving sweeps (docs/sweeps.md "Serving sweeps"): a sweep file with `command: serve` runs every
// point as `lpu serve`, and its `serve.KEY` axes and `set:` keys become that command's flags
// (serve.rate -> --rate, serve.chunked_prefill: false -> --no-chunked-prefill). Values are
// checked as the file loads, by the serve layer's own parsers and checks where it exports them,
// so a bad rate or an unknown router fails before any point runs.
#pragma once
#include <string>
#include <vector>

namespace lpu {

inline constexpr const char* kServeKeyPrefix = "serve.";

bool is_serve_key(const std::string& key);
// "" for a known serving key, else the message (naming the keys there are).
std::string unknown_serve_key(const std::string& key);
// Every known key, "serve.rate, serve.requests, ...".
std::string serve_key_names();

// Checks `serve.KEY=VALUE` assignments taken together (a point's, or one value with the
// sweep's fixed ones): each value's type, then what `lpu serve` would reject (rate <= 0, an
// unknown router, chunk_size 0, a link of 0 Gbit/s with a prefill pool, ...). "" when they
// are fine, else the message. Trace files (looked up as serve_flags does) are read and
// checked once per path.
std::string check_serve_assignments(const std::vector<std::string>& assignments, const std::string& base_dir);

// The `lpu serve` flags for a point's assignments (only the `serve.*` ones are read). A
// relative trace file is looked up next to the sweep file first (`base_dir`), as workloads are.
std::vector<std::string> serve_flags(const std::vector<std::string>& assignments, const std::string& base_dir);

}  // namespace lpu
