#include "sweep/sweep_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "support/error.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

using ojson = nlohmann::ordered_json;

void flatten(const nlohmann::json& j, const std::string& prefix, ojson& out) {
  for (const auto& [k, v] : j.items()) {
    std::string key = prefix.empty() ? k : prefix + "." + k;
    // The per-op timing table is dozens of constant columns; the config file has it.
    if (key == "arch.vxe.ops" || key == "arch.file") continue;
    if (v.is_object()) flatten(v, key, out);
    else if (!v.is_array()) out[key] = v;
  }
}

// Reads `path` line by line; a last line without '\n' is a row torn by a kill: cut it off.
std::vector<std::string> read_lines_truncating(const std::string& path, std::vector<std::string>& notes) {
  std::vector<std::string> lines;
  if (!fs::exists(path)) return lines;
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  size_t end = text.rfind('\n');
  size_t keep = end == std::string::npos ? 0 : end + 1;
  if (keep != text.size()) {
    fs::resize_file(path, keep);
    notes.push_back(strcat(path, ": removed a torn last line (", text.size() - keep, " bytes) left by an interrupted sweep"));
  }
  std::stringstream in(text.substr(0, keep));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int open_append(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(strcat("cannot write ", path, ": ", std::strerror(errno)));
  return fd;
}

}  // namespace

ojson make_row(const std::vector<std::pair<std::string, nlohmann::json>>& identity, const nlohmann::json* run) {
  ojson row = ojson::object();
  for (const auto& [k, v] : identity) row[k] = v;
  if (!run) return row;
  ojson stats = ojson::object();
  for (const auto& [k, v] : run->items()) {
    if (k == "fusion") continue;                       // an identity column already
    if (k == "workload") continue;                     // nested below
    if (v.is_object()) flatten(v, k, stats);
    else if (!v.is_array()) stats[k] = v;
  }
  for (const auto& [k, v] : stats.items())
    if (!row.contains(k)) row[k] = v;
  if (run->contains("workload")) row["workload_spec"] = (*run)["workload"];
  for (const auto& [k, v] : run->items())
    if (v.is_array()) row[k] = v;
  return row;
}

void append_durably(int fd, const std::string& line) {
  // O_APPEND makes each write land at the end; a regular file takes the whole buffer in one
  // call unless a signal kills us mid-way (then the torn line is cut off on reopening).
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InputError(strcat("cannot append a result row: ", std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) throw InputError(strcat("cannot fsync a result row: ", std::strerror(errno)));
}

std::string csv_cell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Error messages come from child stderr and may hold invalid UTF-8; never let that abort
// the sweep.
std::string jsonl_line(const ojson& row) {
  return row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::vector<std::string> csv_header(const std::vector<std::string>& fixed, const std::vector<ojson>& rows) {
  std::vector<std::string> header = fixed;
  for (const auto& r : rows) {
    if (r.value("status", "") != "ok") continue;
    for (const auto& [k, v] : r.items())
      if (!v.is_structured() && std::find(fixed.begin(), fixed.end(), k) == fixed.end()) header.push_back(k);
    break;
  }
  return header;
}

std::string csv_row(const std::vector<std::string>& header, const ojson& row) {
  std::vector<std::string> cells;
  for (const auto& col : header) cells.push_back(row.contains(col) ? csv_cell(row[col]) : "");
  return csv_line(cells);
}

std::string csv_line(const std::vector<std::string>& cells) {
  std::string out;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string c = cells[i];
    for (char& ch : c)
      if (ch == '\n' || ch == '\r') ch = ' ';
    if (c.find_first_of(",\"") != std::string::npos || (!c.empty() && (c.front() == ' ' || c.back() == ' '))) {
      std::string q = "\"";
      for (char ch : c) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      c = q + "\"";
    }
    out += (i ? "," : "") + c;
  }
  return out + "\n";
}

std::vector<std::string> parse_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') cells.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else cells.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

ResultStore::ResultStore(const std::string& dir, std::vector<std::string> fixed, bool resume, const std::string& stem)
    : dir_(dir), stem_(stem), fixed_(std::move(fixed)) {
  fs::create_directories(dir_);
  bool have = (fs::exists(jsonl_path()) && fs::file_size(jsonl_path()) > 0) ||
              (fs::exists(csv_path()) && fs::file_size(csv_path()) > 0);
  if (have && !resume)
    throw InputError(strcat(dir_, " already holds sweep results; pass --resume to continue that sweep, or choose "
                                  "another -o directory"));
  size_t n = 0;
  for (const auto& line : read_lines_truncating(jsonl_path(), notes_)) {
    ++n;
    if (line.empty()) continue;
    ojson row;
    try {
      row = ojson::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(strcat(jsonl_path(), ":", n, ": not a JSON row (", e.what(), "); the file is damaged"));
    }
    if (!row.is_object() || !row.contains("point_id"))
      throw InputError(strcat(jsonl_path(), ":", n, ": row without point_id; the file is damaged"));
    finished_.insert(row["point_id"].get<std::string>());
    rows_.push_back(std::move(row));
  }
  std::vector<std::string> csv = read_lines_truncating(csv_path(), notes_);
  if (!csv.empty()) {
    header_ = parse_csv_line(csv.front());
    if (header_.size() < fixed_.size() || !std::equal(fixed_.begin(), fixed_.end(), header_.begin())) {
      std::string want;
      for (const auto& f : fixed_) want += (want.empty() ? "" : ",") + f;
      throw InputError(strcat(csv_path(), ": its columns (", csv.front(), ") do not start with this sweep's (", want,
                              "): it was written by a different sweep; use another -o directory"));
    }
    for (size_t i = 1; i < csv.size(); ++i) in_csv_.insert(parse_csv_line(csv[i]).front());
  }
  // A CSV row without its JSONL row cannot come from our write order, and a header of
  // identity columns only was written when no point had succeeded: in both cases rebuild
  // the CSV from the JSONL (which holds every row).
  bool stray = false;
  for (const auto& id : in_csv_) stray = stray || !finished_.count(id);
  bool identity_only = !header_.empty() && header_.size() == fixed_.size();
  if (stray || identity_only) {
    if (stray) notes_.push_back(csv_path() + ": had rows not in results.jsonl; rebuilt from results.jsonl");
    fs::remove(csv_path());
    in_csv_.clear();
    if (identity_only) header_.clear();
  }
  jsonl_fd_ = open_append(jsonl_path());
  if (!header_.empty()) {
    csv_fd_ = open_append(csv_path());
    if (stray) append_durably(csv_fd_, csv_line(header_));
  }
  size_t before = in_csv_.size();
  sync_csv();
  if (before > 0 && in_csv_.size() > before)
    notes_.push_back(strcat(csv_path(), ": restored ", in_csv_.size() - before, " row(s) found only in results.jsonl"));
}

ResultStore::~ResultStore() {
  if (jsonl_fd_ >= 0) ::close(jsonl_fd_);
  if (csv_fd_ >= 0) ::close(csv_fd_);
}

void ResultStore::append(const ojson& row) {
  append_durably(jsonl_fd_, jsonl_line(row));
  finished_.insert(row["point_id"].get<std::string>());
  rows_.push_back(row);
  sync_csv();
}

// The CSV header is fixed by the first successful row (its statistics name the columns),
// so rows wait here, safe in the JSONL, until one exists.
void ResultStore::sync_csv() {
  if (header_.empty()) {
    if (!std::any_of(rows_.begin(), rows_.end(), [](const ojson& r) { return r.value("status", "") == "ok"; })) return;
    header_ = csv_header(fixed_, rows_);
    if (csv_fd_ < 0) csv_fd_ = open_append(csv_path());
    append_durably(csv_fd_, csv_line(header_));
  }
  for (; csv_scan_ < rows_.size(); ++csv_scan_)
    if (!in_csv_.count(rows_[csv_scan_]["point_id"].get<std::string>())) write_csv_row(rows_[csv_scan_]);
}

void ResultStore::write_csv_row(const ojson& row) {
  for (const auto& [k, v] : row.items())
    if (!v.is_structured() && std::find(header_.begin(), header_.end(), k) == header_.end() && warned_.insert(k).second)
      std::cerr << "note: " << k << " is not a column of " << csv_path()
                << " (the first successful point lacked it); it is in results.jsonl\n";
  append_durably(csv_fd_, csv_row(header_, row));
  in_csv_.insert(row["point_id"].get<std::string>());
}

void ResultStore::close() {
  if (header_.empty()) {
    header_ = fixed_;
    if (csv_fd_ < 0) csv_fd_ = open_append(csv_path());
    append_durably(csv_fd_, csv_line(header_));
    sync_csv();
  }
}

}  // namespace lpu
