// The graph text form (print_graph / parse_graph); a parsed graph must print and parse again.
#include "fuzz_util.h"
#include "graph/graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  lpu::fuzz::expect_input_error_only([&] {
    lpu::Graph g = lpu::parse_graph(text, "fuzz.txt");
    std::string printed = lpu::print_graph(g);
    if (lpu::print_graph(lpu::parse_graph(printed, "reprinted.txt")) != printed)
      throw lpu::InternalError("graph text does not round-trip");
  });
  return 0;
}
