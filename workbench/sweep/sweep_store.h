// The results of a sweep: DIR/results.jsonl (one JSON object per point, the complete
// record) and DIR/results.csv (the same rows, scalars only, one header). Rows are appended
// as points finish, each with one write(2) of the whole line and an fsync, JSONL first: a
// sweep killed at any moment keeps every row it wrote, and at worst leaves a torn last line,
// which reopening removes. The CSV is then brought level with the JSONL.
#pragma once
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lpu {

// A finished point as a row: the identity columns, then every scalar statistic of the run
// JSON under a dotted name (engines.vxe.utilization, arch.hbm.bandwidth_gbps). Arrays
// (kernels) and the workload description (workload_spec) stay nested, in the JSONL only.
// `run` is null for a failed point.
nlohmann::ordered_json make_row(const std::vector<std::pair<std::string, nlohmann::json>>& identity,
                                const nlohmann::json* run);

// Appends `line` (which must end in '\n') with a single write where the kernel allows and
// fsyncs. Throws InputError on failure.
void append_durably(int fd, const std::string& line);

// One CSV line: cells quoted when needed; line breaks inside cells become spaces so every
// row is one physical line (recovery works line by line).
std::string csv_line(const std::vector<std::string>& cells);
std::vector<std::string> parse_csv_line(const std::string& line);
// A scalar JSON value as CSV text (strings unquoted, numbers as JSON prints them).
std::string csv_cell(const nlohmann::ordered_json& v);

// The CSV header for `rows`: the identity columns, then the scalar statistics of the first
// successful row (identity columns only when none succeeded).
std::vector<std::string> csv_header(const std::vector<std::string>& fixed, const std::vector<nlohmann::ordered_json>& rows);
// A row as a CSV line under `header` (missing cells empty).
std::string csv_row(const std::vector<std::string>& header, const nlohmann::ordered_json& row);
// A row as one JSONL line (invalid UTF-8 from a child's stderr replaced, never fatal).
std::string jsonl_line(const nlohmann::ordered_json& row);

class ResultStore {
 public:
  // `fixed`: the identity columns every row starts with (the CSV header begins with them).
  // Reopens existing files (after an interruption), or refuses them unless `resume`.
  // `stem`: the files are DIR/STEM.jsonl and DIR/STEM.csv (shards: results-I-of-N).
  ResultStore(const std::string& dir, std::vector<std::string> fixed, bool resume, const std::string& stem = "results");
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const std::set<std::string>& finished() const { return finished_; }
  // Every row in the files, including rows of points no longer in the sweep file.
  const std::vector<nlohmann::ordered_json>& all_rows() const { return rows_; }
  // Repairs made when opening (torn lines removed, CSV rows restored), for the user.
  const std::vector<std::string>& notes() const { return notes_; }

  void append(const nlohmann::ordered_json& row);
  // Writes the CSV header even if no point succeeded (it then has the identity columns only).
  void close();

  std::string jsonl_path() const { return dir_ + "/" + stem_ + ".jsonl"; }
  std::string csv_path() const { return dir_ + "/" + stem_ + ".csv"; }

 private:
  void sync_csv();
  void write_csv_row(const nlohmann::ordered_json& row);

  std::string dir_, stem_;
  std::vector<std::string> fixed_;
  std::vector<std::string> header_;       // empty until written
  std::vector<nlohmann::ordered_json> rows_;
  std::set<std::string> finished_;
  std::set<std::string> in_csv_;
  size_t csv_scan_ = 0;                   // rows_[0 .. csv_scan_) are all in the CSV
  std::set<std::string> warned_;
  std::vector<std::string> notes_;
  int jsonl_fd_ = -1, csv_fd_ = -1;
};

}  // namespace lpu
