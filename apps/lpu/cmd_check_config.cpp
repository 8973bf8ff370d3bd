// `lpu check-config FILE...`: validate architecture config files.
#include <iostream>
#include <memory>

#include "cli.h"
#include "jobs/listings.h"

namespace lpu::cli {

Command add_check_config(CLI::App& app) {
  struct Flags {
    std::vector<std::string> files, sets;
  };
  auto f = std::make_shared<Flags>();
  auto* chk = app.add_subcommand("check-config", "validate architecture config files");
  chk->add_option("files", f->files, "config YAML paths or names in configs/")->required();
  chk->add_option("--set", f->sets, "override a key before validation (repeatable)");
  return {chk, [f] {
            for (const auto& file : f->files)
              std::cout << describe_arch_config(load_arch_config(resolve_config_path(file), f->sets));
            return 0;
          }};
}

}  // namespace lpu::cli
