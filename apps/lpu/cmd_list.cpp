// `lpu list ops|workloads|configs [--aten]`: the workbench's tables.
#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/listings.h"
#include "support/error.h"

namespace lpu::cli {

Command add_list(CLI::App& app) {
  struct Flags {
    std::string what;
    bool aten = false;
  };
  auto f = std::make_shared<Flags>();
  auto* lst = app.add_subcommand("list", "list built-in workloads, configs or ops");
  lst->add_option("what", f->what, "workloads | configs | ops")->required();
  lst->add_flag("--aten", f->aten, "with ops: coverage of PyTorch's core ATen opset (exit 1 if any op is missing)");
  return {lst, [f] {
            if (f->aten && f->what != "ops") throw InputError("list: --aten goes with `list ops`");
            int missing = 0;
            if (f->aten)
              std::cout << format_aten_coverage(missing);
            else if (f->what == "ops")
              std::cout << format_op_list();
            else if (f->what == "workloads")
              std::cout << format_workload_list();
            else if (f->what == "configs")
              std::cout << format_config_list();
            else
              throw InputError("list: expected ops, workloads or configs, got '" + f->what + "'");
            return missing ? 1 : 0;
          }};
}

}  // namespace lpu::cli
