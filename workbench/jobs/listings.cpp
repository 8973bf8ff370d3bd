#include "jobs/listings.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "driver/aten_coverage.h"
#include "graph/ops.h"
#include "isa/encoding.h"
#include "support/error.h"
#include "support/input_file.h"

namespace fs = std::filesystem;

namespace lpu {

namespace {

std::string fmt(const char* f, double v) { return format_number(f, v); }

}  // namespace

std::string format_op_list() {
  std::vector<std::vector<std::string>> rows;
  for (const auto& op : all_ops()) rows.push_back({op.name, op_category_name(op.category), op.doc});
  return format_table({"op", "category", "meaning"}, rows);
}

std::string format_workload_list() {
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : model_builders()) rows.push_back({b.name, "model", b.description});
  if (fs::is_directory(workloads_dir()))
    for (const auto& e : fs::directory_iterator(workloads_dir()))
      if (e.path().extension() == ".yaml") rows.push_back({e.path().stem().string(), "file", e.path().string()});
  std::sort(rows.begin() + static_cast<long>(model_builders().size()), rows.end());
  return format_table({"name", "kind", "description"}, rows);
}

std::string format_config_list() {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& dir : {std::string("configs"), std::string(LPU_SOURCE_DIR) + "/configs"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") rows.push_back({e.path().stem().string(), e.path().string()});
    break;
  }
  std::sort(rows.begin(), rows.end());
  return format_table({"config", "file"}, rows);
}

std::string format_aten_coverage(int& missing) {
  std::ostringstream out;
  CoreAtenSet set = core_aten_coverage();
  std::map<std::string, int> count;
  std::vector<std::vector<std::string>> rows;
  for (const auto& op : set.ops) {
    std::string ov;
    for (const auto& o : op.overloads) ov += (ov.empty() ? "" : ",") + o;
    rows.push_back({"aten." + op.name, ov, op.handling});
    ++count[op.handling];
  }
  out << format_table({"op", "overloads", "handling"}, rows);
  auto n = static_cast<int>(set.ops.size());
  out << "core ATen opset of PyTorch " << set.torch_version << ": " << n - count["missing"] << " of " << n
      << " ops handled (" << count["lowered"] << " lowered, " << count["decomposed"] << " decomposed, "
      << count["host"] + count["host (timing only)"] << " on the host, " << count["host (timing only)"]
      << " of them timing only); " << count["missing"] << " missing\n";
  missing = count["missing"];
  return out.str();
}

std::string describe_arch_config(const ArchConfig& a) {
  std::ostringstream out;
  out << a.file << ": ok (" << a.name << ", " << a.clock_ghz << " GHz, " << a.devices << " device(s), HBM "
      << a.hbm.bandwidth_gbps << " GB/s x " << a.hbm.channels << " channels, LMU " << a.lmu.capacity_kib << " KiB, VXE "
      << a.vxe.lanes << " lanes, SXE " << a.sxe.mac_trees << "x" << a.sxe.lanes << ")\n";
  out << "  packed weights: " << a.sxe.packed_lanes_of("int8") << "/" << a.sxe.packed_lanes_of("int4") << "/"
      << a.sxe.packed_lanes_of("fp8_e4m3") << " int8/int4/fp8_e4m3 weights per lane and cycle, dequantiser "
      << a.sxe.dequant_cycles << " stage(s)";
  if (a.energy.configured) out << ", " << a.energy.sxe_pj_per_dequant << " pJ/weight";
  out << "\n";
  if (const auto& m = a.memory; m.configured())
    out << "  memory: " << memory_model_name(m.model) << " model; " << m.technology << " (" << m.data_rate_mtps
        << " MT/s): " << m.channels << " channels x " << m.pseudo_channels << " pseudo-channels x "
        << m.bank_groups * m.banks_per_group << " banks, " << m.row_bytes << " B rows, peak " << m.peak_gbps()
        << " GB/s, tRCD/tRP/tCL/tRAS " << m.tRCD_ns << "/" << m.tRP_ns << "/" << m.tCL_ns << "/" << m.tRAS_ns
        << " ns, tREFI/tRFC " << m.tREFI_ns << "/" << m.tRFC_ns << " ns, " << m.address_mapping << "\n";
  if (!a.energy.configured) {
    out << "  energy: not modelled (no energy section)\n";
    return out.str();
  }
  const auto& e = a.energy;
  std::string vxe, st;
  for (const auto& c : energy_vxe_classes()) vxe += strcat(vxe.empty() ? "" : ", ", c, " ", e.vxe_pj(c));
  for (const auto& n : energy_engines()) st += strcat(st.empty() ? "" : ", ", n, " ", e.static_mw.at(n));
  out << "  energy: HBM " << e.hbm_read_pj_per_bit << "/" << e.hbm_write_pj_per_bit << " pJ/bit read/written, SXE "
      << e.sxe_pj_per_mac << " pJ/MAC, LMU " << e.lmu_read_pj_per_byte << "/" << e.lmu_write_pj_per_byte
      << " pJ/B read/written, ESL " << e.esl_pj_per_bit << " pJ/bit\n"
      << "  energy: VXE pJ/op " << vxe << "\n"
      << "  energy: static mW " << st << "\n";
  return out.str();
}

std::string format_reference_run(const ReferenceRun& r) {
  std::ostringstream out;
  const auto& outs = r.file.graph.outputs();
  out << "graph " << r.file.graph.name() << ": " << r.file.graph.size() << " nodes, " << r.core.size()
      << " after normalisation\n";
  for (size_t i = 0; i < outs.size(); ++i)
    out << "  output" << i << " %" << r.file.graph.node(outs[i]).name << " "
        << type_str(r.file.graph.node(outs[i]).type) << fmt(": max abs error %.3g", r.check.max_abs_per_output[i])
        << "\n";
  out << fmt("reference vs PyTorch: max abs error %.3g", r.check.max_abs_error) << " (tolerance " << r.check.rule
      << "): " << (r.check.ok ? "PASS" : "FAIL") << "\n";
  return out.str();
}

Program load_program_file(const std::string& path) {
  if (fs::path(path).extension() == ".lpubin") {
    std::string bytes = read_input_file(path);
    return decode_program(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
  }
  return parse_program(read_text_input_file(path, "", "assembly text (a binary program's name ends in .lpubin)"), path);
}

}  // namespace lpu
