// `lpu sweep merge DIR... [-o OUT]`: joins the shard files of one sweep (results-I-of-N.jsonl,
// in one shared directory or several) into OUT/results.{jsonl,csv}, rows in the sweep's
// expansion order. Refuses (InputError, exit 2) shards of different sweeps, naming both
// sweep hashes, and shards of different splits (N).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace lpu {

struct MergeSummary {
  std::string out_dir, sweep_hash;
  int shard_count = 0;                 // N
  std::vector<int> shards_found;       // I of every shard file merged
  size_t points = 0;                   // points of the sweep (its manifest)
  size_t rows = 0, ok = 0, failed = 0;  // rows merged
  size_t missing() const { return points > rows ? points - rows : 0; }
};

// Merges; `out` empty: the first directory. Prints nothing.
MergeSummary merge_shards(const std::vector<std::string>& dirs, const std::string& out);

// The subcommand: merge, print what was merged and what is missing. Exit 0 when every point
// of the sweep is present and succeeded, 1 otherwise.
int merge_command(const std::vector<std::string>& dirs, const std::string& out, const std::string& json);

}  // namespace lpu
