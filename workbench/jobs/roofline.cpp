#include "jobs/roofline.h"

#include <algorithm>
#include <numeric>

#include "jobs/op_class.h"
#include "support/error.h"

namespace lpu {

const std::array<const char*, kBreakdownKinds>& breakdown_names() {
  static const std::array<const char*, kBreakdownKinds> n = {"bandwidth",  "compute", "latency", "sync",
                                                             "dependency", "issue",   "other"};
  return n;
}

std::array<uint64_t, kBreakdownKinds> breakdown_array(const SpanBreakdown& b) {
  return {b.bandwidth, b.compute, b.latency, b.sync, b.dependency, b.issue, b.other};
}

std::array<double, kBreakdownKinds> kernel_loss(const KernelStats& k) {
  std::array<double, kBreakdownKinds> loss{};
  auto b = breakdown_array(k.breakdown);
  for (int i = 0; i < kBreakdownKinds; ++i)
    loss[static_cast<size_t>(i)] = static_cast<double>(b[static_cast<size_t>(i)]);
  size_t own = k.bound == "hbm" ? 0 : 1;  // bandwidth, compute
  loss[own] = std::max(0.0, loss[own] - k.roofline_cycles);
  return loss;
}

int ClassRoofline::top_blocker() const {
  return static_cast<int>(std::max_element(loss.begin(), loss.end()) - loss.begin());
}

std::vector<std::string> kernel_classes(const RunOutcome& o) {
  std::vector<std::string> out;
  const auto& ks = o.sim.stats.kernels;
  for (size_t k = 0; k < ks.size(); ++k) {
    std::vector<std::string> nodes;
    if (k < o.comp.schedule.kernels.size())
      for (int n : o.comp.schedule.kernels[k].nodes)
        nodes.push_back(o.comp.loop_ir.nodes[static_cast<size_t>(n)].origin);
    out.push_back(kernel_op_class(ks[k].name, nodes));
  }
  return out;
}

std::vector<ClassRoofline> roofline_by_class(const RunOutcome& o) {
  const auto& order = op_class_order();
  std::vector<ClassRoofline> rows(order.size());
  for (size_t c = 0; c < order.size(); ++c) rows[c].op_class = order[c];
  auto classes = kernel_classes(o);
  const auto& ks = o.sim.stats.kernels;
  for (size_t k = 0; k < ks.size(); ++k) {
    ClassRoofline& r = rows[static_cast<size_t>(std::find(order.begin(), order.end(), classes[k]) - order.begin())];
    ++r.kernels;
    r.bytes += ks[k].hbm_read_bytes + ks[k].hbm_write_bytes;
    r.cycles += ks[k].cycles;
    r.roofline_cycles += ks[k].roofline_cycles;
    auto b = breakdown_array(ks[k].breakdown);
    auto l = kernel_loss(ks[k]);
    for (size_t i = 0; i < kBreakdownKinds; ++i) {
      r.breakdown[i] += b[i];
      r.loss[i] += l[i];
    }
  }
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const ClassRoofline& r) { return r.kernels == 0; }),
             rows.end());
  return rows;
}

StepFloor step_floor(const RunOutcome& o) {
  StepFloor f;
  f.bytes = static_cast<uint64_t>(o.comp.compulsory_hbm_bytes);
  f.peak_cycles = static_cast<double>(f.bytes) / o.arch.hbm_bytes_per_cycle();
  f.sustained_cycles = f.peak_cycles / o.arch.hbm.efficiency;
  return f;
}

nlohmann::json roofline_classes_json(const RunOutcome& o) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : roofline_by_class(o)) {
    nlohmann::json b, l;
    for (size_t i = 0; i < kBreakdownKinds; ++i) {
      b[breakdown_names()[i]] = r.breakdown[i];
      l[breakdown_names()[i]] = r.loss[i];
    }
    arr.push_back({{"op_class", r.op_class},
                   {"kernels", r.kernels},
                   {"hbm_bytes", r.bytes},
                   {"cycles", r.cycles},
                   {"roofline_cycles", r.roofline_cycles},
                   {"roofline_fraction", r.cycles ? r.roofline_cycles / static_cast<double>(r.cycles) : 0.0},
                   {"breakdown_cycles", b},
                   {"loss_cycles", l},
                   {"top_blocker", breakdown_names()[static_cast<size_t>(r.top_blocker())]}});
  }
  return arr;
}

namespace {
std::string pct(double x) { return format_number("%.1f%%", 100 * x); }
std::string cyc(double x) { return format_number("%.0f", x); }
}  // namespace

std::string format_top_kernels(const RunOutcome& o, size_t n) {
  const auto& ks = o.sim.stats.kernels;
  auto classes = kernel_classes(o);
  std::vector<size_t> idx(ks.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return ks[a].cycles > ks[b].cycles; });
  idx.resize(std::min(n, idx.size()));
  std::vector<std::vector<std::string>> rows;
  for (size_t k : idx) {
    const auto& s = ks[k];
    std::vector<std::string> row = {s.name,
                                    classes[k],
                                    format_bytes(static_cast<double>(s.hbm_read_bytes + s.hbm_write_bytes)),
                                    std::to_string(s.cycles),
                                    cyc(s.roofline_cycles),
                                    s.bound,
                                    pct(s.cycles ? s.roofline_cycles / static_cast<double>(s.cycles) : 0)};
    for (uint64_t v : breakdown_array(s.breakdown)) row.push_back(std::to_string(v));
    rows.push_back(row);
  }
  std::vector<std::string> header = {"kernel", "class", "hbm_bytes", "cycles", "roofline", "bound", "of_roofline"};
  for (const char* b : breakdown_names()) header.push_back(b);
  return strcat("top ", idx.size(), " of ", ks.size(), " kernels by span (cycles; categories: docs/sim-model.md)\n",
                format_table(header, rows));
}

std::string format_class_roofline(const RunOutcome& o) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : roofline_by_class(o)) {
    int top = r.top_blocker();
    rows.push_back({r.op_class, std::to_string(r.kernels), format_bytes(static_cast<double>(r.bytes)),
                    cyc(r.roofline_cycles), std::to_string(r.cycles),
                    pct(r.cycles ? r.roofline_cycles / static_cast<double>(r.cycles) : 0),
                    breakdown_names()[static_cast<size_t>(top)], cyc(r.loss[static_cast<size_t>(top)])});
  }
  StepFloor f = step_floor(o);
  double c = static_cast<double>(o.sim.stats.cycles);
  return strcat(
      "per op class: kernel spans against their rooflines\n",
      format_table(
          {"op_class", "kernels", "hbm_bytes", "roofline", "achieved", "of_roofline", "top_blocker", "blocker_cycles"},
          rows),
      "step: ", o.sim.stats.cycles, " cycles; HBM floor (compulsory ", format_bytes(static_cast<double>(f.bytes)), ") ",
      cyc(f.peak_cycles), " cycles at peak = ", pct(c > 0 ? f.peak_cycles / c : 0), ", ", cyc(f.sustained_cycles),
      " at peak x efficiency = ", pct(c > 0 ? f.sustained_cycles / c : 0), "\n");
}

}  // namespace lpu
