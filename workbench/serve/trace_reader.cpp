#include "serve/trace_reader.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "support/error.h"
#include "support/input_file.h"
#include "support/json_util.h"

namespace lpu::serve {
namespace {

enum class Field { Arrival, Prompt, Output, Id, Ignored };

// Our names first: messages name the canonical column.
const std::map<std::string, Field>& field_names() {
  static const std::map<std::string, Field> names = {{"arrival_s", Field::Arrival},
                                                     {"arrived_at", Field::Arrival},
                                                     {"arrival_timestamp", Field::Arrival},
                                                     {"prompt_tokens", Field::Prompt},
                                                     {"num_prefill_tokens", Field::Prompt},
                                                     {"prompt_size", Field::Prompt},
                                                     {"output_tokens", Field::Output},
                                                     {"num_decode_tokens", Field::Output},
                                                     {"token_size", Field::Output},
                                                     {"id", Field::Id},
                                                     {"request_id", Field::Id},
                                                     {"request_type", Field::Ignored},
                                                     {"application_id", Field::Ignored},
                                                     {"batch_size", Field::Ignored},
                                                     {"num_total_tokens", Field::Ignored},
                                                     {"pd_ratio", Field::Ignored}};
  return names;
}

const char* kAccepted =
    "arrival_s|arrived_at|arrival_timestamp, prompt_tokens|num_prefill_tokens|prompt_size, "
    "output_tokens|num_decode_tokens|token_size, optional id|request_id";

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Parses the whole of `text` as a double (NaN and inf included: the checks below name them).
bool parse_double(const std::string& text, double* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  *out = v;
  return true;
}

// Collects the rows' values and checks them; `where` prefixes each message with FILE:LINE.
class RowChecker {
 public:
  void arrival(double v, const std::string& where, const std::string& what) {
    if (!std::isfinite(v) || v < 0)
      throw InputError(strcat(where, ": ", what, ": expected an arrival time >= 0 seconds, got ", v));
    if (v < last_arrival_)
      throw InputError(strcat(where, ": ", what, ": arrival time ", v, " is before the previous request's (",
                              last_arrival_, "): a trace lists requests in arrival order"));
    last_arrival_ = v;
    req_.arrival_s = v;
  }
  static int64_t tokens(double v, const std::string& where, const std::string& what) {
    if (!std::isfinite(v) || v < 1 || v != std::floor(v) || v > 1e9)
      throw InputError(strcat(where, ": ", what, ": expected a whole number of tokens >= 1, got ", v));
    return static_cast<int64_t>(v);
  }
  void id(double v, const std::string& where, const std::string& what) {
    if (!std::isfinite(v) || v < 0 || v != std::floor(v) || v > 9e15)
      throw InputError(strcat(where, ": ", what, ": expected a whole request id >= 0, got ", v));
    has_id_ = true;
    req_.id = static_cast<int64_t>(v);
  }
  Request& req() { return req_; }
  // Finishes the row: a default id is its index; ids must be unique.
  void finish(RequestList* out, const std::string& where) {
    if (!has_id_) req_.id = static_cast<int64_t>(out->size());
    if (!ids_.insert(req_.id).second) throw InputError(strcat(where, ": request id ", req_.id, " appears twice"));
    out->push_back(req_);
    req_ = Request{};
    has_id_ = false;
  }

 private:
  Request req_;
  bool has_id_ = false;
  double last_arrival_ = 0;
  std::set<int64_t> ids_;
};

void store(RowChecker* rc, Field f, double v, const std::string& where, const std::string& what) {
  switch (f) {
    case Field::Arrival: rc->arrival(v, where, what); break;
    case Field::Prompt: rc->req().prompt_tokens = RowChecker::tokens(v, where, what); break;
    case Field::Output: rc->req().output_tokens = RowChecker::tokens(v, where, what); break;
    case Field::Id: rc->id(v, where, what); break;
    case Field::Ignored: break;
  }
}

// The three required fields must all be present (in a header or in a JSON object).
void require_fields(const std::set<Field>& seen, bool need_arrival, const std::string& where, const std::string& what) {
  const std::pair<Field, const char*> required[] = {
      {Field::Arrival, "arrival_s"}, {Field::Prompt, "prompt_tokens"}, {Field::Output, "output_tokens"}};
  for (const auto& [f, name] : required)
    if (!seen.count(f) && (need_arrival || f != Field::Arrival))
      throw InputError(
          strcat(where, ": ", what, " has no ", name, " (or its Vidur/SplitwiseSim name); expected ", kAccepted));
}

Field lookup(const std::string& name, const std::string& where, const std::string& what) {
  auto it = field_names().find(name);
  if (it == field_names().end())
    throw InputError(strcat(where, ": ", what, ": unknown column '", name, "'; expected ", kAccepted));
  return it->second;
}

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream is(line);
  while (std::getline(is, cell, ',')) out.push_back(trim(cell));
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

// The header line: one known field per column, none twice.
std::vector<Field> parse_header(const std::string& line, bool need_arrival, const std::string& where) {
  std::vector<Field> fields;
  std::set<Field> seen;
  std::vector<std::string> names = split_commas(line);
  for (size_t i = 0; i < names.size(); ++i) {
    std::string what = strcat("column ", i + 1, " ('", names[i], "')");
    Field f = lookup(names[i], where, what);
    if (f != Field::Ignored && !seen.insert(f).second)
      throw InputError(strcat(where, ": ", what, ": the same field is named twice in the header"));
    fields.push_back(f);
  }
  require_fields(seen, need_arrival, where, "the header");
  return fields;
}

bool blank(const std::string& line) { return trim(line).empty(); }

}  // namespace

RequestList parse_trace_csv(const std::string& text, const std::string& source, bool need_arrival) {
  std::istringstream is(text);
  std::string line;
  std::vector<Field> fields;
  std::vector<std::string> names;
  RequestList out;
  RowChecker rc;
  for (int64_t lineno = 1; std::getline(is, line); ++lineno) {
    if (blank(line)) continue;
    std::string where = strcat(source, ":", lineno);
    if (fields.empty()) {
      fields = parse_header(line, need_arrival, where);
      names = split_commas(line);
      continue;
    }
    std::vector<std::string> cells = split_commas(line);
    if (cells.size() != fields.size())
      throw InputError(
          strcat(where, ": expected ", fields.size(), " comma-separated values (as the header), got ", cells.size()));
    for (size_t i = 0; i < cells.size(); ++i) {
      if (fields[i] == Field::Ignored) continue;
      std::string what = strcat("column ", i + 1, " (", names[i], ")");
      double v = 0;
      if (!parse_double(cells[i], &v))
        throw InputError(strcat(where, ": ", what, ": expected a number, got '", cells[i], "'"));
      store(&rc, fields[i], v, where, what);
    }
    rc.finish(&out, where);
    out.back().line = lineno;
  }
  if (fields.empty()) throw InputError(strcat(source, ": empty trace (expected a header line and requests)"));
  if (out.empty()) throw InputError(strcat(source, ": the trace has a header but no requests"));
  return out;
}

RequestList parse_trace_jsonl(const std::string& text, const std::string& source, bool need_arrival) {
  std::istringstream is(text);
  std::string line;
  RequestList out;
  RowChecker rc;
  for (int64_t lineno = 1; std::getline(is, line); ++lineno) {
    if (blank(line)) continue;
    std::string where = strcat(source, ":", lineno);
    nlohmann::ordered_json obj = parse_json_strict(line, where);
    if (!obj.is_object()) throw InputError(strcat(where, ": expected a JSON object per line"));
    std::set<Field> seen;
    for (const auto& [key, value] : obj.items()) {
      std::string what = strcat("key '", key, "'");
      Field f = lookup(key, where, what);
      seen.insert(f);
      if (f == Field::Ignored) continue;
      if (!value.is_number()) throw InputError(strcat(where, ": ", what, ": expected a number, got ", value.dump()));
      store(&rc, f, value.get<double>(), where, what);
    }
    require_fields(seen, need_arrival, where, "the object");
    rc.finish(&out, where);
    out.back().line = lineno;
  }
  if (out.empty()) throw InputError(strcat(source, ": empty trace (expected one JSON object per line)"));
  return out;
}

namespace {
RequestList read_file(const std::string& path, bool need_arrival) {
  namespace fs = std::filesystem;
  std::string text = read_text_input_file(path, "trace file", "a request trace (CSV or JSON Lines)");
  std::string ext = fs::path(path).extension().string();
  size_t first = text.find_first_not_of(" \t\r\n");
  bool jsonl = ext == ".jsonl" || ext == ".ndjson" || (first != std::string::npos && text[first] == '{');
  return jsonl ? parse_trace_jsonl(text, path, need_arrival) : parse_trace_csv(text, path, need_arrival);
}
}  // namespace

RequestList read_trace(const std::string& path) { return read_file(path, true); }
RequestList read_lengths(const std::string& path) { return read_file(path, false); }

}  // namespace lpu::serve
