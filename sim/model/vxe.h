// VXE: the vector engine. `lanes` elements per cycle group, a latency/initiation-interval
// table per op (config vxe.ops), operands read from and results written to the LMU through
// its port. Time of one instruction:
//   latency + max(ceil(rows*cols / lanes) * ii, LMU bytes / port bandwidth * conflicts)
// With vxe.model: rtl the compute part of exp, div and reciprocal comes from the verilated
// special-function pipeline instead (vxe_rtl.h).
#pragma once
#include <memory>

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
  VxeRtlUnit* rtl_unit(const Instruction& in) const;
  double rtl_end(const Instruction& in, VxeRtlUnit& unit, double start_ps);
  void rtl_operands(const Instruction& in, std::vector<int16_t>& a, std::vector<int16_t>& b) const;
  std::unique_ptr<VxeRtlUnit> rtl_exp_, rtl_div_;  // vxe.model: rtl only
  uint64_t rtl_instructions_ = 0, rtl_cycles_ = 0, rtl_elements_ = 0;
  Lmu& lmu_;
  std::vector<float> scratch_;
  // Per op (opcode with its scalar op or reduction): its timing and its energy counter,
  // looked up by name once instead of per instruction. A program uses a handful of ops.
  struct OpInfo {
    Opcode opcode;
    ScalarOp vop;
    ReductionType rop;
    VxeOpTiming timing;
    double* energy_ops;  // node of ctx.energy.vxe_ops (std::map: stable)
  };
  const OpInfo& op_info(const Instruction& in);
  std::vector<OpInfo> ops_;
};

}  // namespace lpu::sim
