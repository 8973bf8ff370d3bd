// Node attributes <-> compact JSON: the host-op table of an LPU program (the .hostop
// directive, the binary host-op table) carries a graph break's attributes this way; codegen
// writes them, the simulator's host reads them back.
#pragma once
#include <string>

#include "graph/graph.h"

namespace lpu {

std::string attrs_to_json(const Attrs& a);
Attrs attrs_from_json(const std::string& json);  // throws InputError on malformed text

}  // namespace lpu
