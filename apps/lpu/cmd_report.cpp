// `lpu report INPUTS -o DIR` (docs/reports.md): an HTML report with plots.
#include <memory>

#include "cli.h"
#include "jobs/cli_support.h"
#include "jobs/report.h"

namespace lpu::cli {

Command add_report(CLI::App& app) {
  auto ro = std::make_shared<ReportOptions>();
  auto* rep = app.add_subcommand("report", "write an HTML report with plots (docs/reports.md)");
  rep->add_option("inputs", ro->inputs, "a sweep directory, compare/run/generate/serve JSON files, trace files")
      ->required();
  rep->add_option("-o,--out", ro->out_dir, "report directory (index.html and PNGs)")->required();
  rep->add_option(
      "--cost", ro->cost,
      "Pareto cost: a results column, e.g. arch.lmu.capacity_kib (default: a relative hardware-cost proxy)");
  rep->add_option("--json", ro->json, "write the report's list of plots and notes as JSON");
  return {rep, [ro] {
            check_output_dir("-o", ro->out_dir);
            check_output_file("--json", ro->json);
            return report_command(*ro);
          }};
}

}  // namespace lpu::cli
