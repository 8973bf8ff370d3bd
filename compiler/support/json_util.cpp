#include "support/json_util.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "support/error.h"

namespace lpu {

namespace {
// One open object or array while parsing: enough to name where a bad key is.
struct Open {
  bool object = false;
  // Keys seen: most objects have a handful, where a scan beats a set; a large object moves to one
  // (a hostile file's million keys must not cost a million squared).
  std::vector<std::string> few;
  std::unordered_set<std::string> many;
  bool insert(const std::string& k) {
    if (many.empty() && few.size() < 16) {
      if (std::find(few.begin(), few.end(), k) != few.end()) return false;
      few.push_back(k);
      return true;
    }
    if (many.empty()) many.insert(few.begin(), few.end());
    return many.insert(k).second;
  }
  std::string key;   // objects: the key being read
  size_t index = 0;  // arrays: the element being read
};

std::string path_of(const std::vector<Open>& open) {
  std::string p;
  for (const auto& o : open) p += o.object ? (p.empty() ? "" : ".") + o.key : strcat("[", o.index, "]");
  return p.empty() ? "top level" : p;
}
}  // namespace

nlohmann::ordered_json parse_json_strict(const std::string& text, const std::string& source, size_t max_array_entries) {
  using J = nlohmann::ordered_json;
  std::vector<Open> open;
  auto element_done = [&] {
    if (open.empty() || open.back().object) return;
    if (++open.back().index > max_array_entries)
      throw InputError(
          strcat(source, ": ", path_of({open.begin(), open.end() - 1}), ": more than ", max_array_entries, " entries"));
  };
  J::parser_callback_t check = [&](int /*depth*/, J::parse_event_t ev, J& parsed) {
    switch (ev) {
      case J::parse_event_t::object_start:
      case J::parse_event_t::array_start:
        if (open.size() >= static_cast<size_t>(kMaxJsonDepth))
          throw InputError(strcat(source, ": ", path_of(open), ": JSON nested deeper than ", kMaxJsonDepth, " levels"));
        open.emplace_back();
        open.back().object = ev == J::parse_event_t::object_start;
        break;
      case J::parse_event_t::key: {  // `parsed` holds the key's text
        Open& o = open.back();
        o.key = parsed.get<std::string>();
        if (!o.insert(o.key)) throw InputError(strcat(source, ": ", path_of(open), ": duplicate key \"", o.key, "\""));
        break;
      }
      case J::parse_event_t::object_end:
      case J::parse_event_t::array_end:
        open.pop_back();
        element_done();
        break;
      case J::parse_event_t::value: element_done(); break;
    }
    return true;
  };
  try {
    return J::parse(text, check);
  } catch (const nlohmann::json::exception& e) {  // parse errors, and numbers that overflow (out_of_range)
    throw InputError(strcat(source, ": invalid JSON: ", e.what()));
  }
}

}  // namespace lpu
