// VXE: the vector engine. `lanes` elements per cycle group, a latency/initiation-interval
// table per op (config vxe.ops), operands read from and results written to the LMU through
// its port. Time of one instruction:
//   latency + max(ceil(rows*cols / lanes) * ii, LMU bytes / port bandwidth * conflicts)
// With vxe.model: rtl the compute part of exp, div and reciprocal comes from the verilated
// special-function pipeline instead (vxe_rtl.h).
// A fused chain (vxe.OP.POST [=> rRED], docs/isa.md) is one pass through OP's, POST's and the
// reduction's stages: their latencies add, the slowest stage's ii paces the pass.
#pragma once
#include <memory>
#include <optional>

#include "model/engine.h"
#include "model/lmu.h"
#include "model/vxe_rtl.h"

namespace lpu::sim {

class Vxe : public Engine {
 public:
  Vxe(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu);

 protected:
  double execute(const IssueTicket& tk, double start_ps) override;
  Span occupancy() const override { return Span::Compute; }
  EngineReport make_report() const override;
  using Engine::add_to;
  void add_to(SimStats& s) const override;  // what the RTL pipelines did (vxe.model: rtl)

 private:
  void compute(const Instruction& in);
  void write(const Instruction& in, const std::vector<float>& values);
  void row_reduction(const Instruction& in);
  VxeRtlUnit* rtl_unit(const Instruction& in) const;
  VxeRtlUnit* rtl_unit(ScalarOp op) const;
  double rtl_end(const Instruction& in, VxeRtlUnit& unit, double start_ps);
  void rtl_operands(const Instruction& in, std::vector<int16_t>& a, std::vector<int16_t>& b) const;
  std::vector<float> tile_values(const Instruction& in, const Operand& o) const;
  std::unique_ptr<VxeRtlUnit> rtl_exp_, rtl_div_;  // vxe.model: rtl only
  uint64_t rtl_instructions_ = 0, rtl_cycles_ = 0, rtl_elements_ = 0;
  Lmu& lmu_;
  std::vector<float> scratch_;
  // Per op (opcode with its scalar op or reduction, and a chain's post op and row reduction):
  // its timing and its energy counters, looked up by name once instead of per instruction. A
  // program uses a handful of ops.
  struct OpInfo {
    Opcode opcode;
    ScalarOp vop;
    ReductionType rop;
    std::optional<ScalarOp> post;
    std::optional<ReductionType> acc;
    VxeOpTiming timing;             // the whole pass (a chain's stages combined)
    double* energy_ops;             // node of ctx.energy.vxe_ops (std::map: stable)
    double* energy_post = nullptr;  // a chain's post op's class, its row reduction's (null without)
    double* energy_acc = nullptr;
    int op_latency = 0, post_latency = 0, acc_latency = 0;  // each stage's (vxe.model: rtl times one itself)
  };
  const OpInfo& op_info(const Instruction& in);
  std::vector<OpInfo> ops_;
};

}  // namespace lpu::sim
