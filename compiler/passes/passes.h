// Graph-level normalisation passes (the AOTAutograd counterpart). Each pass takes a graph and
// returns a new one; passes keep no state between runs.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace lpu {

// Rewrites every Composite op into core ops (table in decompose.cpp), recursively.
Graph decompose(const Graph& g);
// Removes call nodes whose results no output depends on.
Graph eliminate_dead_code(const Graph& g);

struct Pass {
  std::string name;
  std::function<Graph(const Graph&)> run;
};

// The default normalisation pipeline: decompose, dce. Verifies the graph after each pass.
std::vector<Pass> default_passes();
Graph run_passes(const Graph& g, const std::vector<Pass>& passes,
                 const std::function<void(const std::string&, const Graph&)>& after_pass = {});

}  // namespace lpu
