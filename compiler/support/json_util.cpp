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

// The checks run as a SAX pass that builds nothing, then the DOM is parsed without a callback:
// nlohmann's callback parser scans the enclosing array on every object it keeps, so a file of
// n nodes cost n^2 (65,536 nodes: 1.7 s, 180 s under ASan); two linear passes cost ~2n.
class StrictSax final : public nlohmann::json_sax<nlohmann::ordered_json> {
 public:
  StrictSax(const std::string& source, size_t max_array_entries) : source_(source), max_(max_array_entries) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    Open& o = open_.back();
    o.key = k;
    if (!o.insert(o.key)) throw InputError(strcat(source_, ": ", path_of(open_), ": duplicate key \"", o.key, "\""));
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw InputError(strcat(source_, ": invalid JSON: ", e.what()));  // syntax, and numbers that overflow
  }

 private:
  const std::string& source_;
  const size_t max_;
  std::vector<Open> open_;
  bool open(bool object) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth))
      throw InputError(strcat(source_, ": ", path_of(open_), ": JSON nested deeper than ", kMaxJsonDepth, " levels"));
    open_.emplace_back();
    open_.back().object = object;
    return true;
  }
  bool close() {
    open_.pop_back();
    return value();
  }
  bool value() {  // one more element of the enclosing array
    if (open_.empty() || open_.back().object) return true;
    if (++open_.back().index > max_)
      throw InputError(
          strcat(source_, ": ", path_of({open_.begin(), open_.end() - 1}), ": more than ", max_, " entries"));
    return true;
  }
};

}  // namespace

nlohmann::ordered_json parse_json_strict(const std::string& text, const std::string& source, size_t max_array_entries) {
  using J = nlohmann::ordered_json;
  StrictSax checks(source, max_array_entries);
  J::sax_parse(text, &checks);
  try {
    return J::parse(text);
  } catch (const nlohmann::json::exception& e) {  // not reached: the SAX pass saw the same text
    throw InputError(strcat(source, ": invalid JSON: ", e.what()));
  }
}

}  // namespace lpu
