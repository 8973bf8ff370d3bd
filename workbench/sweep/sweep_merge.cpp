#include "sweep/sweep_merge.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/error.h"
#include "sweep/sweep_layout.h"
#include "sweep/sweep_store.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

using ojson = nlohmann::ordered_json;

nlohmann::json load_manifest(const std::string& dir) {
  std::string p = dir + "/manifest.json";
  std::ifstream f(p);
  if (!f) throw InputError(dir + ": no manifest.json; not a results directory of `lpu sweep`");
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(strcat(p, ": not JSON (", e.what(), ")"));
  }
}

// A row's position in the sweep's expansion order (sweep_spec.h: axis combinations
// outermost, then workloads, then policies); rows the manifest does not describe go last.
class ExpansionOrder {
 public:
  explicit ExpansionOrder(const nlohmann::json& m) : zip_(m.value("combine", "") == "zip") {
    for (const auto& w : m.value("workloads", nlohmann::json::array())) workloads_.push_back(w.value("name", ""));
    for (const auto& f : m.value("fusion", nlohmann::json::array())) policies_.push_back(f.get<std::string>());
    for (const auto& a : m.value("axes", nlohmann::json::array())) axes_.push_back({a["key"], a["values"]});
  }

  size_t operator()(const ojson& row) const {
    constexpr size_t kLast = static_cast<size_t>(-1);
    size_t arch = 0;
    for (size_t i = 0; i < axes_.size(); ++i) {
      const auto& [key, values] = axes_[i];
      if (!row.contains(key)) return kLast;
      nlohmann::json v = nlohmann::json::parse(row[key].dump());
      auto it = std::find(values.begin(), values.end(), v);
      if (it == values.end()) return kLast;
      size_t idx = static_cast<size_t>(it - values.begin());
      if (zip_) {
        if (i == 0) arch = idx;
      } else {
        arch = arch * values.size() + idx;
      }
    }
    size_t w = index_of(workloads_, row.value("workload", "")), f = index_of(policies_, row.value("fusion", ""));
    if (w == kLast || f == kLast) return kLast;
    return (arch * workloads_.size() + w) * policies_.size() + f;
  }

 private:
  static size_t index_of(const std::vector<std::string>& v, const std::string& s) {
    auto it = std::find(v.begin(), v.end(), s);
    return it == v.end() ? static_cast<size_t>(-1) : static_cast<size_t>(it - v.begin());
  }
  bool zip_;
  std::vector<std::string> workloads_, policies_;
  std::vector<std::pair<std::string, nlohmann::json>> axes_;
};

// A shard file with its directory.
struct Source {
  std::string dir;
  ShardFile file;
};

// The one sweep every input must belong to: the first hash seen, and the file that named it.
class OneSweep {
 public:
  void check(const std::string& h, const std::string& where) {
    if (hash.empty()) {
      hash = h;
      hash_from_ = where;
    } else if (h != hash) {
      throw InputError(strcat("sweep merge: shards of different sweeps: ", hash_from_, " is sweep ", hash, ", ", where,
                              " is sweep ", h.empty() ? "(no hash)" : h, "; merge only shards of one sweep file"));
    }
  }
  std::string hash;

 private:
  std::string hash_from_;
};

// One split (N) for every shard file, each shard once.
void check_split(const std::vector<Source>& sources, MergeSummary& sum) {
  std::map<int, std::string> seen;  // shard index -> file
  for (const auto& s : sources) {
    const Shard& sh = s.file.shard;
    if (sum.shard_count == 0) sum.shard_count = sh.count;
    if (sh.count != sum.shard_count)
      throw InputError(strcat("sweep merge: ", sources.front().file.jsonl, " and ", s.file.jsonl,
                              " split the sweep differently (", sum.shard_count, " and ", sh.count,
                              " shards); merge the shards of one split"));
    auto [it, fresh] = seen.emplace(sh.index, s.file.jsonl);
    if (!fresh)
      throw InputError(strcat("sweep merge: shard ", sh.text(), " twice: ", it->second, " and ", s.file.jsonl));
    sum.shards_found.push_back(sh.index);
  }
}

// The rows, each point once, every row of the same sweep, in the sweep's expansion order.
std::vector<std::pair<ojson, std::string>> merged_rows(const std::vector<Source>& sources, OneSweep& sweep,
                                                       const nlohmann::json& manifest) {
  std::vector<std::pair<ojson, std::string>> rows;  // row, its directory (for traces)
  std::map<std::string, std::string> where;         // point id -> file
  for (const auto& s : sources)
    for (auto& row : read_result_rows(s.file.jsonl)) {
      sweep.check(row.value("sweep_hash", ""), s.file.jsonl);
      std::string id = row["point_id"].get<std::string>();
      auto [it, fresh] = where.emplace(id, s.file.jsonl);
      if (!fresh)
        throw InputError(strcat("sweep merge: point ", id, " is in both ", it->second, " and ", s.file.jsonl));
      rows.emplace_back(std::move(row), s.dir);
    }
  ExpansionOrder order(manifest);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const auto& a, const auto& b) { return order(a.first) < order(b.first); });
  return rows;
}

// The output: a results directory like a whole sweep's, plus merged.json saying where
// the rows came from. Results of a whole (unsharded) sweep are never overwritten.
void write_merged(const std::string& out, const std::vector<std::string>& dirs, const nlohmann::json& manifest,
                  std::vector<std::pair<ojson, std::string>>& rows, const std::vector<Source>& sources, OneSweep& sweep,
                  MergeSummary& sum) {
  fs::create_directories(out);
  if (fs::exists(out + "/results.jsonl") && !fs::exists(out + "/merged.json"))
    throw InputError(out +
                     " already holds the results of a whole sweep (results.jsonl, not from a merge); merge into "
                     "another directory with -o");
  if (fs::exists(out + "/manifest.json")) sweep.check(manifest_hash(out), out + "/manifest.json");
  std::vector<std::string> axis_keys;
  for (const auto& a : manifest.value("axes", nlohmann::json::array())) axis_keys.push_back(a["key"]);
  std::vector<ojson> plain;
  for (auto& [row, dir] : rows) {
    std::string trace = row.value("trace", "");
    if (!trace.empty() && fs::absolute(dir) != fs::absolute(out) && fs::exists(dir + "/" + trace)) {
      fs::create_directories(fs::path(out + "/" + trace).parent_path());
      fs::copy_file(dir + "/" + trace, out + "/" + trace, fs::copy_options::overwrite_existing);
    }
    (row.value("status", "") == "ok" ? sum.ok : sum.failed)++;
    plain.push_back(std::move(row));
  }
  std::vector<std::string> header = csv_header(identity_columns(axis_keys), plain);
  std::string jsonl, csv = csv_line(header);
  for (const auto& r : plain) {
    jsonl += jsonl_line(r);
    csv += csv_row(header, r);
  }
  if (!fs::exists(out + "/manifest.json")) write_atomically(out + "/manifest.json", manifest.dump(2) + "\n");
  if (!fs::exists(out + "/sweep.yaml") && fs::exists(dirs.front() + "/sweep.yaml"))
    fs::copy_file(dirs.front() + "/sweep.yaml", out + "/sweep.yaml");
  write_atomically(out + "/results.jsonl", jsonl);
  write_atomically(out + "/results.csv", csv);
  nlohmann::json files = nlohmann::json::array();
  for (const auto& s : sources) files.push_back(s.file.jsonl);
  write_atomically(
      out + "/merged.json",
      nlohmann::json({{"sweep_hash", sweep.hash}, {"shards", sum.shard_count}, {"files", files}}).dump(2) + "\n");
  sum.rows = plain.size();
}

}  // namespace

MergeSummary merge_shards(const std::vector<std::string>& dirs, const std::string& out_arg) {
  if (dirs.empty()) throw InputError("sweep merge: no directory given");
  const std::string out = out_arg.empty() ? dirs.front() : out_arg;
  if (fs::exists(out) && !fs::is_directory(out))
    throw InputError("sweep merge: -o " + out + ": exists and is not a directory");
  MergeSummary sum;
  sum.out_dir = out;
  // Every shard file with its directory; one split (N), one sweep (hash), each shard once.
  std::vector<Source> sources;
  OneSweep sweep;
  nlohmann::json manifest;
  for (const auto& d : dirs) {
    if (!fs::is_directory(d)) throw InputError("sweep merge: " + d + ": no such directory");
    nlohmann::json m = load_manifest(d);
    sweep.check(m.value("sweep_hash", ""), d + "/manifest.json");
    if (manifest.is_null()) manifest = m;
    auto files = find_shard_files(d);
    if (files.empty())
      throw InputError("sweep merge: " + d + ": no shard results (results-I-of-N.jsonl, from `lpu sweep --shard I/N`)");
    for (const auto& f : files) sources.push_back({d, f});
  }
  check_split(sources, sum);
  std::vector<std::pair<ojson, std::string>> rows = merged_rows(sources, sweep, manifest);
  write_merged(out, dirs, manifest, rows, sources, sweep, sum);
  sum.sweep_hash = sweep.hash;
  sum.points = manifest.value("points", size_t{0});
  std::sort(sum.shards_found.begin(), sum.shards_found.end());
  return sum;
}

int merge_command(const std::vector<std::string>& dirs, const std::string& out, const std::string& json) {
  MergeSummary s = merge_shards(dirs, out);
  std::vector<int> absent;
  for (int i = 0; i < s.shard_count; ++i)
    if (!std::binary_search(s.shards_found.begin(), s.shards_found.end(), i)) absent.push_back(i);
  std::cout << "merged " << s.shards_found.size() << " of " << s.shard_count << " shards of sweep " << s.sweep_hash
            << ": " << s.rows << " of " << s.points << " points (" << s.ok << " ok, " << s.failed << " failed)\n";
  if (!absent.empty()) {
    std::string list;
    for (int i : absent) list += (list.empty() ? "" : ", ") + strcat(i, "/", s.shard_count);
    std::cout << "shards without results: " << list << "\n";
  }
  std::cout << "results: " << s.out_dir << "/results.csv, " << s.out_dir << "/results.jsonl\n";
  if (!json.empty())
    std::ofstream(json) << nlohmann::json({{"out", s.out_dir},
                                           {"sweep_hash", s.sweep_hash},
                                           {"shards", s.shard_count},
                                           {"shards_found", s.shards_found},
                                           {"points", s.points},
                                           {"rows", s.rows},
                                           {"ok", s.ok},
                                           {"failed", s.failed},
                                           {"missing", s.missing()}})
                               .dump(2)
                        << "\n";
  if (s.missing()) std::cerr << s.missing() << " point(s) of the sweep have no result yet\n";
  if (s.failed) std::cerr << s.failed << " point(s) failed; their errors are in the error column of the results\n";
  return s.missing() || s.failed ? 1 : 0;
}

}  // namespace lpu
