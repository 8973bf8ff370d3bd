#include "jobs/compare.h"

#include <algorithm>
#include <cmath>

#include "jobs/cli_support.h"
#include "jobs/report.h"
#include "jobs/run_report.h"
#include "policy_registry.h"
#include "support/error.h"

namespace lpu {

namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

// Where a policy's gain over the first one came from: HBM bytes, kernels (each dependent
// kernel boundary drains the pipeline) and ISU stall cycles.
std::string why_column(const RunOutcome& base, const RunOutcome& r) {
  if (&base == &r) return "baseline";
  auto traffic = [](const RunOutcome& o) {
    return static_cast<double>(o.sim.stats.hbm_read_bytes + o.sim.stats.hbm_write_bytes);
  };
  auto stalls = [](const RunOutcome& o) {
    return static_cast<double>(o.sim.stats.isu_hazard_stall_cycles + o.sim.stats.isu_queue_stall_cycles);
  };
  auto signed_ = [](double d, const std::string& text) { return (d > 0 ? "+" : d < 0 ? "-" : "+-") + text; };
  double db = traffic(r) - traffic(base);
  double dk =
      static_cast<double>(r.comp.schedule.kernels.size()) - static_cast<double>(base.comp.schedule.kernels.size());
  double ds = stalls(r) - stalls(base);
  return signed_(db, format_bytes(std::fabs(db))) + " HBM, " + signed_(dk, fmt("%.0f", std::fabs(dk))) + " kernels, " +
         signed_(ds, fmt("%.0f", std::fabs(ds))) + " stall cycles";
}

std::vector<RunOutcome> run_policies(const CompareRequest& r, const std::vector<std::string>& names) {
  const WorkloadSpec& w = r.workload;
  std::vector<RunOutcome> runs;
  for (size_t i = 0; i < names.size(); ++i) {
    if (r.progress)
      *r.progress << "\r[" << i + 1 << "/" << names.size() << "] " << w.name << " " << names[i] << "...\x1b[K"
                  << std::flush;
    runs.push_back(run_job(w, r.arch, names[i], r.functional, !r.report.empty(), r.breaks));
  }
  if (r.progress) *r.progress << "\r\x1b[K" << std::flush;
  return runs;
}

// One row of the table per run, and every run in `out["runs"]`; false when a check failed.
bool compare_rows(const std::vector<RunOutcome>& runs, int64_t tokens, std::vector<std::vector<std::string>>& rows,
                  nlohmann::json& out) {
  double base = static_cast<double>(runs.front().sim.stats.cycles);
  bool all_ok = true;
  for (const auto& r : runs) {
    const auto& s = r.sim.stats;
    std::vector<std::string> row = {r.fusion,
                                    std::to_string(r.comp.schedule.kernels.size()),
                                    format_bytes(static_cast<double>(s.hbm_read_bytes)),
                                    format_bytes(static_cast<double>(s.hbm_write_bytes)),
                                    format_bytes(static_cast<double>(r.comp.compulsory_hbm_bytes)),
                                    std::to_string(s.cycles),
                                    format_duration_us(s.latency_us)};
    if (tokens > 0) {
      row.push_back(fmt("%.3f", s.latency_us / 1e3 / static_cast<double>(tokens)));
      row.push_back(fmt("%.1f", static_cast<double>(tokens) / (s.latency_us * 1e-6)));
    }
    if (s.energy.configured) {
      row.push_back(format_energy(s.energy.total_j()));
      if (tokens > 0) row.push_back(fmt("%.3f", s.energy.total_j() * 1e3 / static_cast<double>(tokens)));
    }
    // Traffic over compulsory rather than bandwidth utilisation: fusion moves fewer bytes in
    // less time, so utilisation can fall when fusion helps and read like a regression.
    row.push_back(fmt("%.3f", r.traffic_ratio()));
    row.push_back(fmt("%.2fx", base / static_cast<double>(std::max<uint64_t>(s.cycles, 1))));
    if (r.check) {
      row.push_back(fmt("%.2g", r.check->max_abs_error) + (r.check->ok ? " ok" : " FAIL"));
      all_ok = all_ok && r.check->ok;
    }
    row.push_back(why_column(runs.front(), r));
    rows.push_back(row);
    nlohmann::json j = r.to_json();
    j["speedup_vs_first"] = base / static_cast<double>(std::max<uint64_t>(s.cycles, 1));
    out["runs"].push_back(j);
  }
  return all_ok;
}

std::vector<std::string> compare_header(const std::vector<RunOutcome>& runs, int64_t tokens, bool functional) {
  std::vector<std::string> header = {"fusion", "kernels", "hbm_read", "hbm_write", "compulsory", "cycles", "latency"};
  if (tokens > 0) {
    header.push_back("ms/token");
    header.push_back("tokens/s");
  }
  if (runs.front().sim.stats.energy.configured) {  // one config for every policy
    header.push_back("energy");
    if (tokens > 0) header.push_back("mJ/token");
  }
  header.push_back("traffic/compulsory");
  header.push_back("speedup");
  if (functional) header.push_back("max_abs_err");
  header.push_back("why (vs " + runs.front().fusion + ")");
  return header;
}

}  // namespace

std::vector<std::string> compare_policy_names(const std::string& policies) {
  std::vector<std::string> names;
  for (const auto& p : split_list(policies)) {
    if (std::find(names.begin(), names.end(), p) != names.end())
      throw InputError("--fusion: policy '" + p + "' given twice in '" + policies + "'");
    require_policy(p, "--fusion policy");
    names.push_back(p);
  }
  if (names.empty()) throw InputError("--fusion: no policy given");
  return names;
}

CompareResult run_compare(const CompareRequest& r) {
  const WorkloadSpec& w = r.workload;
  CompareResult c;
  c.runs = run_policies(r, compare_policy_names(r.policies));
  int64_t tokens = llm_tokens_per_step(w);
  std::vector<std::vector<std::string>> rows;
  c.json = {{"workload", w.name},
            {"arch", r.arch.name},
            {"arch_overrides", r.arch_overrides},
            {"runs", nlohmann::json::array()}};
  c.all_ok = compare_rows(c.runs, tokens, rows, c.json);
  c.table = "workload " + w.name + " on " + effective_arch(r.arch, r.arch_overrides) + "\n" +
            format_table(compare_header(c.runs, tokens, r.functional), rows);
  // One rule for every policy (the same check), printed once under the table as `run` does.
  if (r.functional && c.runs.front().check)
    c.table += "functional check: tolerance " + c.runs.front().check->rule + "\n";
  return c;
}

int compare_command(const CompareRequest& r, std::ostream& out) {
  CompareResult c = run_compare(r);
  out << c.table;
  if (!r.json.empty()) {
    write_json(r.json, c.json);
    out << "wrote " << r.json << "\n";
  }
  if (!r.report.empty() && write_compare_report(c.json, c.runs, r.report) != 0) return 2;
  if (!c.all_ok) throw CheckFailed("functional check failed");
  return 0;
}

}  // namespace lpu
