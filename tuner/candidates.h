// The tuner's candidates: a fixed list (its order is the tie-break), greedy first.
#pragma once
#include <string>
#include <vector>

#include "tuner.h"

namespace lpu {

struct NamedSettings {
  std::string name;
  TuneSettings settings;
};

// Compiler choices around greedy on `arch`: none (the HBM bound), the local-memory fraction for
// fusion (smaller kernels, more rows per tile), tile-row caps, single buffering, each fusion kind
// off, a smaller kernel size cap. The ISU options stay as `arch` has them.
std::vector<NamedSettings> compiler_candidates(const ArchConfig& arch);

// The other three combinations of isu.weight_prefetch and isu.chaining around `best`.
std::vector<NamedSettings> isu_candidates(const NamedSettings& best);

}  // namespace lpu
