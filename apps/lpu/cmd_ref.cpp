// `lpu ref GRAPH`: a graph file through the reference executor, against PyTorch.
#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/listings.h"
#include "support/error.h"

namespace lpu::cli {

// The frontend's check up to the core graph: reference executor vs PyTorch's outputs.
Command add_ref(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* ref = app.add_subcommand("ref", "check a graph file up to the core graph: reference executor vs PyTorch");
  ref->add_option("graph", *path, "graph file (.json) with a sidecar holding inputs, weights, expected outputs")
      ->required();
  return {ref, [path] {
            ReferenceRun r = run_reference_check(*path);
            std::cout << format_reference_run(r);
            if (!r.check.ok) throw CheckFailed("reference differs from PyTorch: worst element " + r.check.worst);
            return 0;
          }};
}

}  // namespace lpu::cli
