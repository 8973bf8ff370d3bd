#include "sweep/sweep_layout.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/error.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

bool parse_nonneg(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && out >= 0;
}

}  // namespace

std::string Shard::suffix() const { return active() ? strcat("-", index, "-of-", count) : ""; }
std::string Shard::text() const { return strcat(index, "/", count); }

Shard parse_shard(const std::string& text) {
  size_t slash = text.find('/');
  Shard s;
  if (slash == std::string::npos || !parse_nonneg(text.substr(0, slash), s.index) ||
      !parse_nonneg(text.substr(slash + 1), s.count))
    throw InputError(strcat("--shard ", text, ": expected I/N, two integers (shard I of N, counted from 0), e.g. 0/4"));
  if (s.count < 1) throw InputError(strcat("--shard ", text, ": the shard count N must be at least 1"));
  if (s.index >= s.count)
    throw InputError(strcat("--shard ", text, ": the shard index must be below the count (0 .. ", s.count - 1, ")"));
  return s;
}

std::vector<ShardFile> find_shard_files(const std::string& dir) {
  static const std::regex name(R"(results-(\d{1,9})-of-(\d{1,9})\.jsonl)");
  std::vector<ShardFile> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string fname = e.path().filename().string();
    if (!e.is_regular_file() || !std::regex_match(fname, m, name)) continue;
    ShardFile f{e.path().string(), {std::stoi(m[1]), std::stoi(m[2])}};
    if (f.shard.count >= 1 && f.shard.index < f.shard.count) out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const ShardFile& a, const ShardFile& b) {
    return std::make_pair(a.shard.count, a.shard.index) < std::make_pair(b.shard.count, b.shard.index);
  });
  return out;
}

std::vector<nlohmann::ordered_json> read_result_rows(const std::string& path) {
  std::vector<nlohmann::ordered_json> rows;
  std::ifstream f(path, std::ios::binary);
  if (!f) return rows;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  size_t pos = 0, n = 0;
  for (size_t nl; (nl = text.find('\n', pos)) != std::string::npos; pos = nl + 1) {
    ++n;
    if (nl == pos) continue;
    nlohmann::ordered_json row;
    try {
      row = nlohmann::ordered_json::parse(text.begin() + static_cast<std::ptrdiff_t>(pos),
                                          text.begin() + static_cast<std::ptrdiff_t>(nl));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(strcat(path, ":", n, ": not a JSON row (", e.what(), "); the file is damaged"));
    }
    if (!row.is_object() || !row.contains("point_id") || !row["point_id"].is_string())
      throw InputError(strcat(path, ":", n, ": row without point_id; the file is damaged"));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> identity_columns(const std::vector<std::string>& axis_keys) {
  std::vector<std::string> c = {"point_id", "status", "exit_code", "error", "workload", "fusion"};
  c.insert(c.end(), axis_keys.begin(), axis_keys.end());
  c.insert(c.end(), {"wall_s", "trace", "sweep_hash"});
  return c;
}

std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = strcat(path, ".tmp", ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f || !(f << text) || !f.flush()) throw InputError("cannot write " + tmp);
  }
  fs::rename(tmp, path);
}

std::string manifest_hash(const std::string& dir) {
  std::string p = dir + "/manifest.json";
  std::ifstream f(p);
  if (!f) return "";
  try {
    nlohmann::json m = nlohmann::json::parse(f);
    return m.value("sweep_hash", "");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(strcat(p, ": not JSON (", e.what(), ")"));
  }
}

}  // namespace lpu
