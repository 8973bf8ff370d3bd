// VXE: the vector engine. `lanes` elements per cycle group, a latency/initiation-interval
// table per op (config vxe.ops), operands read from and results written to the LMU through
// its port. Time of one instruction:
//   latency + max(ceil(rows*cols / lanes) * ii, LMU bytes / port bandwidth * conflicts)
#pragma once
#include "model/engine.h"
#include "model/lmu.h"

namespace lpu::sim {

class Vxe : public Engine {
 public:
  Vxe(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu);

 protected:
  double execute(const IssueTicket& tk, double start_ps) override;
  Span occupancy() const override { return Span::Compute; }
  EngineReport make_report() const override;

 private:
  void compute(const Instruction& in);
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
