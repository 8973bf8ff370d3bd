// YAML helpers shared by every YAML reader (architecture configs, workloads, sweeps).
// Errors are InputError with "FILE:LINE: key.path: message", so users can find the spot.
#pragma once
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "support/error.h"

namespace lpu {

struct YamlDoc {
  std::string file;
  YAML::Node root;
  std::vector<std::string> overrides;  // "key.path=value" applied by apply_override, in order
  // How the user spelled the overrides' keys, for messages: "workload." for --set workload.KEY.
  std::string override_prefix;
};

YamlDoc load_yaml_file(const std::string& path);
YamlDoc load_yaml_string(const std::string& text, const std::string& name);

// Applies `key.path=value` (value parsed as YAML) to the document, creating maps as needed.
void apply_override(YamlDoc& doc, const std::string& assignment);

class YamlReader {
 public:
  YamlReader(const YamlDoc& doc) : file_(doc.file), overrides_(doc.overrides), override_prefix_(doc.override_prefix) {}
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path, const std::string& msg) const;
  // Rejects keys of `map` not in `allowed` (naming the closest allowed key).
  void check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& allowed) const;
  void require_map(const YAML::Node& n, const std::string& path) const;

  double get_double(const YAML::Node& map, const std::string& key, const std::string& path) const;
  double get_double(const YAML::Node& map, const std::string& key, const std::string& path, double dflt) const;
  int64_t get_int(const YAML::Node& map, const std::string& key, const std::string& path) const;
  int64_t get_int(const YAML::Node& map, const std::string& key, const std::string& path, int64_t dflt) const;
  bool get_bool(const YAML::Node& map, const std::string& key, const std::string& path, bool dflt) const;
  std::string get_string(const YAML::Node& map, const std::string& key, const std::string& path) const;
  std::string get_string(const YAML::Node& map, const std::string& key, const std::string& path,
                         const std::string& dflt) const;

  // Range checks: the message quotes the value and the valid range.
  void check_range(const YAML::Node& map, const std::string& key, const std::string& path, double v, double lo,
                   double hi) const;

 private:
  YAML::Node child(const YAML::Node& map, const std::string& key, const std::string& path) const;
  std::string file_;
  std::vector<std::string> overrides_;
  std::string override_prefix_;
};

std::string join_path(const std::string& path, const std::string& key);

}  // namespace lpu
