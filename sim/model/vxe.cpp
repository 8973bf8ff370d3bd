#include "model/vxe.h"

#include <algorithm>
#include <cmath>

#include "model/vxe_timing.h"
#include "ops/reduction.h"
#include "ops/scalar_ops.h"
#include "support/error.h"

namespace lpu::sim {

Vxe::Vxe(sc_core::sc_module_name name, DeviceContext& ctx, Lmu& lmu)
    : Engine(name, ctx, Unit::Vxe, ctx.arch->vxe.queue_depth, 1), lmu_(lmu) {
  const auto& cfg = ctx.arch->vxe;
  if (cfg.model != ArchConfig::Vxe::Model::Rtl) return;
  // reciprocal runs on the div pipeline (a division of 1.0), so it must have div's timing.
  const VxeOpTiming div = cfg.timing("div"), rcp = cfg.timing("reciprocal");
  if (div.latency != rcp.latency || div.ii != rcp.ii)
    throw InputError(strcat("vxe.model: rtl runs reciprocal on the div pipeline: vxe.ops.reciprocal (latency ",
                            rcp.latency, ", ii ", rcp.ii, ") must equal vxe.ops.div (latency ", div.latency, ", ii ",
                            div.ii, ")"));
  rtl_exp_ = make_vxe_rtl_unit(ctx, VxeRtlFunc::Exp, "exp");
  rtl_div_ = make_vxe_rtl_unit(ctx, VxeRtlFunc::Div, "div");
}

namespace {
// The op's name in the config's timing table (vxe.ops): the scalar op, r<reduction> or mov.
std::string timing_key(const Instruction& in) {
  switch (opcode_info(in.opcode).form) {
    case Form::VectorOp: return scalar_op_name(in.vop);
    case Form::Reduce: return std::string("r") + reduction_type_name(in.rop);
    default: return "mov";
  }
}
// The op's class for energy (ArchConfig::Energy::vxe_pj_per_op), from the opcode table's
// ENERGY column: the scalar op table's cost class, or reduce / mov.
const char* energy_class(const Instruction& in) {
  switch (opcode_info(in.opcode).energy) {
    case Energy::VxeOpClass: return scalar_op_class(in.vop);
    case Energy::VxeReduce: return "reduce";
    case Energy::VxeMov: return "mov";
    case Energy::None:
    case Energy::SxeMacs: break;
  }
  throw InternalError(strcat("vxe: ", opcode_name(in.opcode), " has no VXE energy class"));
}
}  // namespace

const Vxe::OpInfo& Vxe::op_info(const Instruction& in) {
  // The fields timing_key and energy_class read; the others do not tell ops apart.
  const Form form = opcode_info(in.opcode).form;
  const ScalarOp vop = form == Form::VectorOp ? in.vop : ScalarOp{};
  const ReductionType rop = form == Form::Reduce ? in.rop : ReductionType{};
  for (const OpInfo& o : ops_)
    if (o.opcode == in.opcode && o.vop == vop && o.rop == rop) return o;
  ops_.push_back({in.opcode, vop, rop, ctx_.arch->vxe.timing(timing_key(in)), &ctx_.energy.vxe_ops[energy_class(in)]});
  return ops_.back();
}

double Vxe::execute(const IssueTicket& tk, double start_ps) {
  const size_t i = tk.instr;
  const Instruction& in = ctx_.instr(i);
  const int64_t R = in.rows, C = in.cols;
  const bool reduce = has_role(in.opcode, role::LmDestColumn);
  const int64_t out_elems = reduce ? R : R * C;
  // Up to the last element written: a tile's rows lie lm_row_stride() apart (dense: C).
  const int64_t span = reduce ? R : (R - 1) * in.lm_row_stride() + C;
  lmu_.check(in.lm_addr, static_cast<uint64_t>(span * 4), "vxe destination");
  const auto written = static_cast<uint64_t>(out_elems * 4);
  uint64_t read = 0;
  int64_t worst_stride = 1;
  for (const auto& s : in.srcs) {
    if (s.immediate) continue;
    read += static_cast<uint64_t>((s.rs == 0 ? 1 : R) * (s.cs == 0 ? 1 : C) * 4);
    if (s.cs != 0 && lmu_.conflict_factor(s.cs) > lmu_.conflict_factor(worst_stride)) worst_stride = s.cs;
  }
  const OpInfo& op = op_info(in);
  const VxeOpTiming t = op.timing;
  // The LMU first: the RTL pipeline advances simulated time, the port is reserved from the start.
  double lmu_end = lmu_.reserve(start_ps, read, written, worst_stride);
  double compute_end;
  if (VxeRtlUnit* unit = rtl_unit(in)) {
    compute_end = rtl_end(in, *unit, start_ps);
  } else {
    compute_end = start_ps + ctx_.period.to_double() * vxe_compute_cycles(R * C, ctx_.arch->vxe.lanes, t.latency, t.ii);
  }
  *op.energy_ops += static_cast<double>(R * C);
  if (tk.inputs_ready_ps > 0)  // chained on an SXE producer: the last input arrives when it finishes
    compute_end = std::max(compute_end, tk.inputs_ready_ps + ctx_.period.to_double() * t.latency);
  if (ctx_.functional) compute(in);
  return std::max(compute_end, lmu_end);
}

void Vxe::compute(const Instruction& in) {
  const int64_t R = in.rows, C = in.cols;
  auto src = [&](const Operand& o, int64_t r, int64_t c) -> float {
    if (o.immediate) return static_cast<float>(o.value);
    int64_t off = static_cast<int64_t>(o.addr / 4) + r * o.rs + c * o.cs;
    if (off < 0 || off >= static_cast<int64_t>(ctx_.lmu_data.size()))
      throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " reads outside local memory"));
    return ctx_.lmu_data[static_cast<size_t>(off)];
  };
  const Form form = opcode_info(in.opcode).form;
  if (form == Form::Reduce) {
    scratch_.assign(static_cast<size_t>(R), 0.0f);
    for (int64_t r = 0; r < R; ++r) {
      Reducer acc(in.rop);  // the loop IR's reduction semantics (ops/reduction.h)
      for (int64_t c = 0; c < C; ++c) acc.add(src(in.srcs[0], r, c));
      scratch_[static_cast<size_t>(r)] = static_cast<float>(acc.result());
    }
  } else {
    scratch_.resize(static_cast<size_t>(R * C));
    float a[3] = {0, 0, 0};
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        for (size_t k = 0; k < in.srcs.size(); ++k) a[k] = src(in.srcs[k], r, c);
        scratch_[static_cast<size_t>(r * C + c)] = form == Form::VectorOp ? eval_scalar_op(in.vop, a) : a[0];
      }
  }
  // Written after every source was read (a destination may overlap a source): a reduction's
  // column and a dense tile at once, a column window of a wider register (lm_rs) row by row.
  float* dst = lmu_.data(in.lm_addr);
  if (form == Form::Reduce || in.lm_row_stride() == C) {
    std::copy(scratch_.begin(), scratch_.end(), dst);
    return;
  }
  for (int64_t r = 0; r < R; ++r)
    std::copy(scratch_.begin() + r * C, scratch_.begin() + (r + 1) * C, dst + r * in.lm_rs);
}

// vxe.model: rtl: exp on the exp pipeline, div and reciprocal on the div pipeline; null for the
// rest (and under vxe.model: approx).
VxeRtlUnit* Vxe::rtl_unit(const Instruction& in) const {
  if (!rtl_exp_ || opcode_info(in.opcode).form != Form::VectorOp) return nullptr;
  if (in.vop == ScalarOp::exp) return rtl_exp_.get();
  if (in.vop == ScalarOp::div || in.vop == ScalarOp::reciprocal) return rtl_div_.get();
  return nullptr;
}

// The instruction's rows x cols elements, row by row, through the pipeline from `start_ps`
// (the worker's now). In functional mode the pipeline gets the real operands in its
// fixed-point formats and checks its results against the C++ reference; the values the program
// sees still come from compute() (fp32).
double Vxe::rtl_end(const Instruction& in, VxeRtlUnit& unit, double start_ps) {
  const double now = sc_core::sc_time_stamp().to_double();
  if (start_ps > now) sc_core::wait(ctx_.ps(start_ps - now));
  const int64_t n = in.rows * in.cols;
  uint64_t cycles;
  if (ctx_.functional) {
    std::vector<int16_t> a, b;
    rtl_operands(in, a, b);
    cycles = unit.run(n, &a, b.empty() ? nullptr : &b, strcat(print_instruction(in), " (line ", in.line, ")"));
  } else {
    cycles = unit.run(n, nullptr, nullptr, "");
  }
  ++rtl_instructions_;
  rtl_cycles_ += cycles;
  rtl_elements_ += static_cast<uint64_t>(n);
  return start_ps + ctx_.period.to_double() * static_cast<double>(cycles);
}

namespace {

// Symmetric int16 quantisation by the largest magnitude (the scale cancels in a check of the
// fixed-point pipeline against its own reference).
std::vector<int16_t> quantise(const std::vector<float>& v) {
  float amax = 0;
  for (float e : v) amax = std::max(amax, std::abs(e));
  std::vector<int16_t> q(v.size(), 0);
  if (amax > 0 && std::isfinite(amax))
    for (size_t i = 0; i < v.size(); ++i) q[i] = static_cast<int16_t>(std::lround(v[i] / amax * 32767.0f));
  return q;
}

}  // namespace

// exp: Q5.10, saturated; div: dividend and divisor each quantised by its largest magnitude;
// reciprocal: a division of the constant 32767 (1.0 at the divisor's scale) by its operand.
void Vxe::rtl_operands(const Instruction& in, std::vector<int16_t>& a, std::vector<int16_t>& b) const {
  const int64_t R = in.rows, C = in.cols;
  auto values = [&](const Operand& o) {
    std::vector<float> v(static_cast<size_t>(R * C));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        float x = static_cast<float>(o.value);
        if (!o.immediate) {
          int64_t off = static_cast<int64_t>(o.addr / 4) + r * o.rs + c * o.cs;
          if (off < 0 || off >= static_cast<int64_t>(ctx_.lmu_data.size()))
            throw InputError(
                strcat("device ", ctx_.device, ": ", print_instruction(in), " reads outside local memory"));
          x = ctx_.lmu_data[static_cast<size_t>(off)];
        }
        v[static_cast<size_t>(r * C + c)] = x;
      }
    return v;
  };
  if (in.vop == ScalarOp::exp) {
    for (float x : values(in.srcs.at(0))) {
      const float q = std::isnan(x) ? 0.0f : std::clamp(std::round(x * 1024.0f), -32768.0f, 32767.0f);
      a.push_back(static_cast<int16_t>(q));
    }
  } else if (in.vop == ScalarOp::reciprocal) {
    b = quantise(values(in.srcs.at(0)));
    a.assign(b.size(), 32767);
  } else {
    a = quantise(values(in.srcs.at(0)));
    b = quantise(values(in.srcs.at(1)));
  }
}

void Vxe::add_to(SimStats& s) const {
  s.vxe_rtl_instructions = rtl_instructions_;
  s.vxe_rtl_cycles = rtl_cycles_;
  s.vxe_rtl_elements = rtl_elements_;
}

EngineReport Vxe::make_report() const {
  EngineReport r = Engine::make_report();
  r.work_unit = "element_ops";
  r.peak_work_per_cycle = ctx_.arch->vxe.lanes;
  return r;
}

}  // namespace lpu::sim
