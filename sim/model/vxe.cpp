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
// One row reduced in column order with the loop IR's semantics (ops/reduction.h: Reducer,
// double accumulator, fp32 result): vxe.reduce's rows and a chain's row reduction alike.
template <typename Element>
float reduce_row(ReductionType t, int64_t cols, const Element& element) {
  Reducer acc(t);
  for (int64_t c = 0; c < cols; ++c) acc.add(element(c));
  return static_cast<float>(acc.result());
}
}  // namespace

const Vxe::OpInfo& Vxe::op_info(const Instruction& in) {
  // The fields timing_key and energy_class read; the others do not tell ops apart.
  const Form form = opcode_info(in.opcode).form;
  const ScalarOp vop = form == Form::VectorOp ? in.vop : ScalarOp{};
  const ReductionType rop = form == Form::Reduce ? in.rop : ReductionType{};
  for (const OpInfo& o : ops_)
    if (o.opcode == in.opcode && o.vop == vop && o.rop == rop && o.post == in.post && o.acc == in.acc) return o;
  const auto& cfg = ctx_.arch->vxe;
  OpInfo o{.opcode = in.opcode,
           .vop = vop,
           .rop = rop,
           .post = in.post,
           .acc = in.acc,
           .timing = cfg.timing(timing_key(in)),
           .energy_ops = &ctx_.energy.vxe_ops[energy_class(in)]};
  o.op_latency = o.timing.latency;
  // A chain (StructureCheck: vxe.<op> only) is one pass through its stages: OP's, POST's, the
  // row reduction's. Their latencies add; the slowest stage's ii paces the pass. Its energy is
  // the separate instructions' (each element still goes through every stage's arithmetic):
  // fusing saves the passes' time and the LMU traffic of the intermediate tiles, not arithmetic.
  if (in.post) {
    const VxeOpTiming t = cfg.timing(scalar_op_name(*in.post));
    o.post_latency = t.latency;
    o.timing = {o.timing.latency + t.latency, std::max(o.timing.ii, t.ii)};
    o.energy_post = &ctx_.energy.vxe_ops[scalar_op_class(*in.post)];
  }
  if (in.acc) {
    const VxeOpTiming t = cfg.timing(std::string("r") + reduction_type_name(*in.acc));
    o.acc_latency = t.latency;
    o.timing = {o.timing.latency + t.latency, std::max(o.timing.ii, t.ii)};
    o.energy_acc = &ctx_.energy.vxe_ops["reduce"];
  }
  ops_.push_back(o);
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
  if (in.acc) lmu_.check(in.acc_addr, static_cast<uint64_t>(R * 4), "vxe row reduction");
  const auto written = static_cast<uint64_t>((out_elems + (in.acc ? R : 0)) * 4);
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
    // A chain's other stages (those not on the pipeline) add their latencies to its cycles.
    const bool post_on_rtl = in.post && rtl_unit(*in.post);
    const int others = (post_on_rtl ? op.op_latency : op.post_latency) + op.acc_latency;
    compute_end = rtl_end(in, *unit, start_ps) + ctx_.period.to_double() * others;
  } else {
    // Whole picoseconds, as every duration of the model (a fractional ii gives fractions).
    compute_end = start_ps +
                  std::ceil(ctx_.period.to_double() * vxe_compute_cycles(R * C, ctx_.arch->vxe.lanes, t.latency, t.ii));
  }
  *op.energy_ops += static_cast<double>(R * C);
  if (op.energy_post) *op.energy_post += static_cast<double>(R * C);
  if (op.energy_acc) *op.energy_acc += static_cast<double>(R * C);
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
    for (int64_t r = 0; r < R; ++r)
      scratch_[static_cast<size_t>(r)] = reduce_row(in.rop, C, [&](int64_t c) { return src(in.srcs[0], r, c); });
  } else {
    scratch_.resize(static_cast<size_t>(R * C));
    float a[3] = {0, 0, 0};
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        for (size_t k = 0; k < in.srcs.size(); ++k) a[k] = src(in.srcs[k], r, c);
        float v = form == Form::VectorOp ? eval_scalar_op(in.vop, a) : a[0];
        if (in.post) {  // a chain's post op on OP's fp32 result
          const float x[3] = {v, 0, 0};
          v = eval_scalar_op(*in.post, x);
        }
        scratch_[static_cast<size_t>(r * C + c)] = v;
      }
  }
  write(in, scratch_);
  if (in.acc) row_reduction(in);
}

// Written after every source was read (a destination may overlap a source): a reduction's
// column and a dense tile at once, a column window of a wider register (lm_rs) row by row.
void Vxe::write(const Instruction& in, const std::vector<float>& values) {
  const int64_t C = in.cols;
  float* dst = lmu_.data(in.lm_addr);
  if (opcode_info(in.opcode).form == Form::Reduce || in.lm_row_stride() == C) {
    std::copy(values.begin(), values.end(), dst);
    return;
  }
  for (int64_t r = 0; r < in.rows; ++r)
    std::copy(values.begin() + r * C, values.begin() + (r + 1) * C, dst + r * in.lm_rs);
}

// A chain's row reduction: each row of the written result (scratch_, the fp32 values written)
// reduced in column order with the loop IR's Reducer, as vxe.reduce reduces a row it reads, so
// the [R, 1] column equals a separate vxe.r<reduction> of the result bit for bit. StructureCheck
// keeps the column apart from the destination and the sources.
void Vxe::row_reduction(const Instruction& in) {
  const int64_t R = in.rows, C = in.cols;
  float* column = lmu_.data(in.acc_addr);
  for (int64_t r = 0; r < R; ++r)
    column[r] = reduce_row(*in.acc, C, [&](int64_t c) { return scratch_[static_cast<size_t>(r * C + c)]; });
}

// vxe.model: rtl: exp on the exp pipeline, div and reciprocal on the div pipeline; null for the
// rest (and under vxe.model: approx).
VxeRtlUnit* Vxe::rtl_unit(ScalarOp op) const {
  if (op == ScalarOp::exp) return rtl_exp_.get();
  if (op == ScalarOp::div || op == ScalarOp::reciprocal) return rtl_div_.get();
  return nullptr;
}

// The pipeline a vxe.<op> runs on: its op's, or a chain's post op's (fed the values OP computes
// in C++). A chain whose op and post op both have one (vxe.div.exp) would need the two
// pipelines back to back, which the model does not couple: refused.
VxeRtlUnit* Vxe::rtl_unit(const Instruction& in) const {
  if (!rtl_exp_ || opcode_info(in.opcode).form != Form::VectorOp) return nullptr;
  VxeRtlUnit* op = rtl_unit(in.vop);
  VxeRtlUnit* post = in.post ? rtl_unit(*in.post) : nullptr;
  if (op && post)
    throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " (line ", in.line,
                            "): vxe.model: rtl runs one special-function pipeline per instruction, and this chain's ",
                            scalar_op_name(in.vop), " and ", scalar_op_name(*in.post),
                            " both run on one; split the chain or use vxe.model: approx"));
  return post ? post : op;
}

// The instruction's rows x cols elements, row by row, through the pipeline from `start_ps`
// (the worker's now). In functional mode the pipeline gets the real operands in its
// fixed-point formats and checks its results against the C++ reference; the values the program
// sees still come from compute() (fp32).
double Vxe::rtl_end(const Instruction& in, VxeRtlUnit& unit, double start_ps) {
  const double now = ctx_.now_ps();
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

// Operand `o` of `in` over its [R, C] tile, row-major.
std::vector<float> Vxe::tile_values(const Instruction& in, const Operand& o) const {
  const int64_t R = in.rows, C = in.cols;
  std::vector<float> v(static_cast<size_t>(R * C));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      float x = static_cast<float>(o.value);
      if (!o.immediate) {
        int64_t off = static_cast<int64_t>(o.addr / 4) + r * o.rs + c * o.cs;
        if (off < 0 || off >= static_cast<int64_t>(ctx_.lmu_data.size()))
          throw InputError(strcat("device ", ctx_.device, ": ", print_instruction(in), " reads outside local memory"));
        x = ctx_.lmu_data[static_cast<size_t>(off)];
      }
      v[static_cast<size_t>(r * C + c)] = x;
    }
  return v;
}

// exp: Q5.10, saturated; div: dividend and divisor each quantised by its largest magnitude;
// reciprocal: a division of the constant 32767 (1.0 at the divisor's scale) by its operand. A
// chain whose post op is on the pipeline feeds it what OP computes (fp32, in C++).
void Vxe::rtl_operands(const Instruction& in, std::vector<int16_t>& a, std::vector<int16_t>& b) const {
  auto values = [&](const Operand& o) { return tile_values(in, o); };
  const bool post = in.post && rtl_unit(*in.post);
  const ScalarOp f = post ? *in.post : in.vop;
  std::vector<float> x;
  if (post) {
    std::vector<std::vector<float>> srcs;
    for (const Operand& o : in.srcs) srcs.push_back(values(o));
    x.resize(srcs.at(0).size());
    for (size_t e = 0; e < x.size(); ++e) {
      float args[3] = {0, 0, 0};
      for (size_t k = 0; k < srcs.size(); ++k) args[k] = srcs[k][e];
      x[e] = eval_scalar_op(in.vop, args);
    }
  } else {
    x = values(in.srcs.at(0));
  }
  if (f == ScalarOp::exp) {
    for (float v : x) {
      const float q = std::isnan(v) ? 0.0f : std::clamp(std::round(v * 1024.0f), -32768.0f, 32767.0f);
      a.push_back(static_cast<int16_t>(q));
    }
  } else if (f == ScalarOp::reciprocal) {
    b = quantise(x);
    a.assign(b.size(), 32767);
  } else {
    a = quantise(x);
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
