#include "tuner.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "candidates.h"
#include "simulator.h"
#include "support/error.h"
#include "support/units.h"

namespace lpu {

CompileOptions compile_options_for(const ArchConfig& arch, const std::string& fusion, const BreakOptions& b) {
  CompileOptions o;
  o.unsupported_ops = b.unsupported_ops;
  o.break_on_unsupported = b.on_unsupported_break;
  o.fusion = fusion;
  o.codegen.lmu_bytes = arch.lmu_bytes();
  o.codegen.double_buffer = arch.lmu.double_buffer;
  o.codegen.vector_chains = arch.vxe.chains;
  o.codegen.hbm_alignment = std::max(arch.hbm.interleave_bytes * arch.hbm.channels, arch.hbm.burst_bytes);
  return o;
}

CompileOptions TuneSettings::compile_options(const ArchConfig& arch, const BreakOptions& b) const {
  CompileOptions o = compile_options_for(arch, fusion, b);
  o.fusion_lmu_fraction = lmu_fraction;
  o.codegen.max_tile_rows = max_tile_rows;
  o.codegen.double_buffer = double_buffer;
  o.max_kernel_nodes = max_kernel_nodes;
  o.fuse_horizontal = fuse_horizontal;
  o.fuse_prologue = fuse_prologue;
  o.fuse_epilogue = fuse_epilogue;
  return o;
}

ArchConfig TuneSettings::apply_isu(const ArchConfig& arch) const {
  ArchConfig a = arch;
  a.isu.weight_prefetch = weight_prefetch;
  a.isu.chaining = chaining;
  return a;
}

std::vector<std::pair<std::string, std::string>> TuneSettings::fields() const {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  return {{"fusion", fusion},
          {"lmu_fraction", strcat(lmu_fraction)},
          {"max_tile_rows", strcat(max_tile_rows)},
          {"double_buffer", b(double_buffer)},
          {"max_kernel_nodes", strcat(max_kernel_nodes)},
          {"fuse_horizontal", b(fuse_horizontal)},
          {"fuse_prologue", b(fuse_prologue)},
          {"fuse_epilogue", b(fuse_epilogue)},
          {"isu.weight_prefetch", b(weight_prefetch)},
          {"isu.chaining", b(chaining)}};
}

TuneOptions tune_options_for(const std::string& policy) {
  if (policy == "search") return {};
  if (policy == "search-isu") return {true};
  throw InputError("not a tuner policy: '" + policy + "' (expected search or search-isu)");
}

namespace {

struct Best {
  std::optional<Compilation> comp;
  NamedSettings at;
  uint64_t cycles = 0, bytes = 0;
  // Strictly better only: an equal candidate later in the list never displaces an earlier one.
  bool beaten_by(uint64_t c, uint64_t b) const { return !comp || c < cycles || (c == cycles && b < bytes); }
};

}  // namespace

Tuned tune(const Graph& g, const ArchConfig& arch, const TuneOptions& opts, SearchReport& report,
           const BreakOptions& b) {
  auto t0 = std::chrono::steady_clock::now();
  report.policy = opts.isu ? "search-isu" : "search";
  std::vector<NamedSettings> list = compiler_candidates(arch);
  size_t total = list.size() + (opts.isu ? 3 : 0);
  bool progress = isatty(STDERR_FILENO);  // a long search says what it is doing, on a terminal only
  Best best;
  std::optional<uint64_t> none_bytes;
  // Simulates `comp` on `cand`'s arch and keeps it if it is the fastest yet.
  auto judge = [&](const NamedSettings& cand, Compilation comp) {
    SearchCandidate c;
    c.name = cand.name;
    c.settings = cand.settings;
    SimStats st = simulate(comp.code.program, cand.settings.apply_isu(arch), {}).stats;
    c.cycles = st.cycles;
    c.hbm_bytes = st.hbm_read_bytes + st.hbm_write_bytes;
    if (cand.name == "greedy") report.greedy_cycles = c.cycles;
    if (cand.name == "none") none_bytes = c.hbm_bytes;
    // A tiling variant is outside the scheduler's fusion cost model (which prices fusions at
    // the default tiling), so the tuner keeps its promise itself: nothing that moves more bytes
    // than `none` is chosen, however fast. Greedy is exempt: its cost model guarantees it, and
    // it must stay choosable for "never slower than greedy" to hold.
    if (cand.name != "greedy" && none_bytes && c.hbm_bytes > *none_bytes)
      c.rejected = strcat("moves ", format_bytes(static_cast<double>(c.hbm_bytes)),
                          " of HBM traffic, more than none's ", format_bytes(static_cast<double>(*none_bytes)));
    else if (best.beaten_by(c.cycles, c.hbm_bytes)) {
      best.comp = std::move(comp);
      best.at = cand;
      best.cycles = c.cycles;
      best.bytes = c.hbm_bytes;
    }
    report.candidates.push_back(c);
  };
  auto say = [&](const std::string& name) {
    if (progress)
      std::fprintf(stderr, "\r[search %zu/%zu] %s\x1b[K", report.candidates.size() + 1, total, name.c_str());
  };
  for (const auto& cand : list) {
    say(cand.name);
    try {
      judge(cand, compile_graph(g, cand.settings.compile_options(arch, b)));
    } catch (const InputError& e) {
      if (cand.name == "greedy") throw;  // the baseline must compile
      SearchCandidate c;
      c.name = cand.name;
      c.settings = cand.settings;
      c.error = e.what();
      report.candidates.push_back(c);
    }
  }
  if (!best.comp) throw InputError("search: no candidate compiled (not even greedy)");
  // The ISU options do not change the program: the best compilation is simulated again under
  // each other combination (one more simulation each, no compile).
  if (opts.isu) {
    NamedSettings base = best.at;
    Compilation comp = *best.comp;
    for (const auto& cand : isu_candidates(base)) {
      say(cand.name);
      judge(cand, comp);
    }
  }
  if (progress) std::fprintf(stderr, "\r\x1b[K");
  report.chosen = best.at.name;
  report.chosen_settings = best.at.settings;
  report.best_cycles = best.cycles;
  if (best.at.settings.weight_prefetch != arch.isu.weight_prefetch)
    report.arch_changes.push_back(strcat("isu.weight_prefetch=", best.at.settings.weight_prefetch ? "true" : "false"));
  if (best.at.settings.chaining != arch.isu.chaining)
    report.arch_changes.push_back(strcat("isu.chaining=", best.at.settings.chaining ? "true" : "false"));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Tuned t{std::move(*best.comp), best.at.settings.apply_isu(arch)};
  t.comp.schedule.policy = report.policy;
  return t;
}

}  // namespace lpu
