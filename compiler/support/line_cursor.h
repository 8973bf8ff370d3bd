// A cursor over one line of a text IR, shared by the parsers of the graph text
// (graph/parse.cpp) and of the loop IR (loopir/parse.cpp): blanks, single characters, names,
// integers and integer lists. Every error carries the WHERE given at construction (FILE:LINE)
// and the column.
#pragma once
#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "support/error.h"

namespace lpu {

class LineCursor {
 public:
  LineCursor(const std::string& text, std::string where) : s_(text), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& msg) const {
    throw InputError(strcat(where_, ": ", msg, " (at column ", pos_ + 1, ")"));
  }
  const std::string& where() const { return where_; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool at_end() {
    skip_ws();
    return pos_ >= s_.size();
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  // Accepts `text` exactly (after blanks), or leaves the cursor where it was.
  bool accept(const char* text) {
    skip_ws();
    std::string t(text);
    if (s_.compare(pos_, t.size(), t) != 0) return false;
    pos_ += t.size();
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(strcat("expected '", c, "'"));
  }
  void expect(const char* text) {
    if (!accept(text)) fail(strcat("expected '", text, "'"));
  }
  // A run of name characters: letters, digits, '_', '.', '-'.
  std::string word() { return take(name_char, "a name"); }
  // A run of identifier characters: letters, digits, '_' (no '-': index arithmetic follows).
  std::string ident() { return take(ident_char, "an identifier"); }
  int64_t integer() {
    skip_ws();
    size_t b = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    int64_t v = 0;
    const char* first = s_.data() + b + (b < s_.size() && s_[b] == '+' ? 1 : 0);
    auto r = std::from_chars(first, s_.data() + pos_, v);
    if (r.ec != std::errc() || r.ptr != s_.data() + pos_) fail("expected an integer");
    return v;
  }
  std::vector<int64_t> int_list() {
    expect('[');
    std::vector<int64_t> out;
    if (accept(']')) return out;
    do out.push_back(integer());
    while (accept(','));
    expect(']');
    return out;
  }
  static bool name_char(char c) { return ident_char(c) || c == '.' || c == '-'; }
  static bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

 protected:
  std::string take(bool (*ok)(char), const char* what) {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && ok(s_[pos_])) ++pos_;
    if (b == pos_) fail(strcat("expected ", what));
    return s_.substr(b, pos_ - b);
  }
  const std::string& s_;
  std::string where_;
  size_t pos_ = 0;
};

}  // namespace lpu
