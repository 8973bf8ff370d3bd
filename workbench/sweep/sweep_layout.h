// The files of a sweep's results directory, and shards. A whole sweep writes
// DIR/results.{jsonl,csv}; shard I of N (`lpu sweep --shard I/N`) runs the points that
// shard_point_indices (sweep_spec.h) gives it, and writes DIR/results-I-of-N.{jsonl,csv},
// holding DIR/.lock-I-of-N and using DIR/.tmp-I-of-N: shards may share one DIR and no file
// ever has two writers. `lpu sweep merge` joins shard files into results.{jsonl,csv}.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lpu {

struct Shard {
  int index = 0;
  int count = 0;  // 0: not sharded (the whole sweep)
  bool active() const { return count > 0; }
  std::string suffix() const;  // "" or "-I-of-N": appended to results, .lock, .tmp
  std::string text() const;    // "I/N"
};

// "I/N" with 0 <= I < N; anything else is an InputError that says what was expected.
Shard parse_shard(const std::string& text);

struct ShardFile {
  std::string jsonl;  // DIR/results-I-of-N.jsonl
  Shard shard;
};
// The shard result files in `dir`, ordered by N, then I.
std::vector<ShardFile> find_shard_files(const std::string& dir);

// The rows of a results JSONL file, without changing it: a last line without '\n' (a writer
// still running, or killed mid-write) is left out. Damaged lines are an InputError with the
// file and line.
std::vector<nlohmann::ordered_json> read_result_rows(const std::string& path);

// The identity columns every row starts with, in order (docs/sweeps.md, Rows).
std::vector<std::string> identity_columns(const std::vector<std::string>& axis_keys);

// The whole file as text ("" when it cannot be read).
std::string read_text_file(const std::string& path);

// Writes `text` to a temporary file next to `path` (unique per process) and renames it over
// `path`: readers see the old or the new file, never half of one.
void write_atomically(const std::string& path, const std::string& text);

// The sweep_hash of DIR/manifest.json, or "" when there is none.
std::string manifest_hash(const std::string& dir);

}  // namespace lpu
