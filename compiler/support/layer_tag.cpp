#include "support/layer_tag.h"

#include <cctype>
#include <utility>

namespace lpu {

namespace {
// The digits of the layer tag in `s`: [begin, end), or begin == end == npos when none.
std::pair<size_t, size_t> layer_tag_digits(const std::string& s) {
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    if (s[i] != 'l' || (i > 0 && std::isalnum(static_cast<unsigned char>(s[i - 1])))) continue;
    size_t j = i + 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i + 1 && j < s.size() && s[j] == '.' && j - i - 1 <= 9) return {i + 1, j};
  }
  return {std::string::npos, std::string::npos};
}
}  // namespace

int64_t layer_of_name(const std::string& s) {
  auto [b, e] = layer_tag_digits(s);
  return b == std::string::npos ? -1 : std::stoll(s.substr(b, e - b));
}

std::string without_layer_number(const std::string& s) {
  auto [b, e] = layer_tag_digits(s);
  return b == std::string::npos ? s : s.substr(0, b) + "*" + s.substr(e);
}

}  // namespace lpu
