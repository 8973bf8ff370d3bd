#include "candidates.h"

#include "support/error.h"

namespace lpu {

std::vector<NamedSettings> compiler_candidates(const ArchConfig& arch) {
  TuneSettings base;
  base.double_buffer = arch.lmu.double_buffer;
  base.weight_prefetch = arch.isu.weight_prefetch;
  base.chaining = arch.isu.chaining;
  std::vector<NamedSettings> v = {{"greedy", base}};
  auto add = [&](const std::string& name, auto&& edit) {
    TuneSettings s = base;
    edit(s);
    v.push_back({name, s});
  };
  add("none", [](TuneSettings& s) { s.fusion = "none"; });
  for (double f : {0.5, 0.25}) add(strcat("greedy/lmu_fraction=", f), [f](TuneSettings& s) { s.lmu_fraction = f; });
  for (int64_t r : {4, 16, 64}) add(strcat("greedy/max_tile_rows=", r), [r](TuneSettings& s) { s.max_tile_rows = r; });
  if (arch.lmu.double_buffer) add("greedy/single_buffer", [](TuneSettings& s) { s.double_buffer = false; });
  // Other kernel groupings: greedy takes pairs by bytes saved, which is not always what runs
  // fastest (a bigger kernel has fewer rows per tile and serialises more work behind it).
  add("greedy/no_horizontal", [](TuneSettings& s) { s.fuse_horizontal = false; });
  add("greedy/no_prologue", [](TuneSettings& s) { s.fuse_prologue = false; });
  add("greedy/no_epilogue", [](TuneSettings& s) { s.fuse_epilogue = false; });
  add("greedy/max_kernel_nodes=8", [](TuneSettings& s) { s.max_kernel_nodes = 8; });
  return v;
}

std::vector<NamedSettings> isu_candidates(const NamedSettings& best) {
  std::vector<NamedSettings> v;
  for (bool prefetch : {false, true})
    for (bool chain : {false, true}) {
      if (prefetch == best.settings.weight_prefetch && chain == best.settings.chaining) continue;
      NamedSettings n = best;
      n.settings.weight_prefetch = prefetch;
      n.settings.chaining = chain;
      // Named by the keys that differ from `best` (which has the arch config's ISU options).
      std::string keys;
      if (prefetch != best.settings.weight_prefetch)
        keys += strcat("isu.weight_prefetch=", prefetch ? "true" : "false");
      if (chain != best.settings.chaining)
        keys += strcat(keys.empty() ? "" : ",", "isu.chaining=", chain ? "true" : "false");
      n.name = best.name + "+" + keys;
      v.push_back(n);
    }
  return v;
}

}  // namespace lpu
