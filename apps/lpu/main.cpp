// `lpu`: the workbench's command line, one file per subcommand (cmd_*.cpp), each parsing its
// flags, calling the library (workbench/) and printing. Exit codes: 0 ok, 1 a failed check,
// 2 bad input, 3 a simulation that cannot finish, 4 an internal error (a bug: please report it).
#include <iostream>

#include "cli.h"
#include "support/allocator.h"
#include "support/error.h"

namespace {

// The subcommand that was given, its errors as exit codes.
int run_command(CLI::App& app, const std::vector<lpu::cli::Command>& commands) try {
  lpu::cli::check_arguments(app);
  for (const auto& c : commands)
    if (*c.app) return c.run();
  return 0;
} catch (const lpu::InputError& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 2;
} catch (const lpu::CheckFailed& e) {
  std::cerr << "check failed: " << e.what() << "\n";
  return 1;
} catch (const lpu::SimulationStuck& e) {
  std::cerr << "simulation stuck: " << e.what() << "\n";
  return 3;
} catch (const std::exception& e) {
  std::cerr << "internal error (a bug in the workbench): " << e.what() << "\n";
  return 4;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lpu::cli;
  lpu::retain_freed_memory();
  CLI::App app{"lpu: hardware/compiler co-design workbench for LLM accelerators"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");
  std::vector<Command> commands;
  for (auto add : {add_run, add_compare, add_sweep, add_report, add_compile, add_generate, add_serve, add_check_config,
                   add_ref, add_sim, add_list})
    commands.push_back(add(app));
  commands.push_back(add_cli_spec(app));  // last: it lists the others
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\nRun with --help for more information.\n";
    return 2;
  }
  return run_command(app, commands);
}
